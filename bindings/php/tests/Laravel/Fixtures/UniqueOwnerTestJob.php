<?php

namespace Ddblock\Laravel\Tests\Laravel\Fixtures;

use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldBeUnique;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;

/**
 * A unique job as Laravel 13.24+ has it: its Queueable trait carries `$uniqueLockOwner`, the owner
 * of the unique lock its dispatch took, serialized with the job (laravel/framework PR #60906).
 * Debian's 8.83 Queueable has no such property, so it is declared here.
 */
class UniqueOwnerTestJob implements ShouldQueue, ShouldBeUnique
{
    use InteractsWithQueue;
    use Queueable;
    use Dispatchable;

    public $uniqueLockOwner = '';

    public $uniqueId = '';

    public static $handled = false;

    public function handle()
    {
        static::$handled = true;
    }
}
