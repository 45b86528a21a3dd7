<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Events;

/**
 * An acquire's write got no answer, nor did its resend, and its clean-up ran
 * (`ddblock.lock.unknown_outcomes`); OutcomeUnknownException follows, except inside block(),
 * which waits on after a clean one.
 */
final class LockOutcomeUnknown extends LockEvent
{
    /**
     * @param  array{0: string, 1: string, 2: string, 3: string}  $lock  LockEvent's name, key, table, key layout
     * @param  bool  $clean  true when the clean-up left nothing of the write (`ddblock.lock.cleanup` =
     *                       `clean`); false when a write that may have landed stays until its expiry (`left`)
     */
    public function __construct(array $lock, public bool $clean)
    {
        parent::__construct(...$lock);
    }
}
