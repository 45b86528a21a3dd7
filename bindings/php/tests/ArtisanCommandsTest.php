<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests;

use Aws\CommandInterface;
use Aws\DynamoDb\DynamoDbClient;
use Aws\Middleware;
use Ddblock\Laravel\Console\DdblockCommand;
use Ddblock\Laravel\DynamoDbLock;
use Ddblock\Laravel\Tests\Support\TestApp;
use Illuminate\Contracts\Console\Kernel;
use Illuminate\Support\Carbon;
use Illuminate\Support\Facades\Cache;

/**
 * The Artisan commands `ddblock:status`, `ddblock:release`, `ddblock:doctor` and `ddblock:sweep` in a
 * Laravel app with the package auto-discovered, run through Laravel's console kernel
 * (`Artisan::call()`), and as `php artisan` in a subprocess, also from a shell line (stdout, stderr
 * and exit status apart), on moto, dynalite and DynamoDB Local: their output and exit statuses,
 * errors included. What the doctor and the sweep find is DoctorCasesTest's (the shared case table).
 */
final class ArtisanCommandsTest extends TestCase
{
    private ?Kernel $kernel = null;

    /** @var array<string, mixed> config/cache.php of the app booted last */
    private array $cacheConfig = [];

    /** A Laravel app whose default (and only DynamoDB) store is `$table` on `$server`. */
    private function app(string $server, string $table, ?array $ddblock = null, array $store = []): void
    {
        $this->cacheConfig = TestApp::cacheConfig(self::endpoint($server), $table, 'dynamodb', $store);
        $this->cacheConfig['stores']['array'] = ['driver' => 'array'];
        $this->kernel = TestApp::console(TestApp::boot($this->cacheConfig, $ddblock));
    }

    /**
     * The app (see app()) on a fresh table on `$server`: a client to the server and the table.
     *
     * @return array{0: DynamoDbClient, 1: string}
     */
    private function appOnAFreshTable(string $server, ?array $ddblock = null): array
    {
        $client = self::client($server);
        $table = self::table($client);
        $this->app($server, $table, $ddblock);

        return [$client, $table];
    }

    /**
     * Runs an Artisan command in the app: [exit status, output (stdout and stderr together, as
     * Artisan::call() has them)].
     *
     * @param  array<string, mixed>  $parameters
     * @return array{0: int, 1: string}
     */
    private function artisan(string $command, array $parameters = []): array
    {
        $status = $this->kernel->call($command, $parameters);

        return [$status, $this->kernel->output()];
    }

    private static function key(string $name): string
    {
        return self::lockKey(self::layouts()[0], 'app_', $name);
    }

    /** @dataProvider servers */
    public function testTheCommandsAreRegistered(string $server): void
    {
        $this->app($server, 'any');
        $commands = array_keys($this->kernel->all());
        foreach (['ddblock:status', 'ddblock:release', 'ddblock:doctor', 'ddblock:sweep'] as $command) {
            $this->assertContains($command, $commands);
        }
    }

    /** @dataProvider servers */
    public function testStatusShowsTheHolderItsExpiryAndFence(string $server): void
    {
        [$client, $table] = $this->appOnAFreshTable($server);
        $key = self::key('orders');

        $this->assertSame(
            [0, "lock orders (key $key) is free\n"],
            $this->artisan('ddblock:status', ['name' => 'orders'])
        );

        $lock = Cache::lock('orders', 30);
        $this->assertInstanceOf(DynamoDbLock::class, $lock);
        $this->assertTrue($lock->get());
        $expiresAt = (int) self::item($client, $table, $key)['expires_at']['N'];
        [$status, $out] = $this->artisan('ddblock:status', ['name' => 'orders']);
        $this->assertSame(0, $status, 'held or free: 0, as the CLI');
        $this->assertSame(sprintf(
            "lock orders (key %s) is held by owner %s until %s (%s), fencing token %d\n",
            $key,
            $lock->owner(),
            gmdate('Y-m-d H:i:s', $expiresAt) . ' UTC',
            DdblockCommand::relative($expiresAt - time()),
            $lock->fence()
        ), $out);

        [$status, $out] = $this->artisan('ddblock:status', ['name' => 'orders', '--json' => true]);
        $this->assertSame(0, $status);
        $json = json_decode($out, true, 512, JSON_THROW_ON_ERROR);
        $this->assertSame(['name', 'key', 'held', 'owner', 'expires_at', 'expires_in', 'fence'], array_keys($json));
        $this->assertSame(['orders', $key, true, $lock->owner(), $expiresAt], array_slice(array_values($json), 0, 5));
        $this->assertEqualsWithDelta(30, $json['expires_in'], 2);
        $this->assertSame($lock->fence(), $json['fence']);
        $this->assertTrue($lock->release());

        // A numeric owner is a JSON number, as in the CLI; a lock of stock Laravel has no fence.
        $this->assertTrue(Cache::lock('batch', 60, '12345')->get());
        $json = json_decode($this->artisan('ddblock:status', ['name' => 'batch', '--json' => true])[1], true);
        $this->assertSame(12345, $json['owner']);
        $stock = self::stockStore(self::layouts()[0], $client, $table)->lock('stock', 60);
        $this->assertTrue($stock->get());
        [, $out] = $this->artisan('ddblock:status', ['name' => 'stock']);
        $this->assertStringContainsString('is held by owner ' . $stock->owner() . ' until ', $out);
        $this->assertStringEndsWith(", no fencing token (taken by stock Laravel)\n", $out);

        // An expired lock item still in the table reads as free, as for Laravel.
        $client->putItem(['TableName' => $table, 'Item' => [
            'key' => ['S' => self::key('old')],
            'value' => ['S' => serialize('AAAAbbbbCCCCdddd')],
            'expires_at' => ['N' => (string) (time() - 5)],
        ]]);
        $json = json_decode($this->artisan('ddblock:status', ['name' => 'old', '--json' => true])[1], true);
        $this->assertSame(
            ['name' => 'old', 'key' => self::key('old'), 'held' => false, 'owner' => null, 'expires_at' => null,
                'expires_in' => null, 'fence' => null],
            $json
        );
    }

    /** @dataProvider servers */
    public function testStatusErrors(string $server): void
    {
        $this->app($server, 'no_such_table');
        [$status, $out] = $this->artisan('ddblock:status', ['name' => 'orders']);
        $this->assertSame(1, $status);
        $this->assertMatchesRegularExpression(sprintf(
            '/^ddblock: could not read the owner of the lock with key "%s" in table "no_such_table": '
            . 'ResourceNotFoundException: %s '
            . '\(is the table name, region or endpoint wrong, or the table not created\?\)\n$/D',
            preg_quote(self::key('orders'), '/'),
            self::missingTableMessage($server, 'no_such_table')
        ), $out);
        [$status, $out] = $this->artisan('ddblock:status', ['name' => 'orders', '--json' => true]);
        $this->assertSame(1, $status);
        $this->assertSame('table_not_found', json_decode(explode("\n", $out)[1], true)['error']['kind']);

        $this->assertSame(
            [1, "ddblock: cache store `nope` is not defined in config/cache.php (stores: dynamodb, array)\n"],
            $this->artisan('ddblock:status', ['name' => 'orders', '--store' => 'nope'])
        );
        $this->assertSame(
            [1, "ddblock: cache store `array` does not use DynamoDB (driver `array`): pass --store=NAME of a "
                . "`dynamodb` or `ddblock` store\n"],
            $this->artisan('ddblock:status', ['name' => 'orders', '--store' => 'array'])
        );
        $this->assertSame(
            [1, "ddblock: invalid lock key \"\": it is empty; give a non-empty key or lock name\n"],
            $this->artisan('ddblock:status', ['name' => ''])
        );
    }

    /** @dataProvider servers */
    public function testReleaseDeletesTheLockOnlyWithForce(string $server): void
    {
        [$client, $table] = $this->appOnAFreshTable($server);
        $lock = Cache::lock('stuck', 0);
        $this->assertTrue($lock->get());

        [$status, $out] = $this->artisan('ddblock:release', ['name' => 'stuck']);
        $this->assertSame(2, $status, 'a bad command line, as `ddblock release NAME` without --owner');
        $this->assertSame(
            "ddblock: ddblock:release deletes lock stuck whoever holds it, and its holder may still be working: "
            . "pass --force to delete it (see who holds it with `php artisan ddblock:status stuck`; a holder releases "
            . "its own lock with Cache::restoreLock(\$name, \$owner)->release())\n",
            $out
        );
        $this->assertTrue($lock->isLocked(), 'nothing deleted without --force');

        $key = self::key('stuck');
        $this->assertSame(
            [0, "force-released lock stuck (key $key)\n"],
            $this->artisan('ddblock:release', ['name' => 'stuck', '--force' => true])
        );
        $this->assertNull(self::item($client, $table, $key));
        $this->assertFalse($lock->release(), 'the holder finds it gone');
        $this->assertTrue(Cache::lock('stuck', 0)->get());
        $this->assertSame(
            [0, json_encode(['released' => true, 'force_released' => true, 'name' => 'stuck', 'key' => $key]) . "\n"],
            $this->artisan('ddblock:release', ['name' => 'stuck', '--force' => true, '--json' => true])
        );

        $this->app($server, 'no_such_table');
        [$status, $out] = $this->artisan('ddblock:release', ['name' => 'stuck', '--force' => true]);
        $this->assertSame(1, $status);
        $this->assertStringStartsWith(
            "ddblock: could not force-release the lock with key \"$key\" in table \"no_such_table\": "
            . 'ResourceNotFoundException',
            $out
        );
        $this->assertSame(
            [1, "ddblock: cache store `nope` is not defined in config/cache.php (stores: dynamodb, array)\n"],
            $this->artisan('ddblock:release', ['name' => 'stuck', '--force' => true, '--store' => 'nope'])
        );
    }

    /**
     * Stock Laravel's lock of a `WithoutOverlapping` job, its name holding a class name, left stuck:
     * the doctor prints one release command per lock, quoted, and that line pasted into a shell
     * releases it (delete and keep-fence modes).
     *
     * @dataProvider servers
     */
    public function testTheDoctorsFixLinePastedIntoAShellReleasesTheLock(string $server): void
    {
        $name = 'laravel-queue-overlap:App\Jobs\SyncAccount:0';
        foreach ([null, ['release_mode' => 'keep-fence']] as $ddblock) {
            [$client, $table] = $this->appOnAFreshTable($server, $ddblock);
            $stuck = self::stockStore(self::layouts()[0], $client, $table)->lock($name, 0);
            $this->assertTrue($stuck->get());
            [$status, $out] = TestApp::artisan($this->cacheConfig, $ddblock, ['ddblock:doctor']);
            $this->assertSame(0, $status, $out);
            $listed = "\n          ttl-0 lock '$name' (key '" . self::key($name) . "'), until ";
            $this->assertStringContainsString($listed, $out);
            $this->assertSame(1, preg_match_all('/^ +(php artisan ddblock:release .*)$/m', $out, $commands), $out);
            $this->assertSame("php artisan ddblock:release '$name' --force", $commands[1][0]);

            [$status, $out] = TestApp::artisan($this->cacheConfig, $ddblock, $commands[1][0]);
            $this->assertSame([0, "force-released lock '$name' (key '" . self::key($name) . "')\n"], [$status, $out]);
            $this->assertFalse(Cache::restoreLock($name, $stuck->owner())->isOwnedByCurrentProcess(), 'released');
            $this->assertTrue(Cache::lock($name, 10)->get(), 'free for the next job');
        }
    }

    /**
     * The name pasted unquoted (the shell drops its backslashes) names no lock: exit 1 and a message
     * saying so, `{"released": false, "reason": "not_found", ...}` with --json, never "force-released".
     *
     * @dataProvider servers
     */
    public function testAReleaseOfANameWithNoLockExitsOneAndSaysSo(string $server): void
    {
        $name = 'laravel-queue-overlap:App\Jobs\SyncAccount:0';
        $broken = 'laravel-queue-overlap:AppJobsSyncAccount:0';
        foreach ([null, ['release_mode' => 'keep-fence']] as $ddblock) {
            [$client, $table] = $this->appOnAFreshTable($server, $ddblock);
            $stuck = self::stockStore(self::layouts()[0], $client, $table)->lock($name, 0);
            $this->assertTrue($stuck->get());

            $pasted = "php artisan ddblock:release $name --force";
            [$status, $out, $err] = TestApp::artisan($this->cacheConfig, $ddblock, $pasted);
            $this->assertSame([1, '', sprintf(
                "ddblock: no lock named '%s' in table `%s` (key %s); names are exact: quote names that hold "
                . "backslashes\n",
                $broken,
                $table,
                self::key($broken)
            )], [$status, $out, $err]);
            [$status, $out] = TestApp::artisan($this->cacheConfig, $ddblock, "$pasted --json");
            $this->assertSame(1, $status);
            $this->assertSame([
                'released' => false,
                'force_released' => false,
                'name' => $broken,
                'key' => self::key($broken),
                'reason' => 'not_found',
                'table' => $table,
            ], json_decode($out, true));
            $this->assertTrue(Cache::restoreLock($name, $stuck->owner())->isOwnedByCurrentProcess(), 'still held');
        }
    }

    /**
     * What stock Laravel left stuck after the install (ttl-0 locks taken hours ago, never released)
     * is listed by `ddblock:sweep --locks-older-than` and removed with `--force`; a ttl-0 lock taken
     * minutes ago, a live cache item and a lock taken during the sweep stay.
     *
     * @dataProvider servers
     */
    public function testTheSweepClearsWhatStockLaravelLeftStuck(string $server): void
    {
        [$client, $table] = $this->appOnAFreshTable($server);
        $stock = self::stockStore(self::layouts()[0], $client, $table);
        foreach (['orders' => 7200, 'invoices' => 3 * 3600, 'young' => 60] as $name => $age) {
            Carbon::setTestNow(Carbon::now()->subSeconds($age));
            $this->assertTrue($stock->lock($name, 0)->get(), "stock Laravel's lock, taken {$age} s ago");
            Carbon::setTestNow();
        }
        $this->assertTrue(Cache::put('report', 'done', 600));
        $this->assertTrue(Cache::put('stale', 'old', 600));
        $stale = self::layouts()[0] === 'laravel8' ? 'app_:stale' : 'app_stale';
        $client->updateItem([
            'TableName' => $table,
            'Key' => ['key' => ['S' => $stale]],
            'UpdateExpression' => 'SET expires_at = :e',
            'ExpressionAttributeValues' => [':e' => ['N' => (string) (time() - 120)]],
        ]);

        [$status, $out] = $this->artisan('ddblock:sweep', ['--locks-older-than' => null]);
        $this->assertSame(0, $status, $out);
        $lines = explode("\n", rtrim($out));
        $this->assertSame(
            "dry run: 3 items in table `$table` would be removed (5 scanned); --force removes them",
            array_shift($lines)
        );
        sort($lines);
        $this->assertSame(3, count($lines), $out);
        $patterns = [
            "cache stale \\(key $stale\\): expired 2m[0-9]s ago, past the 60 s grace",
            'lock invoices \(key ' . preg_quote(self::key('invoices')) . '\): (21h0m|20h59m) left, so taken about '
                . '3h0m ago if with ttl 0 \(a day\): older than 1h0m',
            'lock orders \(key ' . preg_quote(self::key('orders')) . '\): (22h0m|21h59m) left, so taken about 2h0m '
                . 'ago if with ttl 0 \(a day\): older than 1h0m',
        ];
        foreach ($patterns as $n => $pattern) {
            $this->assertMatchesRegularExpression("/^  $pattern$/", $lines[$n]);
        }
        $this->assertFalse($stock->lock('orders', 0)->get(), 'a dry run removes nothing');

        // A lock taken during the sweep, after its scan read the item: released by its holder and taken again.
        $sweeping = Cache::store('dynamodb')->getStore()->getClient()->getHandlerList();
        $sweeping->appendSign(Middleware::tap(function (CommandInterface $command) use ($stock): void {
            if ($command->getName() === 'DeleteItem' && str_ends_with($command['Key']['key']['S'], 'orders')) {
                $owner = (fn () => $this->getCurrentOwner())->call($stock->lock('orders', 0));
                $this->assertTrue($stock->restoreLock('orders', $owner)->release());
                $this->assertTrue(Cache::lock('orders', 0)->get(), 'taken again during the sweep');
            }
        }), 'take-during-sweep');
        $options = ['--locks-older-than' => '1h', '--force' => true, '--json' => true];
        [$status, $out] = $this->artisan('ddblock:sweep', $options);
        $sweeping->remove('take-during-sweep');
        $this->assertSame(0, $status, $out);
        $json = json_decode($out, true, 512, JSON_THROW_ON_ERROR);
        $this->assertSame(
            ['dry_run' => false, 'expired' => 1, 'stuck_locks' => 2, 'deleted' => 2, 'skipped' => 1],
            array_intersect_key($json, array_flip(['dry_run', 'expired', 'stuck_locks', 'deleted', 'skipped']))
        );
        $this->assertNull(self::item($client, $table, self::key('invoices')), 'removed');
        $this->assertNull(self::item($client, $table, $stale), 'removed');
        $this->assertNotNull(self::item($client, $table, self::key('orders')), 'the lock taken during the sweep stays');
        $this->assertNotNull(self::item($client, $table, self::key('young')), 'a lock younger than an hour stays');
        $this->assertSame('done', Cache::get('report'), 'a live cache item stays');

        $this->assertSame(
            [2, "ddblock: --locks-older-than must be a duration: seconds (3600) or with units (90m, 2h30m, 1d), "
                . "not \"soon\"\n"],
            $this->artisan('ddblock:sweep', ['--locks-older-than' => 'soon'])
        );
    }

    /** @dataProvider servers */
    public function testDoctorPrintsEachCheckWithItsFix(string $server): void
    {
        [, $table] = $this->appOnAFreshTable($server);
        $this->assertTrue(Cache::lock('short', 30)->get());
        $this->assertTrue(Cache::put('greeting', 'hello', 60));

        [$status, $out] = $this->artisan('ddblock:doctor', ['--store' => 'dynamodb']);
        $this->assertSame(0, $status, $out);
        $lines = explode("\n", rtrim($out, "\n"));
        $layout = self::layouts()[0];
        $this->assertSame([
            sprintf(
                'table `%s` at %s (cache store `dynamodb`, layout `%s`, prefix `%s`)',
                $table,
                self::endpoint($server),
                $layout,
                $layout === 'laravel8' ? 'app_:' : 'app_'
            ),
            "  ok      table             table `$table` exists, status ACTIVE, on-demand",
            '  ok      key_schema        one string partition key `key`',
            '  ok      regions           a single-Region table',
            '  warn    ttl               TTL is disabled: expired items stay in the table until deleted (reads and '
                . 'lock conditions check `expires_at` themselves, so this is garbage, not a bug)',
            '                            fix: enable TTL on `expires_at` (the AWS console, `aws dynamodb '
                . 'update-time-to-live`, or `ddblock create-table` on the existing table), or schedule `php artisan '
                . 'ddblock:sweep --force --store=dynamodb`',
            '  ok      expired_items     no expired items among 2 in scope',
        ], array_slice($lines, 0, 7));
        $this->assertMatchesRegularExpression(
            '/^  (ok  |warn)    clock             this host\'s clock (agrees with|is \d\.\d\d s (ahead of|behind)) '
                . 'DynamoDB\'s/u',
            $lines[10]
        );
        $this->assertSame('no failures', end($lines));

        [$status, $out] = $this->artisan('ddblock:doctor', ['--json' => true, '--no-scan' => true]);
        $this->assertSame(0, $status);
        $json = json_decode($out, true, 512, JSON_THROW_ON_ERROR);
        $this->assertSame(['table', 'endpoint', 'store', 'layout', 'prefix', 'healthy', 'table_status', 'billing_mode',
            'ttl', 'checks', 'counts', 'default_ttl_locks', 'clock'], array_keys($json));
        $this->assertSame(['offset', 'low', 'high', 'answers', 'allowed', 'margin'], array_keys($json['clock']));
        $this->assertSame([5, 0.5], [$json['clock']['answers'], $json['clock']['allowed']]);
        $this->assertLessThan(0.5, abs($json['clock']['offset']), 'the servers run on this host, on its clock');

        $this->app($server, 'no_such_table');
        [$status, $out] = $this->artisan('ddblock:doctor', ['--no-scan' => true]);
        $this->assertSame(1, $status, 'a failed check: exit 1, as the CLI');
        $this->assertStringEndsWith("\nFAILED: see the fixes above\n", $out);
        $this->assertSame(
            [1, "ddblock: cache store `nope` is not defined in config/cache.php (stores: dynamodb, array)\n"],
            $this->artisan('ddblock:doctor', ['--store' => 'nope'])
        );
        $this->assertSame(
            [2, "ddblock: --min-remaining must be a whole number of seconds, not \"soon\"\n"],
            $this->artisan('ddblock:doctor', ['--min-remaining' => 'soon'])
        );
    }

    /** @dataProvider servers */
    public function testTheCommandsReadAStoreOfLaravelsOwnDriver(string $server): void
    {
        $this->appOnAFreshTable($server, ['takeover_dynamodb' => false, 'clock_skew_margin' => 4]);
        $lock = Cache::lock('orders', 30);
        $this->assertNotInstanceOf(DynamoDbLock::class, $lock, 'Laravel\'s own lock');
        $this->assertTrue($lock->get());
        [$status, $out] = $this->artisan('ddblock:status', ['name' => 'orders']);
        $this->assertSame(0, $status);
        $this->assertStringContainsString('is held by owner ' . $lock->owner() . ' until ', $out);
        [$status, $out] = $this->artisan('ddblock:doctor', ['--no-scan' => true]);
        $this->assertSame(0, $status, $out);
        $this->assertStringContainsString("(cache store `dynamodb`, Laravel's own lock, layout ", $out);
        // Laravel's own lock takes over with no margin, whatever ddblock's config says.
        $this->assertStringContainsString('; allowed ±0.5 s with margin 0', $out);
        $this->assertSame(
            [0, 'force-released lock orders (key ' . self::key('orders') . ")\n"],
            $this->artisan('ddblock:release', ['name' => 'orders', '--force' => true])
        );
        $this->assertFalse($lock->release());

        // Problems go to stderr, results to stdout, as the CLI.
        [$status, $out, $err] = TestApp::artisan($this->cacheConfig, null, ['ddblock:release', 'x']);
        $this->assertSame([2, ''], [$status, $out]);
        $this->assertStringStartsWith('ddblock: ddblock:release deletes lock x whoever holds it', $err);
    }
}
