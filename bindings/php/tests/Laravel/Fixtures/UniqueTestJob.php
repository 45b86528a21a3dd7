<?php

namespace Ddblock\Laravel\Tests\Laravel\Fixtures;

use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldBeUnique;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;

/** laravel/framework tests/Integration/Queue/UniqueJobTest.php's fixture, as upstream has it. */
class UniqueTestJob implements ShouldQueue, ShouldBeUnique
{
    use InteractsWithQueue;
    use Queueable;
    use Dispatchable;

    public static $handled = false;

    public function handle()
    {
        static::$handled = true;
    }
}
