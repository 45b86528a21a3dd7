<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Events;

/**
 * What every ddblock lock event says: which lock, in which table and key layout (never its owner).
 * Dispatched only when the app's event dispatcher has listeners for the event's class
 * (docs/observability.md, "PHP driver (Laravel)").
 */
abstract class LockEvent
{
    /**
     * @param  string  $name  the lock's name, as given to `Cache::lock()` (without the cache prefix)
     * @param  string  $key  the lock's key in the table
     * @param  string  $table  the DynamoDB table (`db.collection.name`)
     * @param  string  $keyLayout  `laravel8`, `laravel11` or `laravel12` (`ddblock.key_layout`)
     */
    public function __construct(
        public string $name,
        public string $key,
        public string $table,
        public string $keyLayout
    ) {
    }
}
