<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Events;

/** A release ended (`ddblock.lock.releases`): `$outcome` says how. */
final class LockReleased extends LockEvent
{
    /** It was ours and now is released. */
    public const RELEASED = 'released';
    /** No live lock item: it expired, was force-released, or a retried request found its own release done. */
    public const NOT_HELD = 'not_held';
    /** Someone else holds it: ours expired and was taken over, so the work under it ran without it. */
    public const OTHER_OWNER = 'other_owner';

    /**
     * @param  array{0: string, 1: string, 2: string, 3: string}  $lock  LockEvent's name, key, table, key layout
     * @param  string  $outcome  `released`, `not_held` or `other_owner` (`ddblock.lock.release_outcome`)
     * @param  float|null  $holdSeconds  from this handle's acquisition to the release; null when this
     *                                   handle did not acquire it (restoreLock()) or released it before
     */
    public function __construct(array $lock, public string $outcome, public ?float $holdSeconds)
    {
        parent::__construct(...$lock);
    }
}
