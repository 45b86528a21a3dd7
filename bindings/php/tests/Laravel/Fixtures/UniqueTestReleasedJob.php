<?php

namespace Ddblock\Laravel\Tests\Laravel\Fixtures;

/** laravel/framework tests/Integration/Queue/UniqueJobTest.php's fixture, as upstream has it. */
class UniqueTestReleasedJob extends UniqueTestFailJob
{
    public $tries = 1;

    public $connection = 'database';

    public function handle()
    {
        static::$handled = true;

        $this->release();
    }
}
