<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests\Laravel;

use Ddblock\Laravel\DynamoDbLock as DriverLock;
use Ddblock\Laravel\Tests\Laravel\Support\Excluded;
use Ddblock\Laravel\Tests\Laravel\Support\Mockery;
use Ddblock\Laravel\Tests\Laravel\Support\Shims;
use Ddblock\Laravel\Tests\Support\TestApp;
use Ddblock\Laravel\Tests\TestCase;
use Illuminate\Cache\DynamoDbLock as StockLock;
use Illuminate\Cache\DynamoDbStore as StockStore;
use Illuminate\Foundation\Application;
use Illuminate\Support\Facades\Facade;
use PHPUnit\Framework\TestSuite;
use ReflectionClass;
use ReflectionMethod;
use RuntimeException;

/**
 * The stand-in for Orchestra Testbench's TestCase under the Laravel tests ported here (Testbench
 * is not installed): every test method runs once per flavor and server, each time in a fresh
 * Laravel application (tests/Support/TestApp: Debian's Laravel 8.83 Application, with upstream
 * 13's cache lock classes on DDBLOCK_LARAVEL=13) whose default cache store `dynamodb` is a fresh
 * key prefix in a table on a real server (moto, dynalite, DynamoDB Local), built
 *
 *   - `stock`: by the installed Laravel (Illuminate\Cache\DynamoDbStore and its own lock;
 *     `ddblock.takeover_dynamodb` off, so CacheManager::createDynamodbDriver() builds it);
 *   - `driver`: by the driver's service provider with default settings (nothing published, no
 *     DDBLOCK_* variable).
 *
 * A test that fails on stock Laravel (a semantics the DynamoDB store does not have, or an API the
 * loaded Laravel lacks) is not in the run for that Laravel version: Support\Excluded lists it with
 * its reason, and tests/Laravel/README.md the whole table. DDBLOCK_LARAVEL_EXCLUDED=run puts the
 * excluded tests back in (to see how they fail; phpunit then fails too).
 */
abstract class LaravelTestCase extends TestCase
{
    public const FLAVORS = ['stock', 'driver'];

    /** @var Application the application of the running test (Testbench's `$this->app`) */
    protected $app;

    /** 'stock' or 'driver' */
    protected string $flavor = '';

    /** a name of SERVERS: 'moto', 'dynalite' or 'ddblocal' */
    protected string $server = '';

    /** the key prefix of the test's `dynamodb` store, its own */
    protected string $prefix = '';

    /** @var array<string, array<string, string>> class => server => table */
    private static array $tablesOf = [];

    /**
     * The servers a test method runs on (every test runs on every server unless its class says
     * otherwise).
     *
     * @return list<string>
     */
    protected static function serversFor(string $method): array
    {
        return array_keys(self::SERVERS);
    }

    /**
     * PHPUnit calls this instead of collecting the class itself: each test method × flavor ×
     * server, except the tests Support\Excluded leaves out on the loaded Laravel.
     */
    public static function suite(string $className): TestSuite
    {
        Shims::register();
        $suite = new TestSuite(new ReflectionClass($className));
        $include = getenv('DDBLOCK_LARAVEL_EXCLUDED') === 'run';
        $tests = [];
        foreach ((new ReflectionClass($className))->getMethods(ReflectionMethod::IS_PUBLIC) as $method) {
            if (! str_starts_with($method->getName(), 'test') || $method->isStatic()) {
                continue;
            }
            $short = (new ReflectionClass($className))->getShortName() . '::' . $method->getName();
            if (! $include && Excluded::reason($short, self::laravel()) !== null) {
                continue;
            }
            foreach ($className::serversFor($method->getName()) as $server) {
                foreach (self::FLAVORS as $flavor) {
                    $tests[] = new $className($method->getName(), [$flavor, $server], "$flavor $server");
                }
            }
        }
        $suite->setTests($tests);

        return $suite;
    }

    protected function setUp(): void
    {
        parent::setUp();
        $data = $this->getProvidedData();
        if (count($data) !== 2) {
            throw new RuntimeException(static::class . ' runs through its suite(): [flavor, server] per test');
        }
        [$this->flavor, $this->server] = $data;
        // Default settings: no variable of the driver's may change them.
        putenv('DDBLOCK_TAKEOVER_DYNAMODB');
        putenv('DDBLOCK_CLOCK_SKEW_MARGIN');

        $this->prefix = 'l' . bin2hex(random_bytes(4)) . '_'; // a fresh prefix: an empty store
        $this->bootApp(self::endpoint($this->server));

        $lock = $this->app['cache']->store('dynamodb')->lock('flavor-check', 1);
        $expected = $this->flavor === 'stock' ? StockLock::class : DriverLock::class;
        if (get_class($lock) !== $expected) {
            throw new RuntimeException("the $this->flavor store hands out " . get_class($lock) . ", not $expected");
        }
        $store = $this->app['cache']->store('dynamodb')->getStore();
        if ($this->flavor === 'stock' && get_class($store) !== StockStore::class) {
            throw new RuntimeException('the stock store is not Illuminate\Cache\DynamoDbStore');
        }
    }

    protected function tearDown(): void
    {
        try {
            // Testbench closes Mockery here: expectations not met fail the test.
            $this->addToAssertionCount(Mockery::close());
        } finally {
            Facade::clearResolvedInstances();
            parent::tearDown();
        }
    }

    public static function tearDownAfterClass(): void
    {
        unset(self::$tablesOf[static::class]); // TestCase deletes the tables themselves
        parent::tearDownAfterClass();
    }

    /**
     * (Re)boots the test's application with its `dynamodb` store at `$endpoint` (the server's, or
     * a fault proxy in front of it): same flavor, table and prefix.
     */
    protected function bootApp(string $endpoint): void
    {
        $this->app = TestApp::boot(
            TestApp::cacheConfig($endpoint, $this->tableFor($this->server), 'dynamodb', ['prefix' => $this->prefix]),
            $this->flavor === 'stock' ? ['takeover_dynamodb' => false] : null
        );
        $this->defineEnvironment($this->app);
    }

    /** Testbench's hook: adjust the application before the test runs. */
    protected function defineEnvironment(Application $app): void
    {
    }

    /** This class's table on `$server`: one per class and server, each test in its own prefix. */
    protected function tableFor(string $server): string
    {
        return self::$tablesOf[static::class][$server] ??= self::table(self::client($server));
    }
}
