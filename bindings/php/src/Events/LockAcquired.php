<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Events;

/** A lock was acquired (`ddblock.lock.acquisitions`, outcome `acquired`). */
final class LockAcquired extends LockEvent
{
    /**
     * @param  array{0: string, 1: string, 2: string, 3: string}  $lock  LockEvent's name, key, table, key layout
     * @param  float  $waitSeconds  from the call (block()'s, when it waited) to the acquisition
     * @param  int|null  $fence  the acquisition's fencing token
     */
    public function __construct(array $lock, public float $waitSeconds, public ?int $fence)
    {
        parent::__construct(...$lock);
    }
}
