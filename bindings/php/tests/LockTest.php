<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests;

use Aws\DynamoDb\Exception\DynamoDbException;
use Ddblock\Laravel\DynamoDbLock;
use Ddblock\Laravel\LockException;
use Ddblock\Laravel\Tests\Support\Recorder;
use Illuminate\Contracts\Cache\LockTimeoutException;

/**
 * Every lock operation of the driver against moto and dynalite, in each key layout the loaded
 * Laravel writes, through the real AWS SDK for PHP; stock Laravel's lock on the same table where
 * the two must agree (same key, same item) or differ (numeric owners).
 */
final class LockTest extends TestCase
{
    /** @var array<string, string> */
    private static array $tableOf = [];

    private function tableFor(string $server): string
    {
        return self::$tableOf[$server] ??= self::table(self::client($server));
    }

    /** @dataProvider serversAndLayouts */
    public function testAcquireThenReleaseWritesLaravelsItemAndDeletesIt(string $server, string $layout): void
    {
        $client = self::client($server);
        $table = $this->tableFor($server);
        $store = self::driverStore($layout, $client, $table);
        $lock = $store->lock('cycle', 10);
        $this->assertInstanceOf(DynamoDbLock::class, $lock);
        $this->assertSame(self::lockKey($layout, 'app_', 'cycle'), $lock->tableKey());
        $this->assertMatchesRegularExpression('/^[A-Za-z0-9]{16}$/', $lock->owner());

        $t0 = time();
        $this->assertTrue($lock->get());
        $t1 = time();
        $item = self::item($client, $table, $lock->tableKey());
        $this->assertSame(['key', 'value', 'expires_at'], array_keys($item ?? []));
        $this->assertSame(['S' => serialize($lock->owner())], $item['value']);
        $this->assertGreaterThanOrEqual($t0 + 10, (int) $item['expires_at']['N']);
        $this->assertLessThanOrEqual($t1 + 10, (int) $item['expires_at']['N']);

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
        $table = $this->tableFor($server);
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
        $table = $this->tableFor($server);
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

    /** @dataProvider servers */
    public function testTtlZeroIsADayAndForceReleaseDeletesAnyonesLock(string $server): void
    {
        $client = self::client($server);
        $table = $this->tableFor($server);
        $store = self::driverStore(self::layouts()[0], $client, $table);
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

    /** @dataProvider servers */
    public function testRefreshExtendsOnlyOurLiveLock(string $server): void
    {
        $client = self::client($server);
        $table = $this->tableFor($server);
        $store = self::driverStore(self::layouts()[0], $client, $table);
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
        $client = self::client($server);
        $table = $this->tableFor($server);
        $store = self::driverStore(self::layouts()[0], $client, $table);

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
            $waiter->block(1);
            $this->fail('block() acquired a held lock');
        } catch (LockTimeoutException $e) {
            $waited = microtime(true) - $started;
        }
        // block() is the installed Laravel's own loop: 8's counts whole seconds (time()), so 1 s
        // means anything from one 50 ms sleep to about 1.1 s; 13's counts milliseconds. Each
        // attempt is one PutItem: at least the first and one retry.
        $this->assertLessThan(3.0, $waited);
        $this->assertGreaterThanOrEqual(2, $recorder->counts()['PutItem'] ?? 0);
        // Waiting reads nothing where the failed put names the holder (ALL_OLD: DynamoDB, moto);
        // dynalite ignores ALL_OLD, so there each failed put is followed by one consistent read.
        $reads = $recorder->counts()['GetItem'] ?? 0;
        $this->assertSame($server === 'moto' ? 0 : $recorder->counts()['PutItem'], $reads);
        $this->assertTrue($holder->release());
        $this->assertTrue($waiter->block(1));
        $this->assertTrue($waiter->release());
    }

    /** @dataProvider servers */
    public function testAcquiringAgainWithTheSameOwnerIsRecoveredWithoutExtendingIt(string $server): void
    {
        $client = self::client($server);
        $table = $this->tableFor($server);
        $store = self::driverStore(self::layouts()[0], $client, $table);
        $lock = $store->lock('again', 30);
        $this->assertTrue($lock->acquire());
        $expires = self::item($client, $table, $lock->tableKey())['expires_at'];
        // The item already carries our owner: what an SDK retry of a put whose answer was lost
        // finds. The lock is ours; the first write's expiry stands (use refresh() to extend).
        $this->assertTrue($store->restoreLock('again', $lock->owner())->acquire());
        $this->assertSame($expires, self::item($client, $table, $lock->tableKey())['expires_at']);
        $this->assertTrue($lock->release());
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
        $client = self::client('http://127.0.0.1:9', null, $options);
        $lock = self::driverStore(self::layouts()[0], $client, 'cache')->lock('orders', 10, 'a-secret-owner-token');
        try {
            $lock->release();
            $this->fail('release() without a server did not throw');
        } catch (LockException $e) {
            $this->assertStringContainsString('no answer from DynamoDB', $e->getMessage());
            $this->assertStringNotContainsString('a-secret-owner-token', $e->getMessage());
        }
    }

    public function testOwnersAreRedactedToFourCharacters(): void
    {
        $this->assertSame('"y5lg…" (16 chars)', LockException::redact('y5lgfdhGNbGy3sTY'));
        $this->assertSame('"1234"', LockException::redact('1234'));
    }
}
