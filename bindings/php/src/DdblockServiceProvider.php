<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

use Closure;
use Illuminate\Cache\CacheManager;
use Illuminate\Support\ServiceProvider;

/**
 * Registers the `ddblock` cache driver, takes over the `dynamodb` one unless `ddblock.takeover_dynamodb`
 * is false, gives its stores the app's event dispatcher (Events\LockEvent), and registers the
 * `ddblock:*` Artisan commands; auto-discovered from composer.json.
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
        $this->callAfterResolving('cache', function (CacheManager $cache): void {
            $config = $this->app['config'];
            $creator = self::creator(
                $config->get('ddblock.clock_skew_margin', DynamoDbStore::DEFAULT_CLOCK_SKEW_MARGIN),
                $config->get('ddblock.release_mode', DynamoDbStore::DEFAULT_RELEASE_MODE)
            );
            $cache->extend('ddblock', $creator);
            $takeover = $config->get('ddblock.takeover_dynamodb', true); // a bool, or the env's text
            $takeover = is_bool($takeover) ? $takeover
                : filter_var($takeover, FILTER_VALIDATE_BOOL, FILTER_NULL_ON_FAILURE);
            if ($takeover ?? true) {
                $cache->extend('dynamodb', $creator); // wins over CacheManager's createDynamodbDriver()
            }
        });
    }

    /**
     * Offer the config file for publishing and register the Artisan commands.
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
            Console\SweepCommand::class,
        ]);
    }

    /**
     * The driver: Laravel's own DynamoDB store for the config, taken over.
     *
     * @param  mixed  $margin
     * @param  mixed  $releaseMode
     */
    private static function creator($margin, $releaseMode): Closure
    {
        return function ($app, array $config) use ($margin, $releaseMode) {
            // Bound to the CacheManager, whose protected createDynamodbDriver() builds Laravel's store.
            /** @var \Illuminate\Cache\CacheManager $this */
            $store = DynamoDbStore::fromLaravelStore($this->createDynamodbDriver($config)->getStore())
                ->setClockSkewMargin($margin)
                ->setReleaseMode($releaseMode)
                // Asked at each event, so that a dispatcher swapped in later (Event::fake()) is the one used.
                ->setEventDispatcher(static fn () => $app->bound('events') ? $app['events'] : null);

            // Laravel 8-10 take only the store; 11+ also the config.
            return $this->repository($store, $config);
        };
    }

    private static function configFile(): string
    {
        return dirname(__DIR__) . '/config/ddblock.php';
    }
}
