<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests;

use Aws\CommandInterface;
use Aws\DynamoDb\DynamoDbClient;
use Aws\DynamoDb\Exception\DynamoDbException;
use Aws\Middleware;
use Ddblock\Laravel\DynamoDbLock;
use Ddblock\Laravel\DynamoDbStore;
use Ddblock\Laravel\LockException;
use Ddblock\Laravel\OutcomeUnknownException;
use Ddblock\Laravel\Tests\Support\Recorder;
use Illuminate\Contracts\Cache\LockTimeoutException;
use Illuminate\Support\Carbon;

/**
 * Every lock operation of the driver against moto, dynalite and DynamoDB Local, in each key layout
 * the loaded Laravel writes, through the real AWS SDK for PHP; stock Laravel's lock on the same
 * table where the two must agree (same key, same item) or differ (numeric owners).
 */
final class LockTest extends TestCase
{
    /**
     * A client to `$server`, the table the class's tests share there, and the driver's store on it
     * in the first layout the loaded Laravel writes.
     *
     * @return array{0: DynamoDbClient, 1: string, 2: DynamoDbStore}
     */
    private static function onSharedTable(string $server): array
    {
        $client = self::client($server);
        $table = self::sharedTable($server);

        return [$client, $table, self::driverStore(self::layouts()[0], $client, $table)];
    }

    /** @dataProvider serversAndLayouts */
    public function testAcquireThenReleaseWritesLaravelsItemAndDeletesIt(string $server, string $layout): void
    {
        $client = self::client($server);
        $table = self::sharedTable($server);
        $store = self::driverStore($layout, $client, $table);
        $lock = $store->lock('cycle', 10);
        $this->assertInstanceOf(DynamoDbLock::class, $lock);
        $this->assertSame(self::lockKey($layout, 'app_', 'cycle'), $lock->tableKey());
        $this->assertMatchesRegularExpression('/^[A-Za-z0-9]{16}$/', $lock->owner());

        $this->assertNull($lock->fence(), 'no fence before the lock is ours');
        $t0 = time();
        $this->assertTrue($lock->get());
        $t1 = time();
        $item = self::item($client, $table, $lock->tableKey()) ?? [];
        $attributes = array_keys($item);
        sort($attributes);
        // Laravel's three attributes, plus ddblock's attempt id and fencing token.
        $this->assertSame(['ddblock_attempt', 'ddblock_fence', 'expires_at', 'key', 'value'], $attributes);
        $this->assertSame(['S' => serialize($lock->owner())], $item['value']);
        $this->assertGreaterThanOrEqual($t0 + 10, (int) $item['expires_at']['N']);
        $this->assertLessThanOrEqual($t1 + 10, (int) $item['expires_at']['N']);
        $this->assertMatchesRegularExpression('/^[A-Za-z0-9]{16}$/', $item['ddblock_attempt']['S']);
        $this->assertSame(['N' => (string) $lock->fence()], $item['ddblock_fence'], 'fence() is the item\'s');
        // A first fence starts from the clock in microseconds.
        $this->assertGreaterThanOrEqual($t0 * 1000000, $lock->fence());
        $this->assertLessThanOrEqual(($t1 + 1) * 1000000, $lock->fence());

        $this->assertTrue($lock->isLocked());
        $this->assertTrue($lock->isOwnedByCurrentProcess());
        $this->assertTrue($lock->isOwnedBy($lock->owner()));
        $this->assertFalse($lock->isOwnedBy('somebody-else'));
        $other = $store->lock('cycle', 10);
        $this->assertFalse($other->get(), 'a held lock cannot be taken');
        $this->assertFalse($other->isOwnedByCurrentProcess());
        $this->assertFalse($other->release(), 'another owner does not release it');
        $this->assertNotNull(self::item($client, $table, $lock->tableKey()));

        $this->assertTrue($lock->release());
        $this->assertNull($lock->fence(), 'released: no fence');
        $this->assertNull(self::item($client, $table, $lock->tableKey()));
        $this->assertFalse($lock->isLocked());
        $this->assertFalse($lock->release(), 'a second release finds nothing to delete');
        $this->assertTrue($other->get(), 'free again');
        $this->assertTrue($store->restoreLock('cycle', $other->owner())->release());
    }

    /** @dataProvider serversAndLayouts */
    public function testTheKeyIsTheOneStockLaravelWrites(string $server, string $layout): void
    {
        $client = self::client($server);
        $table = self::sharedTable($server);
        $stock = self::stockStore($layout, $client, $table)->lock('shared-key', 10);
        $this->assertTrue($stock->get());
        $driver = self::driverStore($layout, $client, $table)->restoreLock('shared-key', $stock->owner());
        $this->assertTrue($driver->isOwnedByCurrentProcess(), 'the driver sees the lock stock Laravel took');
        $this->assertFalse(self::driverStore($layout, $client, $table)->lock('shared-key', 10)->get());
        $this->assertTrue($driver->release());
        $this->assertNull(self::item($client, $table, self::lockKey($layout, 'app_', 'shared-key')));
    }

    /** @dataProvider serversAndLayouts */
    public function testNumericOwnersAreStoredAsNumbersAndReleased(string $server, string $layout): void
    {
        $client = self::client($server);
        $table = self::sharedTable($server);
        $store = self::driverStore($layout, $client, $table);
        $this->assertTrue($store->lock('numeric', 10, '12345')->get());
        $key = self::lockKey($layout, 'app_', 'numeric');
        $this->assertSame(['N' => '12345'], self::item($client, $table, $key)['value']);

        // Stock Laravel reads the owner back as int 12345 and compares it with '12345' using ===.
        $this->assertFalse(self::stockStore($layout, $client, $table)->restoreLock('numeric', '12345')->release());
        $this->assertNotNull(self::item($client, $table, $key), "stock Laravel's release leaves it");

        $restored = $store->restoreLock('numeric', '12345');
        $this->assertTrue($restored->isOwnedByCurrentProcess());
        $this->assertSame(12345, (fn () => $this->getCurrentOwner())->call($restored), 'Laravel reads an int back');
        $this->assertTrue($restored->refresh(20));
        $this->assertTrue($restored->release());
        $this->assertNull(self::item($client, $table, $key));
    }

    /**
     * Every public Lock method with a null owner and with a numeric owner, asked of stock Laravel
     * (the installed version's own DynamoDbLock) and of the driver on the same items. They answer
     * alike, except where the driver fixes Laravel on purpose: a numeric owner, stored as N and
     * read back as an int, owns and can release its lock (docs/php.md, "Owners").
     *
     * @dataProvider servers
     */
    public function testNullAndNumericOwnersAnswerAsTheInstalledLaravelDoes(string $server): void
    {
        $client = self::client($server);
        $table = self::sharedTable($server);
        $layout = self::layouts()[0];
        $stores = [
            'stock' => self::stockStore($layout, $client, $table),
            'driver' => self::driverStore($layout, $client, $table),
        ];
        $current = static fn ($lock) => (fn () => $this->getCurrentOwner())->call($lock);
        // The owner a method compares, as Laravel's isOwnedBy() does: `getCurrentOwner() === $owner`
        // (8.x has no public isOwnedBy(); its protected isOwnedByCurrentProcess() is the same test).
        $ownedBy = static fn ($lock, $owner) => ($lock instanceof DynamoDbLock || method_exists($lock, 'isOwnedBy'))
            ? $lock->isOwnedBy($owner) : $current($lock) === $owner;
        $answers = [];
        foreach ($stores as $who => $store) {
            $a = [];
            $name = "owners-$who";
            $free = $store->lock($name, 10);
            $this->assertIsString($free->owner(), 'a null owner becomes a random one');
            $this->assertSame(16, strlen($free->owner()));
            $this->assertNotSame($free->owner(), $store->restoreLock($name, null)->owner());
            $a['free: getCurrentOwner()'] = $current($free);
            $a['free: isOwnedBy(null)'] = $ownedBy($free, null);
            $this->assertTrue($free->get());
            $a['held: isOwnedBy(null)'] = $ownedBy($free, null);
            $a['held: getCurrentOwner() is the owner'] = $current($free) === $free->owner();
            $this->assertTrue($free->release());
            $expired = $store->lock($name, 1, 'someone');
            $this->assertTrue($expired->get());
            $client->updateItem([
                'TableName' => $table,
                'Key' => ['key' => ['S' => self::lockKey($layout, 'app_', $name)]],
                'UpdateExpression' => 'SET expires_at = :past',
                'ExpressionAttributeValues' => [':past' => ['N' => (string) (time() - 5)]],
            ]);
            $a['expired: isOwnedBy(null)'] = $ownedBy($expired, null);
            $a['expired: getCurrentOwner()'] = $current($expired);
            $a['expired: get() by another'] = $store->lock($name, 10)->get();

            $numeric = $store->lock("numeric-$who", 10, '12345');
            $a['numeric: get()'] = $numeric->get();
            $item = self::item($client, $table, self::lockKey($layout, 'app_', "numeric-$who"));
            $a['numeric: stored as'] = array_keys($item['value']);
            $a['numeric: getCurrentOwner()'] = $current($numeric);
            $a['numeric: isOwnedBy(12345 as string)'] = $ownedBy($numeric, '12345');
            $a['numeric: release()'] = $store->restoreLock("numeric-$who", '12345')->release();
            $store->lock("numeric-$who")->forceRelease();
            $answers[$who] = $a;
        }
        $fixed = ['numeric: isOwnedBy(12345 as string)', 'numeric: release()'];
        foreach ($answers['stock'] as $what => $stock) {
            if (in_array($what, $fixed, true)) {
                $this->assertFalse($stock, "stock: $what");
                $this->assertTrue($answers['driver'][$what], "driver: $what");
            } else {
                $this->assertSame($stock, $answers['driver'][$what], "$what on Laravel " . self::laravel());
            }
        }
        $this->assertTrue($answers['driver']['free: isOwnedBy(null)']);
        $this->assertFalse($answers['driver']['held: isOwnedBy(null)']);
        $this->assertTrue($answers['driver']['expired: isOwnedBy(null)']);
    }

    /** @dataProvider servers */
    public function testTtlZeroIsADayAndForceReleaseDeletesAnyonesLock(string $server): void
    {
        [$client, $table, $store] = self::onSharedTable($server);
        $t0 = time();
        $lock = $store->lock('zero', 0);
        $this->assertTrue($lock->acquire());
        $expires = (int) self::item($client, $table, $lock->tableKey())['expires_at']['N'];
        $this->assertGreaterThanOrEqual($t0 + 86400, $expires);
        $this->assertLessThanOrEqual(time() + 86400, $expires);

        $store->lock('zero')->forceRelease();
        $this->assertNull(self::item($client, $table, $lock->tableKey()));
        $store->lock('zero')->forceRelease(); // nothing to delete is fine
        $this->assertFalse($lock->release());
    }

    /**
     * flushLocks() removes the lock items (the driver's, stock Laravel's, released ones) and no cache
     * item, page after page, and leaves a lock taken during the flush, after the flush read its item.
     *
     * @dataProvider serversAndLayouts
     */
    public function testFlushLocksRemovesOnlyLocksAndNotOneTakenDuringTheFlush(string $server, string $layout): void
    {
        $client = self::client($server);
        $table = self::table($client);
        $stock = self::stockStore($layout, $client, $table);
        $flushing = self::client($server);
        $store = self::driverStore($layout, $flushing, $table);
        foreach (['a', 'b', 'c', 'retaken'] as $name) {
            $this->assertTrue($store->lock($name, 60)->get());
        }
        $this->assertTrue($stock->lock('stock', 0)->get());
        $released = $store->setReleaseMode('keep-fence')->lock('released', 60);
        $this->assertTrue($released->get() && $released->release());
        $store->setReleaseMode('delete');
        foreach (['x' => 'hello', 'y' => [1, 2], 'z' => 42] as $key => $value) {
            $this->assertTrue($stock->put($key, $value, 600));
        }
        $retaken = null;
        $scans = 0;
        $list = $flushing->getHandlerList();
        // Pages of two items (the server's answer to Limit), so the flush must follow LastEvaluatedKey.
        $list->appendInit(Middleware::mapCommand(static function (CommandInterface $c) use (&$scans): CommandInterface {
            if ($c->getName() === 'Scan') {
                $scans++;
                $c['Limit'] = 2;
            }

            return $c;
        }), 'pages-of-two');
        // Just before the flush deletes lock `retaken`: its holder releases it and another takes it.
        $retake = function (CommandInterface $c) use ($client, $table, $layout, &$retaken): void {
            if ($c->getName() === 'DeleteItem' && $c['Key']['key']['S'] === self::lockKey($layout, 'app_', 'retaken')) {
                $other = self::driverStore($layout, $client, $table);
                $other->lock('retaken', 60)->forceRelease();
                $retaken = $other->lock('retaken', 60);
                $this->assertTrue($retaken->get());
            }
        };
        $list->appendSign(Middleware::tap($retake), 'take-during-flush');

        $this->assertTrue($store->flushLocks());
        $this->assertGreaterThanOrEqual(5, $scans, '10 items in pages of two');
        $this->assertNotNull($retaken, 'the flush reached lock `retaken`');
        $items = $client->scan(['TableName' => $table, 'ConsistentRead' => true])['Items'];
        $left = array_map(static fn (array $i): string => $i['key']['S'], $items);
        $cache = static fn (string $k): string => ($layout === 'laravel8' ? 'app_:' : 'app_') . $k;
        $this->assertEqualsCanonicalizing([$cache('x'), $cache('y'), $cache('z'), $retaken->tableKey()], $left);
        $this->assertTrue($retaken->isOwnedByCurrentProcess(), 'the lock taken during the flush is still held');
        $this->assertSame('hello', $stock->get('x'));
    }

    /**
     * Where the installed Laravel has `Illuminate\Contracts\Cache\CanFlushLocks` (12+), the store is
     * one, so `Cache::store()->flushLocks()` reaches it; the contract is declared here as Laravel
     * 13 declares it, since the test Laravel (8.83's framework) has none.
     */
    public function testTheStoreIsACanFlushLocksWhereLaravelHasTheContract(): void
    {
        $code = 'namespace Illuminate\Contracts\Cache; interface CanFlushLocks { public function flushLocks(): bool; '
            . 'public function hasSeparateLockStore(): bool; } require "' . __DIR__ . '/bootstrap.php"; '
            . 'echo json_encode([is_subclass_of(\Ddblock\Laravel\DynamoDbStore::class, CanFlushLocks::class), '
            . 'interface_exists(\Ddblock\Laravel\FlushesLocks::class)]);';
        exec(PHP_BINARY . ' -r ' . escapeshellarg($code), $out, $status);
        $this->assertSame([0, '[true,true]'], [$status, implode("\n", $out)]);
        $this->assertFalse(interface_exists(\Illuminate\Contracts\Cache\CanFlushLocks::class), 'not here');
        $store = new DynamoDbStore(self::client('moto'), 't', 'key', 'value', 'expires_at');
        $this->assertFalse($store->hasSeparateLockStore(), 'locks share the table with cache items');
    }

    /** @dataProvider servers */
    public function testRefreshExtendsOnlyOurLiveLock(string $server): void
    {
        [$client, $table, $store] = self::onSharedTable($server);
        $lock = $store->lock('refresh', 5);
        $this->assertTrue($lock->acquire());
        $expiry = fn (): int => (int) self::item($client, $table, $lock->tableKey())['expires_at']['N'];

        $t0 = time();
        $this->assertTrue($lock->refresh(60));
        $this->assertGreaterThanOrEqual($t0 + 60, $expiry());
        $this->assertTrue($lock->refresh(), 'null: the lock\'s own ttl');
        $this->assertLessThanOrEqual(time() + 5, $expiry());
        $this->assertTrue($lock->refresh(0), '0: a day');
        $this->assertGreaterThanOrEqual($t0 + 86400, $expiry());
        $this->assertFalse($store->lock('refresh', 5)->refresh(60), 'another owner cannot refresh it');
        $this->assertTrue($lock->release());
        $this->assertFalse($lock->refresh(60), 'a released lock is not refreshed (nor re-created)');
        $this->assertNull(self::item($client, $table, $lock->tableKey()));
    }

    /** @dataProvider servers */
    public function testBlockAndCallbacksReleaseWhenDone(string $server): void
    {
        [$client, $table, $store] = self::onSharedTable($server);

        $this->assertSame('done', $store->lock('cb', 10)->get(fn () => 'done'));
        $this->assertNull(self::item($client, $table, $store->lock('cb')->tableKey()), 'get($callback) released');
        $this->assertSame('blocked', $store->lock('cb', 10)->block(1, fn () => 'blocked'));
        $this->assertNull(self::item($client, $table, $store->lock('cb')->tableKey()), 'block($callback) released');

        $holder = $store->lock('cb', 10);
        $this->assertTrue($holder->get());
        $recorder = new Recorder();
        $waiter = self::driverStore(self::layouts()[0], self::client($server, $recorder), $table)->lock('cb', 10);
        $this->assertSame($waiter, $waiter->betweenBlockedAttemptsSleepFor(50));
        $started = microtime(true);
        try {
            $waiter->block(2);
            $this->fail('block() acquired a held lock');
        } catch (LockTimeoutException $e) {
            $waited = microtime(true) - $started;
        }
        // block() is the installed Laravel's own loop: 8's counts whole seconds (time()), so
        // block(1) can end after one attempt when the second turns during it (a loaded machine
        // did); block(2) retries for at least a whole second; 13's counts milliseconds. Each
        // attempt is one UpdateItem: at least the first and one retry.
        $this->assertLessThan(4.0, $waited);
        $this->assertGreaterThanOrEqual(2, $recorder->counts()['UpdateItem'] ?? 0);
        // Waiting reads nothing where the failed write names the holder (ALL_OLD: DynamoDB, moto,
        // DynamoDB Local); dynalite ignores ALL_OLD, so there each failed write is followed by one
        // consistent read.
        $reads = $recorder->counts()['GetItem'] ?? 0;
        $this->assertSame(self::returnsAllOld($server) ? 0 : $recorder->counts()['UpdateItem'], $reads);
        $this->assertTrue($holder->release());
        $this->assertTrue($waiter->block(1));
        $this->assertTrue($waiter->release());
    }

    /** @dataProvider servers */
    public function testTheSameOwnerThroughAnotherHandleIsRefusedWhileHeld(string $server): void
    {
        [$client, $table, $store] = self::onSharedTable($server);
        $lock = $store->lock('again', 30);
        $this->assertTrue($lock->acquire());
        $before = self::item($client, $table, $lock->tableKey());
        // Laravel's restoreLock() in another process (or a second handle here) with the same
        // owner: refused while the lock is held, as stock Laravel's add() refuses it. Only the
        // acquire call that wrote the item recognises it (its attempt id).
        $restored = $store->restoreLock('again', $lock->owner());
        $this->assertFalse($restored->get(), 'restoreLock()->get() while held');
        $this->assertNull($restored->fence());
        $this->assertFalse($lock->get(), 'a second acquire on the holding handle is a new call: refused too');
        $this->assertSame($before, self::item($client, $table, $lock->tableKey()), 'nothing was written');
        // The restored handle still releases it: whoever has the owner releases the lock.
        $this->assertTrue($restored->isOwnedByCurrentProcess());
        $this->assertTrue($restored->release());
        $this->assertTrue($restored->get(), 'free again');
        $this->assertTrue($restored->release());
    }

    /** @dataProvider servers */
    public function testExpiredLocksAreTakenOverOnlyPastTheClockSkewMargin(string $server): void
    {
        $client = self::client($server);
        $table = self::sharedTable($server);
        $layout = self::layouts()[0];
        $default = self::driverStore($layout, $client, $table);
        $this->assertSame(0, $default->clockSkewMargin(), "the default is Laravel's own rule");
        $store = (clone $default)->setClockSkewMargin(2);
        $key = self::lockKey($layout, 'app_', 'margin');
        $expiredAgo = function (int $seconds) use ($client, $table, $key): void {
            $client->putItem(['TableName' => $table, 'Item' => [
                'key' => ['S' => $key],
                'value' => ['S' => serialize('someone-else')],
                'expires_at' => ['N' => (string) (time() - $seconds)],
            ]]);
        };
        // Laravel's own condition would take both over; the margin (2 s) leaves a holder whose
        // clock is behind ours its lease.
        $expiredAgo(1);
        $this->assertFalse($store->lock('margin', 10)->get(), 'expired 1 s ago: still held');
        $this->assertSame(['S' => serialize('someone-else')], self::item($client, $table, $key)['value']);
        $stock = self::stockStore($layout, $client, $table)->lock('margin', 10);
        $this->assertTrue($stock->get(), 'stock Laravel takes it at once (no margin)');
        $stock->forceRelease();
        $expiredAgo(3);
        $lock = $store->lock('margin', 10);
        $this->assertTrue($lock->get(), 'expired 3 s ago: taken over');
        $this->assertTrue($lock->release());
        // The default margin, 0, is Laravel's condition.
        $expiredAgo(1);
        $this->assertTrue($default->lock('margin', 10)->get(), 'margin 0');
        try {
            $store->setClockSkewMargin(-1);
            $this->fail('a negative margin was accepted');
        } catch (\InvalidArgumentException $e) {
            $this->assertStringContainsString('-1', $e->getMessage());
        }
    }

    /** @dataProvider servers */
    public function testFencesGrowOnTakeoverAndStartAboveAfterADeleteOrLaravelsOverwrite(string $server): void
    {
        $client = self::client($server);
        $table = self::sharedTable($server);
        $layout = self::layouts()[0];
        $store = self::driverStore($layout, $client, $table);
        $key = self::lockKey($layout, 'app_', 'fenced');
        $fenceInTable = fn (): ?string => self::item($client, $table, $key)['ddblock_fence']['N'] ?? null;
        $t = time();

        // Laravel's clock (Carbon) moved, as for a holder paused past its expiry.
        Carbon::setTestNow(Carbon::createFromTimestamp($t - 60));
        $a = $store->lock('fenced', 10);
        $this->assertTrue($a->get());
        $fa = $a->fence();
        $this->assertIsInt($fa);
        Carbon::setTestNow(Carbon::createFromTimestamp($t - 30)); // A's lock expired 20 s ago
        $b = $store->lock('fenced', 10);
        $this->assertTrue($b->get(), 'taken over');
        $this->assertSame($fa + 1, $b->fence(), 'a takeover adds one');
        $fb = $b->fence();
        $this->assertTrue($b->release());
        $c = $store->lock('fenced', 10);
        $this->assertTrue($c->get());
        $this->assertGreaterThan($fb, $c->fence(), 'after a delete: from the clock, above');
        $fc = $c->fence();

        // Stock Laravel's add() takes the expired lock over with a whole-item PutItem: no fence.
        Carbon::setTestNow(Carbon::createFromTimestamp($t - 10));
        $this->assertTrue(self::stockStore($layout, $client, $table)->lock('fenced', 5)->get());
        $this->assertNull($fenceInTable(), "Laravel's item has no fence");
        Carbon::setTestNow();
        $d = $store->lock('fenced', 10);
        $this->assertTrue($d->get(), "Laravel's lock expired 5 s ago");
        $this->assertGreaterThan($fc, $d->fence(), "after Laravel's overwrite: from the clock, above");
        $this->assertSame((string) $d->fence(), $fenceInTable());
        $this->assertTrue($d->release());
    }

    /**
     * The fence's purpose, as docs/php.md shows it: the protected resource (here a DynamoDB item)
     * accepts a write only with a fence at least the last one it accepted, so a holder whose lock
     * expired while it was paused cannot overwrite its successor's work.
     *
     * @dataProvider servers
     */
    public function testAPausedHoldersLateWriteIsRefusedByTheFence(string $server): void
    {
        [$client, $table, $store] = self::onSharedTable($server);
        $write = function (int $fence, string $body) use ($client, $table): bool {
            try {
                $client->putItem([
                    'TableName' => $table,
                    'Item' => [
                        'key' => ['S' => 'resource'],
                        'fence' => ['N' => (string) $fence],
                        'body' => ['S' => $body],
                    ],
                    'ConditionExpression' => 'attribute_not_exists(fence) OR fence <= :fence',
                    'ExpressionAttributeValues' => [':fence' => ['N' => (string) $fence]],
                ]);

                return true;
            } catch (\Aws\DynamoDb\Exception\DynamoDbException $e) {
                $this->assertSame('ConditionalCheckFailedException', $e->getAwsErrorCode());

                return false;
            }
        };
        $t = time();
        Carbon::setTestNow(Carbon::createFromTimestamp($t - 60));
        $a = $store->lock('resource-lock', 10);
        $this->assertTrue($a->get());
        $this->assertTrue($write($a->fence(), 'from A'), "A's write, in time");
        // A pauses; its lock expires; B takes it over and writes.
        Carbon::setTestNow();
        $b = $store->lock('resource-lock', 10);
        $this->assertTrue($b->get());
        $this->assertTrue($write($b->fence(), 'from B'), "B's write");
        // A wakes up and writes with its old token: refused.
        $this->assertFalse($write($a->fence(), 'late, from A'), "A's late write is refused");
        $this->assertSame('from B', self::item($client, $table, 'resource')['body']['S']);
        $this->assertFalse($a->release(), "A's release does not delete B's lock");
        $this->assertTrue($b->release());
    }

    /** @dataProvider servers */
    public function testAwsErrorsAreExceptionsThatNameTheLockButNotTheOwner(string $server): void
    {
        $store = self::driverStore(self::layouts()[0], self::client($server), 'no_such_table_' . getmypid());
        $lock = $store->lock('orders', 10, 'a-secret-owner-token');
        $calls = [
            'acquire' => fn () => $lock->acquire(),
            'release' => fn () => $lock->release(),
            'refresh' => fn () => $lock->refresh(),
            'force-release' => fn () => $lock->forceRelease(),
            'read the owner of' => fn () => $lock->isLocked(),
        ];
        foreach ($calls as $action => $call) {
            try {
                $call();
                $this->fail("$action on a missing table did not throw");
            } catch (LockException $e) {
                $this->assertInstanceOf(DynamoDbException::class, $e, 'catch (DynamoDbException) still catches it');
                $this->assertSame('ResourceNotFoundException', $e->getAwsErrorCode());
                $this->assertInstanceOf(DynamoDbException::class, $e->getPrevious());
                $key = $lock->tableKey();
                $this->assertStringContainsString(
                    "could not $action the lock with key \"$key\" in table",
                    $e->getMessage()
                );
                $this->assertStringContainsString('ResourceNotFoundException', $e->getMessage());
                $this->assertStringNotContainsString('a-secret-owner-token', $e->getMessage());
            }
        }
    }

    public function testAnUnreachableEndpointIsAnExceptionNotFalse(): void
    {
        $options = ['retries' => 0, 'http' => ['connect_timeout' => 2, 'timeout' => 2]];
        $recorder = new Recorder();
        $client = self::client('http://127.0.0.1:9', $recorder, $options);
        $lock = self::driverStore(self::layouts()[0], $client, 'cache')->lock('orders', 10, 'a-secret-owner-token');
        try {
            $lock->release();
            $this->fail('release() without a server did not throw');
        } catch (LockException $e) {
            $this->assertStringContainsString('no answer from DynamoDB', $e->getMessage());
            $this->assertStringNotContainsString('a-secret-owner-token', $e->getMessage());
        }
        // A connection that was never made wrote nothing: a try refused before it could land,
        // retried by the driver up to its 3 tries (the core's rule), then a plain LockException:
        // no clean-up (an unknown outcome is only a request that was sent and got no answer).
        $recorder->take();
        try {
            $lock->acquire();
            $this->fail('acquire() without a server did not throw');
        } catch (LockException $e) {
            $this->assertNotInstanceOf(OutcomeUnknownException::class, $e);
            $this->assertStringContainsString('could not acquire the lock', $e->getMessage());
            $this->assertSame(['UpdateItem' => 3], $recorder->counts(), '3 tries of the write, nothing else');
        }
    }

    public function testOwnersAreRedactedToFourCharacters(): void
    {
        $this->assertSame('"y5lg…" (16 chars)', LockException::redact('y5lgfdhGNbGy3sTY'));
        $this->assertSame('"1234"', LockException::redact('1234'));
    }
}
