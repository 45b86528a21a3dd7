<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests;

use Ddblock\Laravel\DdblockServiceProvider;
use Ddblock\Laravel\DynamoDbLock;
use Ddblock\Laravel\DynamoDbStore;
use Ddblock\Laravel\Tests\Support\TestApp;
use Illuminate\Cache\DynamoDbLock as LaravelDynamoDbLock;
use Illuminate\Cache\DynamoDbStore as LaravelDynamoDbStore;
use Illuminate\Foundation\Application;
use Illuminate\Support\Facades\Cache;

/**
 * The package installed into a Laravel app: the provider is discovered from composer.json, the
 * `dynamodb` store needs no config change to lock with the driver, the switch gives it back to
 * Laravel, and the `ddblock` driver reads exactly the `dynamodb` store's config keys.
 */
final class ApplicationTest extends TestCase
{
    private static ?string $table = null;

    private static function tableName(): string
    {
        return self::$table ??= self::table(self::client('moto'));
    }

    /** An app whose `dynamodb` store (driver `$driver`) is on moto's table; `$ddblock`: config/ddblock.php. */
    private static function bootOnMoto(?array $ddblock = null, string $driver = 'dynamodb'): Application
    {
        return TestApp::boot(TestApp::cacheConfig(self::endpoint('moto'), self::tableName(), $driver), $ddblock);
    }

    /** Asserts that the `dynamodb` store refuses `$what` (a bad setting), its message saying each of `$said`. */
    private function assertTheStoreRefuses(string $what, string ...$said): void
    {
        try {
            Cache::store('dynamodb');
            $this->fail("$what was accepted");
        } catch (\InvalidArgumentException $e) {
            foreach ($said as $words) {
                $this->assertStringContainsString($words, $e->getMessage());
            }
        }
    }

    protected function tearDown(): void
    {
        putenv('DDBLOCK_TAKEOVER_DYNAMODB');
        putenv('DDBLOCK_CLOCK_SKEW_MARGIN');
        putenv('DDBLOCK_RELEASE_MODE');
        parent::tearDown();
    }

    public function testThePackageIsDiscoveredAndTakesOverTheDynamodbStore(): void
    {
        $app = self::bootOnMoto();
        $this->assertArrayHasKey(
            DdblockServiceProvider::class,
            $app->getLoadedProviders(),
            'auto-discovered from extra.laravel.providers'
        );
        $this->assertSame(true, $app['config']->get('ddblock.takeover_dynamodb'), 'the default');

        $store = Cache::store('dynamodb')->getStore();
        $this->assertInstanceOf(DynamoDbStore::class, $store);
        $this->assertInstanceOf(LaravelDynamoDbStore::class, $store, 'still a Laravel DynamoDbStore');
        $lock = Cache::store('dynamodb')->lock('orders', 10);
        $this->assertInstanceOf(DynamoDbLock::class, $lock);
        $this->assertInstanceOf(DynamoDbLock::class, Cache::lock('orders', 10), 'the default store too');
        $this->assertInstanceOf(DynamoDbLock::class, Cache::restoreLock('orders', 'x'));

        $this->assertTrue($lock->get());
        $this->assertTrue(Cache::restoreLock('orders', $lock->owner())->release());
        // Cache operations are Laravel's own.
        $this->assertTrue(Cache::put('greeting', 'hello', 60));
        $this->assertSame('hello', Cache::get('greeting'));
        $this->assertSame(
            ['S' => serialize('hello')],
            self::item(self::client('moto'), self::tableName(), self::cacheKey('greeting'))['value']
        );
    }

    public function testTheSwitchLeavesTheDynamodbDriverToLaravel(): void
    {
        foreach (['env' => null, 'config' => ['takeover_dynamodb' => false]] as $how => $published) {
            if ($how === 'env') {
                putenv('DDBLOCK_TAKEOVER_DYNAMODB=false');
            }
            self::bootOnMoto($published);
            $lock = Cache::store('dynamodb')->lock('orders', 10);
            $this->assertInstanceOf(LaravelDynamoDbLock::class, $lock, "switched off by $how");
            putenv('DDBLOCK_TAKEOVER_DYNAMODB');
        }

        // The ddblock driver works whatever the switch says.
        self::bootOnMoto(['takeover_dynamodb' => false], 'ddblock');
        $lock = Cache::store('dynamodb')->lock('orders', 10);
        $this->assertInstanceOf(DynamoDbLock::class, $lock);
        $this->assertTrue($lock->get());
        $this->assertTrue($lock->release());
    }

    public function testTheDriverReadsTheConfigKeysOfLaravelsDynamodbStore(): void
    {
        $extra = ['attributes' => ['key' => 'k', 'value' => 'v', 'expiration' => 'exp'], 'prefix' => 'custom_'];
        $app = TestApp::boot(TestApp::cacheConfig(self::endpoint('moto'), 'some_table', 'ddblock', $extra));
        $ours = Cache::store('dynamodb')->getStore();
        $this->assertInstanceOf(DynamoDbStore::class, $ours);

        // Laravel's own createDynamodbDriver() on the same config.
        $config = $app['config']->get('cache.stores.dynamodb');
        $laravel = (fn () => $this->createDynamodbDriver($config))->call($app['cache'])->getStore();
        $this->assertSame(LaravelDynamoDbStore::class, get_class($laravel));
        $read = static fn (LaravelDynamoDbStore $s): array => (fn () => [
            'table' => $this->table,
            'keyAttribute' => $this->keyAttribute,
            'valueAttribute' => $this->valueAttribute,
            'expirationAttribute' => $this->expirationAttribute,
            'prefix' => $this->prefix,
            'region' => $this->dynamo->getRegion(),
            'endpoint' => (string) $this->dynamo->getEndpoint(),
        ])->call($s);
        $this->assertSame($read($laravel), $read($ours));
        $this->assertSame(
            ['table' => 'some_table', 'keyAttribute' => 'k', 'valueAttribute' => 'v', 'expirationAttribute' => 'exp'],
            array_slice($read($ours), 0, 4)
        );
        $this->assertSame(self::lockKey(self::layouts()[0], 'custom_', 'x'), $ours->lock('x')->tableKey());
        // Every property Laravel's store has (whatever the version adds) is copied.
        $properties = static fn (LaravelDynamoDbStore $s): array => (fn () => get_object_vars($this))->call($s);
        $this->assertContains('dynamo', array_keys($properties($laravel)));
        [$theirs, $mine] = [array_keys($properties($laravel)), array_keys($properties($ours))];
        $own = ['clockSkewMargin', 'releaseMode', 'lockIds', 'lockEvents']; // the driver's lock settings
        $this->assertSame($own, array_values(array_diff($mine, $theirs)));
        $this->assertSame($theirs, array_values(array_diff($mine, $own)));
    }

    public function testTheClockSkewMarginComesFromTheConfig(): void
    {
        $margin = static fn (): int => Cache::store('dynamodb')->getStore()->clockSkewMargin();
        self::bootOnMoto();
        $this->assertSame(0, $margin(), "the default, Laravel's own rule, as every ddblock front");
        self::bootOnMoto(['clock_skew_margin' => 5]);
        $this->assertSame(5, $margin(), 'config/ddblock.php');
        putenv('DDBLOCK_CLOCK_SKEW_MARGIN=0');
        self::bootOnMoto(null, 'ddblock');
        $this->assertSame(0, $margin(), 'DDBLOCK_CLOCK_SKEW_MARGIN, for the ddblock driver too');
        putenv('DDBLOCK_CLOCK_SKEW_MARGIN=soon');
        self::bootOnMoto();
        $this->assertTheStoreRefuses(
            'a margin that is not a whole number of seconds',
            'DDBLOCK_CLOCK_SKEW_MARGIN',
            "'soon'"
        );
    }

    public function testTheReleaseModeComesFromTheConfig(): void
    {
        $mode = static fn (): string => Cache::store('dynamodb')->getStore()->releaseMode();
        self::bootOnMoto();
        $this->assertSame('delete', $mode(), 'the default, as every ddblock front');
        self::bootOnMoto(['release_mode' => 'keep-fence']);
        $this->assertSame('keep-fence', $mode(), 'config/ddblock.php');
        putenv('DDBLOCK_RELEASE_MODE=Keep-Fence ');
        self::bootOnMoto(null, 'ddblock');
        $this->assertSame('keep-fence', $mode(), 'DDBLOCK_RELEASE_MODE (any case, blanks), for the ddblock driver too');

        // The published config file reads the variable, with the default when it is unset.
        $published = require dirname(__DIR__) . '/config/ddblock.php';
        $this->assertSame('keep-fence', strtolower(trim($published['release_mode'])));
        putenv('DDBLOCK_RELEASE_MODE');
        $published = require dirname(__DIR__) . '/config/ddblock.php';
        $this->assertSame('delete', $published['release_mode']);

        // A keep-fence release through the app's store keeps the item and its fence.
        self::bootOnMoto(['release_mode' => 'keep-fence']);
        $lock = Cache::lock('app-keep-fence', 30);
        $this->assertTrue($lock->get());
        $fence = $lock->fence();
        $this->assertTrue($lock->release());
        $item = self::item(self::client('moto'), self::tableName(), $lock->tableKey());
        $this->assertSame(['N' => (string) $fence], $item['ddblock_fence'] ?? null);
        $this->assertArrayNotHasKey('value', $item);
        $this->assertFalse($lock->isLocked());

        foreach (['drop', '', 'keep_fence'] as $bad) {
            putenv("DDBLOCK_RELEASE_MODE=$bad");
            self::bootOnMoto();
            $this->assertTheStoreRefuses(
                "release mode '$bad'",
                'DDBLOCK_RELEASE_MODE',
                'keep-fence',
                var_export($bad, true)
            );
        }
    }

    private static function cacheKey(string $key): string
    {
        return (self::layouts()[0] === 'laravel8' ? 'app_:' : 'app_') . $key;
    }
}
