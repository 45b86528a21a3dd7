<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests;

use Aws\DynamoDb\DynamoDbClient;
use Ddblock\Laravel\ClockOffset;
use Ddblock\Laravel\Console\Doctor;
use Ddblock\Laravel\Console\DoctorCommand;
use Ddblock\Laravel\Console\SweepCommand;
use Ddblock\Laravel\TableView;
use Ddblock\Laravel\Tests\Support\FaultProxy;
use Ddblock\Laravel\Tests\Support\TestApp;

/**
 * The shared doctor and sweep cases (compat-tests/conformance/doctor-cases.json, its README says
 * the format) through the driver, on moto, dynalite and DynamoDB Local in each layout the loaded
 * Laravel writes: `ddblock:doctor`'s checks, the clock measurement, `ddblock:sweep`'s choice and
 * `flushLocks()`. The Rust core's doctor and sweep run the same file.
 */
final class DoctorCasesTest extends TestCase
{
    /** @return array<string, mixed> */
    private static function cases(): array
    {
        static $doc = null;

        return $doc ??= json_decode(
            (string) file_get_contents(self::root() . '/compat-tests/conformance/doctor-cases.json'),
            true,
            512,
            JSON_THROW_ON_ERROR
        );
    }

    public function testTheDriversConstantsAreTheTables(): void
    {
        $c = self::cases()['constants'];
        $this->assertSame($c['long_lock_secs'], Doctor::LONG_LOCK_SECONDS);
        $this->assertSame($c['ttl_skew_secs'], Doctor::TTL_SKEW);
        $this->assertSame($c['default_lock_ttl_secs'], Doctor::DEFAULT_LOCK_TTL);
        $this->assertSame($c['examples'], Doctor::EXAMPLES);
        $this->assertSame($c['clock_answers'], ClockOffset::SAMPLES);
        $this->assertSame($c['clock_spacing_ms'], (int) round(ClockOffset::SPACING_SECONDS * 1000));
        $option = static fn (string $class, string $name) => (new $class())->getDefinition()->getOption($name)
            ->getDefault();
        $this->assertSame((string) $c['long_lock_secs'], $option(DoctorCommand::class, 'min-remaining'));
        $this->assertSame((string) $c['sweep_grace_secs'], $option(SweepCommand::class, 'grace'));
    }

    /** @return array<string, array{0: string, 1: string, 2: int}> [server, layout, case] */
    public static function doctorCases(): array
    {
        $rows = [];
        foreach (self::cases()['doctor'] as $i => $case) {
            $ttl = is_array($case['table'] ?? null) && isset($case['table']['ttl']);
            foreach (array_keys(self::SERVERS) as $server) {
                // A case that turns TTL on needs the TTL API (dynalite has none); the clock cases run below.
                if (($ttl && ! self::hasTtlApi($server)) || isset($case['clock_skew'])) {
                    continue;
                }
                foreach (array_intersect(self::layouts(), $case['layouts'] ?? self::layouts()) as $layout) {
                    $rows["$server $layout: {$case['case']}"] = [$server, $layout, $i];
                }
            }
        }

        return $rows;
    }

    /** @dataProvider doctorCases */
    public function testTheDoctorAnswersWhatTheTableSays(string $server, string $layout, int $i): void
    {
        $case = self::cases()['doctor'][$i];
        $client = self::client($server);
        $spec = $case['table'] ?? [];
        $table = $spec === 'missing' ? 'ddblock_no_such_table' : self::table($client, $spec['key_attribute'] ?? 'key');
        if (isset($spec['ttl'])) {
            $client->updateTimeToLive(['TableName' => $table, 'TimeToLiveSpecification' => [
                'Enabled' => true,
                'AttributeName' => $spec['ttl'],
            ]]);
        }
        self::write($client, $table, $layout, $case['items'] ?? []);
        $o = $case['options'] ?? [];
        // A case with `proxy` runs through the fault proxy with those faults (a global table's DescribeTable fields,
        // a denied action): no local server has them.
        $proxy = null;
        if (isset($case['proxy'])) {
            $proxy = FaultProxy::start(self::cargoBinary('fault-proxy'), self::endpoint($server));
            $proxy->configure($case['proxy']);
            $client = self::client($proxy->url);
        }
        $store = self::driverStore($layout, $client, $table, self::cases()['prefix']);
        try {
            $report = (new Doctor(new TableView($store)))
                ->run($o['scan'] ?? true, $o['all'] ?? false, $o['min_remaining'] ?? Doctor::LONG_LOCK_SECONDS, false);
        } finally {
            $proxy?->stop();
        }

        $vars = ['{table}' => $table, '{endpoint}' => self::endpoint($server), '{layout}' => $layout];
        $this->assertSame(
            [
                'table', 'key_schema', 'regions', 'ttl', 'expired_items', 'default_ttl_locks', 'invalid_items',
                'layout', 'clock',
            ],
            array_column($report['checks'], 'id')
        );
        $checks = array_column($report['checks'], null, 'id');
        foreach ($case['expect']['checks'] as $id => $expect) {
            self::assertCheck($expect, $checks[$id], $vars);
        }
        $this->assertSame($case['expect']['healthy'], $report['healthy']);
        if (array_key_exists('counts', $case['expect'])) {
            $this->assertSame($case['expect']['counts'], $report['counts']);
        }
        if (isset($case['expect']['default_ttl_locks'])) {
            $this->assertSame($case['expect']['default_ttl_locks'], array_column($report['default_ttl_locks'], 'name'));
        }
    }

    /** @return array<string, array{0: string, 1: int}> [server, case] */
    public static function clockSkewCases(): array
    {
        $rows = [];
        foreach (self::cases()['doctor'] as $i => $case) {
            foreach (isset($case['clock_skew']) ? array_keys(self::SERVERS) : [] as $server) {
                $rows["$server: {$case['case']}"] = [$server, $i];
            }
        }

        return $rows;
    }

    /**
     * `php artisan ddblock:doctor --json` with its clock SKEW off (`compat-tests/support/skew`; the app's own layout).
     *
     * @dataProvider clockSkewCases
     */
    public function testTheClockCheckUnderFaketimeAnswersWhatTheTableSays(string $server, int $i): void
    {
        $case = self::cases()['doctor'][$i];
        $cache = TestApp::cacheConfig(self::endpoint($server), self::table(self::client($server)));
        $ddblock = isset($case['margin']) ? ['clock_skew_margin' => $case['margin']] : null;
        $doctor = ['ddblock:doctor', '--no-scan', '--json'];
        [$status, $out, $err] = TestApp::artisan($cache, $ddblock, $doctor, $case['clock_skew']);
        $this->assertSame('', $err);
        $report = json_decode($out, true, 512, JSON_THROW_ON_ERROR);
        $this->assertSame($case['expect']['healthy'] ? 0 : 1, $status);
        $this->assertSame($case['expect']['healthy'], $report['healthy']);
        self::assertCheck($case['expect']['checks']['clock'], array_column($report['checks'], null, 'id')['clock'], []);
    }

    public function testTheClockMeasurementGivesTheTablesAnswers(): void
    {
        foreach (self::cases()['clock'] as $case) {
            $offset = ClockOffset::fromSamples($case['samples']);
            $e = $case['expect'];
            $got = [$offset->isEmpty() ? null : $offset->low(), $offset->isEmpty() ? null : $offset->high()];
            foreach ([$e['low'], $e['high']] as $n => $want) {
                $want === null ? $this->assertNull($got[$n], $case['case'])
                    : $this->assertEqualsWithDelta($want, $got[$n], 1e-9, $case['case']);
            }
            $this->assertSame($e['status'], $offset->verdict($case['margin']), $case['case']);
            $this->assertSame($e['allowed'], ClockOffset::allowance($case['margin']), $case['case']);
            $this->assertSame($e['margin_needed'], $offset->marginNeeded(), $case['case']);
            $this->assertSame($e['detail'], $offset->describe($case['margin']), $case['case']);
        }
    }

    /** @return array<string, array{0: string, 1: string, 2: int, 3: int|null}> [server, layout, case, run or null] */
    public static function sweepRuns(): array
    {
        $rows = [];
        foreach (self::cases()['sweep'] as $i => $case) {
            foreach ([...array_keys($case['runs']), null] as $run) {
                foreach (self::serversAndLayouts() as [$server, $layout]) {
                    $what = $run === null ? 'flushLocks()'
                        : 'sweep ' . json_encode((object) $case['runs'][$run]['options']);
                    $rows["$server $layout: $what, case $i"] = [$server, $layout, $i, $run];
                }
            }
        }

        return $rows;
    }

    /**
     * The items a sweep with the run's options removes, and why (a dry run first lists the same),
     * or those flushLocks() removes.
     *
     * @dataProvider sweepRuns
     */
    public function testTheSweepAndFlushRemoveWhatTheTableSays(string $server, string $layout, int $i, ?int $run): void
    {
        $case = self::cases()['sweep'][$i];
        $client = self::client($server);
        $table = self::table($client);
        $keys = self::write($client, $table, $layout, $case['items']);
        $store = self::driverStore($layout, $client, $table, self::cases()['prefix']);
        $ids = array_flip($keys);
        if ($run === null) {
            $this->assertTrue($store->flushLocks());
            $want = $case['flush_removes'][$layout] ?? $case['flush_removes'];
            $left = array_map(static fn (array $item): string => $ids[$item['key']['S']], self::items($client, $table));
            $this->assertEqualsCanonicalizing(array_values(array_diff(array_keys($keys), $want)), $left);

            return;
        }
        $o = $case['runs'][$run]['options'];
        $now = time();
        $cutoff = $now - ($o['grace'] ?? self::cases()['constants']['sweep_grace_secs']);
        $select = SweepCommand::selector($now, $cutoff, $o['locks_older_than'] ?? null);
        $view = new TableView($store);
        $listed = $view->sweep($select, true, false, $cutoff)['found'];
        $removed = $view->sweep($select, false, false, $cutoff)['found'];
        $why = static function (array $found) use ($ids): array {
            $out = ['expired' => [], 'stuck_lock' => []];
            foreach ($found as $item) {
                $out[$item['reason']][] = $ids[$item['key']];
            }

            return array_map([self::class, 'sorted'], $out);
        };
        $want = array_map([self::class, 'sorted'], $case['runs'][$run]['removes']);
        $this->assertSame($want, $why($listed), 'the dry run lists them');
        $this->assertSame($want, $why($removed));
        $this->assertNotContains(false, array_column($removed, 'removed'), 'nothing changed since the scan');
        $left = array_map(static fn (array $item): string => $ids[$item['key']['S']], self::items($client, $table));
        $this->assertEqualsCanonicalizing(array_values(array_diff(array_keys($keys), ...array_values($want))), $left);
    }

    /**
     * Writes the case's items: `lock` and `cache` keys in `$layout` with the table's prefix, `key` as given.
     *
     * @param  list<array<string, mixed>>  $items
     * @return array<string, string>  id => table key
     */
    private static function write(DynamoDbClient $client, string $table, string $layout, array $items): array
    {
        $prefix = self::cases()['prefix'];
        $now = time();
        $keys = [];
        foreach ($items as $spec) {
            $key = $spec['key'] ?? (isset($spec['lock']) ? self::lockKey($layout, $prefix, $spec['lock'])
                : ($layout === 'laravel8' ? "$prefix:" : $prefix) . $spec['cache']);
            $item = ['key' => ['S' => $key]] + (isset($spec['value']) ? ['value' => $spec['value']] : []);
            if (isset($spec['expires_in'])) {
                $item['expires_at'] = ['N' => (string) ($now + $spec['expires_in'])];
            } elseif (isset($spec['expires_at'])) {
                $item['expires_at'] = $spec['expires_at'];
            }
            if (isset($spec['fence'])) {
                $item['ddblock_fence'] = ['N' => (string) $spec['fence']];
            }
            $client->putItem(['TableName' => $table, 'Item' => $item]);
            $keys[$spec['id']] = $key;
        }

        return $keys;
    }

    /**
     * @param  list<string>  $list
     * @return list<string>
     */
    private static function sorted(array $list): array
    {
        sort($list);

        return $list;
    }

    /** @return list<array<string, mixed>> every item of `$table` */
    private static function items(DynamoDbClient $client, string $table): array
    {
        $items = [];
        foreach ($client->getPaginator('Scan', ['TableName' => $table, 'ConsistentRead' => true]) as $page) {
            array_push($items, ...($page['Items'] ?? []));
        }

        return $items;
    }

    /**
     * One check against its expectation: status; detail and fix (the `php` one where fronts differ),
     * exact or as `*_re` patterns; no fix on a check that is ok or skipped.
     *
     * @param  array<string, mixed>  $expect
     * @param  array{id: string, status: string, detail: string, fix: string|null}  $check
     * @param  array<string, string>  $vars
     */
    private static function assertCheck(array $expect, array $check, array $vars): void
    {
        $php = static fn ($v) => is_array($v) ? $v['php'] : $v;
        self::assertSame($expect['status'], $check['status'], "{$check['id']}: {$check['detail']}");
        if (isset($expect['detail'])) {
            self::assertSame(strtr($php($expect['detail']), $vars), $check['detail'], $check['id']);
        }
        if (isset($expect['detail_re'])) {
            self::assertMatchesRegularExpression('~' . $php($expect['detail_re']) . '~u', $check['detail']);
        }
        if (isset($expect['fix'])) {
            self::assertSame(strtr($php($expect['fix']), $vars), $check['fix'], "{$check['id']}'s fix");
        } elseif (isset($expect['fix_re'])) {
            self::assertMatchesRegularExpression('~' . $php($expect['fix_re']) . '~u', (string) $check['fix']);
        } elseif (in_array($check['status'], ['ok', 'skipped'], true)) {
            self::assertNull($check['fix'], $check['id']);
        }
    }
}
