<?php
/**
 * Drives Laravel's real, unmodified Illuminate\Cache\DynamoDbStore /
 * DynamoDbLock (Debian's php-illuminate-cache 8.83) over a JSON-lines protocol,
 * so tests in any language can check what Laravel writes and reads.
 *
 *   DDB_ENDPOINT=http://127.0.0.1:8000 DDB_TABLE=cache DDB_LAYOUT=laravel8 \
 *   DDB_PREFIX=app_ php compat-tests/php/harness.php          # command loop
 *   ... W_NAMES=a,b W_CYCLES=100 W_TTL=10 W_WORK_MS=20 W_RECORD=/tmp/rec.jsonl \
 *   php compat-tests/php/harness.php worker                   # load-test worker
 *
 * Environment: DDB_ENDPOINT, DDB_TABLE (required); DDB_LAYOUT laravel8 |
 * laravel11 | laravel12 (default laravel8); DDB_PREFIX (default '');
 * DDB_REGION (us-east-1); DDB_TIMEOUT seconds per HTTP call (10);
 * DDB_RETRIES (0; the real SDK would retry up to 10 times).
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
 *   {"op":"lock.refresh","name":n,"owner":o,"ttl":s}   -> {"ok":true,"refreshed":bool}   (laravel12 only)
 *   {"op":"raw","call":"GetItem","params":{...}}  -> {"ok":true,"result":{...}}  (any DynamoDB operation;
 *                                                    params and result are DynamoDB's wire JSON, as is)
 *   {"op":"now"}                                  -> {"ok":true,"now":time()}
 * Any failure -> {"ok":false,"error":"<class>: <message>"}; the loop goes on.
 *
 * Worker mode (`harness.php worker`): W_NAMES (comma-separated lock names),
 * W_CYCLES, W_TTL (lock seconds, 10), W_WORK_MS (hold time, 0), W_RECORD (file
 * appended to), W_SEED (if set: seeded random names, else round-robin). Each
 * cycle: a fresh $store->lock($name, W_TTL), acquire(), and if acquired sleep
 * W_WORK_MS then release(); if not, sleep 5-20 ms. One JSON line per cycle:
 *   {"lang":"php","pid","name","owner","acquired","t_try","t_acq","t_rel","t_rel_end","released"[,"error"]}
 * (microtime(true) seconds; t_rel = just before release(), t_rel_end = after it;
 * null when not acquired). At the end one summary line on stdout:
 *   {"cycles","acquired","released","release_false","errors"}
 * release_false counts release() === false: a stuck lock until it expires.
 */

declare(strict_types=1);

ini_set('display_errors', 'stderr'); // stdout carries the protocol only
error_reporting(E_ALL & ~E_DEPRECATED);

require_once __DIR__ . '/aws-standin.php';
require_once 'Illuminate/Cache/autoload.php';

use Aws\DynamoDb\DynamoDbClient;
use Aws\DynamoDb\Exception\DynamoDbException;
use Illuminate\Cache\DynamoDbLock;
use Illuminate\Cache\DynamoDbStore;
use Illuminate\Contracts\Cache\LockTimeoutException;
use Illuminate\Support\Carbon;

/**
 * Laravel 11.x: setPrefix() uses the prefix as given, no ':' appended
 * (laravel/framework PR #47380). lock() still passes prefix.name, so lock
 * items get the prefix twice: 'app_app_orders'.
 */
class Laravel11DynamoDbStore extends DynamoDbStore
{
    public function setPrefix($prefix)
    {
        $this->prefix = $prefix;
    }
}

/**
 * Laravel 12.x: as 11.x, and lock() passes the bare name (PR #52986); only
 * add()/get()/forget() prefix it, so lock items are 'app_orders'.
 */
class Laravel12DynamoDbStore extends Laravel11DynamoDbStore
{
    public function lock($name, $seconds = 0, $owner = null)
    {
        return new Laravel12DynamoDbLock($this, $name, $seconds, $owner);
    }

    /**
     * The UpdateItem behind Laravel12DynamoDbLock::refresh() (needs the
     * store's protected table/attribute names and value encoding).
     */
    public function refreshLock(string $name, $owner, int $seconds): bool
    {
        try {
            $this->dynamo->updateItem([
                'TableName' => $this->table,
                'Key' => [$this->keyAttribute => ['S' => $this->prefix . $name]],
                'ConditionExpression' => 'attribute_exists(#key) AND #value = :owner AND #expires_at > :now',
                'UpdateExpression' => 'SET #expires_at = :expires_at',
                'ExpressionAttributeNames' => [
                    '#key' => $this->keyAttribute,
                    '#value' => $this->valueAttribute,
                    '#expires_at' => $this->expirationAttribute,
                ],
                'ExpressionAttributeValues' => [
                    // The owner encoded exactly as add() wrote it (N for numeric owners).
                    ':owner' => [$this->type($owner) => $this->serialize($owner)],
                    ':expires_at' => ['N' => (string) $this->toTimestamp($seconds)],
                    ':now' => ['N' => (string) Carbon::now()->getTimestamp()],
                ],
            ]);

            return true;
        } catch (DynamoDbException $e) {
            if (str_contains($e->getMessage(), 'ConditionalCheckFailed')) {
                return false;
            }
            throw $e;
        }
    }
}

/**
 * NOT in 8.83: reproduces the newer upstream refresh() (Laravel 12.63+ /
 * 13.16+) as described in /work/shared/laravel-format.md: one conditional
 * UpdateItem extending expires_at if this owner still holds an unexpired lock;
 * seconds <= 0 means 86400, like acquire(). (13.x's store touch() is not
 * reproduced.)
 */
class Laravel12DynamoDbLock extends DynamoDbLock
{
    public function refresh($seconds): bool
    {
        return $this->dynamo->refreshLock($this->name, $this->owner, $seconds > 0 ? (int) $seconds : 86400);
    }
}

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
    return new DynamoDbClient([
        'endpoint' => env_or('DDB_ENDPOINT'),
        'region' => env_or('DDB_REGION', 'us-east-1'),
        'credentials' => ['key' => env_or('AWS_ACCESS_KEY_ID', 'test'), 'secret' => env_or('AWS_SECRET_ACCESS_KEY', 'test')],
        'http' => ['timeout' => (float) env_or('DDB_TIMEOUT', '10')],
        'retries' => (int) env_or('DDB_RETRIES', '0'),
    ]);
}

function make_store(DynamoDbClient $client): DynamoDbStore
{
    $classes = [
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
function current_owner(DynamoDbLock $lock)
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
            if (! $store instanceof Laravel12DynamoDbStore) {
                throw new RuntimeException('lock.refresh needs DDB_LAYOUT=laravel12');
            }
            $lock = $store->restoreLock(field($cmd, 'name'), field($cmd, 'owner'));

            return ['refreshed' => $lock->refresh(field($cmd, 'ttl'))];
        case 'raw':
            // Wire JSON both ways (no 'B' base64 conversion; {} and [] kept apart).
            $params = json_encode($cmd['params'] ?? new stdClass(), JSON_UNESCAPED_SLASHES | JSON_THROW_ON_ERROR);

            return ['result' => json_decode($client->send(ucfirst((string) field($cmd, 'call')), $params))];
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
    $summary = ['cycles' => 0, 'acquired' => 0, 'released' => 0, 'release_false' => 0, 'errors' => 0];

    for ($i = 0; $i < $cycles; $i++) {
        $name = ($seed !== false && $seed !== '') ? $names[mt_rand(0, count($names) - 1)] : $names[($pid + $i) % count($names)];
        $lock = $store->lock($name, $ttl);
        $rec = ['lang' => 'php', 'pid' => $pid, 'name' => $name, 'owner' => $lock->owner(), 'acquired' => false,
            't_try' => microtime(true), 't_acq' => null, 't_rel' => null, 't_rel_end' => null, 'released' => false];
        try {
            $rec['acquired'] = $lock->acquire();
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

        if (! $rec['acquired']) {
            usleep(mt_rand(5000, 20000));
        }
    }
    fclose($record);
    echo json_encode($summary), "\n";
}

if (($argv[1] ?? '') === 'worker') {
    worker();
} else {
    command_loop();
}
