<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

use Illuminate\Cache\Lock;

/**
 * Laravel's DynamoDB lock, taken by one conditional UpdateItem and released by one owner-conditioned DeleteItem.
 *
 * Parameters stay untyped, and return types are declared only where every Laravel version's Lock
 * leaves them open, so the class loads under Laravel 8 to 13.
 */
class DynamoDbLock extends Lock
{
    /** @var int|null the fencing token of this handle's acquisition */
    protected $fence = null;

    /** @var bool whether block() is waiting */
    protected $blocking = false;

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
        try {
            $seconds = $this->seconds > 0 ? $this->seconds : 86400;
            $lease = $this->locks->attempt()->acquire($this->name, $this->owner, $seconds);
        } catch (OutcomeUnknownException $e) {
            // Inside block(), a clean-up that left nothing of ours is a "not yet", as in the core's wait.
            if ($this->blocking && ! $e->lockMayBeHeld()) {
                return false;
            }
            throw $e;
        }
        if ($lease === null) {
            return false;
        }
        $this->fence = $lease['fence'];

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
        $this->blocking = true;
        $inner = is_callable($callback) ? function () use ($callback) {
            $this->blocking = false;

            return $callback();
        } : $callback;
        try {
            return parent::block($seconds, $inner);
        } finally {
            $this->blocking = false;
        }
    }

    /** The fencing token of this handle's acquisition, null when it holds none. */
    public function fence(): ?int
    {
        return $this->fence;
    }

    /** Release the lock: true only when this call ended our hold. */
    public function release(): bool
    {
        $expiry = $this->locks->releasedExpiry();
        $requests = $this->locks->requests();
        $released = $expiry === null
            ? $requests->deleteIfOwner($this->name, $this->owner)
            : $requests->expireIfOwner($this->name, $this->owner, $expiry);
        $this->fence = null;

        return $released;
    }

    /** Releases this lock in disregard of ownership. */
    public function forceRelease(): void
    {
        $this->locks->requests()->forceRelease($this->name, $this->locks->releasedExpiry());
        $this->fence = null;
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
