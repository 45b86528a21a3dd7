<?php

namespace Ddblock\Laravel\Tests\Laravel;

use Illuminate\Console\Scheduling\CacheEventMutex;
use Illuminate\Console\Scheduling\Event;
use Illuminate\Foundation\Application;

/**
 * The scheduler's `withoutOverlapping()` mutex on the `dynamodb` store: the "WithLockProvider"
 * tests of laravel/framework tests/Console/Scheduling/CacheEventMutexTest.php (commit 58d1b23c909c),
 * which upstream runs on a mocked factory whose store is an ArrayStore; here the factory is the
 * app's cache manager, whose default store is `dynamodb`. Test bodies as upstream has them (minus
 * the mock's `getStore()` line). The mutex is the installed Laravel's: 8.83's takes no lock on any
 * store (add/has/forget), and upstream's (9.x+, PR #47370) takes one only from a LockProvider that
 * is not a DynamoDbStore, which the driver's store is too, so on DynamoDB it is a cache item either
 * way (SchedulerOnDynamoDbTest).
 */
final class CacheEventMutexTest extends LaravelTestCase
{
    /** @var \Illuminate\Console\Scheduling\CacheEventMutex */
    protected $cacheMutex;

    /** @var \Illuminate\Console\Scheduling\Event */
    protected $event;

    /** @var \Illuminate\Contracts\Cache\Factory */
    protected $cacheFactory;

    protected function defineEnvironment(Application $app): void
    {
        $this->cacheFactory = $app['cache'];
        $this->cacheMutex = new CacheEventMutex($this->cacheFactory);
        $this->event = new Event($this->cacheMutex, 'command');
    }

    public function testPreventOverlapWithLockProvider()
    {
        $this->assertTrue($this->cacheMutex->create($this->event));
    }

    public function testPreventOverlapFailsWithLockProvider()
    {
        // first create the lock, so we can test that the next call fails.
        $this->cacheMutex->create($this->event);

        $this->assertFalse($this->cacheMutex->create($this->event));
    }

    public function testOverlapsForNonRunningTaskWithLockProvider()
    {
        $this->assertFalse($this->cacheMutex->exists($this->event));
    }

    public function testOverlapsForRunningTaskWithLockProvider()
    {
        $this->cacheMutex->create($this->event);

        $this->assertTrue($this->cacheMutex->exists($this->event));
    }

    public function testResetOverlapWithLockProvider()
    {
        $this->cacheMutex->create($this->event);

        $this->cacheMutex->forget($this->event);

        $this->assertFalse($this->cacheMutex->exists($this->event));
    }
}
