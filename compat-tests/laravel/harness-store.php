<?php
/**
 * harness.php's store and values: the DynamoDB client and the Laravel store the DDB_* environment
 * describes (compat-tests/support/peers/PROTOCOL.md), the conversions between the protocol's
 * JSON and PHP (values as base64(serialize()), DynamoDB's wire JSON), and the lock reads the
 * protocol adds to Laravel's API (`lock.holder`, `lock.key`).
 */

declare(strict_types=1);

use Aws\DynamoDb\DynamoDbClient;
use Illuminate\Cache\DynamoDbStore;
use Illuminate\Support\Str;

/** The environment variable `$name`, else `$default`; an error when neither. */
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

/** `laravel` (stock Laravel) or `ddblock` (the driver), from DDB_DRIVER. */
function harness_driver(): string
{
    return getenv('DDB_DRIVER') ?: 'laravel';
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
    $classes = harness_driver() === 'ddblock' ? [
        'laravel8' => Ddblock\Laravel\DynamoDbStore::class, // over 8.83
        'laravel11' => DriverLaravel11Store::class,
        'laravel12' => Ddblock\Laravel\DynamoDbStore::class, // over upstream 13 (see harness.php)
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
    $store = new $classes[$layout]($client, env_or('DDB_TABLE'), 'key', 'value', 'expires_at', $prefix);
    $margin = getenv('DDB_MARGIN');
    if ($store instanceof Ddblock\Laravel\DynamoDbStore && $margin !== false && $margin !== '') {
        $store->setClockSkewMargin($margin); // stock Laravel has no margin: its rule is expires_at < now
    }
    // The driver's release mode, from the variable the app's config/ddblock.php reads (as the
    // Rust, Python and Node peers read theirs): delete (the default) or keep-fence.
    $releaseMode = getenv('DDBLOCK_RELEASE_MODE');
    if ($store instanceof Ddblock\Laravel\DynamoDbStore && $releaseMode !== false && $releaseMode !== '') {
        $store->setReleaseMode($releaseMode); // stock Laravel has one release: read, then delete
    }

    return $store;
}

if (harness_driver() === 'ddblock') {
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
function sdk_from_wire($value)
{
    return map_binary($value, 'base64_decode');
}

function sdk_to_wire($value)
{
    return map_binary($value, 'base64_encode');
}

/** $value with $convert applied to every binary value in it: a 'B' member, each of a 'BS' list. */
function map_binary($value, callable $convert, $member = null)
{
    if (! is_array($value)) {
        return $member === 'B' && is_string($value) ? $convert($value) : $value;
    }
    if ($member === 'BS' && array_is_list($value)) {
        return array_map($convert, $value);
    }
    foreach ($value as $k => $v) {
        $value[$k] = map_binary($v, $convert, is_int($k) ? null : $k);
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

/**
 * The table key of lock `$name`: the driver's `tableKey()`; for stock Laravel, what its lock's
 * `add()` writes, the store's prefix before the name as the lock holds it (8-11: already
 * prefixed once, 12+: bare).
 */
function lock_key(DynamoDbStore $store, string $name): string
{
    $lock = $store->lock($name);
    if ($lock instanceof Ddblock\Laravel\DynamoDbLock) {
        return $lock->tableKey();
    }

    return (fn () => $this->prefix)->call($store) . (fn () => $this->name)->call($lock);
}

/**
 * Who holds lock `$name` now, as the ddblock peers answer `lock.holder`: one consistent GetItem
 * of the lock item; null when there is none, it has no value or it has expired (`now >=
 * expires_at`, Laravel's isExpired()). The owner as Laravel compares it: the unserialized string
 * (an int's digits), or the number text of an N owner.
 *
 * @return array{owner: string|null, expires_at: int|null}|null
 */
function lock_holder(DynamoDbStore $store, DynamoDbClient $client, string $name): ?array
{
    $item = $client->getItem([
        'TableName' => env_or('DDB_TABLE'),
        'Key' => ['key' => ['S' => lock_key($store, $name)]],
        'ConsistentRead' => true,
    ])['Item'] ?? null;
    if ($item === null || ! isset($item['value'])) {
        return null;
    }
    $expiresAt = isset($item['expires_at']['N']) ? (int) $item['expires_at']['N'] : null;
    if ($expiresAt !== null && time() >= $expiresAt) {
        return null;
    }
    if (isset($item['value']['N'])) {
        $owner = $item['value']['N'];
    } else {
        $value = isset($item['value']['S']) ? @unserialize($item['value']['S']) : null;
        $owner = is_string($value) || is_int($value) ? (string) $value : null;
    }

    return ['owner' => $owner, 'expires_at' => $expiresAt];
}

/**
 * The cache prefix Laravel's config/cache.php derives from APP_NAME `$appName` (CACHE_PREFIX
 * unset) in the version DDB_LAYOUT names, written as that config file writes it, over Laravel's
 * own Str::slug (Debian's 8.83 with stock Laravel): 8.x and 11.x slug with '_' and add '_cache' /
 * '_cache_', 12.x slugs with '-' and adds '-cache-'.
 */
function config_cache_prefix(string $appName): string
{
    switch (env_or('DDB_LAYOUT', 'laravel8')) {
        case 'laravel8':
            return Str::slug($appName, '_') . '_cache';
        case 'laravel11':
            return Str::slug($appName, '_') . '_cache_';
        default:
            return Str::slug($appName) . '-cache-';
    }
}
