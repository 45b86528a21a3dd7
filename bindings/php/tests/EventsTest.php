<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests;

use ArrayObject;
use Ddblock\Laravel\DynamoDbStore;
use Ddblock\Laravel\Events\LockAcquired;
use Ddblock\Laravel\Events\LockEvent;
use Ddblock\Laravel\Events\LockOutcomeUnknown;
use Ddblock\Laravel\Events\LockReleased;
use Ddblock\Laravel\Events\LockWaitTimedOut;
use Ddblock\Laravel\OutcomeUnknownException;
use Ddblock\Laravel\Tests\Support\FaultProxy;
use Ddblock\Laravel\Tests\Support\TestApp;
use Illuminate\Container\Container;
use Illuminate\Contracts\Cache\LockTimeoutException;
use Illuminate\Events\Dispatcher;
use Illuminate\Log\Logger;
use Illuminate\Support\Carbon;
use Illuminate\Support\Facades\Cache;
use Monolog\Handler\TestHandler;
use Monolog\Logger as Monolog;

/**
 * The driver's Laravel events (Ddblock\Laravel\Events) and warnings, on moto, dynalite and
 * DynamoDB Local, with Laravel's own event dispatcher and a Monolog test handler as Laravel's log:
 * acquired and released with their fields, a wait that timed out, an outcome left unknown by lost
 * answers (the fault proxy), a release that finds another owner's lock, and nothing built or
 * dispatched without a listener for the event's class.
 */
final class EventsTest extends TestCase
{
    private const OWNER = 'a-secret-owner-token';

    private ?Container $container = null;

    protected function tearDown(): void
    {
        if ($this->container !== null) {
            Container::setInstance($this->container);
        }
        parent::tearDown();
    }

    /**
     * A real dispatcher whose listeners for `$classes` (class names or wildcards) record what they get.
     *
     * @param  list<string>  $classes
     * @return array{0: Dispatcher, 1: ArrayObject<int, object>}
     */
    private static function listening(array $classes): array
    {
        $events = new Dispatcher(new Container());
        $seen = new ArrayObject();
        foreach ($classes as $class) {
            // A wildcard listener gets the event's name and its payload.
            $events->listen($class, static function ($event, $payload = null) use ($seen): void {
                $seen[] = is_string($event) ? $payload[0] : $event;
            });
        }

        return [$events, $seen];
    }

    /** Laravel's log, for this test: a Monolog test handler behind Laravel's Logger. */
    private function logged(): TestHandler
    {
        $this->container = Container::getInstance();
        $app = new Container();
        Container::setInstance($app);
        $app->instance('log', new Logger(new Monolog('test', [$handler = new TestHandler()])));

        return $handler;
    }

    /** The store of `$layout` on a fresh table of `$server`, its events to `$events`. */
    private static function store(
        string $server,
        string $layout,
        ?Dispatcher $events,
        ?string $url = null
    ): DynamoDbStore {
        // Through the fault proxy at `$url`: no SDK retry, and a short wait for a lost answer.
        $options = $url === null ? [] : ['retries' => 0, 'http' => ['timeout' => 0.5]];
        $client = self::client($url ?? $server, null, $options);

        return self::driverStore($layout, $client, self::sharedTable($server))->setEventDispatcher($events);
    }

    /** The lock's fields every event carries, and never the owner. */
    private function assertNames(LockEvent $event, string $server, string $layout, string $name): void
    {
        $this->assertSame(
            [$name, self::lockKey($layout, 'app_', $name), self::sharedTable($server), $layout],
            [$event->name, $event->key, $event->table, $event->keyLayout]
        );
        $this->assertStringNotContainsString(self::OWNER, serialize($event));
    }

    /** @dataProvider serversAndLayouts */
    public function testAcquiredAndReleasedSayWhichLockHowLongAndHow(string $server, string $layout): void
    {
        [$events, $seen] = self::listening([LockAcquired::class, LockReleased::class]);
        $lock = self::store($server, $layout, $events)->lock('orders', 30, self::OWNER);
        $this->assertTrue($lock->get());
        $this->assertCount(1, $seen);
        $acquired = $seen[0];
        $this->assertInstanceOf(LockAcquired::class, $acquired);
        $this->assertNames($acquired, $server, $layout, 'orders');
        $this->assertSame($lock->fence(), $acquired->fence);
        $this->assertNotNull($acquired->fence);
        $this->assertGreaterThan(0.0, $acquired->waitSeconds);
        $this->assertLessThan(5.0, $acquired->waitSeconds);

        usleep(100000);
        $this->assertTrue($lock->release());
        [, $released] = $seen;
        $this->assertInstanceOf(LockReleased::class, $released);
        $this->assertNames($released, $server, $layout, 'orders');
        $this->assertSame(LockReleased::RELEASED, $released->outcome);
        $this->assertGreaterThanOrEqual(0.1, $released->holdSeconds);
        $this->assertLessThan(5.0, $released->holdSeconds);

        // Released again: nothing there, and this handle no longer holds it.
        $this->assertFalse($lock->release());
        $this->assertSame([LockReleased::NOT_HELD, null], [$seen[2]->outcome, $seen[2]->holdSeconds]);
        $this->assertCount(3, $seen);
    }

    /**
     * A lock whose ttl ran out and that another owner took: its holder's release finds the other
     * owner's item, says so in its event, and logs the lost lease (the work ran without the lock);
     * a handle that never held it (restoreLock()) gets the same event and logs nothing.
     *
     * @dataProvider servers
     */
    public function testAReleaseFindingAnotherOwnerIsLoggedByItsHolder(string $server): void
    {
        $log = $this->logged();
        $layout = self::layouts()[0];
        [$events, $seen] = self::listening([LockReleased::class]);
        $store = self::store($server, $layout, $events);
        $lock = $store->lock('taken-over', 10, self::OWNER);
        $this->assertTrue($lock->get());
        // Later than its expiry, another owner takes it (Laravel's clock, which the store reads).
        Carbon::setTestNow(Carbon::now()->addSeconds(60));
        $this->assertTrue(self::store($server, $layout, null)->lock('taken-over', 10)->get());

        $this->assertFalse($lock->release());
        $this->assertSame(LockReleased::OTHER_OWNER, $seen[0]->outcome);
        $this->assertNotNull($seen[0]->holdSeconds);
        $this->assertNames($seen[0], $server, $layout, 'taken-over');
        $records = $log->getRecords();
        $this->assertCount(1, $records);
        $record = (array) $records[0];
        $this->assertSame('WARNING', $record['level_name']);
        [$key, $table] = [self::lockKey($layout, 'app_', 'taken-over'), self::sharedTable($server)];
        $this->assertSame(
            ['event' => 'ddblock.lock.lease_lost', 'lock' => 'taken-over', 'key' => $key, 'table' => $table],
            $record['context']
        );
        $this->assertStringContainsString(
            sprintf('release of the lock with key "%s" in table "%s" found it held by another owner', $key, $table),
            $record['message']
        );
        $this->assertStringNotContainsString(self::OWNER, $record['message']);

        $this->assertFalse($store->restoreLock('taken-over', self::OWNER)->release());
        $this->assertSame([LockReleased::OTHER_OWNER, null], [$seen[1]->outcome, $seen[1]->holdSeconds]);
        $this->assertCount(1, $log->getRecords(), 'a handle that never held the lock lost nothing');
    }

    /**
     * A lock item removed under its holder while the work runs (here by another process's
     * forceRelease(), as a foreign writer or a fault would): the holder's release finds it gone at
     * its first send, returns false as Laravel's does, and logs the lost lease (issue 36; before,
     * only another owner's item was reported and a vanished one was swallowed). In both modes.
     *
     * @dataProvider servers
     */
    public function testALockRemovedUnderItsHolderIsLoggedAsALostLease(string $server): void
    {
        $log = $this->logged();
        $layout = self::layouts()[0];
        foreach ([DynamoDbStore::RELEASE_DELETE, DynamoDbStore::RELEASE_KEEP_FENCE] as $i => $mode) {
            $store = self::store($server, $layout, null)->setReleaseMode($mode);
            $lock = $store->lock("removed-$mode", 30, self::OWNER);
            $this->assertTrue($lock->get());
            self::store($server, $layout, null)->setReleaseMode($mode)->lock("removed-$mode", 30)->forceRelease();

            $this->assertFalse($lock->release(), $mode);
            $records = $log->getRecords();
            $this->assertCount($i + 1, $records, $mode);
            $record = (array) $records[$i];
            $this->assertSame('WARNING', $record['level_name']);
            $this->assertSame('ddblock.lock.lease_lost', $record['context']['event']);
            $this->assertStringContainsString('first send of the release', $record['message']);
            $this->assertStringContainsString('found it gone', $record['message']);
            $this->assertStringNotContainsString(self::OWNER, $record['message']);
        }
    }

    /**
     * The release's first send lands and its answer is lost; the SDK's resend finds the lock
     * released: false (not_held), as in both release modes, and no lost lease is logged: the
     * resend found its own first send's work.
     *
     * @dataProvider servers
     */
    public function testAReleaseWhoseFirstAnswerIsLostLogsNoLostLease(string $server): void
    {
        $log = $this->logged();
        $layout = self::layouts()[0];
        $proxy = self::startedOnce(
            "fault-proxy $server",
            static fn (): FaultProxy => FaultProxy::start(self::cargoBinary('fault-proxy'), self::endpoint($server))
        );
        $client = self::client($proxy->url, null, ['retries' => 1, 'http' => ['timeout' => 2]]);
        $modes = [DynamoDbStore::RELEASE_DELETE => 'DeleteItem', DynamoDbStore::RELEASE_KEEP_FENCE => 'UpdateItem'];
        foreach ($modes as $mode => $op) {
            $store = self::driverStore($layout, $client, self::sharedTable($server))->setReleaseMode($mode);
            $lock = $store->lock("lost-answer-$mode", 30, self::OWNER);
            $this->assertTrue($lock->get());
            $proxy->configure(['sequence' => [$op => ['drop']]]);
            try {
                $this->assertFalse($lock->release(), $mode);
                $this->assertSame(1, $proxy->stats()[$op]['dropped'] ?? 0, "$mode: the first answer was lost");
            } finally {
                $proxy->configure(['sequence' => (object) []]);
            }
            $this->assertFalse($store->lock("lost-answer-$mode", 30)->isLocked(), "$mode: released");
        }
        $this->assertSame([], $log->getRecords(), 'a resend finding the lock released is no lost lease');
    }

    /**
     * block() running out of time while another owner holds the lock, seen by a wildcard listener
     * on the package's events; then `*`.
     *
     * @dataProvider servers
     */
    public function testAWaitThatTimesOutIsSeenByWildcardListeners(string $server): void
    {
        $layout = self::layouts()[0];
        $this->assertTrue(self::store($server, $layout, null)->lock('busy', 30)->get());
        foreach (['Ddblock\\Laravel\\Events\\*', '*'] as $wildcard) {
            [$events, $seen] = self::listening([$wildcard]);
            try {
                self::store($server, $layout, $events)->lock('busy', 30, self::OWNER)->block(1);
                $this->fail('block() took a held lock');
            } catch (LockTimeoutException $e) {
                // Laravel's, as without the driver
            }
            $this->assertCount(1, $seen, $wildcard);
            $this->assertInstanceOf(LockWaitTimedOut::class, $seen[0]);
            $this->assertNames($seen[0], $server, $layout, 'busy');
            // Laravel 8 counts whole seconds, after a first pause of 250 ms.
            $this->assertGreaterThan(0.2, $seen[0]->waitSeconds);
            $this->assertLessThan(5.0, $seen[0]->waitSeconds);
        }
    }

    /**
     * Lost answers to both writes of an acquire (the fault proxy): the clean-up removes the write
     * and the event says `clean`; then a clean-up that never reaches the server either: not clean,
     * and a warning names the lock, never the owner.
     *
     * @dataProvider servers
     */
    public function testAnUnknownOutcomeSaysWhetherItsCleanUpLeftAWrite(string $server): void
    {
        $log = $this->logged();
        $layout = self::layouts()[0];
        $proxy = self::startedOnce(
            "fault-proxy $server",
            static fn (): FaultProxy => FaultProxy::start(self::cargoBinary('fault-proxy'), self::endpoint($server))
        );
        [$events, $seen] = self::listening([LockOutcomeUnknown::class, LockAcquired::class]);
        $store = self::store($server, $layout, $events, $proxy->url);

        $proxy->configure(['sequence' => ['UpdateItem' => ['reset', 'reset']]]);
        try {
            $store->lock('unknown', 30, self::OWNER)->acquire();
            $this->fail('acquire() answered');
        } catch (OutcomeUnknownException $e) {
            $this->assertSame('deleted', $e->cleanup());
        }
        $this->assertCount(1, $seen);
        $this->assertInstanceOf(LockOutcomeUnknown::class, $seen[0]);
        $this->assertTrue($seen[0]->clean);
        $this->assertNames($seen[0], $server, $layout, 'unknown');
        $this->assertSame([], $log->getRecords(), 'nothing left: nothing to warn about');

        $proxy->configure([
            'drop_response_rate' => 1.0, 'drop_ops' => ['UpdateItem'],
            'drop_request_rate' => 1.0, 'drop_request_ops' => ['DeleteItem'],
            'sequence' => (object) [],
        ]);
        try {
            $store->lock('unknown-left', 30, self::OWNER)->acquire();
            $this->fail('acquire() answered');
        } catch (OutcomeUnknownException $e) {
            $this->assertSame('failed', $e->cleanup());
        } finally {
            $proxy->configure(['sequence' => (object) []]);
        }
        $this->assertCount(2, $seen);
        $this->assertFalse($seen[1]->clean);
        $this->assertNames($seen[1], $server, $layout, 'unknown-left');
        $records = $log->getRecords();
        $this->assertCount(1, $records);
        $record = (array) $records[0];
        $this->assertSame('WARNING', $record['level_name']);
        $this->assertSame('ddblock.lock.cleanup_failed', $record['context']['event']);
        $this->assertSame(['unknown-left', self::lockKey($layout, 'app_', 'unknown-left')], [
            $record['context']['lock'],
            $record['context']['key'],
        ]);
        $this->assertStringContainsString('the lock stays until it expires', $record['message']);
        $this->assertStringNotContainsString(self::OWNER, $record['message']);
        self::store($server, $layout, null)->lock('unknown-left', 30)->forceRelease();
    }

    /**
     * Without a listener for an event's class, the dispatcher is asked (`hasListeners()`), and no
     * event is built or dispatched: a listener for another class gets nothing of this one, and a
     * failed release sends no read to tell who holds the lock. Without a dispatcher, nothing.
     *
     * @dataProvider servers
     */
    public function testNothingIsDispatchedWithoutAListener(string $server): void
    {
        $layout = self::layouts()[0];
        $events = new class (new Container()) extends Dispatcher {
            /** @var list<string> */
            public array $asked = [];
            /** @var list<mixed> */
            public array $dispatched = [];

            public function hasListeners($eventName)
            {
                $this->asked[] = $eventName;

                return parent::hasListeners($eventName);
            }

            public function dispatch($event, $payload = [], $halt = false)
            {
                $this->dispatched[] = $event;

                return parent::dispatch($event, $payload, $halt);
            }
        };
        $seen = new ArrayObject();
        $events->listen(LockOutcomeUnknown::class, static function ($event) use ($seen): void {
            $seen[] = $event;
        });
        $store = self::store($server, $layout, $events);
        $lock = $store->lock('quiet', 30);
        $this->assertTrue($lock->get());
        $this->assertTrue($lock->release());
        $this->assertSame([LockAcquired::class, LockReleased::class], $events->asked);
        $this->assertSame([], $events->dispatched);
        $this->assertSame([], (array) $seen);

        // A handle that never held the lock, on a lock that is not there: the one DeleteItem, no read.
        $proxy = self::startedOnce(
            "fault-proxy $server",
            static fn (): FaultProxy => FaultProxy::start(self::cargoBinary('fault-proxy'), self::endpoint($server))
        );
        $proxy->configure(['sequence' => (object) []]);
        $proxy->reset();
        $this->assertFalse(self::store($server, $layout, $events, $proxy->url)->lock('quiet', 30)->release());
        $this->assertSame(['DeleteItem' => 1], $proxy->requests());
        $this->assertSame([], $events->dispatched);

        $lock = self::store($server, $layout, null)->lock('no-dispatcher', 30);
        $this->assertTrue($lock->get());
        $this->assertTrue($lock->release());
    }

    /**
     * In an app, the service provider gives the stores the app's dispatcher, asked at each event:
     * a listener registered the usual way sees them, and so does one on a dispatcher swapped in
     * after the store was made (as Event::fake() swaps it).
     */
    public function testTheAppsDispatcherIsUsed(): void
    {
        $table = self::sharedTable('moto');
        $app = TestApp::boot(TestApp::cacheConfig(self::endpoint('moto'), $table));
        $seen = new ArrayObject();
        $app['events']->listen(LockAcquired::class, static function (LockAcquired $event) use ($seen): void {
            $seen[] = $event;
        });
        $lock = Cache::lock('in-the-app', 10);
        $this->assertTrue($lock->get());
        $this->assertCount(1, $seen);
        $this->assertSame(
            ['in-the-app', $table, self::layouts()[0]],
            [$seen[0]->name, $seen[0]->table, $seen[0]->keyLayout]
        );

        [$swapped, $later] = self::listening([LockReleased::class]);
        $app->instance('events', $swapped);
        $this->assertTrue($lock->release());
        $this->assertCount(1, $later);
        $this->assertSame(LockReleased::RELEASED, $later[0]->outcome);
        $this->assertTrue(Cache::lock('in-the-app', 10)->get());
        $this->assertCount(1, $seen, 'the first dispatcher no longer gets them');
        Cache::lock('in-the-app', 10)->forceRelease();
    }
}
