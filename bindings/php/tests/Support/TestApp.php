<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests\Support;

use Illuminate\Cache\CacheServiceProvider;
use Illuminate\Config\Repository as Config;
use Illuminate\Contracts\Console\Kernel as KernelContract;
use Illuminate\Contracts\Debug\ExceptionHandler;
use Illuminate\Filesystem\Filesystem;
use Illuminate\Foundation\Application;
use Illuminate\Foundation\Console\Kernel as ConsoleKernel;
use Illuminate\Foundation\Exceptions\Handler;
use Illuminate\Support\Facades\Facade;

/**
 * A minimal Laravel application (Debian's Illuminate\Foundation\Application 8.83) with this
 * package installed the way `composer require` installs it: the app's base path has
 * vendor/composer/installed.json listing the package with its composer.json, so Laravel's own
 * PackageManifest discovers the service provider from `extra.laravel.providers`; the classes are
 * autoloaded from composer.json's PSR-4 map (tests/bootstrap.php). Nothing registers the
 * provider by hand.
 */
final class TestApp
{
    /**
     * @param  array<string, mixed>  $cache  config/cache.php
     * @param  array<string, mixed>|null  $ddblock  config/ddblock.php as the app publishes it (null: not published)
     */
    public static function boot(array $cache, ?array $ddblock = null): Application
    {
        $base = sys_get_temp_dir() . '/ddblock-app-' . getmypid() . '-' . bin2hex(random_bytes(4));
        $files = new Filesystem();
        $files->makeDirectory($base . '/bootstrap/cache', 0777, true);
        $files->makeDirectory($base . '/vendor/composer', 0777, true);
        $composerJson = (string) file_get_contents(ddblock_driver_dir() . '/composer.json');
        $package = json_decode($composerJson, true, 512, JSON_THROW_ON_ERROR);
        // Composer 2's installed.json: what `composer require ddblock/laravel` leaves behind.
        $files->put($base . '/vendor/composer/installed.json', json_encode([
            'packages' => [$package + ['version' => 'dev-main', 'install-path' => '../ddblock/laravel']],
            'dev' => false,
        ], JSON_PRETTY_PRINT | JSON_UNESCAPED_SLASHES));

        $app = new Application($base);
        $config = ['app' => ['providers' => [CacheServiceProvider::class]], 'cache' => $cache];
        if ($ddblock !== null) {
            $config['ddblock'] = $ddblock;
        }
        $app->instance('config', new Config($config));
        $app->registerConfiguredProviders();
        $app->boot();

        Facade::clearResolvedInstances();
        Facade::setFacadeApplication($app);
        register_shutdown_function(static fn () => $files->deleteDirectory($base));

        return $app;
    }

    /**
     * config/cache.php with one DynamoDB store at `$endpoint` (Laravel's default config keys).
     *
     * @param  array<string, mixed>  $store  extra keys of the store
     * @return array<string, mixed>
     */
    public static function cacheConfig(
        string $endpoint,
        string $table,
        string $driver = 'dynamodb',
        array $store = []
    ): array {
        return [
            'default' => 'dynamodb',
            'prefix' => 'app_',
            'stores' => [
                'dynamodb' => $store + [
                    'driver' => $driver,
                    'key' => getenv('AWS_ACCESS_KEY_ID') ?: 'test',
                    'secret' => getenv('AWS_SECRET_ACCESS_KEY') ?: 'test',
                    'region' => 'us-east-1',
                    'table' => $table,
                    'endpoint' => $endpoint,
                ],
            ],
        ];
    }

    /**
     * The app's console kernel, as `php artisan` uses it (`Artisan::call()` goes through it too):
     * Laravel's own `Illuminate\Foundation\Console\Kernel` and exception handler. The app counts
     * as bootstrapped, since boot() gave it its configuration (the kernel's bootstrappers would
     * load the config files from the app's base path instead).
     */
    public static function console(Application $app): KernelContract
    {
        if (! $app->hasBeenBootstrapped()) {
            $app->bootstrapWith([]);
        }
        $app->singleton(KernelContract::class, ConsoleKernel::class);
        $app->singleton(ExceptionHandler::class, Handler::class);

        return $app->make(KernelContract::class);
    }
}
