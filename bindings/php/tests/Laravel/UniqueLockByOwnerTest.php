<?php

namespace Ddblock\Laravel\Tests\Laravel;

use Ddblock\Laravel\Tests\Laravel\Fixtures\UniqueOwnerTestJob;
use Ddblock\Laravel\Tests\Support\FaultProxy;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Cache\LockProvider;
use Illuminate\Contracts\Cache\Repository as Cache;

/**
 * Unique jobs on Laravel 13.24+ (laravel/framework PR #60906, "Attempt at lock fix"), whose
 * Illuminate\Bus\UniqueLock and CallQueuedHandler are not in ../shared/php/laravel-13 (only the
 * cache lock classes are) and cannot run on Debian's 8.83 bus and queue. So these tests make the
 * exact calls upstream's UniqueLock makes (laravel/framework src/Illuminate/Bus/UniqueLock.php as PR
 * #60906 left it, 13.24), on the `dynamodb` store, stock and driver:
 *
 *   acquire($job): `$lock = $cache->lock(UniqueLock::getKey($job), $uniqueFor)` ($uniqueFor from
 *   uniqueFor(), else the UniqueFor attribute or property, else 0), `$lock->get()`; if got, and the job uses
 *   Queueable and the store is a LockProvider, `$job->uniqueLockOwner = $lock->owner()`.
 *   release($job): with a non-empty string owner on a Queueable job, `$cache->restoreLock($key,
 *   $owner)->release()` (when the store is a LockProvider); else `$cache->lock($key)->forceRelease()`.
 *   getKey($job): 'laravel_unique_job:' . (displayName() hashed with xxh128, else the class) . ':'
 *   . uniqueId.
 *
 * CallQueuedHandler calls release() when the job is done (ShouldBeUnique), or before handling it
 * (ShouldBeUniqueUntilProcessing), on any attempt that carries the owner. Before 13.24 (and on
 * 8.83, UniqueJobTest) the release was `->forceRelease()`: one unconditional DeleteItem. Since 13.24,
 * on stock Laravel's DynamoDB lock, it is the lock's release(): an eventually consistent GetItem, then a
 * DeleteItem only if that read shows the owner; and a unique lock's ttl is `uniqueFor`, by default
 * 0, which the DynamoDB lock makes 86400 s.
 */
final class UniqueLockByOwnerTest extends LaravelTestCase
{
    private const CYCLES = 10;

    /** The fault-proxy test runs on one server (dynalite). */
    protected static function serversFor(string $method): array
    {
        return $method === 'testThroughStaleReadsOnlyTheDriverReleasesEveryUniqueLock'
            ? ['dynalite']
            : parent::serversFor($method);
    }

    public function testTheLockIsTakenOnDispatchAndReleasedByItsOwner()
    {
        $cache = $this->app->get(Cache::class);
        $job = new UniqueOwnerTestJob();

        $this->assertTrue($this->acquire($cache, $job));
        $this->assertNotSame('', $job->uniqueLockOwner);
        $this->assertFalse($this->acquire($cache, new UniqueOwnerTestJob()), 'a second dispatch is not queued');
        $job = unserialize(serialize($job)); // the worker's copy carries the owner
        $this->release($cache, $job);

        $this->assertTrue($cache->lock($this->key($job), 10)->get());
    }

    public function testAStalePayloadDoesNotReleaseANewerDispatchsLock()
    {
        $cache = $this->app->get(Cache::class);
        $first = new UniqueOwnerTestJob();
        $this->assertTrue($this->acquire($cache, $first));
        $retry = unserialize(serialize($first));
        $this->release($cache, $first);

        $second = new UniqueOwnerTestJob();
        $this->assertTrue($this->acquire($cache, $second), 'released: a new dispatch takes the lock');
        $this->release($cache, $retry); // a later attempt of the first dispatch releases again

        $this->assertFalse($cache->lock($this->key($second), 10)->get(), "the second dispatch's lock stands");
    }

    public function testALaterAttemptReleasesTheLockItsDispatchTook()
    {
        $cache = $this->app->get(Cache::class);
        $job = new UniqueOwnerTestJob();
        $this->assertTrue($this->acquire($cache, $job));
        // Attempt 1 was released back to the queue by a middleware: no release; attempt 2 runs.
        $secondAttempt = unserialize(serialize($job));
        $this->assertFalse($cache->lock($this->key($job), 10)->get(), 'still unique while queued');
        $this->release($cache, $secondAttempt);

        $this->assertTrue($cache->lock($this->key($job), 10)->get());
    }

    public function testAJobWithoutUniqueForHoldsItsLockForADay()
    {
        $cache = $this->app->get(Cache::class);
        $job = new UniqueOwnerTestJob();
        $before = time();
        $this->assertTrue($this->acquire($cache, $job));

        $key = self::lockKey(self::layouts()[0], $this->prefix, $this->key($job)); // the lock's key in the table
        $item = self::item(self::client($this->server), $this->tableFor($this->server), $key);
        $this->assertNotNull($item);
        $this->assertGreaterThanOrEqual($before + 86400, (int) $item['expires_at']['N']);
        $this->assertLessThanOrEqual(time() + 86400, (int) $item['expires_at']['N']);
    }

    /**
     * Through the fault proxy serving eventually consistent reads up to 500 ms stale (as DynamoDB
     * can under load; the local servers never are): dispatch, then release by owner, CYCLES unique
     * jobs. Stock Laravel's release reads the owner first and, missing it, deletes nothing: those
     * jobs stay unique for a day. The driver deletes on the owner condition and leaves none.
     */
    public function testThroughStaleReadsOnlyTheDriverReleasesEveryUniqueLock()
    {
        $proxy = FaultProxy::start(
            self::cargoBinary('fault-proxy'),
            self::endpoint($this->server),
            ['--stale-ms', '500', '--stale-probability', '1', '--seed', '7']
        );
        try {
            $this->bootApp($proxy->url);
            $cache = $this->app->get(Cache::class);
            $left = 0;
            for ($i = 0; $i < self::CYCLES; $i++) {
                $job = new UniqueOwnerTestJob();
                $job->uniqueId = "podcast-$i";
                $this->assertTrue($this->acquire($cache, $job));
                $this->release($cache, unserialize(serialize($job)));
                $left += $cache->lock($this->key($job), 10)->get() ? 0 : 1;
            }
        } finally {
            $proxy->stop();
        }

        if ($this->flavor === 'stock') {
            $this->assertGreaterThan(0, $left, "stock Laravel's release by owner misses the owner on a stale read");
        } else {
            $this->assertSame(0, $left, 'the driver releases every unique lock');
        }
    }

    /** 13.24+'s UniqueLock::acquire() (see the class comment). */
    private function acquire(Cache $cache, $job): bool
    {
        // Upstream reads uniqueFor() or, through ReadsQueueAttributes, a #[UniqueFor] attribute or the
        // $uniqueFor property; the fixture has none of them: 0.
        $uniqueFor = method_exists($job, 'uniqueFor') ? $job->uniqueFor() : ($job->uniqueFor ?? 0);
        $lock = $cache->lock($this->key($job), $uniqueFor);
        if (! $lock->get()) {
            return false;
        }
        if (isset(class_uses_recursive($job)[Queueable::class]) && $cache->getStore() instanceof LockProvider) {
            $job->uniqueLockOwner = $lock->owner();
        }

        return true;
    }

    /** 13.24+'s UniqueLock::release() (see the class comment). */
    private function release(Cache $cache, $job): void
    {
        $owner = isset(class_uses_recursive($job)[Queueable::class]) ? ($job->uniqueLockOwner ?? '') : '';
        if (is_string($owner) && $owner !== '') {
            if ($cache->getStore() instanceof LockProvider) {
                $cache->restoreLock($this->key($job), $owner)->release();
            }

            return;
        }
        $cache->lock($this->key($job))->forceRelease();
    }

    /** 13.24+'s UniqueLock::getKey() (see the class comment). */
    private function key($job): string
    {
        $uniqueId = method_exists($job, 'uniqueId') ? $job->uniqueId() : ($job->uniqueId ?? '');
        $jobName = method_exists($job, 'displayName') ? hash('xxh128', $job->displayName()) : get_class($job);

        return 'laravel_unique_job:' . $jobName . ':' . $uniqueId;
    }
}
