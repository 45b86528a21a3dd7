<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

use Aws\CommandInterface;
use Aws\DynamoDb\DynamoDbClient;
use Aws\DynamoDb\Exception\DynamoDbException;

/**
 * The DynamoDB requests of a lock, each named by what it means: the conditional write that takes
 * it (with the fallback read when the server leaves the holder out of its answer), the clean-up
 * delete of one acquire call's write, the owner-conditioned delete that releases it, the
 * unconditional delete, the refresh update and the consistent read. The Rust core's
 * `core/src/dynamo/request.rs` (and `core/src/lock/dynamo.rs` for the fallback read).
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
