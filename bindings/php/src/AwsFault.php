<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

use Aws\DynamoDb\Exception\DynamoDbException;

/**
 * How a failed request of the AWS SDK for PHP is read: whether it was sent and may have been
 * applied, whether it was refused before it could land, and the failure in words. The acquire's
 * resend and retry rules ({@see LockAttempt}) depend on exactly that. The Rust core's classifier
 * (`core/src/aws/fault.rs`, with `Error::may_have_committed` and `refused_before_landing` in
 * `core/src/lock/attempt.rs`).
 *
 * @internal
 */
final class AwsFault
{
    /**
     * DynamoDB's throttling error codes: the request was refused, nothing was written (the
     * core's `Error::Throttled`).
     */
    private const THROTTLING_CODES = [
        'ProvisionedThroughputExceededException',
        'ThrottlingException',
        'RequestLimitExceeded',
        'Throttling',
    ];

    /**
     * curl errors of a connection that was never made (nothing was sent): resolving a proxy or
     * the host, connecting, TLS. A timeout (28) counts only when it came before anything was sent.
     */
    private const NEVER_SENT_CURL_ERRORS = [5, 6, 7, 35];

    /**
     * Whether a failed request may have been applied: it was sent and no answer came (a timeout,
     * a connection reset or closed after sending), the answer's code is `InternalServerError` or
     * `ServiceUnavailable` (whatever its HTTP status: DynamoDB's 500 and 503, and also a proxy's
     * 502 `ServiceUnavailable` for a server it could not reach, which cannot be told apart), or
     * something that is not DynamoDB answered. Not a connection that was never made, nor any
     * other answer of DynamoDB's (throttling, validation, a missing table): those wrote nothing.
     * The core's rule (`Error::may_have_committed`).
     */
    public static function mayHaveCommitted(DynamoDbException $e): bool
    {
        $code = $e->getAwsErrorCode();
        if ($code !== null) {
            return in_array($code, ['InternalServerError', 'ServiceUnavailable'], true);
        }
        if ($e->getResponse() !== null) {
            return true;
        }
        $previous = $e->getPrevious();
        $context = $previous !== null && method_exists($previous, 'getHandlerContext')
            ? $previous->getHandlerContext() : [];
        $errno = (int) ($context['errno'] ?? 0);
        if (in_array($errno, self::NEVER_SENT_CURL_ERRORS, true)) {
            return false;
        }

        // A timeout before anything was sent (while resolving or connecting) wrote nothing.
        return ! ($errno === 28 && (float) ($context['pretransfer_time'] ?? 1) === 0.0);
    }

    /**
     * Whether a failed request was refused before it could change anything: DynamoDB throttled
     * it, or the connection was never made. The core's rule (`refused_before_landing`): such a
     * try of the acquire write is retried; anything else ends the tries.
     */
    public static function refusedBeforeLanding(DynamoDbException $e): bool
    {
        $code = $e->getAwsErrorCode();
        if ($code !== null) {
            return in_array($code, self::THROTTLING_CODES, true);
        }

        return $e->getResponse() === null && ! self::mayHaveCommitted($e);
    }

    /**
     * A failure in words: "no answer from DynamoDB: cURL error 52: ..." or DynamoDB's error code
     * and message.
     */
    public static function describe(DynamoDbException $e): string
    {
        if ($e->getAwsErrorCode() !== null) {
            return $e->getAwsErrorCode() . ': ' . ($e->getAwsErrorMessage() ?? 'no message');
        }
        $previous = $e->getPrevious();

        return 'no answer from DynamoDB: ' . ($previous !== null ? $previous->getMessage() : $e->getMessage());
    }
}
