<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

use Aws\DynamoDb\Exception\DynamoDbException;

/**
 * A lock request that failed for a reason other than its condition (a failed condition is the
 * answer "not ours" / "held", never an exception): missing table, throttling past the retries
 * (the AWS SDK's; for the acquire write, the driver's 3 tries), an unreachable endpoint, bad
 * credentials.
 *
 * It extends the SDK's DynamoDbException, which Laravel's own lock lets through, so code that
 * catches that keeps working; the message adds what was being done to which lock, the error code
 * is kept (`getAwsErrorCode()`), and the SDK's exception is the previous one. The owner never
 * appears in the message: whoever has it can release the lock.
 */
class LockException extends DynamoDbException
{
    /**
     * @param  string  $action  acquire, release, refresh, force-release, read the owner of
     * @param  string  $key  the lock's table key
     * @param  mixed  $owner  kept out of the message
     */
    public static function fromAws(
        DynamoDbException $e,
        string $action,
        string $table,
        string $key,
        $owner = null
    ): self {
        if ($e->isConnectionError()) {
            $cause = 'no answer from DynamoDB: ' . $e->getMessage();
        } elseif ($e->getAwsErrorCode() !== null) {
            $cause = $e->getAwsErrorCode() . ': ' . ($e->getAwsErrorMessage() ?? 'no message')
                . ($e->getAwsErrorCode() === 'ResourceNotFoundException'
                    ? ' (is the table name, region or endpoint wrong, or the table not created?)' : '');
        } else {
            $cause = $e->getMessage();
        }
        // The key, not the name: on Laravel 8-11 the lock's own name already carries the prefix,
        // and the key is what `ddblock status --raw-key` and the table show.
        $message = sprintf(
            'ddblock: could not %s the lock with key "%s" in table "%s": %s',
            $action,
            $key,
            $table,
            self::withoutOwner($cause, $owner)
        );

        return new self($message, $e->getCommand(), [
            'code' => $e->getAwsErrorCode(),
            'type' => $e->getAwsErrorType(),
            'message' => $e->getAwsErrorMessage() === null
                ? null : self::withoutOwner($e->getAwsErrorMessage(), $owner),
            'request_id' => $e->getAwsRequestId(),
            'response' => $e->getResponse(),
            'request' => $e->getRequest(),
            'result' => $e->getResult(),
            'connection_error' => $e->isConnectionError(),
            'transfer_stats' => $e->getTransferInfo(),
        ], $e);
    }

    /**
     * An owner shown as its first four characters and its length (`"y5lg…" (16 chars)`).
     *
     * @param  mixed  $owner
     */
    public static function redact($owner): string
    {
        $owner = (string) $owner;
        $length = mb_strlen($owner);

        return $length <= 4 ? sprintf('"%s"', $owner) : sprintf('"%s…" (%d chars)', mb_substr($owner, 0, 4), $length);
    }

    /**
     * `$text` with every occurrence of the owner replaced by its redacted form (a server message
     * may echo a value it rejected).
     *
     * @param  mixed  $owner
     */
    protected static function withoutOwner(string $text, $owner): string
    {
        if ($owner === null || ! is_scalar($owner) || mb_strlen((string) $owner) <= 4) {
            return $text;
        }

        return str_replace((string) $owner, self::redact($owner), $text);
    }
}
