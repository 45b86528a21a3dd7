<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

use Aws\DynamoDb\Exception\DynamoDbException;

/**
 * A lock request that failed for a reason other than its condition (a DynamoDbException, as
 * Laravel's own lock lets through); the message names the lock and table, never the owner.
 */
class LockException extends DynamoDbException
{
    /**
     * @param  string  $action  acquire, release, refresh, force-release, read the owner of
     * @param  mixed  $owner  kept out of the message
     * @param  string  $settled  what a read then found, appended to the cause
     * @return static
     */
    public static function fromAws(
        DynamoDbException $e,
        string $action,
        string $table,
        string $key,
        $owner = null,
        string $settled = ''
    ) {
        if ($e->isConnectionError()) {
            $cause = 'no answer from DynamoDB: ' . $e->getMessage();
        } elseif ($e->getAwsErrorCode() !== null) {
            $cause = $e->getAwsErrorCode() . ': ' . ($e->getAwsErrorMessage() ?? 'no message')
                . ($e->getAwsErrorCode() === 'ResourceNotFoundException'
                    ? ' (is the table name, region or endpoint wrong, or the table not created?)' : '');
        } else {
            $cause = $e->getMessage();
        }
        $message = sprintf(
            'ddblock: could not %s the lock with key "%s" in table "%s": %s',
            $action,
            $key,
            $table,
            self::withoutOwner($cause, $owner)
        ) . ($settled === '' ? '' : '; ' . $settled);

        return static::wrap($e, $message, $owner);
    }

    /**
     * `$e` as this class with `$message`, its AWS error details kept (the owner redacted).
     *
     * @param  mixed  $owner
     * @return static
     */
    protected static function wrap(DynamoDbException $e, string $message, $owner): self
    {
        $awsMessage = $e->getAwsErrorMessage();

        return new static($message, $e->getCommand(), [
            'code' => $e->getAwsErrorCode(),
            'type' => $e->getAwsErrorType(),
            'message' => $awsMessage === null ? null : self::withoutOwner($awsMessage, $owner),
            'request_id' => $e->getAwsRequestId(),
            'response' => $e->getResponse(),
            'request' => $e->getRequest(),
            'result' => $e->getResult(),
            'connection_error' => $e->isConnectionError(),
            'transfer_stats' => $e->getTransferInfo(),
        ], $e);
    }

    /**
     * An owner as its first four characters and its length: `"y5lg…" (16 chars)`.
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
     * `$text` with the owner redacted (a server message may echo a value it rejected).
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
