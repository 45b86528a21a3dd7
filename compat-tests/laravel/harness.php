<?php
/**
 * The PHP peer of compat-tests/support/peers/PROTOCOL.md (the requests, answers and DDB_*
 * environment are described there, not here): drives Laravel's real, unmodified
 * Illuminate\Cache\DynamoDbStore / DynamoDbLock (Debian's php-illuminate-cache 8.83), or with
 * DDB_DRIVER=ddblock the ddblock/laravel driver (bindings/php) over Laravel's classes, so tests
 * in any language can check what Laravel writes and reads. Requests go through the real AWS SDK
 * for PHP (compat-tests/laravel/support.php).
 *
 *   DDB_ENDPOINT=http://127.0.0.1:8000 DDB_TABLE=cache DDB_LAYOUT=laravel8 DDB_PREFIX=app_ \
 *   php compat-tests/laravel/harness.php
 *
 * Files: this one (start-up, the request loop and its dispatch), harness-store.php (the client,
 * the store, value conversions, lock.holder / lock.key), harness-loops.php (`cycles`, `chaos`).
 *
 * Layouts: with DDB_DRIVER=laravel, 8.83's classes as installed (laravel8) and two subclasses
 * reproducing 11.x's and 12.x's key changes and 12.63+'s refresh() (laravel-layouts.php). With
 * DDB_DRIVER=ddblock: Ddblock\Laravel\DynamoDbStore over 8.83 (laravel8), the same with 11.x's
 * setPrefix() (laravel11), and over upstream Laravel 13's unmodified lock classes (laravel12;
 * ../shared/php/laravel-13). DDB_MARGIN sets the driver's clock-skew margin, DDBLOCK_RELEASE_MODE
 * its release mode (delete or keep-fence, as in the app's config/ddblock.php); DDB_BACKOFF_MS has
 * no meaning here (Laravel's block() waits between its tries).
 *
 * Beyond the protocol's common requests, the PHP peer answers:
 *   {"op":"putMany","values":{k:b64,...},"ttl":s} -> {"ok":true,"result":bool}
 *   {"op":"many","keys":[k,...]}                  -> {"ok":true,"values":{k:b64,...}}
 *   {"op":"forever","key":k,"v":b64}              -> {"ok":true,"result":bool}
 *   {"op":"raw","call":"GetItem","params":{...}}  -> {"ok":true,"result":{...}}  (any DynamoDB
 *                                                    operation; params and result in DynamoDB's wire JSON)
 *   {"op":"slug","name":n}                        -> {"ok":true,"slug":s,"slug_underscore":s,"prefix":p}
 *                                                    (Laravel's Str::slug(n) and Str::slug(n, '_'), and
 *                                                    the cache prefix config/cache.php of DDB_LAYOUT's
 *                                                    version derives from APP_NAME=n; nothing is sent)
 * `lock.refresh` needs DDB_LAYOUT=laravel12 with stock Laravel (8.83 and 11 have no refresh()).
 * The ddblock-only patterns (once, cas, lock.counter, takeover) answer "unsupported".
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
require_once __DIR__ . '/harness-store.php';
require_once __DIR__ . '/harness-loops.php';

use Aws\DynamoDb\DynamoDbClient;
use Illuminate\Cache\DynamoDbStore;
use Illuminate\Contracts\Cache\LockTimeoutException;
use Illuminate\Support\Str;

function run_command(DynamoDbStore $store, DynamoDbClient $client, array $cmd): array
{
    switch ($cmd['op'] ?? null) {
        case 'hello':
            return ['lang' => 'php', 'driver' => harness_driver(), 'now' => microtime(true)];
        case 'now':
            return ['now' => time()];
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
            $out = ['acquired' => $lock->acquire(), 'owner' => $lock->owner()];
            if ($out['acquired'] && $lock instanceof Ddblock\Laravel\DynamoDbLock && $lock->fence() !== null) {
                $out['fence'] = $lock->fence();
            }

            return $out;
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
        case 'lock.holder':
            return ['holder' => lock_holder($store, $client, (string) field($cmd, 'name'))];
        case 'lock.key':
            return ['key' => lock_key($store, (string) field($cmd, 'name'))];
        case 'lock.refresh':
            if (harness_driver() !== 'ddblock' && ! $store instanceof Laravel12DynamoDbStore) {
                throw new RuntimeException('lock.refresh needs DDB_LAYOUT=laravel12 (or DDB_DRIVER=ddblock)');
            }
            $lock = $store->restoreLock(field($cmd, 'name'), field($cmd, 'owner'));

            return ['refreshed' => $lock->refresh(field($cmd, 'ttl'))];
        case 'raw':
            $params = json_decode(json_encode($cmd['params'] ?? [], JSON_THROW_ON_ERROR), true);
            $result = $client->execute($client->getCommand(ucfirst((string) field($cmd, 'call')), sdk_from_wire($params)))->toArray();
            unset($result['@metadata']);

            return ['result' => (object) sdk_to_wire($result)];
        case 'slug':
            $name = (string) field($cmd, 'name');

            return [
                'slug' => Str::slug($name),
                'slug_underscore' => Str::slug($name, '_'),
                'prefix' => config_cache_prefix($name),
            ];
        case 'cycles':
            return run_cycles($store, $cmd);
        case 'chaos':
            return run_chaos($store, $client, $cmd);
        default:
            throw new UnsupportedOp(is_string($cmd['op'] ?? null) ? $cmd['op'] : json_encode($cmd['op'] ?? null));
    }
}

/** An op this peer does not answer: `{"ok":false,"error":"unsupported: OP"}`. */
final class UnsupportedOp extends InvalidArgumentException
{
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
        } catch (UnsupportedOp $e) {
            emit(['ok' => false, 'error' => 'unsupported: ' . $e->getMessage()]);
        } catch (Throwable $e) {
            emit(['ok' => false, 'error' => get_class($e) . ': ' . $e->getMessage()]);
        }
    }
}

command_loop();
