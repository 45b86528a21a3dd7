<?php
/**
 * Laravel 11.x's and 12.x's key layouts (and 12.63+'s refresh()) reproduced as subclasses of
 * Debian's Laravel 8.83 store and lock, for harness.php with DDB_DRIVER=laravel. Only the
 * documented differences are reproduced; everything else is 8.83's code.
 */

declare(strict_types=1);

use Aws\DynamoDb\Exception\DynamoDbException;
use Illuminate\Cache\DynamoDbLock;
use Illuminate\Cache\DynamoDbStore;
use Illuminate\Support\Carbon;

/**
 * Laravel 11.x: setPrefix() uses the prefix as given, no ':' appended
 * (laravel/framework PR #47380). lock() still passes prefix.name, so lock
 * items get the prefix twice: 'app_app_orders'.
 */
class Laravel11DynamoDbStore extends DynamoDbStore
{
    public function setPrefix($prefix)
    {
        $this->prefix = $prefix;
    }
}

/**
 * Laravel 12.x: as 11.x, and lock() passes the bare name (PR #52986); only
 * add()/get()/forget() prefix it, so lock items are 'app_orders'.
 */
class Laravel12DynamoDbStore extends Laravel11DynamoDbStore
{
    public function lock($name, $seconds = 0, $owner = null)
    {
        return new Laravel12DynamoDbLock($this, $name, $seconds, $owner);
    }

    /**
     * The UpdateItem behind Laravel12DynamoDbLock::refresh() (needs the
     * store's protected table/attribute names and value encoding).
     */
    public function refreshLock(string $name, $owner, int $seconds): bool
    {
        try {
            $this->dynamo->updateItem([
                'TableName' => $this->table,
                'Key' => [$this->keyAttribute => ['S' => $this->prefix . $name]],
                'ConditionExpression' => 'attribute_exists(#key) AND #value = :owner AND #expires_at > :now',
                'UpdateExpression' => 'SET #expires_at = :expires_at',
                'ExpressionAttributeNames' => [
                    '#key' => $this->keyAttribute,
                    '#value' => $this->valueAttribute,
                    '#expires_at' => $this->expirationAttribute,
                ],
                'ExpressionAttributeValues' => [
                    // The owner encoded exactly as add() wrote it (N for numeric owners).
                    ':owner' => [$this->type($owner) => $this->serialize($owner)],
                    ':expires_at' => ['N' => (string) $this->toTimestamp($seconds)],
                    ':now' => ['N' => (string) Carbon::now()->getTimestamp()],
                ],
            ]);

            return true;
        } catch (DynamoDbException $e) {
            if (str_contains($e->getMessage(), 'ConditionalCheckFailed')) {
                return false;
            }
            throw $e;
        }
    }
}

/**
 * NOT in 8.83: reproduces the newer upstream refresh() (Laravel 12.63+ /
 * 13.16+) as described in /work/shared/laravel-format.md: one conditional
 * UpdateItem extending expires_at if this owner still holds an unexpired lock;
 * seconds <= 0 means 86400, like acquire(). (13.x's store touch() is not
 * reproduced.)
 */
class Laravel12DynamoDbLock extends DynamoDbLock
{
    public function refresh($seconds): bool
    {
        return $this->dynamo->refreshLock($this->name, $this->owner, $seconds > 0 ? (int) $seconds : 86400);
    }
}

