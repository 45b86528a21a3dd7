<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

use Aws\DynamoDb\Exception\DynamoDbException;

/**
 * How a failed AWS SDK request is read: the core's classifier (`aws/fault.rs`; docs/semantics.md).
 *
 * @internal
 */
final class AwsFault
{
    /** Throttled: refused, nothing written. */
    private const THROTTLING_CODES = [
        'ProvisionedThroughputExceededException',
        'ThrottlingException',
        'RequestLimitExceeded',
        'Throttling',
    ];

    /** curl errors of a connection never made (proxy, host, connect, TLS): nothing was sent. */
    private const NEVER_SENT_CURL_ERRORS = [5, 6, 7, 35];

    /**
     * Whether the request may have been applied: sent without an answer, a 5xx code
     * (`InternalServerError`, `ServiceUnavailable`), or an answer that is not DynamoDB's.
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

    /** Whether the request was refused before it could land: throttled, or never connected. */
    public static function refusedBeforeLanding(DynamoDbException $e): bool
    {
        $code = $e->getAwsErrorCode();
        if ($code !== null) {
            return in_array($code, self::THROTTLING_CODES, true);
        }

        return $e->getResponse() === null && ! self::mayHaveCommitted($e);
    }

    /** A failure in words: DynamoDB's code and message, or "no answer from DynamoDB: ...". */
    public static function describe(DynamoDbException $e): string
    {
        if ($e->getAwsErrorCode() !== null) {
            return $e->getAwsErrorCode() . ': ' . ($e->getAwsErrorMessage() ?? 'no message');
        }
        $previous = $e->getPrevious();

        return 'no answer from DynamoDB: ' . ($previous !== null ? $previous->getMessage() : $e->getMessage());
    }
}
