<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests;

use Ddblock\Laravel\DynamoDbLock;
use Ddblock\Laravel\OutcomeUnknownException;
use Ddblock\Laravel\Tests\Support\FaultProxy;
use Ddblock\Laravel\Tests\Support\TestApp;
use Ddblock\Laravel\Tests\Support\Workers;
use Illuminate\Cache\DynamoDbLock as LaravelDynamoDbLock;
use Illuminate\Support\Facades\Cache;

/**
 * Through the fault proxy serving eventually consistent reads up to 500 ms stale (as DynamoDB can
 * under load; the local servers never are): stock Laravel's release leaves locks stuck, the
 * driver's never does, costs one UpdateItem and one DeleteItem per cycle and reads nothing, and
 * no two workers ever hold a lock at once, stock Laravel, driver and ddblock workers mixed.
 * Through answers that get lost (dropped, reset, too late, 5xx): the driver recovers its own
 * write, and cleans up a write whose outcome stays unknown. Figures go to stderr (`[figures]`
 * lines).
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
            . "[figures]   ddblock driver: %d stuck; requests %s = %.2f per cycle (0 reads)\n",
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
            ['DeleteItem' => self::CYCLES, 'UpdateItem' => self::CYCLES],
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
     * Through the stale proxy: driver workers alone contend on two names (every eventually
     * consistent read stale), then stock Laravel, driver and ddblock workers (the Rust core
     * through the Python binding) on one table, four names (a fleet half deployed, beside ddblock
     * services; a fifth of the reads stale, so that stock Laravel's stuck locks, which block their
     * names until they expire plus ddblock's clock-skew margin, leave the others cycles to hold
     * locks in). No lock ever has two holders, across all three kinds; the driver and ddblock
     * leave nothing stuck.
     *
     * @dataProvider servers
     */
    public function testConcurrentWorkersNeverHoldALockTogether(string $server): void
    {
        $proxy = self::proxy($server);
        // [workers per kind, names, cycles per worker, share of stale reads]
        $runs = [
            'driver alone' => [['ddblock' => 3], ['a', 'b'], 40, 1.0],
            'stock Laravel, driver and ddblock' => [
                ['laravel' => 1, 'ddblock' => 2, 'core' => 2],
                ['a', 'b', 'c', 'd'],
                60,
                0.2,
            ],
        ];
        foreach ($runs as $label => [$groups, $names, $cycles, $stale]) {
            $proxy->configure(['stale_ms' => 500, 'stale_probability' => $stale, 'seed' => 7]);
            $table = self::table(self::client($server));
            $records = Workers::run($proxy->url, $table, self::layouts()[0], $groups, $names, $cycles, 1, 10);
            $summary = Workers::summary($records);
            ksort($summary);
            $overlaps = Workers::overlaps($records);
            fwrite(STDERR, sprintf(
                "\n[figures] Laravel %s, %s, %s (%s workers x %d cycles, %d names, %d%% of reads stale): "
                . "%s; %d overlaps\n",
                self::laravel(),
                $server,
                $label,
                json_encode($groups),
                $cycles,
                count($names),
                (int) round($stale * 100),
                json_encode($summary),
                $overlaps
            ));
            $this->assertSame($cycles * array_sum($groups), count($records));
            $this->assertSame(0, $overlaps, "$label: two holders of one lock at once");
            $this->assertSame(0, array_sum(array_column($summary, 'errors')));
            $this->assertSame(0, $summary['ddblock']['stuck'], "$label: the driver left a lock behind");
            $this->assertSame(0, $summary['core']['stuck'] ?? 0, "$label: ddblock left a lock behind");
            foreach (array_keys($groups) as $kind) {
                $this->assertGreaterThanOrEqual(3, $summary[$kind]['acquired'], "$label: $kind workers held locks");
            }
            if ($label === 'driver alone') {
                $this->assertGreaterThanOrEqual(30, $summary['ddblock']['acquired'], 'enough holds to compare');
            }
        }
        $proxy->stop();
    }

    /**
     * The proxy forwards an UpdateItem and drops its answer; the SDK retries, and the retry's
     * condition fails on the item the first send wrote. The driver recognises its own write (its
     * attempt id, from ALL_OLD, or one consistent read on dynalite) and holds the lock, with the
     * fence the first send wrote; stock Laravel's add() answers false, and its own lock then
     * blocks everyone until it expires.
     *
     * @dataProvider servers
     */
    public function testALostAcquireAnswerIsRecovered(string $server): void
    {
        $proxy = self::proxy($server, []);
        $table = self::table(self::client($server));
        $client = self::client($proxy->url, null, ['retries' => 3]);
        $layout = self::layouts()[0];
        $key = self::lockKey($layout, 'app_', 'lost');

        // Seed 6 drops the first answer of the faulted operation (and at most a few more); the
        // SDK retries up to 3 times.
        $proxy->configure(['seed' => 6, 'drop_response_rate' => 0.5, 'drop_ops' => ['UpdateItem']]);
        $driver = self::driverStore($layout, $client, $table)->lock('lost', 30);
        $this->assertTrue($driver->acquire(), 'the driver holds the lock its first send wrote');
        $driverStats = $proxy->stats();
        $this->assertGreaterThanOrEqual(1, $driverStats['UpdateItem']['dropped'] ?? 0, 'an answer was dropped');
        $this->assertSame(
            ['N' => (string) $driver->fence()],
            self::item(self::client($server), $table, $key)['ddblock_fence'],
            'the fence of the first send'
        );
        $this->assertTrue($driver->isOwnedByCurrentProcess());
        $this->assertTrue($driver->release());

        $proxy->configure(['seed' => 6, 'drop_response_rate' => 0.5, 'drop_ops' => ['PutItem']]);
        $proxy->reset();
        $stock = self::stockStore($layout, $client, $table)->lock('lost', 30);
        $this->assertFalse($stock->acquire(), "stock Laravel's add() answers false");
        $stockStats = $proxy->stats();
        $this->assertGreaterThanOrEqual(1, $stockStats['PutItem']['dropped'] ?? 0);
        fwrite(STDERR, sprintf(
            "\n[figures] Laravel %s, %s, a lost acquire answer: driver recovered its write, requests %s; "
            . "stock Laravel answered false and left its own lock, requests %s\n",
            self::laravel(),
            $server,
            json_encode($driverStats),
            json_encode($stockStats)
        ));
        $this->assertSame(
            ['S' => serialize($stock->owner())],
            self::item(self::client($server), $table, $key)['value'],
            'yet the lock is its own, left for 30 s'
        );
        $proxy->stop();
    }

    /**
     * No answer ever comes to the acquire's UpdateItem, whatever the SDK retries: the driver
     * sends it again once with the same attempt id, then deletes its own write with a DeleteItem
     * conditioned on its owner and attempt id, and throws OutcomeUnknownException saying what
     * the clean-up found. The lock is never left stranded. Answers dropped after the write landed,
     * connections reset after it landed, and answers later than the client's timeout: the write
     * landed, the clean-up deletes it. 500s from a server that wrote nothing: the clean-up finds
     * nothing.
     *
     * @dataProvider servers
     */
    public function testAnAcquireWhoseOutcomeStaysUnknownIsCleanedUp(string $server): void
    {
        // [the proxy's fault, its outcome in the proxy's stats, what the clean-up finds]
        $faults = [
            'dropped answers' => [['drop_response_rate' => 1.0, 'drop_ops' => ['UpdateItem']], 'dropped', 'deleted'],
            'reset connections' => [['reset_response_rate' => 1.0, 'reset_ops' => ['UpdateItem']], 'reset', 'deleted'],
            'answers after the timeout' => [
                ['delay_response_ms' => 1500, 'delay_response_ops' => ['UpdateItem']],
                'delayed',
                'deleted',
            ],
            '500 InternalServerError' => [
                ['error_500_rate' => 1.0, 'error_500_ops' => ['UpdateItem']],
                'error500',
                'not_found',
            ],
        ];
        $layout = self::layouts()[0];
        $proxy = self::proxy($server, []);
        $table = self::table(self::client($server));
        $direct = self::driverStore($layout, self::client($server), $table);
        foreach ($faults as $what => [$fault, $outcome, $found]) {
            $name = 'unknown-' . str_replace(' ', '-', $what);
            $key = self::lockKey($layout, 'app_', $name);
            $proxy->configure($fault);
            $proxy->reset();
            // One SDK retry per request, and a timeout shorter than the delayed answers.
            $http = ['timeout' => 0.5, 'connect_timeout' => 2];
            $client = self::client($proxy->url, null, ['retries' => 1, 'http' => $http]);
            $lock = self::driverStore($layout, $client, $table)->lock($name, 3600, 'a-secret-owner-token');
            try {
                $lock->acquire();
                $this->fail("$what: acquire() answered");
            } catch (OutcomeUnknownException $e) {
                $this->assertSame($found, $e->cleanup(), "$what: " . $e->getMessage());
                $this->assertFalse($e->lockMayBeHeld());
                $this->assertStringContainsString('the outcome of acquiring the lock with key', $e->getMessage());
                $this->assertStringContainsString('clean-up: ', $e->getMessage());
                $this->assertStringNotContainsString('a-secret-owner-token', $e->getMessage());
                $this->assertInstanceOf(\Aws\DynamoDb\Exception\DynamoDbException::class, $e->getPrevious());
            }
            $this->assertNull($lock->fence());
            $this->assertNull(self::item(self::client($server), $table, $key), "$what: the lock is not stranded");
            $stats = $proxy->stats();
            // Two writes, each sent twice by the SDK, every one faulted; then one clean-up delete.
            // (A delayed answer is also counted as forwarded once it is sent, too late.)
            $this->assertSame(4, $stats['UpdateItem'][$outcome] ?? 0, $what);
            $this->assertSame(1, array_sum($stats['DeleteItem'] ?? []), $what);
            $this->assertTrue($direct->lock($name, 10)->get(), "$what: free for the next holder");
            fwrite(STDERR, sprintf(
                "\n[figures] Laravel %s, %s, acquire through %s: %s; clean-up: %s\n",
                self::laravel(),
                $server,
                $what,
                json_encode($stats),
                $found
            ));
        }

        // The clean-up's request never reaches the server either: the exception says so, and
        // when the lock expires (the ttl it was given).
        $proxy->configure([
            'drop_response_rate' => 1.0, 'drop_ops' => ['UpdateItem'],
            'drop_request_rate' => 1.0, 'drop_request_ops' => ['DeleteItem'],
        ]);
        $client = self::client($proxy->url, null, ['retries' => 0]);
        $lock = self::driverStore($layout, $client, $table)->lock('unknown-cleanup-lost', 60);
        try {
            $lock->acquire();
            $this->fail('acquire() answered');
        } catch (OutcomeUnknownException $e) {
            $this->assertSame('failed', $e->cleanup());
            $this->assertTrue($e->lockMayBeHeld());
            $this->assertStringContainsString('the lock stays until it expires', $e->getMessage());
            $item = self::item(self::client($server), $table, self::lockKey($layout, 'app_', 'unknown-cleanup-lost'));
            // The write that landed is the first; the resend, in the same second or the next,
            // carried the latest expiry any of them could have written.
            $landed = (int) ($item['expires_at']['N'] ?? 0);
            $this->assertLessThanOrEqual($e->expiresAt(), $landed, 'the write is there, until then at the latest');
            $this->assertGreaterThanOrEqual($e->expiresAt() - 1, $landed);
        }
        $proxy->stop();
    }
}
