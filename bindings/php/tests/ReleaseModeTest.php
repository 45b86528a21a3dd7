<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests;

use Ddblock\Laravel\DynamoDbStore;
use Ddblock\Laravel\Tests\Support\FaultProxy;
use Illuminate\Support\Carbon;
use InvalidArgumentException;

/**
 * The keep-fence release mode (`ddblock.release_mode`, `DDBLOCK_RELEASE_MODE=keep-fence`) against
 * moto, dynalite and DynamoDB Local, in each key layout the loaded Laravel writes: the release is
 * one owner-conditioned UpdateItem that ends the hold and keeps the item's fencing token, stock
 * Laravel on the same table reads the lock as free and takes it, the next acquisition continues
 * the fence even from a clock that is behind, a lost answer is resent and reads as released, and
 * a second release is not. The requests themselves are the conformance vectors'
 * (`ConformanceTest`, the `keep-fence-*` cases).
 */
final class ReleaseModeTest extends TestCase
{
    /** The attributes of a lock item after a keep-fence release: no owner, no attempt id. */
    private const RELEASED_ATTRIBUTES = ['ddblock_fence', 'expires_at', 'key'];

    /** @return list<string> the item's attribute names, sorted */
    private static function attributes(?array $item): array
    {
        $names = array_keys($item ?? []);
        sort($names);

        return $names;
    }

    /**
     * Whether stock Laravel's lock reads lock `$name` as held: its protected getCurrentOwner()
     * (an eventually consistent GetItem; the local servers are never stale), which its release()
     * and, from Laravel 11, isLocked() use.
     */
    private static function stockOwner(\Illuminate\Cache\Lock $lock)
    {
        return (fn () => $this->getCurrentOwner())->call($lock);
    }

    /** @dataProvider serversAndLayouts */
    public function testAKeepFenceReleaseKeepsTheFenceAndStockLaravelTakesTheLock(string $server, string $layout): void
    {
        $client = self::client($server);
        $table = self::sharedTable($server);
        $store = self::driverStore($layout, $client, $table)->setReleaseMode('keep-fence');
        $this->assertSame('keep-fence', $store->releaseMode());
        $lock = $store->lock('kept', 30);
        $this->assertTrue($lock->get());
        $fence = $lock->fence();
        $this->assertIsInt($fence);

        $t0 = time();
        $this->assertTrue($lock->release());
        $this->assertNull($lock->fence(), 'the handle holds nothing after the release');
        $item = self::item($client, $table, $lock->tableKey());
        $this->assertSame(self::RELEASED_ATTRIBUTES, self::attributes($item), 'owner and attempt id removed');
        $this->assertSame(['N' => (string) $fence], $item['ddblock_fence'], 'the fence kept');
        $expiresAt = (int) $item['expires_at']['N'];
        $this->assertGreaterThanOrEqual($t0 - 86400, $expiresAt, 'a day before the release');
        $this->assertLessThanOrEqual(time() - 86400, $expiresAt);

        // Every reader sees the lock free: the driver, and stock Laravel on the same table.
        $this->assertFalse($lock->isLocked());
        $this->assertTrue($store->lock('kept', 30)->isOwnedBy(null));
        $stock = self::stockStore($layout, $client, $table);
        $this->assertNull($stock->get(substr($lock->tableKey(), strlen($stock->getPrefix()))), "stock get(): expired");
        $stockLock = $stock->lock('kept', 30);
        $this->assertNull(self::stockOwner($stockLock), "stock Laravel's lock reads it as free");
        $this->assertTrue($stockLock->get(), "stock Laravel's add() takes it (expires_at < now)");
        $this->assertSame(
            ['S' => serialize($stockLock->owner())],
            self::item($client, $table, $lock->tableKey())['value']
        );
        $this->assertFalse($store->lock('kept', 30)->get(), "held by stock Laravel's lock now");
        $this->assertTrue($stockLock->release(), "stock Laravel's read-then-delete release");
        $this->assertNull(self::item($client, $table, $lock->tableKey()));
    }

    /**
     * The point of the mode: after a keep-fence release the next acquisition's fence is the kept
     * one + 1, even when the acquirer's clock (its `now` and the fence base it would start from)
     * is behind the releaser's; after a delete release the same acquirer restarts from its clock,
     * below the last fence.
     *
     * @dataProvider servers
     */
    public function testTheNextFenceContinuesFromTheKeptOneWhateverTheAcquirersClock(string $server): void
    {
        $client = self::client($server);
        $table = self::sharedTable($server);
        $layout = self::layouts()[0];
        $t = time();
        foreach (['keep-fence', 'delete'] as $mode) {
            $name = "fenced-$mode";
            $store = self::driverStore($layout, $client, $table)->setReleaseMode($mode);
            $a = $store->lock($name, 30);
            $this->assertTrue($a->get());
            $first = $a->fence();
            $this->assertGreaterThan($t * 1000000, $first, 'the first fence is from the clock in microseconds');
            $this->assertTrue($a->release());

            // An acquirer whose clock is 10 minutes behind: Laravel's (Carbon) and the fence base.
            $behind = $t - 600;
            Carbon::setTestNow(Carbon::createFromTimestamp($behind));
            $late = self::driverStore($layout, $client, $table)->setReleaseMode($mode);
            $late->setLockIds(null, static fn (): int => $behind * 1000000);
            $b = $late->lock($name, 30);
            $this->assertTrue($b->get(), "$mode: the released lock is free for a clock 10 minutes behind");
            if ($mode === 'keep-fence') {
                $this->assertSame($first + 1, $b->fence(), 'keep-fence: the kept fence + 1');
            } else {
                $this->assertSame($behind * 1000000 + 1, $b->fence(), "delete: restarted from the acquirer's clock");
                $this->assertLessThan($first, $b->fence(), 'delete: below the last fence');
            }
            $second = $b->fence();
            $this->assertTrue($b->release());
            Carbon::setTestNow();

            // And again from the right clock: one more.
            $c = $store->lock($name, 30);
            $this->assertTrue($c->get());
            if ($mode === 'keep-fence') {
                $this->assertSame($second + 1, $c->fence());
            }
            $third = $c->fence();
            $this->assertTrue($c->release());
            $item = self::item($client, $table, $c->tableKey());
            if ($mode === 'keep-fence') {
                $this->assertSame(['N' => (string) $third], $item['ddblock_fence'] ?? null);
            } else {
                $this->assertNull($item, 'delete: the item is gone');
            }
        }
    }

    /**
     * Releasing twice: the second release finds the lock released (no owner), reads it as not
     * held (false) and changes nothing; other owners' locks and missing items are not held
     * either, and no item is created.
     *
     * @dataProvider servers
     */
    public function testReleasingTwiceIsNotHeld(string $server): void
    {
        $client = self::client($server);
        $table = self::sharedTable($server);
        $store = self::driverStore(self::layouts()[0], $client, $table)->setReleaseMode('keep-fence');
        $lock = $store->lock('twice', 30);
        $this->assertTrue($lock->get());
        $this->assertTrue($lock->release());
        $item = self::item($client, $table, $lock->tableKey());
        $this->assertFalse($lock->release(), 'the second release: not held');
        $this->assertFalse($store->restoreLock('twice', $lock->owner())->release(), 'nor through another handle');
        $this->assertSame($item, self::item($client, $table, $lock->tableKey()), 'nothing changed');

        $other = $store->lock('twice', 30);
        $this->assertTrue($other->get(), 'taken again');
        $this->assertFalse($lock->release(), "another owner's lock is not released");
        $this->assertTrue($other->isOwnedByCurrentProcess());
        $this->assertTrue($other->release());

        $missing = $store->lock('twice-missing', 30);
        $this->assertFalse($missing->release());
        $this->assertNull(self::item($client, $table, $missing->tableKey()), 'no item created');
    }

    /**
     * forceRelease() in keep-fence mode: whoever holds the lock, its item is released the same
     * way (fence kept), and a missing item is not created; refresh() of a released lock fails.
     *
     * @dataProvider servers
     */
    public function testForceReleaseKeepsTheFenceToo(string $server): void
    {
        $client = self::client($server);
        $table = self::sharedTable($server);
        $layout = self::layouts()[0];
        $store = self::driverStore($layout, $client, $table)->setReleaseMode('keep-fence');
        $lock = $store->lock('forced', 30);
        $this->assertTrue($lock->get());
        $fence = $lock->fence();
        $store->lock('forced')->forceRelease();
        $item = self::item($client, $table, $lock->tableKey());
        $this->assertSame(self::RELEASED_ATTRIBUTES, self::attributes($item));
        $this->assertSame(['N' => (string) $fence], $item['ddblock_fence']);
        $this->assertFalse($lock->isLocked());
        $this->assertFalse($lock->refresh(60), 'a released lock is not refreshed');
        $this->assertFalse($lock->release(), 'its holder finds it not held');
        $next = $store->lock('forced', 30);
        $this->assertTrue($next->get());
        $this->assertSame($fence + 1, $next->fence());
        $store->lock('forced')->forceRelease();

        // Stock Laravel's lock (no fence): released, nothing to keep.
        $this->assertTrue(self::stockStore($layout, $client, $table)->lock('forced-laravel', 30)->get());
        $store->lock('forced-laravel')->forceRelease();
        $key = self::lockKey($layout, 'app_', 'forced-laravel');
        $this->assertSame(['expires_at', 'key'], self::attributes(self::item($client, $table, $key)));

        $store->lock('forced-missing')->forceRelease(); // nothing there: not an error
        $this->assertNull(self::item($client, $table, self::lockKey($layout, 'app_', 'forced-missing')));
    }

    /**
     * The proxy forwards the release's UpdateItem and drops its answer; the SDK sends it again
     * (the client's retries), and the resend's condition fails on the item the first send
     * released: false, as the delete mode answers when its resend finds the item gone, and as the
     * core's not_held (issue 36; it answered true before), the fence kept. The handle acquired the
     * lock, so the answer is told (ALL_OLD, or one consistent read where the server ignores it:
     * dynalite). A second release() is then not held.
     *
     * @dataProvider servers
     */
    public function testALostAnswerToAKeepFenceReleaseIsResentAndAnswersAsTheDeleteMode(string $server): void
    {
        $proxy = self::startedOnce(
            "fault-proxy $server",
            static fn (): FaultProxy => FaultProxy::start(self::cargoBinary('fault-proxy'), self::endpoint($server))
        );
        $direct = self::client($server);
        $table = self::sharedTable($server);
        $client = self::client($proxy->url, null, ['retries' => 3]);
        $store = self::driverStore(self::layouts()[0], $client, $table)->setReleaseMode('keep-fence');
        $lock = $store->lock('lost-release', 30);
        $this->assertTrue($lock->get());
        $fence = $lock->fence();

        $proxy->configure(['sequence' => ['UpdateItem' => ['drop']]]);
        $proxy->reset();
        $this->assertFalse($lock->release(), 'the resend found the item released: not held');
        $stats = $proxy->stats();
        $updates = $stats['UpdateItem'] ?? [];
        ksort($updates);
        $this->assertSame(
            ['dropped' => 1, 'forwarded_error:ConditionalCheckFailedException' => 1],
            $updates,
            'an answer was dropped; the resend found the lock released'
        );
        $this->assertSame(
            self::returnsAllOld($server) ? [] : ['forwarded_ok' => 1],
            $stats['GetItem'] ?? [],
            'the fallback read only where the server ignores ALL_OLD'
        );
        $item = self::item($direct, $table, $lock->tableKey());
        $this->assertSame(self::RELEASED_ATTRIBUTES, self::attributes($item));
        $this->assertSame(['N' => (string) $fence], $item['ddblock_fence']);

        // A second release (one send, nothing lost): not held, and no read.
        $proxy->configure(['sequence' => (object) []]);
        $proxy->reset();
        $this->assertFalse($lock->release(), 'released twice: not held');
        $stats = $proxy->stats();
        $this->assertSame(['forwarded_error:ConditionalCheckFailedException' => 1], $stats['UpdateItem'] ?? []);
        $this->assertSame([], $stats['GetItem'] ?? [], 'no read without a resend');

        // A lost answer to the delete mode's release, for comparison: the resend finds nothing.
        $deleting = self::driverStore(self::layouts()[0], $client, $table);
        $other = $deleting->lock('lost-release', 30);
        $this->assertTrue($other->get());
        $proxy->configure(['sequence' => ['DeleteItem' => ['drop']]]);
        $this->assertFalse($other->release(), 'delete mode: the resend finds the lock gone (not held)');
        $this->assertNull(self::item($direct, $table, $lock->tableKey()));
        $proxy->configure(['sequence' => (object) []]);
    }

    /** The setting: `delete` or `keep-fence`, any case, blanks around; anything else is refused. */
    public function testTheReleaseModeIsValidated(): void
    {
        $store = self::driverStore(self::layouts()[0], self::client('moto'), 'unused');
        $this->assertSame('delete', $store->releaseMode(), 'the default');
        $this->assertSame(DynamoDbStore::DEFAULT_RELEASE_MODE, $store->releaseMode());
        $this->assertSame('keep-fence', $store->setReleaseMode(' KEEP-FENCE ')->releaseMode());
        $this->assertSame('delete', $store->setReleaseMode('Delete')->releaseMode());
        $this->assertSame('delete', $store->setReleaseMode(null)->releaseMode(), 'null: an unset key, the default');
        foreach (['', 'keep_fence', 'keepfence', 'expire', 'overwrite', 1, true, ['keep-fence']] as $bad) {
            try {
                $store->setReleaseMode($bad);
                $this->fail('accepted ' . var_export($bad, true));
            } catch (InvalidArgumentException $e) {
                $this->assertStringContainsString('ddblock.release_mode', $e->getMessage());
                $this->assertStringContainsString('DDBLOCK_RELEASE_MODE', $e->getMessage());
                $this->assertStringContainsString('"delete" (the default) or "keep-fence"', $e->getMessage());
            }
            $this->assertSame('delete', $store->releaseMode(), 'unchanged by a refused value');
        }
    }
}
