<?php
/**
 * harness.php's loops, for load and chaos (compat-tests/support/peers/PROTOCOL.md, "Loops"):
 * `cycles`, the load worker of the benchmarks, the stuck-lock comparison and the driver's mixed
 * worker tests; `chaos`, the chaos worker of compat-tests/chaos (docs/reliability.md). Each writes
 * one JSON line per cycle to a file, appended under an exclusive flock() so that several peers
 * can share it, and answers with its totals.
 */

declare(strict_types=1);

use Aws\DynamoDb\DynamoDbClient;
use Aws\Exception\AwsException;
use Illuminate\Cache\DynamoDbStore;
use Illuminate\Contracts\Cache\LockTimeoutException;

/** Appends one JSON line to `$file` under an exclusive lock: lines never interleave. */
function append_record($file, array $record): void
{
    flock($file, LOCK_EX);
    fwrite($file, json_encode($record, JSON_UNESCAPED_SLASHES | JSON_INVALID_UTF8_SUBSTITUTE) . "\n");
    fflush($file);
    flock($file, LOCK_UN);
}

/** This process's CPU time (user + system), seconds. */
function cpu_seconds(): float
{
    $r = getrusage();

    return $r['ru_utime.tv_sec'] + $r['ru_utime.tv_usec'] / 1e6 + $r['ru_stime.tv_sec'] + $r['ru_stime.tv_usec'] / 1e6;
}

/**
 * `cycles`: each cycle a fresh `$store->lock($name, ttl)` on a name (seeded random from `seed` +
 * pid, else round-robin from the pid), one acquire() (with `block`: Laravel's block() until
 * `until`), and if acquired `work_ms` of work then release(); if not, a 5-20 ms pause (`think_ms`
 * after a release). Starts at `start_at` (so that peers started one after another begin
 * together) and no cycle after `until`. Records `{"lang":"php","driver","pid","name","owner",
 * "acquired","t_try","t_acq","t_rel","t_rel_end","released"[,"error"]}` (microtime(true) seconds;
 * t_rel just before release(), t_rel_end after it; null when not acquired). Answers the totals
 * (release_false counts release() === false: a stuck lock until it expires) and the CPU and wall
 * seconds of the cycles after the first `warmup`.
 */
function run_cycles(DynamoDbStore $store, array $cmd): array
{
    $names = array_values(array_filter(array_map('strval', (array) field($cmd, 'names')), 'strlen'));
    if ($names === []) {
        throw new InvalidArgumentException("field 'names' must list at least one lock name");
    }
    $cycles = (int) field($cmd, 'cycles');
    $ttl = (int) ($cmd['ttl'] ?? 10);
    $workUs = (int) round((float) ($cmd['work_ms'] ?? 0) * 1000);
    $record = fopen((string) field($cmd, 'record'), 'a'); // O_APPEND
    $seeded = isset($cmd['seed']);
    $pid = getmypid();
    if ($seeded) {
        mt_srand((int) $cmd['seed'] + $pid); // random choice of names
    }
    $startAt = (float) ($cmd['start_at'] ?? 0);
    if ($startAt > microtime(true)) {
        usleep((int) (($startAt - microtime(true)) * 1e6));
    }
    $summary = ['cycles' => 0, 'acquired' => 0, 'released' => 0, 'release_false' => 0, 'errors' => 0];
    $until = (float) ($cmd['until'] ?? INF);
    $block = (bool) ($cmd['block'] ?? false);
    $thinkUs = (int) round((float) ($cmd['think_ms'] ?? 0) * 1000);
    $warmup = (int) ($cmd['warmup'] ?? 0);
    $cpu0 = cpu_seconds();
    $wall0 = microtime(true);

    for ($i = 0; $i < $cycles && microtime(true) < $until; $i++) {
        if ($i === $warmup) {
            $cpu0 = cpu_seconds();
            $wall0 = microtime(true);
        }
        $name = $seeded ? $names[mt_rand(0, count($names) - 1)] : $names[($pid + $i) % count($names)];
        $lock = $store->lock($name, $ttl);
        $rec = ['lang' => 'php', 'driver' => harness_driver(), 'pid' => $pid, 'name' => $name, 'owner' => $lock->owner(),
            'acquired' => false, 't_try' => microtime(true), 't_acq' => null, 't_rel' => null, 't_rel_end' => null, 'released' => false];
        try {
            if ($block) {
                try {
                    // Laravel's block(): acquire() every 250 ms; its clock is whole seconds.
                    $rec['acquired'] = $lock->block(max(1, (int) ceil($until - microtime(true))));
                } catch (LockTimeoutException $e) {
                    $rec['acquired'] = false;
                }
            } else {
                $rec['acquired'] = $lock->acquire();
            }
            if ($rec['acquired']) {
                $rec['t_acq'] = microtime(true);
                usleep($workUs);
                $rec['t_rel'] = microtime(true);
                $rec['released'] = $lock->release(); // false = stuck until expiry
                $rec['t_rel_end'] = microtime(true);
            }
        } catch (Throwable $e) {
            $rec['error'] = get_class($e) . ': ' . substr($e->getMessage(), 0, 300);
            $summary['errors']++;
        }
        $summary['cycles']++;
        $summary['acquired'] += $rec['acquired'] ? 1 : 0;
        $summary['released'] += $rec['released'] ? 1 : 0;
        $summary['release_false'] += ($rec['acquired'] && ! $rec['released'] && ! isset($rec['error'])) ? 1 : 0;
        append_record($record, $rec);

        if (! $rec['acquired'] && ! $block) {
            usleep(mt_rand(5000, 20000));
        } elseif ($rec['acquired'] && $thinkUs > 0) {
            usleep($thinkUs);
        }
    }
    $summary['cpu_s'] = cpu_seconds() - $cpu0;
    $summary['wall_s'] = microtime(true) - $wall0;
    fclose($record);

    return $summary;
}

/** A guarded write is sent only with at least this much of the lease left (seconds). */
const CHAOS_LEASE_SAFETY = 1.5;
/** The guarded write, the same in every language: accepted only from a fence not below the last. */
const CHAOS_UPDATE = 'SET #fence = :fence, #owner = :owner, #writes = if_not_exists(#writes, :zero) + :one';
const CHAOS_CONDITION = 'attribute_not_exists(#fence) OR #fence <= :fence';
/** Stock Laravel's locks have no token: the control group's writes are unconditional. */
const CHAOS_CONTROL_UPDATE = 'SET #owner = :owner, #writes = if_not_exists(#writes, :zero) + :one';

/** A chaos cycle's error by kind: the driver's and the SDK's exceptions are typed; others not. */
function chaos_classify(array &$c, string $op, Throwable $e): void
{
    // The driver's exceptions first: they extend the SDK's and keep its error code, so by code
    // an OutcomeUnknownException after a 500 would read as a plain InternalServerError.
    if (str_starts_with(get_class($e), 'Ddblock\\') || $e instanceof LockTimeoutException) {
        $c['errors'][] = [$op, (new ReflectionClass($e))->getShortName()];
    } elseif ($e instanceof AwsException) {
        $c['errors'][] = [$op, $e->getAwsErrorCode() ?: get_class($e)];
    } else {
        $c['untyped'][] = "$op: " . get_class($e) . ': ' . $e->getMessage();
    }
}

/**
 * One guarded write of a chaos cycle on `res_<name>`, with the fencing token (the driver) or
 * none (stock Laravel): `accepted`, `refused` (the fence condition failed) or `error`.
 */
function chaos_guarded_write(DynamoDbClient $client, array &$c, ?int $fence): string
{
    $values = [':owner' => ['S' => $c['owner']], ':zero' => ['N' => '0'], ':one' => ['N' => '1']];
    $names = ['#owner' => 'owner', '#writes' => 'writes'];
    $request = ['TableName' => env_or('DDB_TABLE'), 'Key' => ['key' => ['S' => "res_{$c['name']}"]]];
    if (harness_driver() === 'ddblock') {
        $request += ['UpdateExpression' => CHAOS_UPDATE, 'ConditionExpression' => CHAOS_CONDITION,
            'ExpressionAttributeNames' => $names + ['#fence' => 'fence'],
            'ExpressionAttributeValues' => $values + [':fence' => ['N' => (string) $fence]]];
    } else {
        $request += ['UpdateExpression' => CHAOS_CONTROL_UPDATE,
            'ExpressionAttributeNames' => $names, 'ExpressionAttributeValues' => $values];
    }
    try {
        $client->updateItem($request);

        return 'accepted';
    } catch (AwsException $e) {
        if ($e->getAwsErrorCode() === 'ConditionalCheckFailedException') {
            return 'refused';
        }
        chaos_classify($c, 'guarded_write', $e);
    } catch (Throwable $e) {
        chaos_classify($c, 'guarded_write', $e);
    }

    return 'error';
}

/**
 * The work of a chaos cycle: the counter `cnt_<name>` read, a pause, and written back plus one,
 * unguarded and straight to the server (`$direct`, no fault proxy): `counted` or `error`.
 */
function chaos_count(DynamoDbClient $direct, array &$c, int $workUs): string
{
    $key = ['key' => ['S' => "cnt_{$c['name']}"]];
    $table = env_or('DDB_TABLE');
    try {
        $item = $direct->getItem(['TableName' => $table, 'Key' => $key, 'ConsistentRead' => true])['Item'] ?? null;
        $n = $item === null ? 0 : (int) $item['n']['N'];
        usleep($workUs);
        $direct->putItem(['TableName' => $table, 'Item' => $key + ['n' => ['N' => (string) ($n + 1)]]]);

        return 'counted';
    } catch (Throwable $e) {
        chaos_classify($c, 'counter', $e);

        return 'error';
    }
}

/**
 * `chaos`: loops wait (block() up to `wait_ms`, 100 ms between tries) -> guarded write -> work
 * (`work_ms`) -> guarded write -> release on random `keys` (seeded by `seed`) until `acquisitions`
 * or `duration_ms`. One record per cycle, as compat-tests/chaos/src/checker.rs `Cycle` describes:
 * `lang` is `php` for the driver (with fencing tokens) and `laravel` for stock Laravel (the
 * control group). A write is skipped when the lease has too little left, or, with the driver,
 * when the lock carries no token.
 */
function run_chaos(DynamoDbStore $store, DynamoDbClient $client, array $cmd): array
{
    $keys = array_values(array_map('strval', (array) field($cmd, 'keys')));
    if ($keys === []) {
        throw new InvalidArgumentException("field 'keys' must list at least one lock name");
    }
    $ttl = (int) field($cmd, 'ttl');
    $workUs = (int) field($cmd, 'work_ms') * 1000;
    $wait = (int) field($cmd, 'wait_ms') / 1000;
    $until = hrtime(true) / 1e9 + (int) field($cmd, 'duration_ms') / 1000;
    $target = (int) field($cmd, 'acquisitions');
    $worker = (string) field($cmd, 'worker');
    mt_srand((int) field($cmd, 'seed'));
    $out = fopen((string) field($cmd, 'out'), 'a');
    $driver = harness_driver() === 'ddblock';
    $lang = $driver ? 'php' : 'laravel';
    // The counter's client, straight to the server (no fault proxy); ddblock's workers only.
    $counterEndpoint = getenv('DDB_COUNTER_ENDPOINT');
    $direct = $driver && $counterEndpoint
        ? ddblock_dynamodb_client($counterEndpoint, ['region' => env_or('DDB_REGION', 'us-east-1')])
        : null;

    $cycles = 0;
    $acquired = 0;
    while ($acquired < $target && hrtime(true) / 1e9 < $until) {
        $name = $keys[mt_rand(0, count($keys) - 1)];
        $lock = $store->lock($name, $ttl);
        $c = ['lang' => $lang, 'worker' => $worker, 'name' => $name, 'owner' => $lock->owner(),
            'writes' => [], 'errors' => [], 'untyped' => []];
        $got = false;
        try {
            $left = max(0.0, min($wait, $until - hrtime(true) / 1e9));
            $lock->betweenBlockedAttemptsSleepFor(100);
            $got = (bool) $lock->block((int) max(1, floor($left)));
            $c['acquire'] = 'acquired';
        } catch (LockTimeoutException $e) {
            $c['acquire'] = 'held';
        } catch (Throwable $e) {
            $c['acquire'] = 'error';
            chaos_classify($c, 'acquire', $e);
        }
        if ($got) {
            $acquired++;
            // The lease ends a ttl after the last try was sent, less a second for the whole-second
            // expiry: measured from the moment block() returned is later than that, so keep more.
            $leaseEnd = hrtime(true) / 1e9 + $ttl - 1 - 0.5;
            $fence = $driver ? $lock->fence() : null;
            $c['fence'] = $fence;
            for ($i = 0; $i < 2; $i++) {
                if ($i === 1) {
                    if ($direct !== null && $leaseEnd - hrtime(true) / 1e9 >= CHAOS_LEASE_SAFETY) {
                        $c['counter'] = chaos_count($direct, $c, $workUs);
                    } else {
                        usleep($workUs);
                    }
                }
                if ($leaseEnd - hrtime(true) / 1e9 < CHAOS_LEASE_SAFETY || ($driver && $fence === null)) {
                    $c['writes'][] = 'skipped';
                    continue;
                }
                $c['writes'][] = chaos_guarded_write($client, $c, $fence);
            }
            try {
                $c['release'] = $lock->release() ? 'released' : 'not_held';
            } catch (Throwable $e) {
                $c['release'] = 'error';
                chaos_classify($c, 'release', $e);
            }
        }
        append_record($out, $c);
        $cycles++;
    }
    fclose($out);

    return ['cycles' => $cycles, 'acquired' => $acquired];
}
