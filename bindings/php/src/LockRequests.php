<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

use Aws\CommandInterface;
use Aws\DynamoDb\DynamoDbClient;
use Aws\DynamoDb\Exception\DynamoDbException;
use Aws\Middleware;

/**
 * The DynamoDB requests of a lock, each named by what it means: the conditional write that takes
 * it (with the fallback read when the server leaves the holder out of its answer), the clean-up
 * delete of one acquire call's write, the owner-conditioned delete that releases it (or, in
 * keep-fence mode, the owner-conditioned update that expires it and keeps its fencing token), the
 * unconditional delete (or expiry), the refresh update and the consistent read. The Rust core's
 * `core/src/dynamo/request.rs` (and `core/src/lock/dynamo.rs` for the fallback reads).
 *
 * Built by {@see DynamoDbStore} from its settings (client, table, and the {@see LockItem} of its
 * prefix, attribute names and value encoding), which Laravel's store keeps protected. The wire
 * format of every request is specified by the conformance vectors in
 * `compat-tests/conformance/v2/` (published in docs/format.md); the tests compare each request
 * the AWS SDK sends with them.
 *
 * @internal
 */
final class LockRequests
{
    /** The update of a keep-fence release: expired, no owner, no attempt id; `ddblock_fence` stays. */
    private const RELEASE_KEEPING_FENCE = 'SET #expires_at = :expires_at REMOVE #value, #attempt, #since';

    /** @var DynamoDbClient */
    private $dynamo;

    /** @var string */
    private $table;

    private LockItem $item;

    /**
     * @param  string  $table
     */
    public function __construct(DynamoDbClient $dynamo, $table, LockItem $item)
    {
        $this->dynamo = $dynamo;
        $this->table = $table;
        $this->item = $item;
    }

    /**
     * What the items of these locks are: key, attribute names, stored owner.
     */
    public function item(): LockItem
    {
        return $this->item;
    }

    /**
     * The table the locks are in.
     */
    public function table(): string
    {
        return $this->table;
    }

    /**
     * One write of an acquire: ONE UpdateItem that writes Laravel's lock item (the value and
     * expiry `add()` writes) plus the attempt id (`ddblock_attempt`) and the fencing token
     * (`ddblock_fence = if_not_exists(ddblock_fence, :fence_base) + 1`), conditioned like `add()`
     * with `:now` = `$cutoff` (`attribute_not_exists(#key) OR #expires_at < :now`), sent once
     * ({@see singleTry()}).
     *
     * Returns `written` with the new fence, or not written with `old`, the holder's item (from
     * ALL_OLD or, on servers that ignore ALL_OLD, one consistent read; null when the item is
     * gone). Other failures are thrown as the SDK threw them.
     *
     * @param  string  $name
     * @param  array<string, string>  $stored
     * @return array{written: bool, fence?: int|null, old?: array<string, mixed>|null}
     */
    public function takeLock($name, array $stored, string $attempt, int $expiresAt, int $cutoff, int $fenceBase): array
    {
        try {
            $result = $this->dynamo->execute($this->singleTry('UpdateItem', [
                'TableName' => $this->table,
                'Key' => $this->item->key($name),
                'UpdateExpression' => 'SET #value = :owner, #expires_at = :expires_at, #attempt = :attempt, '
                    . '#fence = if_not_exists(#fence, :fence_base) + :one',
                'ConditionExpression' => 'attribute_not_exists(#key) OR #expires_at < :now',
                'ExpressionAttributeNames' => [
                    '#key' => $this->item->keyAttribute(),
                    '#value' => $this->item->valueAttribute(),
                    '#expires_at' => $this->item->expirationAttribute(),
                    '#attempt' => LockItem::ATTEMPT_ATTRIBUTE,
                    '#fence' => LockItem::FENCE_ATTRIBUTE,
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

            return ['written' => true, 'fence' => LockItem::fenceOf($result['Attributes'] ?? [])];
        } catch (DynamoDbException $e) {
            if ($e->getAwsErrorCode() !== 'ConditionalCheckFailedException') {
                throw $e;
            }
            // DynamoDB, moto and DynamoDB Local return the item that failed the condition
            // (`Item`, in wire format); dynalite ignores ALL_OLD. Then one consistent read says
            // who holds it.
            $item = $e->get('Item');
        }
        if (! is_array($item) || $item === []) {
            $item = $this->dynamo->getItem([
                'TableName' => $this->table,
                'Key' => $this->item->key($name),
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
        return self::onFreshConnection($this->dynamo->getCommand($name, ['@retries' => 0] + $args));
    }

    /**
     * `$command` sent on a fresh connection each time (curl's `CURLOPT_FRESH_CONNECT`), so that
     * libcurl never resends it by itself ({@see singleTry()}); other Guzzle handlers ignore it.
     */
    private static function onFreshConnection(CommandInterface $command): CommandInterface
    {
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
     * is that call's write (`#value = :owner AND #attempt = :attempt`). True when it deleted it,
     * false when the condition failed (nothing of that call's is there); other failures are
     * thrown as the SDK threw them.
     *
     * @param  string  $name
     * @param  array<string, string>  $stored
     */
    public function deleteAttempt($name, array $stored, string $attempt): bool
    {
        try {
            $this->dynamo->deleteItem([
                'TableName' => $this->table,
                'Key' => $this->item->key($name),
                'ConditionExpression' => '#value = :owner AND #attempt = :attempt',
                'ExpressionAttributeNames' => [
                    '#value' => $this->item->valueAttribute(),
                    '#attempt' => LockItem::ATTEMPT_ATTRIBUTE,
                ],
                'ExpressionAttributeValues' => [':owner' => $stored, ':attempt' => ['S' => $attempt]],
            ]);

            return true;
        } catch (DynamoDbException $e) {
            if ($e->getAwsErrorCode() === 'ConditionalCheckFailedException') {
                return false;
            }
            throw $e;
        }
    }

    /**
     * The keep-fence clean-up of an acquire whose outcome is unknown: the keep-fence release's
     * UpdateItem under {@see deleteAttempt()}'s condition, so the fence survives it. True when it
     * expired that call's write, false when the condition failed. The Rust core's `expire_attempt`.
     *
     * @param  string  $name
     * @param  array<string, string>  $stored
     */
    public function expireAttempt($name, array $stored, string $attempt, int $expiresAt): bool
    {
        try {
            $this->dynamo->updateItem([
                'TableName' => $this->table,
                'Key' => $this->item->key($name),
                'UpdateExpression' => self::RELEASE_KEEPING_FENCE,
                'ConditionExpression' => '#value = :owner AND #attempt = :attempt',
                'ExpressionAttributeNames' => [
                    '#value' => $this->item->valueAttribute(),
                    '#expires_at' => $this->item->expirationAttribute(),
                    '#attempt' => LockItem::ATTEMPT_ATTRIBUTE,
                    '#since' => LockItem::SINCE_ATTRIBUTE,
                ],
                'ExpressionAttributeValues' => [
                    ':owner' => $stored,
                    ':attempt' => ['S' => $attempt],
                    ':expires_at' => ['N' => (string) $expiresAt],
                ],
            ]);

            return true;
        } catch (DynamoDbException $e) {
            if ($e->getAwsErrorCode() === 'ConditionalCheckFailedException') {
                return false;
            }
            throw $e;
        }
    }

    /**
     * The release: ONE DeleteItem conditioned on `#value = :owner`, the owner typed as `add()`
     * stored it (N when numeric). No read before it, so no stale read can skip it. True only when
     * this call deleted the item; a failed condition (not ours, or already gone) is false, any
     * other failure a {@see LockException}.
     *
     * @param  string  $name
     * @param  mixed  $owner
     */
    public function deleteIfOwner($name, $owner): bool
    {
        try {
            $this->dynamo->deleteItem([
                'TableName' => $this->table,
                'Key' => $this->item->key($name),
                'ConditionExpression' => '#value = :owner',
                'ExpressionAttributeNames' => ['#value' => $this->item->valueAttribute()],
                'ExpressionAttributeValues' => [':owner' => $this->item->stored($owner)],
                // The holder comes back with a failure (DynamoDB, moto, DynamoDB Local); the
                // answer to Laravel's release() is false either way, so it is not read further.
                'ReturnValuesOnConditionCheckFailure' => 'ALL_OLD',
            ]);

            return true;
        } catch (DynamoDbException $e) {
            $this->oldItemOfFailedCondition($e, 'release', $name, $owner);

            return false;
        }
    }

    /**
     * The keep-fence release: ONE UpdateItem `SET #expires_at = :expires_at REMOVE #value,
     * #attempt` conditioned on `#value = :owner` (the owner typed as `add()` stored it), asking
     * for the old item when the condition fails, as {@see deleteIfOwner()}. The item stays,
     * without an owner or attempt id, with its `ddblock_fence`, and expired (`$expiresAt`, a day
     * before the release): Laravel's `get()` and `add()` and every ddblock acquire see the lock
     * free at once, and the next acquisition's fence is this one + 1. The Rust core's
     * `expire_if_value`.
     *
     * True when this call ended our hold. A failed condition is false (another owner's lock, an
     * expired one, no item, or a lock released already), except after a resend: when the SDK
     * sent the update again (its first answer lost) and the failed condition shows a released
     * item (no owner; from ALL_OLD, or, on a server that ignores ALL_OLD, one consistent read),
     * the first send landed and this call released the lock: true. The update goes on a fresh
     * connection so that every send is the SDK's and counted. Any other failure is a
     * {@see LockException}.
     *
     * @param  string  $name
     * @param  mixed  $owner
     */
    public function expireIfOwner($name, $owner, int $expiresAt): bool
    {
        $sends = 0;
        $command = $this->dynamo->getCommand('UpdateItem', [
            'TableName' => $this->table,
            'Key' => $this->item->key($name),
            'UpdateExpression' => self::RELEASE_KEEPING_FENCE,
            'ConditionExpression' => '#value = :owner',
            'ExpressionAttributeNames' => [
                '#value' => $this->item->valueAttribute(),
                '#expires_at' => $this->item->expirationAttribute(),
                '#attempt' => LockItem::ATTEMPT_ATTRIBUTE,
                '#since' => LockItem::SINCE_ATTRIBUTE,
            ],
            'ExpressionAttributeValues' => [
                ':owner' => $this->item->stored($owner),
                ':expires_at' => ['N' => (string) $expiresAt],
            ],
            'ReturnValuesOnConditionCheckFailure' => 'ALL_OLD',
        ]);
        // Counts the sends of this command, the SDK's retries included (the attempt step runs
        // once per send, below the retry middleware), on a fresh connection each: libcurl resends
        // a request by itself, unseen, when a reused connection dies before the answer.
        $command = self::onFreshConnection($command);
        $command->getHandlerList()->appendAttempt(Middleware::tap(function () use (&$sends): void {
            $sends++;
        }), 'ddblock-sends');
        try {
            $this->dynamo->execute($command);

            return true;
        } catch (DynamoDbException $e) {
            $old = $this->oldItemOfFailedCondition($e, 'release', $name, $owner);
        }
        if ($sends < 2) {
            return false;
        }
        // A resend failed its condition: the first send may have landed. A released item (no
        // owner) says it did; without ALL_OLD (dynalite), one consistent read says what is there.
        $old ??= $this->consistentItem($name, 'release', $owner);

        return $old !== null && LockItem::isReleased($old, $this->item->valueAttribute());
    }

    /**
     * The keep-fence `forceRelease()`: the update of {@see expireIfOwner()} whoever holds the
     * lock, conditioned only on `attribute_exists(#key)` so that a missing item is not created;
     * a missing item is not an error. The Rust core's `expire_any`.
     *
     * @param  string  $name
     */
    public function expire($name, int $expiresAt): void
    {
        try {
            $this->dynamo->updateItem([
                'TableName' => $this->table,
                'Key' => $this->item->key($name),
                'UpdateExpression' => self::RELEASE_KEEPING_FENCE,
                'ConditionExpression' => 'attribute_exists(#key)',
                'ExpressionAttributeNames' => [
                    '#key' => $this->item->keyAttribute(),
                    '#value' => $this->item->valueAttribute(),
                    '#expires_at' => $this->item->expirationAttribute(),
                    '#attempt' => LockItem::ATTEMPT_ATTRIBUTE,
                    '#since' => LockItem::SINCE_ATTRIBUTE,
                ],
                'ExpressionAttributeValues' => [':expires_at' => ['N' => (string) $expiresAt]],
            ]);
        } catch (DynamoDbException $e) {
            if ($e->getAwsErrorCode() !== 'ConditionalCheckFailedException') {
                throw LockException::fromAws($e, 'force-release', $this->table, $this->item->tableKey($name));
            }
        }
    }

    /**
     * One unconditional DeleteItem of lock `$name` (Laravel's `forceRelease()`).
     *
     * @param  string  $name
     */
    public function delete($name): void
    {
        try {
            $this->dynamo->deleteItem([
                'TableName' => $this->table,
                'Key' => $this->item->key($name),
            ]);
        } catch (DynamoDbException $e) {
            throw LockException::fromAws($e, 'force-release', $this->table, $this->item->tableKey($name));
        }
    }

    /**
     * The refresh: the UpdateItem of Laravel 12.63+'s `refresh()` (`attribute_exists(#key) AND
     * #value = :owner AND #expires_at > :now`) setting the expiry to `$expiresAt`. False when the
     * lock is not `$owner`'s or has expired.
     *
     * @param  string  $name
     * @param  mixed  $owner
     */
    public function refreshIfOwner($name, $owner, int $now, int $expiresAt): bool
    {
        try {
            $this->dynamo->updateItem([
                'TableName' => $this->table,
                'Key' => $this->item->key($name),
                'ConditionExpression' => 'attribute_exists(#key) AND #value = :owner AND #expires_at > :now',
                'UpdateExpression' => 'SET #expires_at = :expires_at',
                'ExpressionAttributeNames' => [
                    '#key' => $this->item->keyAttribute(),
                    '#value' => $this->item->valueAttribute(),
                    '#expires_at' => $this->item->expirationAttribute(),
                ],
                'ExpressionAttributeValues' => [
                    ':owner' => $this->item->stored($owner),
                    ':now' => ['N' => (string) $now],
                    ':expires_at' => ['N' => (string) $expiresAt],
                ],
            ]);

            return true;
        } catch (DynamoDbException $e) {
            $this->oldItemOfFailedCondition($e, 'refresh', $name, $owner);

            return false;
        }
    }

    /**
     * One GetItem of lock `$name` with `ConsistentRead: true`: the item, or null.
     *
     * @param  string  $name
     * @param  mixed  $owner  only to keep it out of error messages
     * @return array<string, mixed>|null
     */
    public function consistentItem($name, string $action, $owner): ?array
    {
        try {
            $result = $this->dynamo->getItem([
                'TableName' => $this->table,
                'Key' => $this->item->key($name),
                'ConsistentRead' => true,
            ]);
        } catch (DynamoDbException $e) {
            throw LockException::fromAws($e, $action, $this->table, $this->item->tableKey($name), $owner);
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
            throw LockException::fromAws($e, $action, $this->table, $this->item->tableKey($name), $owner);
        }
        // The AWS SDK puts the error body's members on the exception: `Item` is the old item, in
        // DynamoDB's wire format (the same shape as GetItem's `Item`).
        $item = $e->get('Item');

        return is_array($item) && $item !== [] ? $item : null;
    }
}
