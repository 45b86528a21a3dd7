<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

use Illuminate\Cache\DynamoDbStore as LaravelDynamoDbStore;
use InvalidArgumentException;
use ReflectionClass;

/**
 * Laravel's DynamoDB cache store whose locks are ddblock's: taken by one UpdateItem that also
 * writes an attempt id and a fencing token, released by one owner-conditioned DeleteItem.
 *
 * Every cache operation, the constructor and the key layout are those of the installed Laravel
 * (this class extends `Illuminate\Cache\DynamoDbStore`); only `lock()` and `restoreLock()` change:
 * they return a {@see DynamoDbLock}, whose requests go through the `*Lock` methods below. Those
 * are thin, as in the Rust core: the DynamoDB requests are {@see LockRequests}' (`dynamo/`),
 * what a lock item is (key, attribute names, stored owner, expiry, fence) {@see LockItem}'s
 * (`format/item.rs`), both built here from the store's settings, which Laravel's store keeps
 * protected; the acquire's rules (attempt id, fence base, clock-skew margin, resend after an
 * unknown outcome, clean-up) are {@see LockAttempt}'s (`lock/attempt.rs`), and the reading of
 * AWS failures {@see AwsFault}'s (`aws/fault.rs`).
 */
class DynamoDbStore extends LaravelDynamoDbStore
{
    /** DynamoDB's limit on a partition key, in bytes (UTF-8). */
    public const MAX_KEY_BYTES = LockItem::MAX_KEY_BYTES;

    /**
     * Laravel's lock ttl when none (0) is given: one day (`DynamoDbLock::acquire()`).
     */
    public const DEFAULT_LOCK_SECONDS = 86400;

    /**
     * The default clock-skew margin, in seconds: 0, Laravel's own takeover rule (`expires_at <
     * now`), so PHP, Rust, Python and Node share one rule on a table (the Rust core's default
     * too). A lock is taken over only once `expires_at < now - margin`; see docs/semantics.md.
     */
    public const DEFAULT_CLOCK_SKEW_MARGIN = 0;

    /**
     * The release modes (config `ddblock.release_mode`, env `DDBLOCK_RELEASE_MODE`): `delete`
     * (the default), one owner-conditioned DeleteItem; `keep-fence`, one owner-conditioned
     * UpdateItem that ends the hold and keeps the item's fencing token for the next acquisition.
     */
    public const RELEASE_DELETE = 'delete';
    public const RELEASE_KEEP_FENCE = 'keep-fence';
    public const DEFAULT_RELEASE_MODE = self::RELEASE_DELETE;

    /** How far before the release a keep-fence release sets `expires_at`: a day. */
    public const RELEASED_EXPIRY_BACK_SECONDS = 86400;

    /**
     * ddblock's fencing token on a lock item (N); Laravel neither reads nor writes it.
     */
    public const FENCE_ATTRIBUTE = LockItem::FENCE_ATTRIBUTE;

    /**
     * The id of the acquire call that wrote a lock item (S, 16 characters of [A-Za-z0-9]).
     */
    public const ATTEMPT_ATTRIBUTE = LockItem::ATTEMPT_ATTRIBUTE;

    /**
     * Take over an expired lock only once `expires_at < now - margin` (seconds).
     *
     * @var int
     */
    protected $clockSkewMargin = self::DEFAULT_CLOCK_SKEW_MARGIN;

    /**
     * How locks are released: {@see RELEASE_DELETE} or {@see RELEASE_KEEP_FENCE}.
     *
     * @var string
     */
    protected $releaseMode = self::DEFAULT_RELEASE_MODE;

    /**
     * Test seam ({@see useLockIds()}): where attempt ids and fence bases come from; null: a
     * random id per acquire call and the system clock in microseconds.
     *
     * @var callable|null
     */
    private $attemptIds = null;

    /** @var callable|null */
    private $fenceBases = null;

    /**
     * A copy of a store Laravel built (`CacheManager::createDynamodbDriver()`), with every setting
     * it has on the installed version (client, table, attribute names, prefix, and on newer
     * versions the serializable classes), so the `ddblock` driver reads exactly the config keys
     * of Laravel's `dynamodb` store.
     */
    public static function fromLaravelStore(LaravelDynamoDbStore $store): self
    {
        $copy = (new ReflectionClass(self::class))->newInstanceWithoutConstructor();
        // From this subclass, get_object_vars() sees the protected properties Laravel's store
        // declares, whichever version declared them.
        foreach (get_object_vars($store) as $property => $value) {
            $copy->{$property} = $value;
        }
        // Log a warning (at most once a minute per store) when DynamoDB's answer to a request
        // that carries this host's clock (`:now`: acquire, refresh, add) proves it beyond the
        // margin's allowance, (margin + 1) / 2 s; see ClockSkewWarning and docs/semantics.md.
        ClockSkewWarning::attach($copy->dynamo, [$copy, 'clockSkewMargin'], sprintf('table `%s`', $copy->table));

        return $copy;
    }

    /**
     * Get a lock instance.
     *
     * The lock name and the generated owner are those the installed Laravel's own `lock()` gives:
     * Laravel 8 to 11 pass `prefix.name` to the lock (so the table key carries the prefix twice),
     * 12+ the bare name (laravel/framework PR #52986). Asking the parent keeps that exact.
     *
     * @param  string  $name
     * @param  int  $seconds
     * @param  string|null  $owner
     * @return \Ddblock\Laravel\DynamoDbLock
     */
    public function lock($name, $seconds = 0, $owner = null)
    {
        return DynamoDbLock::sameAs(parent::lock($name, $seconds, $owner), $this);
    }

    /**
     * Restore a lock instance using the owner identifier.
     *
     * @param  string  $name
     * @param  string  $owner
     * @return \Ddblock\Laravel\DynamoDbLock
     */
    public function restoreLock($name, $owner)
    {
        return $this->lock($name, 0, $owner);
    }

    /**
     * The clock-skew margin in seconds: an expired lock is taken over only once
     * `expires_at < now - margin`, so a contender whose clock runs up to that much ahead cannot
     * cut a live lease short (config `ddblock.clock_skew_margin`, default 0: Laravel's rule).
     */
    public function clockSkewMargin(): int
    {
        return $this->clockSkewMargin;
    }

    /**
     * Sets the clock-skew margin: a whole number of seconds, 0 or more (an int, or its text as an
     * environment variable gives it).
     *
     * @param  int|string  $seconds
     * @return $this
     */
    public function setClockSkewMargin($seconds)
    {
        $valid = is_int($seconds) || (is_string($seconds) && preg_match('/^\s*\d+\s*$/D', $seconds) === 1);
        if (! $valid || (int) $seconds < 0) {
            throw new InvalidArgumentException(sprintf(
                'ddblock: the clock-skew margin (ddblock.clock_skew_margin, DDBLOCK_CLOCK_SKEW_MARGIN) must be '
                . 'a whole number of seconds, 0 or more; got %s',
                var_export($seconds, true)
            ));
        }
        $this->clockSkewMargin = (int) $seconds;

        return $this;
    }

    /**
     * How locks are released (config `ddblock.release_mode`, default `delete`): `delete`, one
     * owner-conditioned DeleteItem; `keep-fence`, one owner-conditioned UpdateItem that ends the
     * hold and keeps the item and its fencing token, so the next acquisition's token is the kept
     * one + 1 rather than a restart from that acquirer's clock.
     */
    public function releaseMode(): string
    {
        return $this->releaseMode;
    }

    /**
     * Sets the release mode: `delete` or `keep-fence` (any case, surrounding blanks ignored, as
     * the Rust core reads `DDBLOCK_RELEASE_MODE`); null (an unset key) is the default, `delete`.
     *
     * @param  string|null  $mode
     * @return $this
     */
    public function setReleaseMode($mode)
    {
        $word = $mode === null ? self::DEFAULT_RELEASE_MODE : (is_string($mode) ? strtolower(trim($mode)) : null);
        if ($word !== self::RELEASE_DELETE && $word !== self::RELEASE_KEEP_FENCE) {
            throw new InvalidArgumentException(sprintf(
                'ddblock: the release mode (ddblock.release_mode, DDBLOCK_RELEASE_MODE) must be '
                . '"delete" (the default) or "keep-fence"; got %s',
                var_export($mode, true)
            ));
        }
        $this->releaseMode = $word;

        return $this;
    }

    /**
     * Test seam (the conformance vectors): `$attemptIds()` gives each acquire call's attempt id
     * and `$fenceBases()` the fence base of each write, instead of a fresh random id and the
     * system clock in microseconds. Nulls restore the defaults. Not for production: acquire
     * calls sharing an id would take each other's writes for their own.
     *
     * @internal
     */
    public function useLockIds(?callable $attemptIds, ?callable $fenceBases): void
    {
        $this->attemptIds = $attemptIds;
        $this->fenceBases = $fenceBases;
    }

    /**
     * Takes lock `$name` for `$owner`: ONE UpdateItem that writes Laravel's lock item (the value
     * and expiry `add()` writes) plus this call's attempt id (`ddblock_attempt`) and the fencing
     * token (`ddblock_fence = if_not_exists(ddblock_fence, :fence_base) + 1`), conditioned like
     * `add()` with the clock-skew margin in `:now` (`attribute_not_exists(#key) OR
     * #expires_at < now - margin`).
     *
     * Returns the lease (`expires_at`, `fence`, `recovered`) when the lock is ours: written now,
     * or found carrying this call's own attempt id and not expired (an earlier send of this call
     * landed and its answer was lost: its expiry and fence stand). Null when someone holds it:
     * another owner, or this owner through another handle or process (as Laravel answers). A
     * write that gets no answer is sent again once; if that gets none either, this call's write
     * is deleted again and {@see OutcomeUnknownException} says what the clean-up found.
     *
     * Each try of the write is sent exactly once ({@see LockRequests::takeLock()}): a retry below
     * it reports only its last send, so a write that landed unanswered and was then throttled
     * would read as "nothing written" and be left holding the lock. Tries refused before they
     * could land (throttled, or a connection never made) are retried by {@see LockAttempt}
     * instead, after a jittered backoff, up to 3 tries per call (the core's rule); when they run
     * out after a try that may have landed, the write is cleaned up as above.
     *
     * @internal used by {@see DynamoDbLock::acquire()}
     *
     * @param  string  $name  the lock name as the lock holds it
     * @param  mixed  $owner
     * @param  int  $seconds  passed to Laravel's `toTimestamp()` as its `add()` does
     * @return array{expires_at: int, fence: int|null, recovered: bool}|null
     */
    public function acquireLock($name, $owner, $seconds): ?array
    {
        $attempt = new LockAttempt(
            $this->lockRequests(),
            fn (): int => $this->currentTime(),
            fn ($seconds): int => (int) $this->toTimestamp($seconds),
            $this->clockSkewMargin,
            $this->attemptIds,
            $this->fenceBases,
            $this->releaseMode === self::RELEASE_KEEP_FENCE ? fn (): int => $this->releasedExpiry() : null
        );

        return $attempt->acquire($name, $owner, $seconds);
    }

    /**
     * The fencing token of an item (or of UpdateItem's `Attributes`), when it has one.
     *
     * @internal also used by `php artisan ddblock:status`
     *
     * @param  array<string, mixed>  $item
     */
    public static function fenceOf(array $item): ?int
    {
        return LockItem::fenceOf($item);
    }

    /**
     * Releases lock `$name` if `$owner` holds it: ONE DeleteItem conditioned on `#value = :owner`,
     * the owner typed as `add()` stored it (N when numeric). No read before it, so no stale read
     * can skip it. True only when this call deleted our item; a failed condition (not ours, or
     * already gone) is false, never an exception. In keep-fence mode the one request is an
     * UpdateItem with the same condition that expires the item and keeps its fencing token
     * ({@see LockRequests::expireIfOwner()}).
     *
     * @internal used by {@see DynamoDbLock::release()}
     *
     * @param  string  $name
     * @param  mixed  $owner
     */
    public function releaseLock($name, $owner): bool
    {
        if ($this->releaseMode === self::RELEASE_KEEP_FENCE) {
            return $this->lockRequests()->expireIfOwner($name, $owner, $this->releasedExpiry());
        }

        return $this->lockRequests()->deleteIfOwner($name, $owner);
    }

    /**
     * Deletes lock `$name` whoever holds it (Laravel's `forceRelease()`): one DeleteItem; in
     * keep-fence mode one UpdateItem that expires it and keeps its fencing token
     * ({@see LockRequests::expire()}).
     *
     * @internal used by {@see DynamoDbLock::forceRelease()}
     *
     * @param  string  $name
     */
    public function forceReleaseLock($name): void
    {
        if ($this->releaseMode === self::RELEASE_KEEP_FENCE) {
            $this->lockRequests()->expire($name, $this->releasedExpiry());

            return;
        }
        $this->lockRequests()->delete($name);
    }

    /**
     * The `expires_at` a keep-fence release writes: now minus a day. Every reader sees the lock
     * free at once (Laravel's `get()`: `expires_at <= now`; `add()` and every ddblock acquire:
     * `expires_at < now - margin`), even with a clock up to a day behind this one, and the value
     * stays inside DynamoDB TTL's window, so TTL still deletes the item eventually. The Rust
     * core's `released_expiry`.
     */
    private function releasedExpiry(): int
    {
        return $this->currentTime() - self::RELEASED_EXPIRY_BACK_SECONDS;
    }

    /**
     * Extends `$owner`'s live lock to now + `$seconds`: the UpdateItem of Laravel 12.63+'s
     * `refresh()` (`attribute_exists(#key) AND #value = :owner AND #expires_at > :now`). False
     * when the lock is not ours or has expired.
     *
     * @internal used by {@see DynamoDbLock::refresh()}
     *
     * @param  string  $name
     * @param  mixed  $owner
     * @param  int  $seconds
     */
    public function refreshLock($name, $owner, $seconds): bool
    {
        return $this->lockRequests()->refreshIfOwner(
            $name,
            $owner,
            $this->currentTime(),
            (int) $this->toTimestamp($seconds)
        );
    }

    /**
     * The owner of lock `$name` as Laravel's `getCurrentOwner()` returns it (the stored value
     * unserialized as `get()` does: an int for a numeric owner), or null when free or expired.
     * One GetItem with `ConsistentRead: true`, never a stale one.
     *
     * @internal used by {@see DynamoDbLock::getCurrentOwner()}
     *
     * @param  string  $name
     * @return mixed
     */
    public function lockOwner($name)
    {
        $item = $this->lockRequests()->consistentItem($name, 'read the owner of', null);
        if ($item === null || $this->isExpired($item) || ! isset($item[$this->valueAttribute])) {
            return null;
        }

        return $this->unserialize($item[$this->valueAttribute]['S'] ?? $item[$this->valueAttribute]['N'] ?? null);
    }

    /**
     * Whether `$owner` holds lock `$name` now: one consistent GetItem, the stored value compared
     * as DynamoDB's `#value = :owner` compares it (so a numeric owner, stored as N, matches).
     *
     * @internal used by {@see DynamoDbLock::isOwnedBy()}
     *
     * @param  string  $name
     * @param  mixed  $owner
     */
    public function lockIsOwnedBy($name, $owner): bool
    {
        if ($owner === null) {
            // Laravel's isOwnedBy() is `getCurrentOwner() === $owner`: null "owns" a free or
            // expired lock (Laravel 11+'s lock tests, testOtherOwnerDoesNotOwnLockAfterRestore).
            return $this->lockOwner($name) === null;
        }
        $requests = $this->lockRequests();
        $lock = $requests->item();
        $item = $requests->consistentItem($name, 'read the owner of', $owner);

        return $item !== null && ! $this->isExpired($item) && $lock->carries($item, $lock->stored($owner));
    }

    /**
     * The table key of lock `$name` (the name as the lock holds it, prefixed once more like
     * every cache key).
     *
     * @param  string  $name
     */
    public function lockTableKey($name): string
    {
        return $this->prefix . $name;
    }

    /**
     * The requests of this store's locks, with its settings as they are now.
     */
    private function lockRequests(): LockRequests
    {
        return new LockRequests($this->dynamo, $this->table, $this->lockItem());
    }

    /**
     * This store's lock items, with its settings as they are now (a subclass or `setPrefix()`
     * may change the prefix): the owner is stored as the installed Laravel's `type()` and
     * `serialize()` store it in `add()`.
     */
    private function lockItem(): LockItem
    {
        return new LockItem(
            $this->prefix,
            $this->keyAttribute,
            $this->valueAttribute,
            $this->expirationAttribute,
            fn ($value): array => [$this->type($value) => (string) $this->serialize($value)]
        );
    }
}
