<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests\Support;

use RuntimeException;

/**
 * Concurrent lock workers, looping acquire, work, release on a few names and recording each
 * hold: `php compat-tests/php/harness.php worker` processes with stock Laravel's lock (group
 * `laravel`) or the driver's (group `ddblock`), and `tests/peers/worker.py` processes with the
 * Rust core through the Python binding (group `core`), all writing the same records.
 */
final class Workers
{
    /**
     * Runs the groups at once on one table and returns every cycle's record.
     *
     * @param  array<string, int>  $groups  laravel|ddblock|core => number of processes
     * @param  list<string>  $names
     * @return list<array<string, mixed>>
     */
    public static function run(
        string $endpoint,
        string $table,
        string $layout,
        array $groups,
        array $names,
        int $cycles,
        int $ttl,
        int $workMs
    ): array {
        $python = ddblock_repo_root() . '/bindings/python/.venv/bin/python';
        if (isset($groups['core']) && ! is_executable($python)) {
            throw new RuntimeException("$python is missing: bindings/python/test.sh builds the Python binding");
        }
        $record = tempnam(sys_get_temp_dir(), 'ddblock-workers-');
        // Every worker waits until then: the PHP and Python processes start at different speeds.
        $startAt = sprintf('%.3f', microtime(true) + 2.0);
        $processes = [];
        $i = 0;
        foreach ($groups as $driver => $count) {
            for ($n = 0; $n < $count; $n++, $i++) {
                $env = [
                    'DDB_ENDPOINT' => $endpoint, 'DDB_TABLE' => $table, 'DDB_LAYOUT' => $layout,
                    'DDB_PREFIX' => 'app_', 'DDB_DRIVER' => $driver, 'W_NAMES' => implode(',', $names),
                    'W_CYCLES' => (string) $cycles, 'W_TTL' => (string) $ttl, 'W_WORK_MS' => (string) $workMs,
                    'W_RECORD' => $record, 'W_SEED' => (string) (100 + $i), 'W_START_AT' => $startAt,
                ] + getenv();
                $command = $driver === 'core'
                    ? [$python, __DIR__ . '/../peers/worker.py']
                    : [PHP_BINARY, ddblock_repo_root() . '/compat-tests/php/harness.php', 'worker'];
                $processes[] = proc_open(
                    $command,
                    [0 => ['file', '/dev/null', 'r'], 1 => ['file', '/dev/null', 'w'], 2 => ['pipe', 'w']],
                    $pipes,
                    null,
                    $env
                );
                $stderr[] = $pipes[2];
            }
        }
        $errors = '';
        foreach ($processes as $k => $process) {
            $errors .= stream_get_contents($stderr[$k]);
            fclose($stderr[$k]);
            if (proc_close($process) !== 0) {
                throw new RuntimeException("a worker failed: $errors");
            }
        }
        $records = [];
        foreach (file($record, FILE_IGNORE_NEW_LINES | FILE_SKIP_EMPTY_LINES) ?: [] as $line) {
            $records[] = json_decode($line, true, 512, JSON_THROW_ON_ERROR);
        }
        unlink($record);

        return $records;
    }

    /**
     * Holds that began before an earlier hold of the same name had ended. A recorded hold lies
     * inside the real one (taken after acquire returned, before release was sent), so every
     * overlap found is a real double holder.
     *
     * @param  list<array<string, mixed>>  $records
     */
    public static function overlaps(array $records): int
    {
        $holds = [];
        foreach ($records as $r) {
            if ($r['acquired'] && $r['t_acq'] !== null && $r['t_rel'] !== null) {
                $holds[$r['name']][] = [$r['t_acq'], $r['t_rel']];
            }
        }
        $overlaps = 0;
        foreach ($holds as $list) {
            usort($list, static fn (array $a, array $b): int => $a[0] <=> $b[0]);
            $latestEnd = -INF;
            foreach ($list as [$start, $end]) {
                if ($start < $latestEnd) {
                    $overlaps++;
                }
                $latestEnd = max($latestEnd, $end);
            }
        }

        return $overlaps;
    }

    /**
     * Per driver: cycles, acquired, stuck (release() returned false: the lock stays until it
     * expires), errors.
     *
     * @param  list<array<string, mixed>>  $records
     * @return array<string, array{cycles: int, acquired: int, stuck: int, errors: int}>
     */
    public static function summary(array $records): array
    {
        $out = [];
        foreach ($records as $r) {
            $s = $out[$r['driver']] ?? ['cycles' => 0, 'acquired' => 0, 'stuck' => 0, 'errors' => 0];
            $s['cycles']++;
            $s['acquired'] += $r['acquired'] ? 1 : 0;
            $s['stuck'] += $r['acquired'] && ! $r['released'] && ! isset($r['error']) ? 1 : 0;
            $s['errors'] += isset($r['error']) ? 1 : 0;
            $out[$r['driver']] = $s;
        }

        return $out;
    }
}
