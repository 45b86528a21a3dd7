<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests;

use Ddblock\Laravel\DynamoDbLock;
use Ddblock\Laravel\Tests\Support\FaultProxy;
use Ddblock\Laravel\Tests\Support\TestApp;
use Ddblock\Laravel\Tests\Support\Workers;
use Illuminate\Cache\DynamoDbLock as LaravelDynamoDbLock;
use Illuminate\Support\Facades\Cache;

/**
 * Through the fault proxy serving eventually consistent reads up to 500 ms stale (as DynamoDB can
 * under load; the local servers never are): stock Laravel's release leaves locks stuck, the
 * driver's never does, costs one PutItem and one DeleteItem per cycle and reads nothing, and no
 * two workers ever hold a lock at once. Figures go to stderr (one `[figures]` line per run).
 */
final class FaultProxyTest extends TestCase
{
    private const CYCLES = 20;
    private const STALE = ['--stale-ms', '500', '--stale-probability', '1', '--seed', '7'];

    private static function proxy(string $server, array $flags = self::STALE): FaultProxy
    {
        return FaultProxy::start(self::cargoBinary('fault-proxy'), self::endpoint($server), $flags);
    }

    /**
     * The app's `dynamodb` store, uncontended acquire/release cycles on fresh names: first with
     * the takeover switched off (stock Laravel), then as installed (the driver).
     *
     * @dataProvider servers
     */
    public function testTheDriverNeverSticksAndCostsTwoRequestsPerCycle(string $server): void
    {
        $proxy = self::proxy($server);
        $table = self::table(self::client($server)); // made upstream, not through the proxy
        $config = TestApp::cacheConfig($proxy->url, $table);

        TestApp::boot($config, ['takeover_dynamodb' => false]);
        $this->assertInstanceOf(LaravelDynamoDbLock::class, Cache::store('dynamodb')->lock('x'));
        [$stockStuck, $stock] = $this->cycles($proxy, 'stock', $table, $server);

        TestApp::boot($config);
        $this->assertInstanceOf(DynamoDbLock::class, Cache::store('dynamodb')->lock('x'));
        [$driverStuck, $driver] = $this->cycles($proxy, 'driver', $table, $server);
        $proxy->stop();

        fwrite(STDERR, sprintf(
            "\n[figures] Laravel %s, %s through the proxy (reads up to 500 ms stale), %d uncontended cycles each:\n"
            . "[figures]   stock Laravel: %d stuck; requests %s = %.2f per cycle\n"
            . "[figures]   ddblock driver: %d stuck; requests %s = %.2f per cycle\n",
            self::laravel(),
            $server,
            self::CYCLES,
            $stockStuck,
            json_encode($stock),
            array_sum($stock) / self::CYCLES,
            $driverStuck,
            json_encode($driver),
            array_sum($driver) / self::CYCLES
        ));

        $this->assertGreaterThan(0, $stockStuck, "stock Laravel's read-then-delete sticks on stale reads");
        $this->assertSame(self::CYCLES, $stock['GetItem'] ?? 0, 'stock Laravel reads before each delete');
        $this->assertSame(0, $driverStuck, 'the driver never leaves a lock behind');
        $this->assertSame(
            ['DeleteItem' => self::CYCLES, 'PutItem' => self::CYCLES],
            $driver,
            'exactly 2 requests per cycle, no read'
        );
    }

    /**
     * @return array{0: int, 1: array<string, int>} [locks left in the table, requests per operation]
     */
    private function cycles(FaultProxy $proxy, string $label, string $table, string $server): array
    {
        $proxy->reset();
        $locks = [];
        for ($i = 0; $i < self::CYCLES; $i++) {
            $lock = Cache::store('dynamodb')->lock("$label-$i", 30);
            $this->assertTrue($lock->get(), "$label cycle $i acquires a free lock");
            $lock->release();
            $locks[] = $lock;
        }
        $requests = $proxy->requests();
        ksort($requests);
        // What is left behind, read on the server itself (consistent), not through the proxy.
        $left = 0;
        $client = self::client($server);
        foreach ($locks as $i => $lock) {
            $key = self::lockKey(self::layouts()[0], 'app_', "$label-$i");
            $left += self::item($client, $table, $key) === null ? 0 : 1;
        }

        return [$left, $requests];
    }

    /**
     * Through the stale proxy: driver workers alone contend on two names, then driver and stock
     * Laravel workers on one table (a fleet half deployed). The driver leaves nothing stuck and
     * no lock ever has two holders, across both kinds. (Stock Laravel's stuck locks block their
     * names until they expire, so in the mixed run few cycles get a lock at all.)
     *
     * @dataProvider servers
     */
    public function testConcurrentWorkersNeverHoldALockTogether(string $server): void
    {
        $proxy = self::proxy($server);
        $runs = [
            'driver alone' => ['ddblock' => 3],
            'driver and stock Laravel' => ['ddblock' => 3, 'laravel' => 1],
        ];
        foreach ($runs as $label => $groups) {
            $table = self::table(self::client($server));
            $records = Workers::run($proxy->url, $table, self::layouts()[0], $groups, ['a', 'b'], 40, 1, 10);
            $summary = Workers::summary($records);
            $overlaps = Workers::overlaps($records);
            fwrite(STDERR, sprintf(
                "\n[figures] Laravel %s, %s, %s (%s workers x 40 cycles, 2 names): %s; %d overlaps\n",
                self::laravel(),
                $server,
                $label,
                json_encode($groups),
                json_encode($summary),
                $overlaps
            ));
            $this->assertSame(40 * array_sum($groups), count($records));
            $this->assertSame(0, $overlaps, "$label: two holders of one lock at once");
            $this->assertSame(0, array_sum(array_column($summary, 'errors')));
            $this->assertSame(0, $summary['ddblock']['stuck'], "$label: the driver left a lock behind");
            if ($label === 'driver alone') {
                $this->assertGreaterThanOrEqual(30, $summary['ddblock']['acquired'], 'enough holds to compare');
            }
        }
        $proxy->stop();
    }

    /**
     * The proxy forwards a PutItem and drops its answer; the SDK retries, and the retry's
     * condition fails on the item the first attempt wrote. The driver recognises its own item
     * (ALL_OLD, or one consistent read on dynalite) and holds the lock; stock Laravel's add()
     * answers false, and its own lock then blocks everyone until it expires.
     *
     * @dataProvider servers
     */
    public function testALostAcquireAnswerIsRecovered(string $server): void
    {
        $proxy = self::proxy($server, []);
        $table = self::table(self::client($server));
        // Seed 6 drops the first PutItem answer (and at most a few more); the SDK retries up to 3 times.
        $dropFirstPut = ['seed' => 6, 'drop_response_rate' => 0.5, 'drop_ops' => ['PutItem']];
        $client = self::client($proxy->url, null, ['retries' => 3]);
        $layout = self::layouts()[0];

        $proxy->configure($dropFirstPut);
        $driver = self::driverStore($layout, $client, $table)->lock('lost', 30);
        $this->assertTrue($driver->acquire(), 'the driver holds the lock its first attempt wrote');
        $this->assertGreaterThanOrEqual(1, $proxy->stats()['PutItem']['dropped'] ?? 0, 'an answer was dropped');
        $this->assertTrue($driver->isOwnedByCurrentProcess());
        $this->assertTrue($driver->release());

        $proxy->configure($dropFirstPut);
        $stock = self::stockStore($layout, $client, $table)->lock('lost', 30);
        $this->assertFalse($stock->acquire(), "stock Laravel's add() answers false");
        $this->assertGreaterThanOrEqual(1, $proxy->stats()['PutItem']['dropped'] ?? 0);
        $this->assertSame(
            ['S' => serialize($stock->owner())],
            self::item(self::client($server), $table, self::lockKey($layout, 'app_', 'lost'))['value'],
            'yet the lock is its own, left for 30 s'
        );
        $proxy->stop();
    }
}
