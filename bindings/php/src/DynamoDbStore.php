<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

use Aws\CommandInterface;
use Aws\DynamoDb\Exception\DynamoDbException;
use Illuminate\Cache\DynamoDbStore as LaravelDynamoDbStore;
use InvalidArgumentException;
use ReflectionClass;

/**
 * Laravel's DynamoDB cache store whose locks are ddblock's: taken by one UpdateItem that also
 * writes an attempt id and a fencing token, released by one owner-conditioned DeleteItem.
 *
 * Every cache operation, the constructor and the key layout are those of the installed Laravel
 * (this class extends `Illuminate\Cache\DynamoDbStore`); only `lock()` and `restoreLock()` change:
 * they return a {@see DynamoDbLock}. The lock requests are built here because they need the
 * store's table, attribute names, prefix and value encoding (all protected in Laravel's store).
 *
 * The wire format of every request below is specified by the conformance vectors in
 * `compat-tests/conformance/v2/` (published in docs/format.md); the tests compare each request
 * the AWS SDK sends with them.
 */
class DynamoDbStore extends LaravelDynamoDbStore
{
    /** DynamoDB's limit on a partition key, in bytes (UTF-8). */
    public const MAX_KEY_BYTES = 2048;

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
     * ddblock's fencing token on a lock item (N); Laravel neither reads nor writes it.
     */
    public const FENCE_ATTRIBUTE = 'ddblock_fence';

    /**
     * The id of the acquire call that wrote a lock item (S, 16 characters of [A-Za-z0-9]).
     */
    public const ATTEMPT_ATTRIBUTE = 'ddblock_attempt';

    /**
     * Writes per acquire call when the lock vanished (freed) or expired between a failed write
     * and the look at its holder; the same bound as the Rust core's acquire.
     */
    private const ACQUIRE_WRITES = 3;

    /**
     * Writes of one acquire call that get no answer before it gives up and cleans up (the first
     * and one resend), and the pause before the resend, in microseconds: the core's, without a
     * deadline.
     */
    private const UNKNOWN_WRITES = 2;
    private const RESEND_PAUSE_US = 50000;

    /**
     * Tries of the acquire write per call when tries are refused before they could land
     * (throttled, or a connection never made), and the backoff between them: 50 ms doubling,
     * at most 1 s, jittered. The core's rule and default (`max_attempts`, 3). The write itself
     * is sent once per try ({@see singleTry()}: no SDK retry, no libcurl resend), so the driver
     * sees every try's outcome.
     */
    private const ACQUIRE_TRIES = 3;
    private const REFUSED_PAUSE_US = 50000;
    private const REFUSED_PAUSE_MAX_US = 1000000;

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
     * Take over an expired lock only once `expires_at < now - margin` (seconds).
     *
     * @var int
     */
    protected $clockSkewMargin = self::DEFAULT_CLOCK_SKEW_MARGIN;

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
     * Each try of the write is sent exactly once ({@see singleTry()}): a retry below this method
     * reports only its last send, so a write that landed unanswered and was then throttled would
     * read as "nothing written" and be left holding the lock. Tries refused before they could
     * land (throttled, or a connection never made) are retried here instead, after a jittered
     * backoff, up to 3 tries per call (the core's rule); when they run out after a try that may
     * have landed, the write is cleaned up as above.
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
        $stored = $this->storedValue($owner);
        $attempt = $this->attemptIds !== null ? (string) ($this->attemptIds)() : self::randomId();
        $unknown = null;
        $failure = null;
        $writes = 0;
        $refused = 0;
        $refusedPause = self::REFUSED_PAUSE_US;
        $expiresAt = 0;
        while (true) {
            $writes++;
            $now = $this->currentTime();
            $expiresAt = (int) $this->toTimestamp($seconds);
            try {
                $answer = $this->takeLock($name, $stored, $attempt, $expiresAt, $now - $this->clockSkewMargin);
            } catch (DynamoDbException $e) {
                if (self::mayHaveCommitted($e)) {
                    // No answer: the write may have landed. Send it again (same attempt id), once.
                    $unknown = $e;
                    if ($writes < self::UNKNOWN_WRITES) {
                        usleep(self::RESEND_PAUSE_US);
                        continue;
                    }
                    break;
                }
                if (self::refusedBeforeLanding($e) && $refused + 1 < self::ACQUIRE_TRIES) {
                    // Nothing was written: try again after a backoff (the SDK's retry, made here).
                    $refused++;
                    usleep(self::jittered($refusedPause));
                    $refusedPause = min($refusedPause * 2, self::REFUSED_PAUSE_MAX_US);
                    $writes--; // not a write that reached the item
                    continue;
                }
                if ($unknown !== null) {
                    // An earlier try may have landed: clean it up, whatever ended the tries.
                    $failure = $e;
                    break;
                }
                throw LockException::fromAws($e, 'acquire', $this->table, $this->prefix . $name, $owner);
            }
            if ($answer['written']) {
                return ['expires_at' => $expiresAt, 'fence' => $answer['fence'], 'recovered' => false];
            }
            $old = $answer['old'];
            if ($old !== null) {
                $oldExpiry = $this->expiryOf($old);
                if (($old[self::ATTEMPT_ATTRIBUTE]['S'] ?? null) === $attempt) {
                    if ($oldExpiry !== null && $oldExpiry > $this->currentTime()) {
                        // This call's own earlier write landed; its answer was lost.
                        return ['expires_at' => $oldExpiry, 'fence' => self::fenceOf($old), 'recovered' => true];
                    }
                    // Our own write, already expired: not a lease; write again.
                } elseif ($oldExpiry === null || $oldExpiry >= $this->currentTime() - $this->clockSkewMargin) {
                    return null; // held (by another owner, or by this owner through another handle)
                }
                // Else it expired past the margin meanwhile (our clock moved on): write again.
            }
            // No item: freed between the write and the read: write again.
            if ($writes >= self::ACQUIRE_WRITES) {
                break;
            }
        }
        if ($unknown === null) {
            return null; // the lock kept changing hands under us
        }
        [$cleanup, $found] = $this->deleteAttempt($name, $stored, $attempt, $expiresAt);
        $cause = self::describe($unknown) . ($failure !== null ? '; then: ' . self::describe($failure) : '');

        throw OutcomeUnknownException::afterCleanUp(
            $failure ?? $unknown,
            $this->table,
            $this->prefix . $name,
            $cause,
            $cleanup,
            $found,
            $expiresAt,
            $owner
        );
    }

    /**
     * One write of an acquire: `written` with the new fence, or not written with `old`, the
     * holder's item (from ALL_OLD or, on servers that ignore ALL_OLD, one consistent read; null
     * when the item is gone). Other failures are thrown as the SDK threw them.
     *
     * @param  string  $name
     * @param  array<string, string>  $stored
     * @return array{written: bool, fence?: int|null, old?: array<string, mixed>|null}
     */
    private function takeLock($name, array $stored, string $attempt, int $expiresAt, int $cutoff): array
    {
        $fenceBase = $this->fenceBases !== null ? (int) ($this->fenceBases)() : self::clockMicros();
        try {
            $result = $this->dynamo->execute($this->singleTry('UpdateItem', [
                'TableName' => $this->table,
                'Key' => $this->lockKey($name),
                'UpdateExpression' => 'SET #value = :owner, #expires_at = :expires_at, #attempt = :attempt, '
                    . '#fence = if_not_exists(#fence, :fence_base) + :one',
                'ConditionExpression' => 'attribute_not_exists(#key) OR #expires_at < :now',
                'ExpressionAttributeNames' => [
                    '#key' => $this->keyAttribute,
                    '#value' => $this->valueAttribute,
                    '#expires_at' => $this->expirationAttribute,
                    '#attempt' => self::ATTEMPT_ATTRIBUTE,
                    '#fence' => self::FENCE_ATTRIBUTE,
                ],
                'ExpressionAttributeValues' => [
                    ':owner' => $stored,
                    ':expires_at' => ['N' => (string) $expiresAt],
                    ':attempt' => ['S' => $attempt],
                    ':fence_base' => ['N' => (string) $fenceBase],
                    ':one' => ['N' => '1'],
                    ':now' => ['N' => (string) $cutoff],
                ],
                'ReturnValues' => 'UPDATED_NEW',
                'ReturnValuesOnConditionCheckFailure' => 'ALL_OLD',
            ]));

            return ['written' => true, 'fence' => self::fenceOf($result['Attributes'] ?? [])];
        } catch (DynamoDbException $e) {
            if ($e->getAwsErrorCode() !== 'ConditionalCheckFailedException') {
                throw $e;
            }
            // DynamoDB and moto return the item that failed the condition (`Item`, in wire
            // format); dynalite ignores ALL_OLD. Then one consistent read says who holds it.
            $item = $e->get('Item');
        }
        if (! is_array($item) || $item === []) {
            $item = $this->dynamo->getItem([
                'TableName' => $this->table,
                'Key' => $this->lockKey($name),
                'ConsistentRead' => true,
            ])['Item'] ?? null;
        }

        return ['written' => false, 'old' => is_array($item) && $item !== [] ? $item : null];
    }

    /**
     * Command `$name` sent exactly once, so that its caller sees the outcome of every send:
     *
     * - without the SDK's retries (`@retries` 0, read by the legacy and the standard retry
     *   modes): the SDK reports only its last attempt, so a write that landed unanswered and was
     *   then throttled would read as "nothing was written";
     * - on a fresh connection (curl's `CURLOPT_FRESH_CONNECT`): libcurl itself resends a request,
     *   a POST included, when a connection it reused dies before any answer comes ("Connection
     *   died, retrying a fresh connect"), which hides a reset after the write landed in the same
     *   way. It never resends on a connection it has just opened. Other Guzzle handlers (PHP
     *   streams) open a connection per request anyway and ignore the option.
     *
     * @param  array<string, mixed>  $args
     */
    private function singleTry(string $name, array $args): CommandInterface
    {
        $command = $this->dynamo->getCommand($name, ['@retries' => 0] + $args);
        if (defined('CURLOPT_FRESH_CONNECT')) {
            // The client's default request options (its `http` config) are merged in already.
            $http = $command['@http'] ?? [];
            $http['curl'] = array_replace($http['curl'] ?? [], [CURLOPT_FRESH_CONNECT => true]);
            $command['@http'] = $http;
        }

        return $command;
    }

    /**
     * The clean-up of an acquire whose outcome is unknown: a DeleteItem of the lock only if it
     * is this call's write (`#value = :owner AND #attempt = :attempt`). Returns what it found (an
     * OutcomeUnknownException::CLEANUP_ constant) and the same in words.
     *
     * @param  string  $name
     * @param  array<string, string>  $stored
     * @return array{0: string, 1: string}
     */
    private function deleteAttempt($name, array $stored, string $attempt, int $expiresAt): array
    {
        try {
            $this->dynamo->deleteItem([
                'TableName' => $this->table,
                'Key' => $this->lockKey($name),
                'ConditionExpression' => '#value = :owner AND #attempt = :attempt',
                'ExpressionAttributeNames' => [
                    '#value' => $this->valueAttribute,
                    '#attempt' => self::ATTEMPT_ATTRIBUTE,
                ],
                'ExpressionAttributeValues' => [':owner' => $stored, ':attempt' => ['S' => $attempt]],
            ]);

            return [
                OutcomeUnknownException::CLEANUP_DELETED,
                'the write had landed and was deleted again: the lock is free',
            ];
        } catch (DynamoDbException $e) {
            if ($e->getAwsErrorCode() === 'ConditionalCheckFailedException') {
                return [
                    OutcomeUnknownException::CLEANUP_NOT_FOUND,
                    "nothing of this attempt's is there: the write did not land (or was taken over)",
                ];
            }

            return [OutcomeUnknownException::CLEANUP_FAILED, sprintf(
                'the clean-up delete failed too (%s): if the write landed, the lock stays until it expires, '
                . 'by %s UTC at the latest',
                self::describe($e),
                gmdate('Y-m-d H:i:s', $expiresAt)
            )];
        }
    }

    /**
     * Whether a failed request may have been applied: it was sent and no answer came (a timeout,
     * a connection reset or closed after sending), the answer's code is `InternalServerError` or
     * `ServiceUnavailable` (whatever its HTTP status: DynamoDB's 500 and 503, and also a proxy's
     * 502 `ServiceUnavailable` for a server it could not reach, which cannot be told apart), or
     * something that is not DynamoDB answered. Not a connection that was never made, nor any
     * other answer of DynamoDB's (throttling, validation, a missing table): those wrote nothing.
     * The core's rule (`Error::may_have_committed`).
     */
    private static function mayHaveCommitted(DynamoDbException $e): bool
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
    private static function refusedBeforeLanding(DynamoDbException $e): bool
    {
        $code = $e->getAwsErrorCode();
        if ($code !== null) {
            return in_array($code, self::THROTTLING_CODES, true);
        }

        return $e->getResponse() === null && ! self::mayHaveCommitted($e);
    }

    /**
     * `$us` less up to half of it at random (the SDK's jittered backoff), in microseconds.
     */
    private static function jittered(int $us): int
    {
        return $us - random_int(0, intdiv($us, 2));
    }

    /**
     * A failure in words: "no answer from DynamoDB: cURL error 52: ..." or DynamoDB's error code
     * and message.
     */
    private static function describe(DynamoDbException $e): string
    {
        if ($e->getAwsErrorCode() !== null) {
            return $e->getAwsErrorCode() . ': ' . ($e->getAwsErrorMessage() ?? 'no message');
        }
        $previous = $e->getPrevious();

        return 'no answer from DynamoDB: ' . ($previous !== null ? $previous->getMessage() : $e->getMessage());
    }

    /**
     * The expiry of a lock item, or null when it has none or it is not a number (then the
     * acquire condition never takes it over).
     *
     * @param  array<string, mixed>  $item
     */
    private function expiryOf(array $item): ?int
    {
        $n = $item[$this->expirationAttribute]['N'] ?? null;
        if (! is_string($n) || ! is_numeric($n)) {
            return null;
        }
        $f = floor((float) $n);

        return is_finite($f) && abs($f) < 9.2e18 ? (int) $f : null;
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
        $n = $item[self::FENCE_ATTRIBUTE]['N'] ?? null;

        return is_string($n) && ctype_digit($n) ? (int) $n : null;
    }

    /**
     * A fresh attempt id: 16 characters of [A-Za-z0-9] from PHP's CSPRNG.
     */
    private static function randomId(): string
    {
        $alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
        $id = '';
        for ($i = 0; $i < 16; $i++) {
            $id .= $alphabet[random_int(0, 61)];
        }

        return $id;
    }

    /**
     * The system clock in microseconds since the epoch, exactly (microtime()'s text, no float):
     * where a fence starts when the lock item has none.
     */
    private static function clockMicros(): int
    {
        [$fraction, $seconds] = explode(' ', microtime());

        return (int) $seconds * 1000000 + (int) substr($fraction, 2, 6);
    }

    /**
     * Releases lock `$name` if `$owner` holds it: ONE DeleteItem conditioned on `#value = :owner`,
     * the owner typed as `add()` stored it (N when numeric). No read before it, so no stale read
     * can skip it. True only when this call deleted our item; a failed condition (not ours, or
     * already gone) is false, never an exception.
     *
     * @internal used by {@see DynamoDbLock::release()}
     *
     * @param  string  $name
     * @param  mixed  $owner
     */
    public function releaseLock($name, $owner): bool
    {
        try {
            $this->dynamo->deleteItem([
                'TableName' => $this->table,
                'Key' => $this->lockKey($name),
                'ConditionExpression' => '#value = :owner',
                'ExpressionAttributeNames' => ['#value' => $this->valueAttribute],
                'ExpressionAttributeValues' => [':owner' => $this->storedValue($owner)],
                // The holder comes back with a failure (on DynamoDB and moto); the answer to
                // Laravel's release() is false either way, so it is not read further here.
                'ReturnValuesOnConditionCheckFailure' => 'ALL_OLD',
            ]);

            return true;
        } catch (DynamoDbException $e) {
            $this->oldItemOfFailedCondition($e, 'release', $name, $owner);

            return false;
        }
    }

    /**
     * Deletes lock `$name` whoever holds it (Laravel's `forceRelease()`): one DeleteItem.
     *
     * @internal used by {@see DynamoDbLock::forceRelease()}
     *
     * @param  string  $name
     */
    public function forceReleaseLock($name): void
    {
        try {
            $this->dynamo->deleteItem([
                'TableName' => $this->table,
                'Key' => $this->lockKey($name),
            ]);
        } catch (DynamoDbException $e) {
            throw LockException::fromAws($e, 'force-release', $this->table, $this->prefix . $name);
        }
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
        try {
            $this->dynamo->updateItem([
                'TableName' => $this->table,
                'Key' => $this->lockKey($name),
                'ConditionExpression' => 'attribute_exists(#key) AND #value = :owner AND #expires_at > :now',
                'UpdateExpression' => 'SET #expires_at = :expires_at',
                'ExpressionAttributeNames' => [
                    '#key' => $this->keyAttribute,
                    '#value' => $this->valueAttribute,
                    '#expires_at' => $this->expirationAttribute,
                ],
                'ExpressionAttributeValues' => [
                    ':owner' => $this->storedValue($owner),
                    ':now' => ['N' => (string) $this->currentTime()],
                    ':expires_at' => ['N' => (string) $this->toTimestamp($seconds)],
                ],
            ]);

            return true;
        } catch (DynamoDbException $e) {
            $this->oldItemOfFailedCondition($e, 'refresh', $name, $owner);

            return false;
        }
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
        $item = $this->consistentItem($name, 'read the owner of', null);
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
        $item = $this->consistentItem($name, 'read the owner of', $owner);

        return $item !== null && ! $this->isExpired($item) && $this->carries($item, $this->storedValue($owner));
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
     * @param  string  $name
     * @return array<string, array<string, string>>
     */
    private function lockKey($name): array
    {
        $key = $this->prefix . $name;
        // DynamoDB refuses an empty partition key and one over 2048 bytes (bytes, not
        // characters; dynalite and moto let some through): refused here, before any request, as
        // the core does, so no server ever holds such a lock.
        if ($key === '') {
            throw new InvalidArgumentException(
                'ddblock: invalid lock key "": it is empty; give a non-empty key or lock name'
            );
        }
        if (strlen($key) > self::MAX_KEY_BYTES) {
            throw new InvalidArgumentException(sprintf(
                'ddblock: invalid lock key "%s…": it is %d bytes once prefixed, and DynamoDB partition '
                . 'keys are at most %d bytes; use a shorter key (e.g. a hash of it)',
                mb_substr($key, 0, 64),
                strlen($key),
                self::MAX_KEY_BYTES
            ));
        }

        return [$this->keyAttribute => ['S' => $key]];
    }

    /**
     * The attribute value `add()` writes for `$value`: `N` when PHP's is_numeric(), else the
     * serialize()d `S`, through Laravel's own `type()` and `serialize()`.
     *
     * @param  mixed  $value
     * @return array<string, string>
     */
    private function storedValue($value): array
    {
        return [$this->type($value) => (string) $this->serialize($value)];
    }

    /**
     * Whether item `$item` holds the stored value `$stored`, compared as DynamoDB compares
     * attribute values: same type, and for N the same number (DynamoDB stores `007` as `7`).
     *
     * @param  array<string, mixed>  $item
     * @param  array<string, string>  $stored
     */
    private function carries(array $item, array $stored): bool
    {
        $value = $item[$this->valueAttribute] ?? null;
        if (! is_array($value)) {
            return false;
        }
        if (isset($stored['N'])) {
            return isset($value['N']) && Numbers::equal((string) $value['N'], $stored['N']);
        }

        return isset($value['S']) && $value['S'] === $stored['S'];
    }

    /**
     * One GetItem of lock `$name` with `ConsistentRead: true`: the item, or null.
     *
     * @param  string  $name
     * @param  mixed  $owner  only to keep it out of error messages
     * @return array<string, mixed>|null
     */
    private function consistentItem($name, string $action, $owner): ?array
    {
        try {
            $result = $this->dynamo->getItem([
                'TableName' => $this->table,
                'Key' => $this->lockKey($name),
                'ConsistentRead' => true,
            ]);
        } catch (DynamoDbException $e) {
            throw LockException::fromAws($e, $action, $this->table, $this->prefix . $name, $owner);
        }
        $item = $result['Item'] ?? null;

        return is_array($item) && $item !== [] ? $item : null;
    }

    /**
     * A failed condition is an answer: returns the item the server sent back with it (ALL_OLD),
     * or null when it sent none (no item, or a server that ignores ALL_OLD). Any other error is
     * thrown as a {@see LockException}.
     *
     * @param  string  $name
     * @param  mixed  $owner
     * @return array<string, mixed>|null
     */
    private function oldItemOfFailedCondition(DynamoDbException $e, string $action, $name, $owner): ?array
    {
        if ($e->getAwsErrorCode() !== 'ConditionalCheckFailedException') {
            throw LockException::fromAws($e, $action, $this->table, $this->prefix . $name, $owner);
        }
        // The AWS SDK puts the error body's members on the exception: `Item` is the old item, in
        // DynamoDB's wire format (the same shape as GetItem's `Item`).
        $item = $e->get('Item');

        return is_array($item) && $item !== [] ? $item : null;
    }
}
