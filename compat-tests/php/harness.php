<?php
/**
 * Drives Laravel's real, unmodified Illuminate\Cache\DynamoDbStore /
 * DynamoDbLock (Debian's php-illuminate-cache 8.83) over a JSON-lines protocol,
 * so tests in any language can check what Laravel writes and reads. With
 * DDB_DRIVER=ddblock it drives the ddblock/laravel driver (bindings/php)
 * instead: the same store with locks released by one conditional DeleteItem.
 * Requests go through the real AWS SDK for PHP (compat-tests/php/support.php).
 *
 *   DDB_ENDPOINT=http://127.0.0.1:8000 DDB_TABLE=cache DDB_LAYOUT=laravel8 \
 *   DDB_PREFIX=app_ php compat-tests/php/harness.php          # command loop
 *   ... W_NAMES=a,b W_CYCLES=100 W_TTL=10 W_WORK_MS=20 W_RECORD=/tmp/rec.jsonl \
 *   php compat-tests/php/harness.php worker                   # load-test worker
 *
 * Environment: DDB_ENDPOINT, DDB_TABLE (required); DDB_LAYOUT laravel8 |
 * laravel11 | laravel12 (default laravel8); DDB_PREFIX (default '');
 * DDB_REGION (us-east-1); DDB_TIMEOUT seconds per HTTP call (10);
 * DDB_RETRIES (0; the SDK's own default for DynamoDB is 10);
 * DDB_DRIVER laravel (default) | ddblock.
 *
 * Layouts: with DDB_DRIVER=laravel, 8.83's classes as installed (laravel8) and
 * two subclasses reproducing 11.x's and 12.x's key changes (below). With
 * DDB_DRIVER=ddblock: Ddblock\Laravel\DynamoDbStore over 8.83 (laravel8), the
 * same with 11.x's setPrefix() (laravel11), and over upstream Laravel 13's
 * unmodified lock classes (laravel12; ../shared/php/laravel-13).
 *
 * Command loop: one JSON object per stdin line, one JSON line per command on
 * stdout. PHP values cross as base64(serialize($value)) ("v" in, "value" out).
 *   {"op":"get","key":k}                          -> {"ok":true,"value":b64}   (b64 of serialize(null) when missing)
 *   {"op":"put","key":k,"v":b64,"ttl":s}          -> {"ok":true,"result":bool}
 *   {"op":"add","key":k,"v":b64,"ttl":s}          -> {"ok":true,"result":bool}
 *   {"op":"putMany","values":{k:b64,...},"ttl":s} -> {"ok":true,"result":bool}
 *   {"op":"many","keys":[k,...]}                  -> {"ok":true,"values":{k:b64,...}}
 *   {"op":"increment"|"decrement","key":k,"by":n} -> {"ok":true,"result":int|false}   (by defaults to 1)
 *   {"op":"forever","key":k,"v":b64}              -> {"ok":true,"result":bool}
 *   {"op":"forget","key":k}                       -> {"ok":true,"result":bool}
 *   {"op":"lock.acquire","name":n,"ttl":s,"owner"?:o}  -> {"ok":true,"acquired":bool,"owner":o}
 *   {"op":"lock.release","name":n,"owner":o}      -> {"ok":true,"released":bool}   (restoreLock(n, o)->release())
 *   {"op":"lock.forceRelease","name":n}           -> {"ok":true}
 *   {"op":"lock.block","name":n,"ttl":s,"seconds":w,"owner"?:o,"sleep_ms"?:ms}
 *                                                 -> {"ok":true,"acquired":bool,"owner":o}  (false = LockTimeoutException)
 *   {"op":"lock.get","name":n}                    -> {"ok":true,"value":b64}   (the lock's getCurrentOwner())
 *   {"op":"lock.refresh","name":n,"owner":o,"ttl":s}   -> {"ok":true,"refreshed":bool}   (laravel12, or DDB_DRIVER=ddblock)
 *   {"op":"raw","call":"GetItem","params":{...}}  -> {"ok":true,"result":{...}}  (any DynamoDB operation;
 *                                                    params and result are DynamoDB's wire JSON)
 *   {"op":"now"}                                  -> {"ok":true,"now":time()}
 * Any failure -> {"ok":false,"error":"<class>: <message>"}; the loop goes on.
 *
 * Worker mode (`harness.php worker`): W_NAMES (comma-separated lock names),
 * W_CYCLES, W_TTL (lock seconds, 10), W_WORK_MS (hold time, 0), W_RECORD (file
 * appended to), W_SEED (if set: seeded random names, else round-robin),
 * W_START_AT (optional Unix time, fractional: wait until then, so that workers
 * started one after another begin together), W_UNTIL (optional Unix time: start
 * no cycle after it), W_BLOCK (optional, any value: wait with Laravel's
 * block() until W_UNTIL instead of one acquire()), W_THINK_MS (pause after a
 * release, 0), W_WARMUP (cycles before the CPU and wall figures start, 0). Each
 * cycle: a fresh $store->lock($name, W_TTL), acquire(), and if acquired sleep
 * W_WORK_MS then release(); if not, sleep 5-20 ms. One JSON line per cycle:
 *   {"lang":"php","driver","pid","name","owner","acquired","t_try","t_acq","t_rel","t_rel_end","released"[,"error"]}
 * (microtime(true) seconds; t_rel = just before release(), t_rel_end = after it;
 * null when not acquired). At the end one summary line on stdout:
 *   {"cycles","acquired","released","release_false","errors"}
 * release_false counts release() === false: a stuck lock until it expires.
 */

declare(strict_types=1);

ini_set('display_errors', 'stderr'); // stdout carries the protocol only
error_reporting(E_ALL & ~E_DEPRECATED);

require_once __DIR__ . '/support.php';

$driver = getenv('DDB_DRIVER') ?: 'laravel';
if (! in_array($driver, ['laravel', 'ddblock'], true)) {
    fwrite(STDERR, "DDB_DRIVER must be laravel or ddblock, not '$driver'\n");
    exit(2);
}
if ($driver === 'ddblock' && getenv('DDB_LAYOUT') === 'laravel12') {
    ddblock_use_laravel13(); // before any Illuminate\Cache class is loaded
}
require_once 'Illuminate/Cache/autoload.php';
ddblock_require_aws_sdk();
if ($driver === 'ddblock') {
    ddblock_register_driver_autoloader();
} else {
    require_once __DIR__ . '/laravel-layouts.php';
}

use Aws\DynamoDb\DynamoDbClient;
use Illuminate\Cache\DynamoDbStore;
use Illuminate\Contracts\Cache\LockTimeoutException;

function env_or(string $name, ?string $default = null): string
{
    $value = getenv($name);
    if ($value === false || $value === '') {
        if ($default === null) {
            throw new RuntimeException("environment variable $name is required");
        }

        return $default;
    }

    return $value;
}

function make_client(): DynamoDbClient
{
    $timeout = (float) env_or('DDB_TIMEOUT', '10');

    return ddblock_dynamodb_client(env_or('DDB_ENDPOINT'), [
        'region' => env_or('DDB_REGION', 'us-east-1'),
        'http' => ['timeout' => $timeout, 'connect_timeout' => $timeout],
        'retries' => (int) env_or('DDB_RETRIES', '0'),
    ]);
}

function make_store(DynamoDbClient $client): DynamoDbStore
{
    $classes = getenv('DDB_DRIVER') === 'ddblock' ? [
        'laravel8' => Ddblock\Laravel\DynamoDbStore::class, // over 8.83
        'laravel11' => DriverLaravel11Store::class,
        'laravel12' => Ddblock\Laravel\DynamoDbStore::class, // over upstream 13 (see the top)
    ] : [
        'laravel8' => DynamoDbStore::class, // 8.83 as installed: prefix 'app_' -> 'app_:'
        'laravel11' => Laravel11DynamoDbStore::class,
        'laravel12' => Laravel12DynamoDbStore::class,
    ];
    $layout = env_or('DDB_LAYOUT', 'laravel8');
    if (! isset($classes[$layout])) {
        throw new RuntimeException("DDB_LAYOUT must be laravel8, laravel11 or laravel12, not '$layout'");
    }
    $prefix = getenv('DDB_PREFIX') ?: '';

    return new $classes[$layout]($client, env_or('DDB_TABLE'), 'key', 'value', 'expires_at', $prefix);
}

if (getenv('DDB_DRIVER') === 'ddblock') {
    /** The driver on Laravel 11.x: 11's setPrefix() (the prefix as given, PR #47380). */
    class DriverLaravel11Store extends Ddblock\Laravel\DynamoDbStore
    {
        public function setPrefix($prefix)
        {
            $this->prefix = $prefix;
        }
    }
}

/**
 * DynamoDB wire JSON (decoded to arrays) -> the SDK's input shape, and back: the same except
 * that the SDK takes and gives binary ('B', 'BS') values raw where the wire has base64.
 */
function sdk_from_wire($value, $member = null)
{
    if (! is_array($value)) {
        return $member === 'B' && is_string($value) ? base64_decode($value) : $value;
    }
    if ($member === 'BS' && array_is_list($value)) {
        return array_map('base64_decode', $value);
    }
    foreach ($value as $k => $v) {
        $value[$k] = sdk_from_wire($v, is_int($k) ? null : $k);
    }

    return $value;
}

function sdk_to_wire($value, $member = null)
{
    if (! is_array($value)) {
        return $member === 'B' && is_string($value) ? base64_encode($value) : $value;
    }
    if ($member === 'BS' && array_is_list($value)) {
        return array_map('base64_encode', $value);
    }
    foreach ($value as $k => $v) {
        $value[$k] = sdk_to_wire($v, is_int($k) ? null : $k);
    }

    return $value;
}

function enc($value): string
{
    return base64_encode(serialize($value));
}

function dec(array $cmd, string $field)
{
    if (! isset($cmd[$field]) || ! is_string($cmd[$field])) {
        throw new InvalidArgumentException("field '$field' (base64 of serialize()) is required");
    }
    $text = base64_decode($cmd[$field], true);
    if ($text === false) {
        throw new InvalidArgumentException("field '$field' is not base64");
    }
    if ($text === serialize(false)) {
        return false;
    }
    $value = @unserialize($text);
    if ($value === false) {
        throw new InvalidArgumentException("field '$field' is not serialize() text");
    }

    return $value;
}

function field(array $cmd, string $name)
{
    if (! array_key_exists($name, $cmd)) {
        throw new InvalidArgumentException("field '$name' is required");
    }

    return $cmd[$name];
}

/** Lock::getCurrentOwner() is protected: call it from inside the lock. */
function current_owner(Illuminate\Cache\Lock $lock)
{
    return (fn () => $this->getCurrentOwner())->call($lock);
}

function run_command(DynamoDbStore $store, DynamoDbClient $client, array $cmd): array
{
    switch ($cmd['op'] ?? null) {
        case 'get':
            return ['value' => enc($store->get(field($cmd, 'key')))];
        case 'put':
        case 'add':
            return ['result' => $store->{$cmd['op']}(field($cmd, 'key'), dec($cmd, 'v'), field($cmd, 'ttl'))];
        case 'putMany':
            $values = array_map(fn ($b64) => dec(['v' => $b64], 'v'), (array) field($cmd, 'values'));

            return ['result' => $store->putMany($values, field($cmd, 'ttl'))];
        case 'many':
            // An object even when the keys look like list indexes ("0", "1").
            return ['values' => (object) array_map('enc', $store->many((array) field($cmd, 'keys')))];
        case 'increment':
        case 'decrement':
            return ['result' => $store->{$cmd['op']}(field($cmd, 'key'), $cmd['by'] ?? 1)];
        case 'forever':
            return ['result' => $store->forever(field($cmd, 'key'), dec($cmd, 'v'))];
        case 'forget':
            return ['result' => $store->forget(field($cmd, 'key'))];
        case 'lock.acquire':
            $lock = $store->lock(field($cmd, 'name'), field($cmd, 'ttl'), $cmd['owner'] ?? null);

            return ['acquired' => $lock->acquire(), 'owner' => $lock->owner()];
        case 'lock.release':
            return ['released' => $store->restoreLock(field($cmd, 'name'), field($cmd, 'owner'))->release()];
        case 'lock.forceRelease':
            $store->lock(field($cmd, 'name'))->forceRelease();

            return [];
        case 'lock.block':
            $lock = $store->lock(field($cmd, 'name'), field($cmd, 'ttl'), $cmd['owner'] ?? null);
            if (isset($cmd['sleep_ms'])) {
                $lock->betweenBlockedAttemptsSleepFor($cmd['sleep_ms']);
            }
            try {
                $acquired = $lock->block(field($cmd, 'seconds'));
            } catch (LockTimeoutException $e) {
                $acquired = false;
            }

            return ['acquired' => $acquired, 'owner' => $lock->owner()];
        case 'lock.get':
            return ['value' => enc(current_owner($store->lock(field($cmd, 'name'))))];
        case 'lock.refresh':
            if (getenv('DDB_DRIVER') !== 'ddblock' && ! $store instanceof Laravel12DynamoDbStore) {
                throw new RuntimeException('lock.refresh needs DDB_LAYOUT=laravel12 (or DDB_DRIVER=ddblock)');
            }
            $lock = $store->restoreLock(field($cmd, 'name'), field($cmd, 'owner'));

            return ['refreshed' => $lock->refresh(field($cmd, 'ttl'))];
        case 'raw':
            $params = json_decode(json_encode($cmd['params'] ?? [], JSON_THROW_ON_ERROR), true);
            $result = $client->execute($client->getCommand(ucfirst((string) field($cmd, 'call')), sdk_from_wire($params)))->toArray();
            unset($result['@metadata']);

            return ['result' => (object) sdk_to_wire($result)];
        case 'now':
            return ['now' => time()];
        default:
            throw new InvalidArgumentException('unknown op ' . json_encode($cmd['op'] ?? null));
    }
}

function emit(array $out): void
{
    $line = json_encode($out, JSON_UNESCAPED_SLASHES | JSON_INVALID_UTF8_SUBSTITUTE);
    fwrite(STDOUT, $line . "\n");
    fflush(STDOUT);
}

function command_loop(): void
{
    $client = make_client();
    $store = make_store($client);
    while (($line = fgets(STDIN)) !== false) {
        if (trim($line) === '') {
            continue;
        }
        try {
            // Decoded as objects first so that "params":{} stays {} for raw.
            $cmd = json_decode($line, false, 512, JSON_THROW_ON_ERROR);
            if (! $cmd instanceof stdClass) {
                throw new InvalidArgumentException('each line must be a JSON object');
            }
            $fields = get_object_vars($cmd);
            foreach ($fields as $k => $v) {
                if ($k !== 'params') {
                    $fields[$k] = json_decode(json_encode($v), true);
                }
            }
            emit(['ok' => true] + run_command($store, $client, $fields));
        } catch (Throwable $e) {
            emit(['ok' => false, 'error' => get_class($e) . ': ' . $e->getMessage()]);
        }
    }
}

/** Load-test worker: acquire/hold/release cycles, one JSON record per cycle. */
function worker(): void
{
    $store = make_store(make_client());
    $names = array_values(array_filter(explode(',', env_or('W_NAMES')), 'strlen'));
    $cycles = (int) env_or('W_CYCLES');
    $ttl = (int) env_or('W_TTL', '10');
    $workUs = (int) round((float) env_or('W_WORK_MS', '0') * 1000);
    $record = fopen(env_or('W_RECORD'), 'a'); // O_APPEND
    $seed = getenv('W_SEED');
    if ($seed !== false && $seed !== '') {
        mt_srand((int) $seed + getmypid()); // random choice of names
    }
    $pid = getmypid();
    $startAt = (float) (getenv('W_START_AT') ?: 0);
    if ($startAt > microtime(true)) {
        usleep((int) (($startAt - microtime(true)) * 1e6));
    }
    $summary = ['cycles' => 0, 'acquired' => 0, 'released' => 0, 'release_false' => 0, 'errors' => 0];
    $until = (float) (getenv('W_UNTIL') ?: INF);
    $block = getenv('W_BLOCK') !== false && getenv('W_BLOCK') !== '';
    $thinkUs = (int) round((float) env_or('W_THINK_MS', '0') * 1000);
    $warmup = (int) env_or('W_WARMUP', '0');
    $cpu = function (): float {
        $r = getrusage();

        return $r['ru_utime.tv_sec'] + $r['ru_utime.tv_usec'] / 1e6 + $r['ru_stime.tv_sec'] + $r['ru_stime.tv_usec'] / 1e6;
    };
    $cpu0 = $cpu();
    $wall0 = microtime(true);

    for ($i = 0; $i < $cycles && microtime(true) < $until; $i++) {
        if ($i === $warmup) {
            $cpu0 = $cpu();
            $wall0 = microtime(true);
        }
        $name = ($seed !== false && $seed !== '') ? $names[mt_rand(0, count($names) - 1)] : $names[($pid + $i) % count($names)];
        $lock = $store->lock($name, $ttl);
        $rec = ['lang' => 'php', 'driver' => getenv('DDB_DRIVER') ?: 'laravel', 'pid' => $pid, 'name' => $name, 'owner' => $lock->owner(), 'acquired' => false,
            't_try' => microtime(true), 't_acq' => null, 't_rel' => null, 't_rel_end' => null, 'released' => false];
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

        // One write per line, under an exclusive lock: lines never interleave.
        flock($record, LOCK_EX);
        fwrite($record, json_encode($rec, JSON_UNESCAPED_SLASHES) . "\n");
        fflush($record);
        flock($record, LOCK_UN);

        if (! $rec['acquired'] && ! $block) {
            usleep(mt_rand(5000, 20000));
        } elseif ($rec['acquired'] && $thinkUs > 0) {
            usleep($thinkUs);
        }
    }
    $summary['cpu_s'] = $cpu() - $cpu0;
    $summary['wall_s'] = microtime(true) - $wall0;
    fclose($record);
    echo json_encode($summary), "\n";
}

if (($argv[1] ?? '') === 'worker') {
    worker();
} else {
    command_loop();
}
