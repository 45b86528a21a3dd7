<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

use Aws\DynamoDb\Exception\DynamoDbException;

/**
 * An acquire whose write got no answer, nor did its resend: the write was cleaned up, and
 * `cleanup()` says what that found; or a release whose answers and settling read were all lost
 * (docs/php.md, "Errors").
 */
class OutcomeUnknownException extends LockException
{
    public const CLEANUP_DELETED = 'deleted';
    public const CLEANUP_NOT_FOUND = 'not_found';
    public const CLEANUP_FAILED = 'failed';

    private string $cleanup = self::CLEANUP_FAILED;
    private int $expiresAt = 0;

    /**
     * @param  DynamoDbException  $last  the last error of the write
     * @param  string  $cleanup  a CLEANUP_ constant, `$found` the same in words
     * @param  int  $expiresAt  the expiry the last write carried
     * @param  mixed  $owner  kept out of the message
     */
    public static function afterCleanUp(
        DynamoDbException $last,
        string $table,
        string $key,
        string $cause,
        string $cleanup,
        string $found,
        int $expiresAt,
        $owner
    ): self {
        $e = self::wrap($last, sprintf(
            'ddblock: the outcome of acquiring the lock with key "%s" in table "%s" is unknown (%s); clean-up: %s',
            $key,
            $table,
            self::withoutOwner($cause, $owner),
            self::withoutOwner($found, $owner)
        ), $owner);
        $e->cleanup = $cleanup;
        $e->expiresAt = $expiresAt;

        return $e;
    }

    /**
     * A release whose sends got no answer, and the read to settle it none either: the release
     * may have landed; if not, the lock frees itself at its expiry (`cleanup()` is `failed`).
     *
     * @param  DynamoDbException  $last  the last error of the release
     * @param  string  $read  the read's failure in words
     * @param  mixed  $owner  kept out of the message
     */
    public static function ofRelease(DynamoDbException $last, string $table, string $key, string $read, $owner): self
    {
        return self::wrap($last, sprintf(
            'ddblock: the outcome of releasing the lock with key "%s" in table "%s" is unknown (%s): the read '
            . 'to tell whether the release landed failed too (%s); if it did not, the lock frees itself at its expiry',
            $key,
            $table,
            self::withoutOwner(AwsFault::describe($last), $owner),
            self::withoutOwner($read, $owner)
        ), $owner);
    }

    /** What the clean-up found: `deleted`, `not_found` or `failed`. */
    public function cleanup(): string
    {
        return $this->cleanup;
    }

    /** Whether this call's write may still hold the lock (the clean-up failed), until expiresAt(). */
    public function lockMayBeHeld(): bool
    {
        return $this->cleanup === self::CLEANUP_FAILED;
    }

    /** When the lock is free at the latest, if a write landed and the clean-up failed. */
    public function expiresAt(): int
    {
        return $this->expiresAt;
    }
}
