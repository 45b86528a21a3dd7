<?php

namespace Ddblock\Laravel\Tests\Laravel\Fixtures;

use Illuminate\Queue\Middleware\WithoutOverlapping;

/** laravel/framework tests/Integration/Queue/WithoutOverlappingJobsTest.php's fixture, as upstream has it. */
class SkipOverlappingTestJob extends OverlappingTestJob
{
    public function middleware()
    {
        return [(new WithoutOverlapping())->dontRelease()];
    }
}
