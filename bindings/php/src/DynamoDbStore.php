<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

use Aws\DynamoDb\Exception\DynamoDbException;
use Illuminate\Cache\DynamoDbStore as LaravelDynamoDbStore;
use ReflectionClass;

/**
 * Laravel's DynamoDB cache store whose locks are released by one owner-conditioned DeleteItem.
 *
 * Every cache operation, the constructor and the key layout are those of the installed Laravel
 * (this class extends `Illuminate\Cache\DynamoDbStore`); only `lock()` and `restoreLock()` change:
 * they return a {@see DynamoDbLock}. The lock requests are built here because they need the
 * store's table, attribute names, prefix and value encoding (all protected in Laravel's store).
 *
 * The wire format of every request below is specified by the conformance vectors in
 * `compat-tests/conformance/v1/` (published in docs/format.md); the tests compare each request
 * the AWS SDK sends with them.
 */
class DynamoDbStore extends LaravelDynamoDbStore
{
    /**
     * Laravel's lock ttl when none (0) is given: one day (`DynamoDbLock::acquire()`).
     */
    public const DEFAULT_LOCK_SECONDS = 86400;

    /**
     * Put attempts when the lock vanished (freed) or expired between a failed put and the look at
     * its holder; the same bound as the Rust core's acquire.
     */
    private const ACQUIRE_ATTEMPTS = 3;

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
     * Takes lock `$name` for `$owner`: Laravel's `add()` PutItem (same item, same condition) with
     * `ReturnValuesOnConditionCheckFailure: ALL_OLD`.
     *
     * True when the put succeeded, or when the item it found already carries this owner: an
     * earlier put of ours landed but its answer was lost (the AWS SDK retried it), so the lock is
     * ours and the earlier expiry stands. False when another owner holds it.
     *
     * @internal used by {@see DynamoDbLock::acquire()}
     *
     * @param  string  $name  the lock name as the lock holds it
     * @param  mixed  $owner
     * @param  int  $seconds  passed to Laravel's `toTimestamp()` as its `add()` does
     */
    public function acquireLock($name, $owner, $seconds): bool
    {
        $stored = $this->storedValue($owner);
        for ($attempt = 1; $attempt <= self::ACQUIRE_ATTEMPTS; $attempt++) {
            try {
                $this->dynamo->putItem([
                    'TableName' => $this->table,
                    'Item' => [
                        $this->keyAttribute => ['S' => $this->prefix . $name],
                        $this->valueAttribute => $stored,
                        $this->expirationAttribute => ['N' => (string) $this->toTimestamp($seconds)],
                    ],
                    'ConditionExpression' => 'attribute_not_exists(#key) OR #expires_at < :now',
                    'ExpressionAttributeNames' => [
                        '#key' => $this->keyAttribute,
                        '#expires_at' => $this->expirationAttribute,
                    ],
                    'ExpressionAttributeValues' => [
                        ':now' => ['N' => (string) $this->currentTime()],
                    ],
                    'ReturnValuesOnConditionCheckFailure' => 'ALL_OLD',
                ]);

                return true;
            } catch (DynamoDbException $e) {
                $old = $this->oldItemOfFailedCondition($e, 'acquire', $name, $owner);
            }
            if ($old === null) {
                // DynamoDB and moto return the item that failed the condition; dynalite ignores
                // ALL_OLD. Then one consistent read says who holds it.
                $old = $this->consistentItem($name, 'acquire', $owner);
                if ($old === null) {
                    continue; // freed between the put and the read: put again
                }
            }
            if ($this->carries($old, $stored)) {
                return true;
            }
            $expiresAt = $old[$this->expirationAttribute]['N'] ?? null;
            if (is_numeric($expiresAt) && (float) $expiresAt < $this->currentTime()) {
                continue; // expired meanwhile (our clock moved on a second): the next put takes it
            }

            return false;
        }

        return false;
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
            return false;
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
        return [$this->keyAttribute => ['S' => $this->prefix . $name]];
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
