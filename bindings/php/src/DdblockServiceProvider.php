<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

use Illuminate\Cache\CacheManager;
use Illuminate\Support\ServiceProvider;

/**
 * Registers the `ddblock` cache driver and, unless `ddblock.takeover_dynamodb` is false (env
 * `DDBLOCK_TAKEOVER_DYNAMODB=false`), builds every `dynamodb` store with it too; every store it
 * builds takes over expired locks with the clock-skew margin `ddblock.clock_skew_margin` (env
 * `DDBLOCK_CLOCK_SKEW_MARGIN`, default 0: Laravel's own rule) and releases them as
 * `ddblock.release_mode` says (env `DDBLOCK_RELEASE_MODE`, default `delete`). Auto-discovered
 * through `extra.laravel.providers` in composer.json. In the console it also registers the
 * Artisan commands `ddblock:status`, `ddblock:release` and `ddblock:doctor`.
 */
class DdblockServiceProvider extends ServiceProvider
{
    /**
     * Register the package's config and cache drivers.
     *
     * @return void
     */
    public function register()
    {
        $this->mergeConfigFrom(self::configFile(), 'ddblock');

        // Whenever (and if ever) the cache manager is built, before any store is resolved.
        $this->callAfterResolving('cache', function (CacheManager $cache): void {
            $config = $this->app['config'];
            $margin = $config->get('ddblock.clock_skew_margin', DynamoDbStore::DEFAULT_CLOCK_SKEW_MARGIN);
            $releaseMode = $config->get('ddblock.release_mode', DynamoDbStore::DEFAULT_RELEASE_MODE);
            $cache->extend('ddblock', self::creator($margin, $releaseMode));
            if (self::enabled($config->get('ddblock.takeover_dynamodb', true))) {
                // A custom creator wins over CacheManager's own createDynamodbDriver().
                $cache->extend('dynamodb', self::creator($margin, $releaseMode));
            }
        });
    }

    /**
     * Offer the config file to `php artisan vendor:publish --tag=ddblock-config`, and register the
     * Artisan commands `ddblock:status`, `ddblock:release` and `ddblock:doctor` (docs/php.md).
     *
     * @return void
     */
    public function boot()
    {
        if (! $this->app->runningInConsole()) {
            return;
        }
        if (method_exists($this->app, 'configPath')) {
            $this->publishes([self::configFile() => $this->app->configPath('ddblock.php')], 'ddblock-config');
        }
        $this->commands([
            Console\StatusCommand::class,
            Console\ReleaseCommand::class,
            Console\DoctorCommand::class,
        ]);
    }

    /**
     * The cache driver: Laravel's own DynamoDB store for this config (so every config key of the
     * `dynamodb` store means what it means on the installed version), as a ddblock store.
     *
     * @param  mixed  $margin  the clock-skew margin in seconds (`ddblock.clock_skew_margin`)
     * @param  mixed  $releaseMode  `delete` or `keep-fence` (`ddblock.release_mode`)
     */
    private static function creator($margin, $releaseMode): \Closure
    {
        return function ($app, array $config) use ($margin, $releaseMode) {
            // CacheManager::extend() binds this closure to the manager: $this is the
            // CacheManager, whose protected createDynamodbDriver() builds Laravel's store.
            /** @var \Illuminate\Cache\CacheManager $this */
            $store = DynamoDbStore::fromLaravelStore($this->createDynamodbDriver($config)->getStore());
            $store->setClockSkewMargin($margin);
            $store->setReleaseMode($releaseMode);

            // Laravel 8-10 take only the store; 11+ also the config (events, store name).
            return $this->repository($store, $config);
        };
    }

    /**
     * @param  mixed  $value  a bool, or the env text ("false", "0", "off")
     */
    private static function enabled($value): bool
    {
        return is_bool($value) ? $value : (filter_var($value, FILTER_VALIDATE_BOOLEAN, FILTER_NULL_ON_FAILURE) ?? true);
    }

    private static function configFile(): string
    {
        return dirname(__DIR__) . '/config/ddblock.php';
    }
}
