<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

use Ddblock\Laravel\Events\Emitter;
use Ddblock\Laravel\Events\LockAcquired;
use Ddblock\Laravel\Events\LockOutcomeUnknown;
use Ddblock\Laravel\Events\LockReleased;
use Ddblock\Laravel\Events\LockWaitTimedOut;
use Illuminate\Cache\Lock;
use Illuminate\Contracts\Cache\LockTimeoutException;

/**
 * Laravel's DynamoDB lock, taken by one conditional UpdateItem and released by one owner-conditioned DeleteItem.
 * What happens to it is reported as Laravel events (Events\LockEvent) and warnings.
 *
 * Parameters stay untyped, and return types are declared only where every Laravel version's Lock
 * leaves them open, so the class loads under Laravel 8 to 13.
 */
class DynamoDbLock extends Lock
{
    /** @var int|null the fencing token of this handle's acquisition */
    protected $fence = null;

    /** @var int|null when block() began to wait (hrtime, ns); null when it is not waiting */
    protected $blockedAt = null;

    /** @var int|null when this handle acquired the lock (hrtime, ns); null when it holds none */
    protected $acquiredAt = null;

    /**
     * Create a new lock instance (use the store's lock()).
     *
     * @param  \Ddblock\Laravel\LockFactory  $locks
     * @param  string  $name
     * @param  int  $seconds
     * @param  string|null  $owner
     */
    public function __construct(protected LockFactory $locks, $name, $seconds, $owner = null)
    {
        parent::__construct((string) $name, $seconds, $owner);
    }

    /**
     * Attempt to acquire the lock.
     *
     * @throws OutcomeUnknownException|LockException
     */
    public function acquire(): bool
    {
        $start = $this->blockedAt ?? hrtime(true);
        try {
            $seconds = $this->seconds > 0 ? $this->seconds : 86400;
            $lease = $this->locks->attempt()->acquire($this->name, $this->owner, $seconds);
        } catch (OutcomeUnknownException $e) {
            $this->locks->events->emit(LockOutcomeUnknown::class, $this->name, ! $e->lockMayBeHeld());
            if ($e->lockMayBeHeld()) {
                $this->locks->events->warn('ddblock.lock.cleanup_failed', $this->name, $e->getMessage());
            }
            // Inside block(), a clean-up that left nothing of ours is a "not yet", as in the core's wait.
            if ($this->blockedAt !== null && ! $e->lockMayBeHeld()) {
                return false;
            }
            throw $e;
        }
        if ($lease === null) {
            return false;
        }
        [$this->fence, $this->acquiredAt] = [$lease['fence'], hrtime(true)];
        $this->locks->events->emit(LockAcquired::class, $this->name, Emitter::since($start), $this->fence);

        return true;
    }

    /**
     * Attempt to acquire the lock for the given number of seconds.
     *
     * @param  int  $seconds
     * @param  callable|null  $callback
     * @return mixed
     *
     * @throws \Illuminate\Contracts\Cache\LockTimeoutException
     */
    public function block($seconds, $callback = null)
    {
        $this->blockedAt = hrtime(true);
        $inner = is_callable($callback) ? function () use ($callback) {
            $this->blockedAt = null;

            return $callback();
        } : $callback;
        try {
            return parent::block($seconds, $inner);
        } catch (LockTimeoutException $e) {
            if ($this->blockedAt !== null) { // not one the callback threw
                $this->locks->events->emit(LockWaitTimedOut::class, $this->name, Emitter::since($this->blockedAt));
            }
            throw $e;
        } finally {
            $this->blockedAt = null;
        }
    }

    /** The fencing token of this handle's acquisition, null when it holds none. */
    public function fence(): ?int
    {
        return $this->fence;
    }

    /**
     * Release the lock: true only when this call ended our hold. A handle that acquired the lock
     * and whose release's first send finds it gone or another owner's lost its lease while the
     * work ran: false, with the warning `ddblock.lock.lease_lost` (the core raises LeaseLost).
     * Every answer lost: one read settles it (true; or a LockException saying it did not land).
     *
     * @throws OutcomeUnknownException|LockException
     */
    public function release(): bool
    {
        $held = $this->acquiredAt === null ? null : Emitter::since($this->acquiredAt);
        // Telling another owner from no lock may take a read: only for a report that needs it.
        $tell = $held !== null || $this->locks->events->listens(LockReleased::class);
        [$outcome, $first] = $this->locks->requests()
            ->releaseIfOwner($this->name, $this->owner, $this->locks->releasedExpiry(), $tell);
        [$this->fence, $this->acquiredAt] = [null, null];
        // Only a handle that acquired the lock lost it: another's release finding it gone is no
        // news, and so is a resend that finds the first send's work.
        if ($outcome !== LockReleased::RELEASED && $held !== null && $first) {
            $this->locks->events->warn('ddblock.lock.lease_lost', $this->name, sprintf(
                'ddblock: the first send of the release of the lock with key "%s" in table "%s" found it %s: '
                . 'the lock ended under its holder (it expired and was taken over, or was removed by a '
                . 'force-release, another writer or a fault), so the work under it ran without the lock for '
                . 'a while; give the lock a ttl longer than the work, or refresh() it',
                $this->tableKey(),
                $this->locks->table,
                $outcome === LockReleased::OTHER_OWNER ? 'held by another owner' : 'gone'
            ));
        }
        $this->locks->events->emit(LockReleased::class, $this->name, $outcome, $held);

        return $outcome === LockReleased::RELEASED;
    }

    /** Releases this lock in disregard of ownership. */
    public function forceRelease(): void
    {
        $this->locks->requests()->forceRelease($this->name, $this->locks->releasedExpiry());
        [$this->fence, $this->acquiredAt] = [null, null];
    }

    /**
     * Extend our live lock (Laravel 12.63+'s refresh(), on every version).
     *
     * @param  int|null  $seconds
     */
    public function refresh($seconds = null): bool
    {
        $seconds = $seconds ?? $this->seconds;

        return $this->locks->requests()->refreshIfOwner(
            $this->name,
            $this->owner,
            $this->locks->now(),
            $this->locks->expiry($seconds > 0 ? $seconds : 86400)
        );
    }

    /** Determine if the lock is currently held by any process. */
    public function isLocked(): bool
    {
        return $this->getCurrentOwner() !== null;
    }

    /** Determines whether this lock is allowed to release the lock in the driver. */
    public function isOwnedByCurrentProcess(): bool
    {
        return $this->isOwnedBy($this->owner);
    }

    /**
     * Determine whether the lock is held by the given owner, compared as DynamoDB compares it.
     *
     * @param  string|null  $owner
     */
    public function isOwnedBy($owner): bool
    {
        if ($owner === null) {
            // Laravel's getCurrentOwner() === null: true on a free lock.
            return $this->getCurrentOwner() === null;
        }
        $item = $this->liveItem($owner);

        return $item !== null && $this->locks->carries($item, $this->locks->stored($owner));
    }

    /**
     * Returns the owner value written into the driver for this lock (one consistent read).
     *
     * @return mixed
     */
    protected function getCurrentOwner()
    {
        $item = $this->liveItem(null);

        return $item === null ? null : $this->locks->owner($item);
    }

    /** The lock's key in the table. */
    public function tableKey(): string
    {
        return $this->locks->tableKey($this->name);
    }

    /**
     * The lock's item unless it is missing or expired (Laravel's isExpired(): now >= expires_at).
     *
     * @param  mixed  $owner  kept out of error messages
     * @return array<string, mixed>|null
     */
    private function liveItem($owner): ?array
    {
        $item = $this->locks->requests()->read($this->name, 'read the owner of', $owner);
        $expiry = $item === null ? null : $this->locks->expiryOf($item);

        return $item === null || ($expiry !== null && $this->locks->now() >= $expiry) ? null : $item;
    }
}
