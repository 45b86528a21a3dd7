<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests;

use Aws\DynamoDb\DynamoDbClient;
use Ddblock\Laravel\DynamoDbStore;
use Ddblock\Laravel\Tests\Support\FaultProxy;
use Ddblock\Laravel\Tests\Support\Laravel11Prefix;
use Ddblock\Laravel\Tests\Support\Peer;
use Ddblock\Laravel\Tests\Support\Recorder;
use Illuminate\Cache\DynamoDbStore as LaravelDynamoDbStore;
use Illuminate\Support\Carbon;
use PHPUnit\Framework\TestCase as BaseTestCase;
use RuntimeException;

/**
 * Servers, tables, clients and stores for the driver's tests. Every behaviour test talks to a
 * real server (moto, dynalite, DynamoDB Local) over HTTP through the real AWS SDK for PHP.
 */
abstract class TestCase extends BaseTestCase
{
    /** Every server (compat-tests/servers/servers.sh), by name: the variable holding its endpoint. */
    public const SERVERS = [
        'moto' => 'DDBLOCK_TEST_MOTO',
        'dynalite' => 'DDBLOCK_TEST_DYNALITE',
        'ddblocal' => 'DDBLOCK_TEST_DDBLOCAL',
    ];

    /** @var array<int, array{0: DynamoDbClient, 1: string}> tables made by this class */
    private static array $tables = [];

    /** @var array<string, string> the tables this class's tests share, by server and key attribute */
    private static array $sharedTables = [];

    /** @var array<string, FaultProxy|Peer> the fault proxies and peers this class started, by key */
    private static array $started = [];

    protected function tearDown(): void
    {
        Carbon::setTestNow();
        parent::tearDown();
    }

    public static function tearDownAfterClass(): void
    {
        foreach (self::$started as $process) {
            $process instanceof Peer ? $process->close() : $process->stop();
        }
        self::$started = [];
        self::$sharedTables = [];
        foreach (self::$tables as [$client, $table]) {
            try {
                $client->deleteTable(['TableName' => $table]);
            } catch (\Throwable $e) {
                // the server is gone: nothing to clean
            }
        }
        self::$tables = [];
        parent::tearDownAfterClass();
    }

    public static function endpoint(string $server): string
    {
        $var = self::SERVERS[$server] ?? throw new RuntimeException("unknown server $server");
        $url = getenv($var);
        if ($url === false || $url === '') {
            throw new RuntimeException(
                "$var is not set: run ./compat-tests/run-tests.sh php-driver, which starts the servers"
            );
        }

        return $url;
    }

    /** '8.83' or '13': whose lock classes are loaded (DDBLOCK_LARAVEL). */
    public static function laravel(): string
    {
        return ddblock_laravel_version();
    }

    /**
     * The key layouts the loaded Laravel gives: 8.83 writes laravel8 and, with 11's setPrefix(),
     * laravel11; upstream 13 writes laravel12. Both runs together cover all three.
     *
     * @return list<string>
     */
    public static function layouts(): array
    {
        return self::laravel() === '13' ? ['laravel12'] : ['laravel8', 'laravel11'];
    }

    /** @return array<string, array{0: string, 1: string}> [server, layout] for data providers */
    public static function serversAndLayouts(): array
    {
        $rows = [];
        foreach (array_keys(self::SERVERS) as $server) {
            foreach (self::layouts() as $layout) {
                $rows["$server $layout"] = [$server, $layout];
            }
        }

        return $rows;
    }

    /** @return array<string, array{0: string}> every server, for data providers */
    public static function servers(): array
    {
        $rows = [];
        foreach (array_keys(self::SERVERS) as $server) {
            $rows[$server] = [$server];
        }

        return $rows;
    }

    /*
     * How the servers differ, asked by property rather than by name, as the Rust test crate's
     * `Server` does (compat-tests/support/rust/src/lib.rs). Each property names every server: a
     * new one fails with an UnhandledMatchError until its behaviour is written down here.
     */

    /**
     * Whether a failed condition returns the item when asked (`ReturnValuesOnConditionCheckFailure
     * = ALL_OLD`) as real DynamoDB does: moto and DynamoDB Local do; dynalite ignores the parameter.
     */
    public static function returnsAllOld(string $server): bool
    {
        return match ($server) {
            'moto', 'ddblocal' => true,
            'dynalite' => false,
        };
    }

    /**
     * Whether the server has the TTL API (`UpdateTimeToLive`, `DescribeTimeToLive`): moto and
     * DynamoDB Local do; dynalite has neither.
     */
    public static function hasTtlApi(string $server): bool
    {
        return match ($server) {
            'moto', 'ddblocal' => true,
            'dynalite' => false,
        };
    }

    /**
     * The message of the ResourceNotFoundException a request on the missing table `$table` gets,
     * as a regular expression (delimiter `/`): DynamoDB's `Requested resource not found`, which
     * moto extends on some requests with `: Table: NAME not found`, on moto and dynalite;
     * DynamoDB Local has its own, `Cannot do operations on a non-existent table`.
     */
    public static function missingTableMessage(string $server, string $table): string
    {
        return match ($server) {
            'moto', 'dynalite' => 'Requested resource not found(: Table: ' . preg_quote($table, '/') . ' not found)?',
            'ddblocal' => 'Cannot do operations on a non-existent table',
        };
    }

    /** A client of the real SDK for `$server` (a name of SERVERS, or an URL), optionally recording. */
    public static function client(string $server, ?Recorder $recorder = null, array $options = []): DynamoDbClient
    {
        $endpoint = isset(self::SERVERS[$server]) ? self::endpoint($server) : $server;
        if ($recorder !== null) {
            $options['http_handler'] = ddblock_http_handler([$recorder, 'wrap']);
        }

        return ddblock_dynamodb_client($endpoint, $options + ['http' => ['timeout' => 10, 'connect_timeout' => 5]]);
    }

    /** A fresh table with Laravel's schema (one string partition key), deleted after the class. */
    public static function table(DynamoDbClient $client, string $keyAttribute = 'key'): string
    {
        $table = 'php_' . getmypid() . '_' . bin2hex(random_bytes(4)) . '_' . $keyAttribute;
        $client->createTable([
            'TableName' => $table,
            'BillingMode' => 'PAY_PER_REQUEST',
            'AttributeDefinitions' => [['AttributeName' => $keyAttribute, 'AttributeType' => 'S']],
            'KeySchema' => [['AttributeName' => $keyAttribute, 'KeyType' => 'HASH']],
        ]);
        // dynalite answers CreateTable before the table takes requests: wait until ACTIVE, 50 ms
        // between looks (the waiter's delay is in seconds; a callable may give a fraction), 10 s.
        $client->waitUntil('TableExists', [
            'TableName' => $table,
            '@waiter' => ['initDelay' => 0, 'delay' => static fn (): float => 0.05, 'maxAttempts' => 200],
        ]);
        self::$tables[] = [$client, $table];

        return $table;
    }

    /** A table (see table()) the class's tests share: one per server and key attribute. */
    public static function sharedTable(string $server, string $keyAttribute = 'key'): string
    {
        return self::$sharedTables["$server $keyAttribute"] ??= self::table(self::client($server), $keyAttribute);
    }

    /**
     * The fault proxy or peer the class's tests share under `$key`: `$start()` on first use,
     * stopped (a peer: closed) after the class.
     *
     * @template T of FaultProxy|Peer
     * @param  callable(): T  $start
     * @return T
     */
    public static function startedOnce(string $key, callable $start): FaultProxy|Peer
    {
        return self::$started[$key] ??= $start();
    }

    /**
     * The driver's store for a layout the loaded Laravel gives.
     *
     * @param  array{key?: string, value?: string, expiration?: string}  $attributes
     */
    public static function driverStore(
        string $layout,
        DynamoDbClient $client,
        string $table,
        string $prefix = 'app_',
        array $attributes = []
    ): DynamoDbStore {
        $args = [
            $client,
            $table,
            $attributes['key'] ?? 'key',
            $attributes['value'] ?? 'value',
            $attributes['expiration'] ?? 'expires_at',
            $prefix,
        ];

        // On Laravel 11.x, the driver as it runs there: lock() is still 8-11's (the name passed
        // prefixed), which the driver takes from the parent; only setPrefix() differs.
        return self::isLaravel11($layout)
            ? new class (...$args) extends DynamoDbStore {
                use Laravel11Prefix;
            }
            : new DynamoDbStore(...$args);
    }

    /** Stock Laravel's store (its own lock: read, then delete) for a layout the loaded Laravel gives. */
    public static function stockStore(
        string $layout,
        DynamoDbClient $client,
        string $table,
        string $prefix = 'app_'
    ): LaravelDynamoDbStore {
        $args = [$client, $table, 'key', 'value', 'expires_at', $prefix];

        // Stock Laravel 11.x's store: only setPrefix() differs.
        return self::isLaravel11($layout)
            ? new class (...$args) extends LaravelDynamoDbStore {
                use Laravel11Prefix;
            }
            : new LaravelDynamoDbStore(...$args);
    }

    /**
     * Whether `$layout` is Laravel 11.x's (made on the loaded Debian 8.83 with Laravel11Prefix);
     * throws for a layout the loaded Laravel does not write.
     */
    private static function isLaravel11(string $layout): bool
    {
        if (! in_array($layout, self::layouts(), true)) {
            throw new RuntimeException("Laravel " . self::laravel() . " does not write the $layout layout");
        }

        return $layout === 'laravel11';
    }

    /** The table key of lock `$name` in `$layout` (docs/format.md), computed independently. */
    public static function lockKey(string $layout, string $prefix, string $name): string
    {
        $p = $layout === 'laravel8' && $prefix !== '' ? $prefix . ':' : $prefix;

        return $layout === 'laravel12' ? $p . $name : $p . $p . $name;
    }

    /**
     * The item at `$key`, read with ConsistentRead, in wire format; null when there is none.
     *
     * @return array<string, array<string, string>>|null
     */
    public static function item(
        DynamoDbClient $client,
        string $table,
        string $key,
        string $keyAttribute = 'key'
    ): ?array {
        $result = $client->getItem([
            'TableName' => $table,
            'Key' => [$keyAttribute => ['S' => $key]],
            'ConsistentRead' => true,
        ]);

        return $result['Item'] ?? null;
    }

    /** The repository root. */
    public static function root(): string
    {
        return ddblock_repo_root();
    }

    /** A binary of the workspace (target/debug/NAME, or under CARGO_TARGET_DIR). */
    public static function cargoBinary(string $name): string
    {
        $target = getenv('CARGO_TARGET_DIR') ?: self::root() . '/target';
        $path = $target . '/debug/' . $name;
        if (! is_executable($path)) {
            throw new RuntimeException(
                "$path is missing: bindings/php/test.sh builds it"
                    . " (cargo build -p ddblock-cli -p ddblock-fault-proxy -p ddblock-test-support)"
            );
        }

        return $path;
    }
}
