<?php

namespace Ddblock\Laravel\Tests\Laravel\Fixtures;

use Illuminate\Bus\Queueable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Queue\Middleware\WithoutOverlapping;

/** laravel/framework tests/Integration/Queue/WithoutOverlappingJobsTest.php's fixture, as upstream has it. */
class OverlappingTestJob
{
    use InteractsWithQueue;
    use Queueable;

    public static $handled = false;

    public function handle()
    {
        static::$handled = true;
    }

    public function middleware()
    {
        return [new WithoutOverlapping()];
    }
}
