<?php

namespace Ddblock\Laravel\Tests\Laravel;

use Exception;
use Illuminate\Contracts\Cache\LockTimeoutException;
use Illuminate\Support\Facades\Cache;
use Throwable;

/**
 * The lock tests Laravel runs on its file, Redis, Memcached and database stores, pointed at the
 * `dynamodb` store: each distinct test body once, as upstream has it, with `Cache::store('file')`,
 * `'redis'`, `'memcached'`, `'database'` read as `'dynamodb'` (the default store, so `Cache::lock()`
 * is the DynamoDB lock too). Sources, laravel/framework tests/Integration/:
 *
 *   F  Cache/FileCacheLockTest.php, the 13.x form (with the refresh tests);
 *   R  Cache/RedisCacheLockTest.php (commit 5ff1bfa1b0de), whose bodies are F's with a forceRelease()
 *      first, except testConcurrentLocksAreReleasedSafely, which sleeps for real (F fakes Sleep);
 *   M  Cache/MemcachedCacheLockTestCase.php (commit 5ff1bfa1b0de);
 *   D  Database/DatabaseLockTest.php (the 11.x-13.x form, #[WithMigration('cache')]).
 *
 * Scaffolding replaced: Testbench (LaravelTestCase), InteractsWithRedis, and the Sleep::fake() of
 * F (real sleeps instead: Laravel's DynamoDB lock compares `expires_at` with the clock in whole
 * seconds). Each method names its source; bodies found in several sources are here once.
 */
final class CacheLockTest extends LaravelTestCase
{
    protected function setUp(): void
    {
        parent::setUp();

        // flush lock from previous tests (F's setUp)
        Cache::lock('foo')->forceRelease();
    }

    protected function tearDown(): void
    {
        try {
            Cache::lock('foo')->forceRelease();
        } catch (Throwable) {
        }

        parent::tearDown();
    }

    /** The tests that wait for real seconds run on one server (dynalite, the atomic one). */
    protected static function serversFor(string $method): array
    {
        $slow = [
            'testConcurrentLocksAreReleasedSafely',
            'testConcurrentMemcachedLocksAreReleasedSafely',
            'testExceptionIfBlockCanNotAcquireLock',
            'testLocksThrowTimeoutIfBlockExpires',
        ];

        return in_array($method, $slow, true) ? ['dynalite'] : parent::serversFor($method);
    }

    /** F, R (testRedisLocksCanBeAcquiredAndReleased) */
    public function testLocksCanBeAcquiredAndReleased()
    {
        $lock = Cache::lock('foo', 10);
        $this->assertTrue($lock->get());
        $this->assertFalse(Cache::lock('foo', 10)->get());
        $lock->release();

        $lock = Cache::lock('foo', 10);
        $this->assertTrue($lock->get());
        $this->assertFalse(Cache::lock('foo', 10)->get());
        Cache::lock('foo')->release();
    }

    /** M */
    public function testMemcachedLocksCanBeAcquiredAndReleased()
    {
        Cache::store('dynamodb')->lock('foo')->forceRelease();
        $this->assertTrue(Cache::store('dynamodb')->lock('foo', 10)->get());
        $this->assertFalse(Cache::store('dynamodb')->lock('foo', 10)->get());
        Cache::store('dynamodb')->lock('foo')->forceRelease();
        $this->assertTrue(Cache::store('dynamodb')->lock('foo', 10)->get());
        $this->assertFalse(Cache::store('dynamodb')->lock('foo', 10)->get());
        Cache::store('dynamodb')->lock('foo')->forceRelease();
    }

    /** F, R (testRedisLocksCanBlockForSeconds) */
    public function testLocksCanBlockForSeconds()
    {
        $this->assertSame('taylor', Cache::lock('foo', 10)->block(1, function () {
            return 'taylor';
        }));

        Cache::lock('foo')->forceRelease();
        $this->assertTrue(Cache::lock('foo', 10)->block(1));
    }

    /** M */
    public function testMemcachedLocksCanBlockForSeconds()
    {
        Cache::store('dynamodb')->lock('foo')->forceRelease();
        $this->assertSame('taylor', Cache::store('dynamodb')->lock('foo', 10)->block(1, function () {
            return 'taylor';
        }));

        Cache::store('dynamodb')->lock('foo')->release();
        $this->assertTrue(Cache::store('dynamodb')->lock('foo', 10)->block(1));
    }

    /** M */
    public function testLocksCanRunCallbacks()
    {
        Cache::store('dynamodb')->lock('foo')->forceRelease();
        $this->assertSame('taylor', Cache::store('dynamodb')->lock('foo', 10)->get(function () {
            return 'taylor';
        }));
    }

    /** M */
    public function testLocksThrowTimeoutIfBlockExpires()
    {
        $this->expectException(LockTimeoutException::class);

        Cache::store('dynamodb')->lock('foo')->release();
        Cache::store('dynamodb')->lock('foo', 5)->get();
        $this->assertSame('taylor', Cache::store('dynamodb')->lock('foo', 10)->block(1, function () {
            return 'taylor';
        }));
    }

    /** F (with Sleep::fake(syncWithCarbon: true), here real time: block(5) waits 5 s) */
    public function testExceptionIfBlockCanNotAcquireLock()
    {
        // acquire and not release lock
        Cache::lock('foo', 10)->get();

        // try to get lock and hit block timeout
        $this->expectException(LockTimeoutException::class);
        Cache::lock('foo', 10)->block(5);
    }

    /** R (F's form fakes the sleep: Sleep::fake(syncWithCarbon: true); Sleep::for(2)->seconds()) */
    public function testConcurrentLocksAreReleasedSafely()
    {
        Cache::store('dynamodb')->lock('foo')->forceRelease();

        $firstLock = Cache::store('dynamodb')->lock('foo', 1);
        $this->assertTrue($firstLock->get());
        sleep(2);

        $secondLock = Cache::store('dynamodb')->lock('foo', 10);
        $this->assertTrue($secondLock->get());

        $firstLock->release();

        $this->assertFalse(Cache::store('dynamodb')->lock('foo')->get());
    }

    /** M */
    public function testConcurrentMemcachedLocksAreReleasedSafely()
    {
        Cache::store('dynamodb')->lock('bar')->forceRelease();

        $firstLock = Cache::store('dynamodb')->lock('bar', 1);
        $this->assertTrue($firstLock->acquire());
        sleep(2);

        $secondLock = Cache::store('dynamodb')->lock('bar', 10);
        $this->assertTrue($secondLock->acquire());

        $firstLock->release();

        $this->assertTrue(Cache::store('dynamodb')->has('bar'));
    }

    /** F, R (testRedisLocksWithFailedBlockCallbackAreReleased) */
    public function testLocksWithFailedBlockCallbackAreReleased()
    {
        $firstLock = Cache::lock('foo', 10);

        try {
            $firstLock->block(1, function () {
                throw new Exception('failed');
            });
        } catch (Exception) {
            // Not testing the exception, just testing the lock
            // is released regardless of the how the exception
            // thrown by the callback was handled.
        }

        $secondLock = Cache::lock('foo', 1);

        $this->assertTrue($secondLock->get());
    }

    /** F, R (testRedisLocksCanBeReleasedUsingOwnerToken), M (testMemcachedLocksCanBeReleasedUsingOwnerToken) */
    public function testLocksCanBeReleasedUsingOwnerToken()
    {
        $firstLock = Cache::lock('foo', 10);
        $this->assertTrue($firstLock->get());
        $owner = $firstLock->owner();

        $secondLock = Cache::store('dynamodb')->restoreLock('foo', $owner);
        $secondLock->release();

        $this->assertTrue(Cache::lock('foo')->get());
    }

    /** F, R, M */
    public function testOwnerStatusCanBeCheckedAfterRestoringLock()
    {
        $firstLock = Cache::lock('foo', 10);
        $this->assertTrue($firstLock->get());
        $owner = $firstLock->owner();

        $secondLock = Cache::store('dynamodb')->restoreLock('foo', $owner);
        $this->assertTrue($secondLock->isOwnedByCurrentProcess());
    }

    /** F */
    public function testCacheRememberReturnsValueWhenLockWithSameKeyExists()
    {
        $lock = Cache::lock('my-key', 5);
        $this->assertTrue($lock->get());

        $value = Cache::remember('my-key', 60, fn () => 'expected-value');

        $this->assertSame('expected-value', $value);

        $lock->release();
    }

    /** F, R, M, D (D takes its locks without a ttl: Cache::store('database')->lock('foo')) */
    public function testOtherOwnerDoesNotOwnLockAfterRestore()
    {
        $firstLock = Cache::lock('foo', 10);
        $this->assertTrue($firstLock->isOwnedBy(null));
        $this->assertTrue($firstLock->get());
        $this->assertTrue($firstLock->isOwnedBy($firstLock->owner()));

        $secondLock = Cache::store('dynamodb')->restoreLock('foo', 'other_owner');
        $this->assertTrue($secondLock->isOwnedBy($firstLock->owner()));
        $this->assertFalse($secondLock->isOwnedByCurrentProcess());
    }

    /** F */
    public function testLockCanBeRefreshed()
    {
        $lock = Cache::lock('foo', 10);
        $this->assertTrue($lock->get());

        // Refresh the lock for another 20 seconds
        $this->assertTrue($lock->refresh(20));

        // Lock should still be held
        $this->assertFalse(Cache::lock('foo', 10)->get());

        $lock->release();
    }

    /** F */
    public function testLockCannotBeRefreshedByAnotherOwner()
    {
        $firstLock = Cache::lock('foo', 10);
        $this->assertTrue($firstLock->get());

        // Create a new lock with a different owner
        $secondLock = Cache::store('dynamodb')->restoreLock('foo', 'other_owner');

        // Second lock should not be able to refresh
        $this->assertFalse($secondLock->refresh(20));

        // Original lock should still be able to refresh
        $this->assertTrue($firstLock->refresh(20));

        $firstLock->release();
    }

    /** F */
    public function testLockRefreshWithDefaultSeconds()
    {
        $lock = Cache::lock('foo', 10);
        $this->assertTrue($lock->get());

        // Refresh without specifying seconds should use the original duration
        $this->assertTrue($lock->refresh());

        // Lock should still be held
        $this->assertFalse(Cache::lock('foo', 10)->get());

        $lock->release();
    }

    /** D */
    public function testLockCanBeAcquired()
    {
        $lock = Cache::driver('dynamodb')->lock('foo');
        $this->assertTrue($lock->get());

        $otherLock = Cache::driver('dynamodb')->lock('foo');
        $this->assertFalse($otherLock->get());

        $lock->release();

        $otherLock = Cache::driver('dynamodb')->lock('foo');
        $this->assertTrue($otherLock->get());

        $otherLock->release();
    }

    /** D */
    public function testLockCanBeForceReleased()
    {
        $lock = Cache::driver('dynamodb')->lock('foo');
        $this->assertTrue($lock->get());

        $otherLock = Cache::driver('dynamodb')->lock('foo');
        $otherLock->forceRelease();
        $this->assertTrue($otherLock->get());

        $otherLock->release();
    }

    /**
     * D. Its `DB::table('cache_locks')->update(['expiration' => now()->subDays(1)->getTimestamp()])`
     * is the same write on the DynamoDB table: every lock item's expiry set to a day ago.
     */
    public function testExpiredLockCanBeRetrieved()
    {
        $lock = Cache::driver('dynamodb')->lock('foo');
        $this->assertTrue($lock->get());
        $this->expireEveryLockItem(now()->subDays(1)->getTimestamp());

        $otherLock = Cache::driver('dynamodb')->lock('foo');
        $this->assertTrue($otherLock->get());

        $otherLock->release();
    }

    /** Sets `expires_at` of every item under this test's prefix (DatabaseLockTest's UPDATE). */
    private function expireEveryLockItem(int $expiration): void
    {
        $store = Cache::store('dynamodb')->getStore();
        $client = $store->getClient();
        $table = $this->tableFor($this->server);
        $items = $client->scan(['TableName' => $table])['Items'] ?? [];
        foreach ($items as $item) {
            if (! str_starts_with($item['key']['S'], $store->getPrefix())) {
                continue;
            }
            $client->updateItem([
                'TableName' => $table,
                'Key' => ['key' => $item['key']],
                'UpdateExpression' => 'SET expires_at = :expiration',
                'ExpressionAttributeValues' => [':expiration' => ['N' => (string) $expiration]],
            ]);
        }
    }
}
