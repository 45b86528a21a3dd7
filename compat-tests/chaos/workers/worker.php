<?php
/**
 * The PHP chaos worker: loops wait -> guarded write -> work -> guarded write -> release on random
 * keys, one JSON line per cycle (the same fields as the Rust worker, see
 * compat-tests/chaos/src/checker.rs `Cycle`). Configured by the CHAOS_* environment, and
 * CHAOS_DRIVER: `ddblock` (the ddblock/laravel driver over upstream Laravel 13's lock classes,
 * with fencing tokens) or `laravel` (stock Laravel's lock, the control group: no token, so its
 * guarded writes are unconditional). Requests go through the real AWS SDK for PHP.
 */

declare(strict_types=1);

ini_set('display_errors', 'stderr');
error_reporting(E_ALL & ~E_DEPRECATED);

require_once __DIR__ . '/../../php/support.php';

$driver = getenv('CHAOS_DRIVER') ?: 'ddblock';
if ($driver === 'ddblock') {
    ddblock_use_laravel13(); // before any Illuminate\Cache class is loaded
}
require_once 'Illuminate/Cache/autoload.php';
ddblock_require_aws_sdk();
if ($driver === 'ddblock') {
    ddblock_register_driver_autoloader();
} else {
    require_once __DIR__ . '/../../php/laravel-layouts.php';
}

use Aws\Exception\AwsException;
use Illuminate\Contracts\Cache\LockTimeoutException;

const LEASE_SAFETY = 1.5;
const UPDATE = 'SET #fence = :fence, #owner = :owner, #writes = if_not_exists(#writes, :zero) + :one';
const CONDITION = 'attribute_not_exists(#fence) OR #fence <= :fence';
const CONTROL_UPDATE = 'SET #owner = :owner, #writes = if_not_exists(#writes, :zero) + :one';

function env_required(string $name): string
{
    $v = getenv($name);
    if ($v === false || $v === '') {
        fwrite(STDERR, "$name is required\n");
        exit(2);
    }

    return $v;
}

$endpoint = env_required('CHAOS_ENDPOINT');
$table = env_required('CHAOS_TABLE');
$keys = explode(',', env_required('CHAOS_KEYS'));
$worker = env_required('CHAOS_WORKER');
$ttl = (int) env_required('CHAOS_TTL');
$workUs = (int) env_required('CHAOS_WORK_MS') * 1000;
$wait = (int) env_required('CHAOS_WAIT_MS') / 1000;
$until = hrtime(true) / 1e9 + (int) env_required('CHAOS_DURATION_MS') / 1000;
$target = (int) env_required('CHAOS_ACQUISITIONS');
mt_srand((int) env_required('CHAOS_SEED'));
$out = fopen(env_required('CHAOS_OUT'), 'a');

$client = ddblock_dynamodb_client($endpoint, [
    'http' => ['timeout' => 3, 'connect_timeout' => 2],
    'retries' => 2,
]);
if ($driver === 'ddblock') {
    $store = new Ddblock\Laravel\DynamoDbStore($client, $table, 'key', 'value', 'expires_at', env_required('CHAOS_PREFIX'));
    $store->setClockSkewMargin((int) env_required('CHAOS_MARGIN'));
} else {
    $store = new Laravel12DynamoDbStore($client, $table, 'key', 'value', 'expires_at', env_required('CHAOS_PREFIX'));
}
$lang = $driver === 'ddblock' ? 'php' : 'laravel';

/** The error's kind: the driver's and the SDK's exceptions are typed; anything else is not. */
function classify(array &$c, string $op, Throwable $e): void
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

$acquired = 0;
while ($acquired < $target && hrtime(true) / 1e9 < $until) {
    $name = $keys[mt_rand(0, count($keys) - 1)];
    $lock = $store->lock($name, $ttl);
    $c = ['lang' => $lang, 'worker' => $worker, 'name' => $name, 'owner' => $lock->owner(),
        'writes' => [], 'errors' => [], 'untyped' => []];
    $sent = hrtime(true) / 1e9;
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
        classify($c, 'acquire', $e);
    }
    if ($got) {
        $acquired++;
        // The lease ends a ttl after the last try was sent, less a second for the whole-second
        // expiry: measured from the moment block() returned is later than that, so keep more.
        $leaseEnd = hrtime(true) / 1e9 + $ttl - 1 - 0.5;
        $fence = $driver === 'ddblock' ? $lock->fence() : null;
        $c['fence'] = $fence;
        for ($i = 0; $i < 2; $i++) {
            if ($i === 1) {
                usleep($workUs);
            }
            if ($leaseEnd - hrtime(true) / 1e9 < LEASE_SAFETY || ($driver === 'ddblock' && $fence === null)) {
                $c['writes'][] = 'skipped';
                continue;
            }
            $values = [':owner' => ['S' => $lock->owner()], ':zero' => ['N' => '0'], ':one' => ['N' => '1']];
            $names = ['#owner' => 'owner', '#writes' => 'writes'];
            $request = ['TableName' => $table, 'Key' => ['key' => ['S' => "res_$name"]]];
            if ($driver === 'ddblock') {
                $request += ['UpdateExpression' => UPDATE, 'ConditionExpression' => CONDITION,
                    'ExpressionAttributeNames' => $names + ['#fence' => 'fence'],
                    'ExpressionAttributeValues' => $values + [':fence' => ['N' => (string) $fence]]];
            } else {
                $request += ['UpdateExpression' => CONTROL_UPDATE,
                    'ExpressionAttributeNames' => $names, 'ExpressionAttributeValues' => $values];
            }
            try {
                $client->updateItem($request);
                $c['writes'][] = 'accepted';
            } catch (AwsException $e) {
                if ($e->getAwsErrorCode() === 'ConditionalCheckFailedException') {
                    $c['writes'][] = 'refused';
                } else {
                    $c['writes'][] = 'error';
                    classify($c, 'guarded_write', $e);
                }
            } catch (Throwable $e) {
                $c['writes'][] = 'error';
                classify($c, 'guarded_write', $e);
            }
        }
        try {
            $c['release'] = $lock->release() ? 'released' : 'not_held';
        } catch (Throwable $e) {
            $c['release'] = 'error';
            classify($c, 'release', $e);
        }
    }
    fwrite($out, json_encode($c, JSON_UNESCAPED_SLASHES) . "\n");
}
fclose($out);
