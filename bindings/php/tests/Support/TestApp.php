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
 * provider by hand. With DDBLOCK_APP_DIR, the base path is that app, where Composer itself
 * installed the package (compat-tests/packages/install-tests.py).
 */
final class TestApp
{
    /**
     * @param  array<string, mixed>  $cache  config/cache.php
     * @param  array<string, mixed>|null  $ddblock  config/ddblock.php as the app publishes it (null: not published)
     */
    public static function boot(array $cache, ?array $ddblock = null): Application
    {
        $files = new Filesystem();
        $installed = getenv('DDBLOCK_APP_DIR');
        $base = $installed ?: sys_get_temp_dir() . '/ddblock-app-' . getmypid() . '-' . bin2hex(random_bytes(4));
        $files->ensureDirectoryExists($base . '/bootstrap/cache');
        if (! $installed) {
            $files->makeDirectory($base . '/vendor/composer', 0777, true);
            $composerJson = (string) file_get_contents(ddblock_driver_dir() . '/composer.json');
            $package = json_decode($composerJson, true, 512, JSON_THROW_ON_ERROR);
            // Composer 2's installed.json: what `composer require ddblock/laravel` leaves behind.
            $files->put($base . '/vendor/composer/installed.json', json_encode([
                'packages' => [$package + ['version' => '0.1.0', 'install-path' => '../ddblock/laravel']],
                'dev' => false,
            ], JSON_PRETTY_PRINT | JSON_UNESCAPED_SLASHES));
            register_shutdown_function(static fn () => $files->deleteDirectory($base));
        }

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

    /**
     * `php artisan ARGS` in a subprocess (tests/Support/artisan.php) for an app with `$cache` and
     * `$ddblock`, its clock `$skew` off when given (`compat-tests/support/skew`): [exit status,
     * stdout, stderr]. A string `$command` is a shell line, run by bash with `php artisan` meaning
     * this app's artisan.
     *
     * @param  array<string, mixed>  $cache
     * @param  array<string, mixed>|null  $ddblock
     * @param  list<string>|string  $command
     * @return array{0: int, 1: string, 2: string}
     */
    public static function artisan(array $cache, ?array $ddblock, $command, ?string $skew = null): array
    {
        $script = __DIR__ . '/artisan.php';
        $command = is_string($command) ? ['bash', '-c', sprintf(
            'php() { if [ "$1" = artisan ]; then shift; command php %s "$@"; else command php "$@"; fi; }; %s',
            escapeshellarg($script),
            $command
        )] : array_merge([PHP_BINARY, $script], $command);
        if ($skew !== null) {
            // Only the wall clock is faked: the SDK's and PHP's timers keep the real monotonic clock.
            $command = array_merge([dirname(__DIR__, 4) . '/compat-tests/support/skew', $skew], $command);
        }
        $env = getenv();
        $env['DDBLOCK_TEST_APP'] = json_encode(['cache' => $cache, 'ddblock' => $ddblock], JSON_THROW_ON_ERROR);
        $process = proc_open($command, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, null, $env);
        if (! is_resource($process)) {
            throw new \RuntimeException('could not start ' . implode(' ', $command) . ' (faketime: setup.sh base)');
        }
        $out = (string) stream_get_contents($pipes[1]);
        $err = (string) stream_get_contents($pipes[2]);
        fclose($pipes[1]);
        fclose($pipes[2]);

        return [proc_close($process), $out, $err];
    }
}
