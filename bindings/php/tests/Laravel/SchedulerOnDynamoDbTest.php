<?php

namespace Ddblock\Laravel\Tests\Laravel;

use Illuminate\Cache\DynamoDbStore;
use Illuminate\Console\Scheduling\CacheEventMutex;
use Illuminate\Console\Scheduling\CacheSchedulingMutex;
use Illuminate\Console\Scheduling\Event;
use Illuminate\Contracts\Cache\LockProvider;
use Illuminate\Support\Carbon;

/**
 * Not a port: ddblock's own check of what docs/php.md says about the scheduler. On DynamoDB its
 * `withoutOverlapping()` and `onOneServer()` mutexes are cache items written by add(), not locks:
 * Laravel 8.83's CacheEventMutex and CacheSchedulingMutex never take a lock, and upstream's since
 * 9.x (PR #47370) take one only when `$store instanceof LockProvider && ! $store instanceof
 * DynamoDbStore`, false for the driver's store too (a subclass of Laravel's). So the driver changes
 * nothing here: the item is the same on stock and driver.
 */
final class SchedulerOnDynamoDbTest extends LaravelTestCase
{
    public function testTheSchedulerMutexesAreCacheItemsNotLocks()
    {
        $cache = $this->app['cache'];
        $store = $cache->store()->getStore();
        $this->assertInstanceOf(LockProvider::class, $store);
        $this->assertInstanceOf(DynamoDbStore::class, $store, "excluded from upstream's shouldUseLocks()");

        $event = new Event(new CacheEventMutex($cache), 'command');
        $this->assertTrue((new CacheEventMutex($cache))->create($event));
        $this->assertTrue((new CacheSchedulingMutex($cache))->create($event, $time = Carbon::now()));

        $client = self::client($this->server);
        $table = $this->tableFor($this->server);
        foreach ([$event->mutexName(), $event->mutexName() . $time->format('Hi')] as $name) {
            // add()'s item: the cache key (prefix once, with Laravel 8-11's ':'), value serialize(true)
            $item = self::item($client, $table, $store->getPrefix() . $name);
            $this->assertNotNull($item, "$name is a cache item");
            $this->assertSame(['S' => serialize(true)], $item['value']);
            $this->assertArrayNotHasKey('ddblock_fence', $item, 'not written by a lock');
            $this->assertSame(true, $cache->store()->get($name));
        }
    }
}
