<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Events;

/** block() ran out of time (`ddblock.lock.acquisitions`, outcome `timed_out`); LockTimeoutException follows. */
final class LockWaitTimedOut extends LockEvent
{
    /**
     * @param  array{0: string, 1: string, 2: string, 3: string}  $lock  LockEvent's name, key, table, key layout
     * @param  float  $waitSeconds  how long block() waited
     */
    public function __construct(array $lock, public float $waitSeconds)
    {
        parent::__construct(...$lock);
    }
}
