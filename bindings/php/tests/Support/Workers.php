<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests\Support;

use RuntimeException;

/**
 * Concurrent lock workers, looping acquire, work, release on a few names and recording each
 * hold: peers of compat-tests/support/peers/PROTOCOL.md, each sent one `cycles` request: the PHP
 * peer `compat-tests/laravel/harness.php` with stock Laravel's lock (group `laravel`) or the
 * driver's (group `ddblock`), and the Python peer `compat-tests/support/peers/peer.py` with the
 * Rust core through the Python binding (group `core`), all writing the same records.
 */
final class Workers
{
    /**
     * Runs the groups at once on one table and returns every cycle's record.
     *
     * @param  array<string, int>  $groups  laravel|ddblock|core => number of processes
     * @param  list<string>  $names
     * @param  float|null  $seconds  if set, each worker cycles for this long (at most $cycles):
     *                               a run that must outlast the stuck locks stock Laravel leaves
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
        int $workMs,
        ?float $seconds = null
    ): array {
        $python = ddblock_repo_root() . '/bindings/python/.venv/bin/python';
        if (isset($groups['core']) && ! is_executable($python)) {
            throw new RuntimeException("$python is missing: bindings/python/test.sh builds the Python binding");
        }
        $record = tempnam(sys_get_temp_dir(), 'ddblock-workers-');
        $workers = [];
        foreach ($groups as $driver => $count) {
            for ($n = 0; $n < $count; $n++) {
                $env = [
                    'DDB_ENDPOINT' => $endpoint, 'DDB_TABLE' => $table, 'DDB_LAYOUT' => $layout,
                    'DDB_PREFIX' => 'app_',
                ] + ($driver === 'core' ? [] : ['DDB_DRIVER' => $driver]) + getenv();
                $command = $driver === 'core'
                    ? [$python, ddblock_repo_root() . '/compat-tests/support/peers/peer.py']
                    : [PHP_BINARY, ddblock_repo_root() . '/compat-tests/laravel/harness.php'];
                $stderr = tmpfile();
                $io = [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => $stderr];
                $process = proc_open($command, $io, $pipes, null, $env);
                if (! is_resource($process)) {
                    throw new RuntimeException('cannot start ' . implode(' ', $command));
                }
                $workers[] = [$process, $pipes, $stderr];
            }
        }
        try {
            // Every peer loaded and ready first, then one start for all: the PHP and Python
            // processes start at different speeds.
            foreach ($workers as $w) {
                self::call($w, ['op' => 'hello']);
            }
            $startAt = microtime(true) + 0.5;
            foreach ($workers as $i => $w) {
                self::send($w, [
                    'op' => 'cycles', 'names' => $names, 'cycles' => $cycles, 'ttl' => $ttl, 'work_ms' => $workMs,
                    'record' => $record, 'seed' => 100 + $i, 'start_at' => $startAt,
                ] + ($seconds === null ? [] : ['until' => $startAt + $seconds]));
            }
            foreach ($workers as $w) {
                self::answer($w);
            }
        } finally {
            $statuses = [];
            foreach ($workers as [$process, $pipes, $stderr]) {
                fclose($pipes[0]); // EOF: the peer exits
                fclose($pipes[1]);
                $statuses[] = proc_close($process);
                fclose($stderr);
            }
        }
        if (array_filter($statuses) !== []) {
            throw new RuntimeException('a worker exited non-zero: ' . json_encode($statuses));
        }
        $records = [];
        foreach (file($record, FILE_IGNORE_NEW_LINES | FILE_SKIP_EMPTY_LINES) ?: [] as $line) {
            $records[] = json_decode($line, true, 512, JSON_THROW_ON_ERROR);
        }
        unlink($record);

        return $records;
    }

    /**
     * @param  array{0: resource, 1: array<int, resource>, 2: resource}  $worker
     * @param  array<string, mixed>  $request
     */
    private static function send(array $worker, array $request): void
    {
        fwrite($worker[1][0], json_encode($request, JSON_UNESCAPED_SLASHES) . "\n");
        fflush($worker[1][0]);
    }

    /**
     * The worker's next answer; an exception (with its stderr) unless `"ok": true`.
     *
     * @param  array{0: resource, 1: array<int, resource>, 2: resource}  $worker
     * @return array<string, mixed>
     */
    private static function answer(array $worker): array
    {
        $line = fgets($worker[1][1]);
        $answer = $line === false ? null : json_decode($line, true);
        if (! is_array($answer) || ! ($answer['ok'] ?? false)) {
            rewind($worker[2]);
            throw new RuntimeException('a worker failed: ' . ($line === false ? 'it exited' : $line)
                . ' ' . stream_get_contents($worker[2]));
        }

        return $answer;
    }

    /**
     * @param  array{0: resource, 1: array<int, resource>, 2: resource}  $worker
     * @param  array<string, mixed>  $request
     * @return array<string, mixed>
     */
    private static function call(array $worker, array $request): array
    {
        self::send($worker, $request);

        return self::answer($worker);
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
