<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

use Illuminate\Cache\Lock;

/**
 * Laravel's DynamoDB lock with ddblock's lease protocol: taken by ONE UpdateItem (Laravel's lock
 * item plus an attempt id and a fencing token), released by ONE owner-conditioned DeleteItem.
 *
 * Laravel's `Illuminate\Cache\DynamoDbLock::release()` reads the owner with an eventually
 * consistent GetItem and deletes only if that read shows its owner; under load the read misses
 * the owner just written, the delete is skipped and the lock stays until it expires (a day for a
 * ttl of 0). Here the release is a DeleteItem conditioned on the owner: DynamoDB evaluates the
 * condition on the latest item, so there is no read to go stale.
 *
 * The public API is Laravel's on every version from 8 to 13: `get()`, `block()`, `owner()` and
 * `betweenBlockedAttemptsSleepFor()` are the installed `Illuminate\Cache\Lock`'s own; `acquire`,
 * `release`, `forceRelease`, `refresh`, `isLocked`, `isOwnedBy` and `isOwnedByCurrentProcess`
 * are defined here (public on every version; 8.x has no `refresh`, `isLocked` or `isOwnedBy`).
 * Parameters stay untyped and return types are only added where every parent leaves them open,
 * so the class loads under each version's `Lock`.
 */
class DynamoDbLock extends Lock
{
    /**
     * The store that sends the requests.
     *
     * @var \Ddblock\Laravel\DynamoDbStore
     */
    protected $dynamo;

    /**
     * The fencing token of this handle's acquisition, null when it holds none.
     *
     * @var int|null
     */
    protected $fence = null;

    /**
     * True while `block()` waits: then an acquire whose outcome was unknown, and whose clean-up
     * left nothing of this call's behind, is a "not yet" and the wait goes on.
     *
     * @var bool
     */
    protected $blocking = false;

    /**
     * Create a new lock instance.
     *
     * @param  \Ddblock\Laravel\DynamoDbStore  $dynamo
     * @param  string  $name  the lock name as Laravel's lock holds it (for Laravel 8-11 already
     *     prefixed once; use the store's `lock()` rather than this constructor)
     * @param  int  $seconds
     * @param  string|null  $owner
     */
    public function __construct(DynamoDbStore $dynamo, $name, $seconds, $owner = null)
    {
        parent::__construct($name, $seconds, $owner);

        $this->dynamo = $dynamo;
    }

    /**
     * This driver's lock with the name, ttl and owner of `$lock`, a lock the installed Laravel's
     * own `DynamoDbStore::lock()` made.
     *
     * @internal used by {@see DynamoDbStore::lock()}
     */
    public static function sameAs(Lock $lock, DynamoDbStore $dynamo): self
    {
        // $lock is an Illuminate\Cache\DynamoDbLock; its name, seconds and owner are protected
        // properties declared by Illuminate\Cache\Lock, which this class extends too, so PHP
        // lets this class read them.
        return new self($dynamo, $lock->name, $lock->seconds, $lock->owner);
    }

    /**
     * Attempt to acquire the lock: one conditional UpdateItem writing Laravel's lock item (the
     * attributes its `add()` writes) plus this call's attempt id and the fencing token, with
     * `add()`'s condition and the clock-skew margin (an expired lock is taken over once
     * `expires_at < now - margin`). A ttl of 0 (or less) means 86400 seconds, as in Laravel.
     *
     * False when someone holds the lock, this owner through another handle included (a
     * `restoreLock()` of a held lock), as Laravel answers. True when the write landed, or when an
     * earlier send of this call landed and its answer was lost.
     *
     * @throws OutcomeUnknownException  no answer came to the write nor to its resend (or the
     *     resend was refused on every try); the write was deleted again if it landed (the
     *     exception says what the clean-up found)
     * @throws LockException  the request failed otherwise (nothing was written): throttled or
     *     not connected on 3 tries, a missing table, ...
     */
    public function acquire(): bool
    {
        try {
            $lease = $this->dynamo->acquireLock(
                $this->name,
                $this->owner,
                $this->seconds > 0 ? $this->seconds : DynamoDbStore::DEFAULT_LOCK_SECONDS
            );
        } catch (OutcomeUnknownException $e) {
            // Inside block(): the clean-up found or deleted this call's write, so nothing of ours
            // holds the lock and waiting on is safe (the core's wait does the same within its
            // deadline). A failed clean-up may have left our write holding the lock: that throws.
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
     * Attempt to acquire the lock for up to `$seconds`: the installed Laravel's own `block()`
     * loop (its sleeps and its `LockTimeoutException`), with one difference. An attempt whose
     * outcome stayed unknown and whose clean-up left nothing behind counts as "not acquired yet"
     * and the wait goes on until its deadline; `acquire()` and `get()` without a wait still throw
     * `OutcomeUnknownException`. A clean-up that failed throws here too: the lock may be held by
     * this call's write until it expires.
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
        // Laravel's block() runs the callback (and releases after it) once acquired: the wait is
        // over by then.
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

    /**
     * The fencing token of this handle's acquisition: it grows with every acquisition of this
     * lock by any ddblock front (this driver, the Rust core, Python, Node, the CLI), so a resource
     * that remembers the highest token it accepted can refuse a write from a holder whose lock
     * expired while it was paused. Null when this handle has not acquired the lock (or has
     * released it).
     */
    public function fence(): ?int
    {
        return $this->fence;
    }

    /**
     * Release the lock: ONE DeleteItem conditioned on this owner, no read before it.
     *
     * True only when this call deleted our lock. False when the lock is not ours (another owner
     * took it over after ours expired) or already gone; numeric owners are released too.
     */
    public function release(): bool
    {
        $released = $this->dynamo->releaseLock($this->name, $this->owner);
        $this->fence = null;

        return $released;
    }

    /**
     * Release this lock in disregard of ownership: one unconditional DeleteItem.
     */
    public function forceRelease(): void
    {
        $this->dynamo->forceReleaseLock($this->name);
        $this->fence = null;
    }

    /**
     * Extend our live lock to now + `$seconds` (the lock's own ttl when null; 0 or less means
     * 86400): Laravel 12.63+'s owner-conditioned UpdateItem, on every Laravel version.
     * False when the lock is not ours or has expired.
     *
     * @param  int|null  $seconds
     */
    public function refresh($seconds = null): bool
    {
        $seconds = $seconds ?? $this->seconds;
        if ($seconds <= 0) {
            $seconds = DynamoDbStore::DEFAULT_LOCK_SECONDS;
        }

        return $this->dynamo->refreshLock($this->name, $this->owner, $seconds);
    }

    /**
     * Determine if the lock is currently held by any process (one consistent read).
     */
    public function isLocked(): bool
    {
        return $this->getCurrentOwner() !== null;
    }

    /**
     * Determines whether this lock's owner holds the lock now (one consistent read).
     */
    public function isOwnedByCurrentProcess(): bool
    {
        return $this->isOwnedBy($this->owner);
    }

    /**
     * Determine whether the lock is held by the given owner now (one consistent read). The stored
     * value is compared as DynamoDB compares it, so a numeric owner matches its N item (Laravel's
     * `===` against the int it reads back does not).
     *
     * @param  string|null  $owner
     */
    public function isOwnedBy($owner): bool
    {
        return $this->dynamo->lockIsOwnedBy($this->name, $owner);
    }

    /**
     * The owner stored in the lock, as Laravel's store reads a value (an int for a numeric
     * owner), or null when free or expired. One GetItem with `ConsistentRead: true`.
     *
     * @return mixed
     */
    protected function getCurrentOwner()
    {
        return $this->dynamo->lockOwner($this->name);
    }

    /**
     * The lock's key in the table (prefix and the installed Laravel's key layout applied).
     */
    public function tableKey(): string
    {
        return $this->dynamo->lockTableKey($this->name);
    }
}
