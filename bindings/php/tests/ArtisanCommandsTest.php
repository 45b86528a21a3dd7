<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests;

use Aws\DynamoDb\DynamoDbClient;
use Ddblock\Laravel\Console\DdblockCommand;
use Ddblock\Laravel\DynamoDbLock;
use Ddblock\Laravel\Tests\Support\TestApp;
use Illuminate\Contracts\Console\Kernel;
use Illuminate\Support\Facades\Cache;
use RuntimeException;

/**
 * The Artisan commands `ddblock:status`, `ddblock:release` and `ddblock:doctor` in a Laravel app
 * with the package auto-discovered, run through Laravel's console kernel (`Artisan::call()`), and
 * as `php artisan` in a subprocess (stdout, stderr and exit status apart), on moto, dynalite and
 * DynamoDB Local: their output and exit statuses, errors included; the doctor's clock check
 * passing with the host's clock and failing under `faketime -f +5s`.
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
        foreach (['ddblock:status', 'ddblock:release', 'ddblock:doctor'] as $command) {
            $this->assertContains($command, $commands);
        }
    }

    /** @dataProvider servers */
    public function testStatusShowsTheHolderItsExpiryAndFence(string $server): void
    {
        [$client, $table] = $this->appOnAFreshTable($server);
        $key = self::key('orders');

        $this->assertSame(
            [0, "lock `orders` (key $key) is free\n"],
            $this->artisan('ddblock:status', ['name' => 'orders'])
        );

        $lock = Cache::lock('orders', 30);
        $this->assertInstanceOf(DynamoDbLock::class, $lock);
        $this->assertTrue($lock->get());
        $expiresAt = (int) self::item($client, $table, $key)['expires_at']['N'];
        [$status, $out] = $this->artisan('ddblock:status', ['name' => 'orders']);
        $this->assertSame(0, $status, 'held or free: 0, as the CLI');
        $this->assertSame(sprintf(
            "lock `orders` (key %s) is held by owner %s until %s (%s), fencing token %d\n",
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
            [1, "ddblock: invalid lock name \"\": it is empty; give a non-empty lock name\n"],
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
            "ddblock: ddblock:release deletes lock `stuck` whoever holds it, and its holder may still be working: "
            . "pass --force to delete it (see who holds it with `php artisan ddblock:status stuck`; a holder releases "
            . "its own lock with Cache::restoreLock(\$name, \$owner)->release())\n",
            $out
        );
        $this->assertTrue($lock->isLocked(), 'nothing deleted without --force');

        $key = self::key('stuck');
        $this->assertSame(
            [0, "force-released lock `stuck` (key $key)\n"],
            $this->artisan('ddblock:release', ['name' => 'stuck', '--force' => true])
        );
        $this->assertNull(self::item($client, $table, $key));
        $this->assertFalse($lock->release(), 'the holder finds it gone');
        // No lock: still 0, as `ddblock force-release`.
        $this->assertSame(
            [0, json_encode(['force_released' => true, 'name' => 'stuck', 'key' => $key]) . "\n"],
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

    /** @dataProvider servers */
    public function testDoctorOnAHealthyTable(string $server): void
    {
        $client = self::client($server);
        $table = self::table($client);
        if (self::hasTtlApi($server)) {
            $client->updateTimeToLive(['TableName' => $table, 'TimeToLiveSpecification' => [
                'Enabled' => true,
                'AttributeName' => 'expires_at',
            ]]);
        }
        $this->app($server, $table);
        $this->assertTrue(Cache::lock('short', 30)->get());
        $this->assertTrue(Cache::put('greeting', 'hello', 60));

        [$status, $out] = $this->artisan('ddblock:doctor');
        $this->assertSame(0, $status, $out);
        $lines = explode("\n", rtrim($out, "\n"));
        $layout = self::layouts()[0];
        $prefix = $layout === 'laravel8' ? 'app_:' : 'app_';
        $endpoint = self::endpoint($server);
        $ttl = self::hasTtlApi($server)
            ? '  ok      ttl               TTL is enabled on `expires_at`'
            // dynalite has no TTL API: the doctor says disabled.
            : '  warn    ttl               TTL is disabled: expired items stay in the table until deleted (reads and '
                . 'lock conditions check `expires_at` themselves, so this is garbage, not a bug)';
        $expected = [
            "table `$table` at $endpoint (cache store `dynamodb`, layout `$layout`, prefix `$prefix`)",
            "  ok      table             table `$table` exists, status ACTIVE, on-demand",
            '  ok      key_schema        one string partition key `key`',
            $ttl,
        ];
        if (! self::hasTtlApi($server)) {
            $expected[] = '                            fix: enable TTL on `expires_at` (the AWS console, `aws dynamodb '
                . 'update-time-to-live`, or `ddblock create-table` on the existing table), or schedule `ddblock sweep`';
        }
        $expected = array_merge($expected, [
            '  ok      expired_items     no expired items among 2 in scope',
            '  ok      default_ttl_locks no live lock looks like a ttl-0 lock (of 1 locks; heuristic: more than 3600 s '
                . 'and at most 86460 s left)',
            '  ok      invalid_items     every item has a string key and a numeric (or no) expiry',
            "  ok      layout            no key looks like another Laravel version's layout than `$layout`",
        ]);
        $this->assertSame($expected, array_slice($lines, 0, count($expected)));
        $this->assertMatchesRegularExpression(
            // In sync: ok, or warn when slow answers leave the interval wider than the allowance.
            '/^  (ok  |warn)    clock             this host\'s clock (agrees with|is \d\.\d\d s (ahead of|behind)) '
            . 'DynamoDB\'s \(between [-+]\d\.\d\d and [-+]\d\.\d\d s over 5 answers; the Date header has whole '
            . 'seconds\); allowed ±0\.5 s with margin 0$/u',
            $lines[count($expected)]
        );
        $this->assertSame(['no failures'], array_slice($lines, count($expected) + 1));

        [$status, $out] = $this->artisan('ddblock:doctor', ['--json' => true, '--no-scan' => true]);
        $this->assertSame(0, $status);
        $json = json_decode($out, true, 512, JSON_THROW_ON_ERROR);
        $this->assertTrue($json['healthy']);
        $this->assertSame(
            ['table', 'key_schema', 'ttl', 'expired_items', 'default_ttl_locks', 'invalid_items', 'layout', 'clock'],
            array_column($json['checks'], 'id')
        );
        $this->assertSame(
            ['skipped', 'skipped', 'skipped', 'skipped'],
            array_column(array_slice($json['checks'], 3, 4), 'status'),
            '--no-scan'
        );
        $this->assertSame(self::hasTtlApi($server) ? ['status' => 'enabled', 'attribute' => 'expires_at']
            : ['status' => 'disabled', 'attribute' => null], $json['ttl']);
        $this->assertNull($json['counts']);
        $this->assertSame(['offset', 'low', 'high', 'answers', 'allowed', 'margin'], array_keys($json['clock']));
        $this->assertSame(5, $json['clock']['answers']);
        $this->assertSame(0.5, $json['clock']['allowed']);
        $this->assertLessThanOrEqual($json['clock']['high'], $json['clock']['low']);
        $this->assertLessThan(0.5, abs($json['clock']['offset']), 'the servers run on this host, on its clock');
    }

    /** @dataProvider servers */
    public function testDoctorFindsTtl0LocksAndKeysOfAnotherLayout(string $server): void
    {
        [$client, $table] = $this->appOnAFreshTable($server);
        $stuck = Cache::lock('stuck', 0);   // Laravel's default: a day
        $this->assertTrue($stuck->get());
        $this->assertTrue(Cache::lock('short', 60)->get());
        // A key another Laravel version writes for lock `x`: 11's double prefix without ':' where
        // this app writes 8-10's, 8-10's ':' where it writes 12's.
        $layout = self::layouts()[0];
        $foreign = $layout === 'laravel8' ? 'app_app_x' : 'app_:app_:x';
        $client->putItem(['TableName' => $table, 'Item' => [
            'key' => ['S' => $foreign],
            'value' => ['S' => serialize('AAAAbbbbCCCCdddd')],
            'expires_at' => ['N' => (string) (time() + 60)],
        ]]);
        // Expired but present, and an expiry that is not a number.
        $client->putItem(['TableName' => $table, 'Item' => [
            'key' => ['S' => self::key('gone')],
            'value' => ['S' => serialize('AAAAbbbbCCCCeeee')],
            'expires_at' => ['N' => (string) (time() - 60)],
        ]]);
        $client->putItem(['TableName' => $table, 'Item' => [
            'key' => ['S' => ($layout === 'laravel8' ? 'app_:' : 'app_') . 'odd'],
            'value' => ['S' => serialize(1)],
            'expires_at' => ['S' => 'tomorrow'],
        ]]);

        [$status, $out] = $this->artisan('ddblock:doctor');
        $this->assertSame(0, $status, "warnings only: exit 0\n$out");
        $expiresAt = (int) self::item($client, $table, $stuck->tableKey())['expires_at']['N'];
        $theirs = $layout === 'laravel8' ? ['11', 'laravel11'] : ['8-10', 'laravel8'];
        // Laravel 8-10's keys start with `app_:`: the foreign key is scanned (under `app_`) as an
        // item outside them. Laravel 12's locks and cache entries share `app_`: its value (a
        // generated owner) makes it a lock.
        $locks = $layout === 'laravel8' ? 3 : 4;
        $warnings = [
            '  warn    expired_items     1 of 5 items are expired but still present, and TTL will not delete them',
            '                            fix: enable TTL on `expires_at`, or run `ddblock sweep` (deletes only expired '
                . 'items)',
            "  warn    default_ttl_locks 1 of $locks locks look like ttl-0 locks (86400 s; more than 3600 s left): "
                . 'possibly stuck by Laravel\'s read-then-delete release, they block their name until they expire',
            '                            fix: see who holds one with `php artisan ddblock:status NAME`; if its holder '
                . 'is gone, `php artisan ddblock:release NAME --force`; locks released by this driver cannot stick',
            '  warn    invalid_items     1 items have a non-numeric `expires_at` and 0 have no string `key`: not '
                . 'written by Laravel or ddblock',
            '                            fix: find what else writes to this table (`ddblock list --all`); Laravel and '
                . 'ddblock leave these items alone',
            sprintf(
                '  warn    layout            1 keys look like Laravel %s\'s layout (e.g. `%s`), but this app\'s '
                . 'Laravel writes `%s`: whatever wrote them (an app on Laravel %s, or a ddblock front with '
                . 'DDBLOCK_LAYOUT=%s) never meets this app\'s locks',
                $theirs[0],
                $foreign,
                $layout,
                $theirs[0],
                $theirs[1]
            ),
            sprintf(
                '                            fix: this app\'s Laravel writes the `%s` layout: give every process on '
                . 'this table the same one (the same Laravel major version; DDBLOCK_LAYOUT=%s for ddblock\'s CLI and '
                . 'libraries) and the same prefix; `ddblock list --all` shows every key',
                $layout,
                $layout
            ),
        ];
        foreach ($warnings as $line) {
            $this->assertStringContainsString("\n$line\n", $out);
        }
        $this->assertStringContainsString(sprintf(
            "\n          ttl-0 lock `stuck` (key %s), until %s (in %s)\nno failures\n",
            $stuck->tableKey(),
            gmdate('Y-m-d H:i:s', $expiresAt) . ' UTC',
            // A day less the time since it was taken, by the doctor's clock.
            preg_match('/\(in 1d0h\)\n/', $out) === 1 ? '1d0h' : '23h59m'
        ), $out);

        $json = json_decode($this->artisan('ddblock:doctor', ['--json' => true])[1], true, 512, JSON_THROW_ON_ERROR);
        $this->assertSame(
            ['scanned' => 5, 'items' => 5, 'locks' => $locks, 'cache' => 1, 'other' => 4 - $locks,
                'expired_but_present' => 1, 'default_ttl_locks' => 1, 'invalid_expiry' => 1, 'skipped' => 0],
            $json['counts']
        );
        $this->assertSame([[
            'key' => $stuck->tableKey(),
            'kind' => 'lock',
            'name' => 'stuck',
            'owner' => $stuck->owner(),
            'expires_at' => $expiresAt,
            'expires_in' => $json['default_ttl_locks'][0]['expires_in'],
            'expired_but_present' => false,
        ]], $json['default_ttl_locks']);
        $this->assertEqualsWithDelta(86400, $json['default_ttl_locks'][0]['expires_in'], 3);

        // A ttl-0 lock with less than --min-remaining left does not count.
        [, $out] = $this->artisan('ddblock:doctor', ['--json' => true, '--min-remaining' => '90000']);
        $json = json_decode($out, true);
        $this->assertSame(0, $json['counts']['default_ttl_locks']);
    }

    /** @dataProvider servers */
    public function testDoctorFailures(string $server): void
    {
        $this->app($server, 'no_such_table');
        [$status, $out] = $this->artisan('ddblock:doctor');
        $this->assertSame(1, $status, 'a failed check: exit 1, as the CLI');
        $lines = explode("\n", rtrim($out, "\n"));
        $endpoint = self::endpoint($server);
        $this->assertSame([
            "  fail    table             table `no_such_table` does not exist at $endpoint",
            '                            fix: create it (one string partition key `key`; `ddblock create-table` does '
                . 'it and enables TTL), or fix the store\'s `table`, `endpoint` or `region` in config/cache.php',
            '  skipped key_schema        the table does not exist',
            '  skipped ttl               the table does not exist',
            '  skipped expired_items     the table does not exist',
            '  skipped default_ttl_locks the table does not exist',
            '  skipped invalid_items     the table does not exist',
            '  skipped layout            the table does not exist',
        ], array_slice($lines, 1, 8));
        // The clock is measured all the same: the error answers carry DynamoDB's Date header.
        $this->assertStringStartsWith('  ok      clock             ', $lines[9]);
        $this->assertSame('FAILED: see the fixes above', $lines[10]);

        // A table whose partition key is not the store's key attribute.
        $client = self::client($server);
        $this->app($server, self::table($client, 'id'));
        [$status, $out] = $this->artisan('ddblock:doctor', ['--no-scan' => true]);
        $this->assertSame(1, $status);
        $this->assertStringContainsString(
            "\n  fail    key_schema        the key schema is `id` (HASH, S); Laravel's cache table needs exactly one "
            . "string (S) partition key named `key` (or configure the key attribute to match)\n",
            $out
        );

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
            [0, 'force-released lock `orders` (key ' . self::key('orders') . ")\n"],
            $this->artisan('ddblock:release', ['name' => 'orders', '--force' => true])
        );
        $this->assertFalse($lock->release());
    }

    /**
     * `php artisan ddblock:doctor` in a subprocess: the clock check passes on this host's clock,
     * fails under `faketime -f +5s` (PHP's microtime() 5 s ahead of the servers' Date headers),
     * and passes again under faketime with a margin whose allowance covers 5 s (margin 10: ±5.5 s).
     *
     * @dataProvider servers
     */
    public function testDoctorsClockCheckFailsWithTheClockFiveSecondsAhead(string $server): void
    {
        $table = self::table(self::client($server));
        [$status, $out, $err] = self::phpArtisan($server, $table, null, ['ddblock:doctor', '--no-scan']);
        $this->assertSame(0, $status, $out . $err);
        $this->assertSame('', $err);
        $this->assertMatchesRegularExpression('/\n  (ok  |warn)    clock             this host\'s clock /', $out);

        [$status, $out, $err] = self::phpArtisan($server, $table, null, ['ddblock:doctor', '--no-scan'], '+5s');
        $this->assertSame(1, $status, $out . $err);
        $this->assertSame('', $err);
        $this->assertMatchesRegularExpression(
            '/\n  fail    clock             this host\'s clock is (4\.[5-9]\d|5\.[0-4]\d) s ahead of DynamoDB\'s '
            . '\(between \+[45]\.\d\d and \+[56]\.\d\d s over 5 answers; the Date header has whole seconds\); '
            . 'allowed ±0\.5 s with margin 0\n'
            . ' {28}fix: synchronise this host\'s clock \(NTP: chrony, systemd-timesyncd; on AWS the Amazon Time '
            . 'Sync Service\), or raise `ddblock\.clock_skew_margin` \(DDBLOCK_CLOCK_SKEW_MARGIN\) to at least '
            . '(9|10|11) on every host that takes these locks\nFAILED: see the fixes above\n$/u',
            $out
        );

        [$status, $out] = self::phpArtisan($server, $table, null, ['ddblock:doctor', '--no-scan', '--json'], '+5s');
        $this->assertSame(1, $status);
        $clock = json_decode($out, true, 512, JSON_THROW_ON_ERROR)['clock'];
        $this->assertGreaterThan(0.5, $clock['low'], 'proved beyond the allowance');
        $this->assertEqualsWithDelta(5.0, $clock['offset'], 0.5);

        // The margin is the driver's, not the server's: one server (the first) checks it.
        if ($server === array_key_first(self::SERVERS)) {
            $margin10 = ['clock_skew_margin' => 10];
            [$status, $out] = self::phpArtisan($server, $table, $margin10, ['ddblock:doctor', '--no-scan'], '+5s');
            $this->assertSame(0, $status, $out);
            $this->assertStringContainsString(' s ahead of DynamoDB\'s (between +', $out);
            $this->assertStringContainsString('; allowed ±5.5 s with margin 10', $out);
        }

        // Problems go to stderr, results to stdout, as the CLI.
        [$status, $out, $err] = self::phpArtisan($server, $table, null, ['ddblock:release', 'x']);
        $this->assertSame([2, ''], [$status, $out]);
        $this->assertStringStartsWith('ddblock: ddblock:release deletes lock `x` whoever holds it', $err);
    }

    /**
     * `php tests/Support/artisan.php ARGS` (the app's `php artisan`) with the store `$table` on
     * `$server`, under `faketime -f $skew` when given: [exit status, stdout, stderr].
     *
     * @param  array<string, mixed>|null  $ddblock
     * @param  list<string>  $args
     * @return array{0: int, 1: string, 2: string}
     */
    private static function phpArtisan(
        string $server,
        string $table,
        ?array $ddblock,
        array $args,
        ?string $skew = null
    ): array {
        $command = array_merge([PHP_BINARY, __DIR__ . '/Support/artisan.php'], $args);
        if ($skew !== null) {
            $command = array_merge(['faketime', '-f', $skew], $command);
        }
        $env = getenv() + [
            // Only the wall clock: the SDK's and PHP's timers keep the real monotonic clock.
            'DONT_FAKE_MONOTONIC' => '1',
        ];
        $env['DDBLOCK_TEST_APP'] = json_encode([
            'cache' => TestApp::cacheConfig(self::endpoint($server), $table),
            'ddblock' => $ddblock,
        ], JSON_THROW_ON_ERROR);
        $process = proc_open($command, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, null, $env);
        if (! is_resource($process)) {
            throw new RuntimeException(
                'could not start ' . implode(' ', $command) . ' (is faketime installed? compat-tests/setup.sh)'
            );
        }
        $out = (string) stream_get_contents($pipes[1]);
        $err = (string) stream_get_contents($pipes[2]);
        fclose($pipes[1]);
        fclose($pipes[2]);

        return [proc_close($process), $out, $err];
    }
}
