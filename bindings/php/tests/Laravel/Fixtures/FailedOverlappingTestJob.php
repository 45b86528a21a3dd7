<?php

namespace Ddblock\Laravel\Tests\Laravel\Fixtures;

use Exception;

/** laravel/framework tests/Integration/Queue/WithoutOverlappingJobsTest.php's fixture, as upstream has it. */
class FailedOverlappingTestJob extends OverlappingTestJob
{
    public function handle()
    {
        static::$handled = true;

        throw new Exception();
    }
}
