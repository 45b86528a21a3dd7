<?php

// phpcs:disable PSR1.Files.SideEffects -- the interface depends on the installed Laravel

declare(strict_types=1);

namespace Ddblock\Laravel;

use Illuminate\Contracts\Cache\CanFlushLocks;

// Laravel 12+'s contract where the installed Laravel has it, so that Cache::flushLocks() reaches the store.
if (interface_exists(CanFlushLocks::class)) {
    class_alias(CanFlushLocks::class, FlushesLocks::class);
} else {
    /** @internal Laravel 8-11 have no CanFlushLocks. */
    interface FlushesLocks
    {
    }
}
