<?php

namespace Ddblock\Laravel\Tests\Laravel;

use Illuminate\Console\Scheduling\CacheEventMutex;
use Illuminate\Console\Scheduling\CacheSchedulingMutex;
use Illuminate\Console\Scheduling\Event;
use Illuminate\Foundation\Application;
use Illuminate\Support\Carbon;

/**
 * The scheduler's `onOneServer()` mutex on the `dynamodb` store: the "WithLockProvider" tests of
 * laravel/framework tests/Console/Scheduling/CacheSchedulingMutexTest.php (commit 767f9b71918c),
 * which upstream runs on a mocked factory whose store is an ArrayStore; here the factory is the
 * app's cache manager, whose default store is `dynamodb`. Test bodies as upstream has them (minus
 * the mock's `getStore()` line). As for CacheEventMutexTest, the installed mutex (8.83's, or
 * upstream's with DynamoDB excluded from locks) writes a cache item with add(), never a lock.
 */
final class CacheSchedulingMutexTest extends LaravelTestCase
{
    /** @var \Illuminate\Console\Scheduling\CacheSchedulingMutex */
    protected $cacheMutex;

    /** @var \Illuminate\Console\Scheduling\Event */
    protected $event;

    /** @var \Illuminate\Support\Carbon */
    protected $time;

    /** @var \Illuminate\Contracts\Cache\Factory */
    protected $cacheFactory;

    protected function defineEnvironment(Application $app): void
    {
        $this->cacheFactory = $app['cache'];
        $this->cacheMutex = new CacheSchedulingMutex($this->cacheFactory);
        $this->event = new Event(new CacheEventMutex($this->cacheFactory), 'command');
        $this->time = Carbon::now();
    }

    public function testMutexReceivesCorrectCreateWithLockProvider()
    {
        $this->assertTrue($this->cacheMutex->create($this->event, $this->time));
    }

    public function testPreventsMultipleRunsWithLockProvider()
    {
        // first create the lock, so we can test that the next call fails.
        $this->cacheMutex->create($this->event, $this->time);

        $this->assertFalse($this->cacheMutex->create($this->event, $this->time));
    }

    public function testChecksForNonRunScheduleWithLockProvider()
    {
        $this->assertFalse($this->cacheMutex->exists($this->event, $this->time));
    }

    public function testChecksForAlreadyRunScheduleWithLockProvider()
    {
        $this->cacheMutex->create($this->event, $this->time);

        $this->assertTrue($this->cacheMutex->exists($this->event, $this->time));
    }
}
