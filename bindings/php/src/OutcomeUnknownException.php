<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

use Aws\DynamoDb\Exception\DynamoDbException;

/**
 * An acquire whose write got no answer (a timeout, a connection reset or closed after the request
 * was sent, `InternalServerError` or `ServiceUnavailable`), sent again once with the same attempt
 * id without an answer either (or refused on every try: throttled): the write may have landed,
 * and no later refusal hides it (each try is sent once, without the AWS SDK's retries). The
 * driver then deleted it again with a DeleteItem conditioned on this owner and attempt id (it
 * deletes this call's write and nothing else); `cleanup()` says what that found:
 *
 * - `deleted` (CLEANUP_DELETED): the write had landed and is deleted again: the lock is free;
 * - `not_found` (CLEANUP_NOT_FOUND): nothing of this call's is there: the write did not land;
 * - `failed` (CLEANUP_FAILED): the clean-up failed too: if the write landed, the lock is held
 *   until it expires (by `expiresAt()` at the latest), and nobody can release it but its owner.
 *
 * Either way the lock is not this handle's: `get()`/`block()` throw this instead of answering true
 * or false. It is a {@see LockException} (so a `DynamoDbException`); the AWS error of the last
 * write is the previous exception; the owner never appears in the message.
 */
class OutcomeUnknownException extends LockException
{
    public const CLEANUP_DELETED = 'deleted';
    public const CLEANUP_NOT_FOUND = 'not_found';
    public const CLEANUP_FAILED = 'failed';

    private string $cleanup = self::CLEANUP_FAILED;
    private int $expiresAt = 0;

    /**
     * @param  DynamoDbException  $last  the last error of the write (no answer)
     * @param  string  $cause  what went wrong, in words (the owner already left out)
     * @param  string  $cleanup  one of the CLEANUP_ constants
     * @param  string  $found  what the clean-up found, in words
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
        $message = sprintf(
            'ddblock: the outcome of acquiring the lock with key "%s" in table "%s" is unknown (%s); clean-up: %s',
            $key,
            $table,
            self::withoutOwner($cause, $owner),
            self::withoutOwner($found, $owner)
        );
        $e = new self($message, $last->getCommand(), [
            'code' => $last->getAwsErrorCode(),
            'type' => $last->getAwsErrorType(),
            'message' => $last->getAwsErrorMessage() === null
                ? null : self::withoutOwner($last->getAwsErrorMessage(), $owner),
            'request_id' => $last->getAwsRequestId(),
            'response' => $last->getResponse(),
            'request' => $last->getRequest(),
            'result' => $last->getResult(),
            'connection_error' => $last->isConnectionError(),
            'transfer_stats' => $last->getTransferInfo(),
        ], $last);
        $e->cleanup = $cleanup;
        $e->expiresAt = $expiresAt;

        return $e;
    }

    /**
     * What the clean-up found: `deleted`, `not_found` or `failed` (the CLEANUP_ constants).
     */
    public function cleanup(): string
    {
        return $this->cleanup;
    }

    /**
     * Whether the lock may still be held by this call's write (the clean-up failed): then it
     * expires at `expiresAt()`.
     */
    public function lockMayBeHeld(): bool
    {
        return $this->cleanup === self::CLEANUP_FAILED;
    }

    /**
     * The Unix time the lock is free by at the latest, if a write landed and the clean-up failed:
     * the expiry of the last write sent (the earlier send carried the same or a second less).
     */
    public function expiresAt(): int
    {
        return $this->expiresAt;
    }
}
