<?php

/**
 * What the PHP test code shares: the real AWS SDK for PHP, upstream Laravel 13's cache lock
 * classes over Debian's Laravel 8.83, and the ddblock/laravel package's autoloading.
 *
 *   require_once __DIR__ . '/support.php';
 *   ddblock_use_laravel13();          // optional, before any Illuminate\Cache class is loaded
 *   require_once 'Illuminate/Cache/autoload.php';    // or 'Illuminate/autoload.php': the framework
 *   $client = ddblock_dynamodb_client('http://127.0.0.1:8000');
 *
 * Paths: the SDK comes from DDBLOCK_AWS_SDK_PHP, else ../shared/php/aws-sdk-php next to the
 * repository (the trimmed SDK, see its README), else compat-tests/.php-deps/aws-sdk-php (what
 * compat-tests/setup.sh makes from Composer when there is no ../shared); Laravel 13's classes from
 * DDBLOCK_LARAVEL13, else ../shared/php/laravel-13, else compat-tests/.php-deps/laravel-13. Debian packages (compat-tests/setup.sh): php-cli, php-curl,
 * php-mbstring, php-xml, php-guzzlehttp-guzzle, php-laravel-framework.
 */

declare(strict_types=1);

/** The repository root. */
function ddblock_repo_root(): string
{
    return dirname(__DIR__, 2);
}

/**
 * A directory given by `$env`, else `../shared/php/$name` next to the repository, else
 * `compat-tests/.php-deps/$name` (made by compat-tests/setup.sh from Composer).
 */
function ddblock_shared_dir(string $env, string $name): string
{
    $candidates = getenv($env) ? [getenv($env)] : [
        dirname(ddblock_repo_root()) . '/shared/php/' . $name,
        ddblock_repo_root() . '/compat-tests/.php-deps/' . $name,
    ];
    foreach ($candidates as $dir) {
        if (is_dir($dir)) {
            return $dir;
        }
    }
    throw new RuntimeException(implode(' and ', $candidates) . " not found: set $env to the $name folder, "
        . 'or run compat-tests/setup.sh, which takes it from Composer when ../shared/php is absent');
}

/** Loads the real AWS SDK for PHP (and Debian's Guzzle) once. */
function ddblock_require_aws_sdk(): void
{
    if (! class_exists(Aws\DynamoDb\DynamoDbClient::class, false)) {
        require_once ddblock_shared_dir('DDBLOCK_AWS_SDK_PHP', 'aws-sdk-php') . '/autoload.php';
    }
}

/**
 * A DynamoDB client of the real SDK for `$endpoint` (test credentials from the environment; the
 * local servers check no signature). `$options` override the defaults, e.g. 'retries' => 0,
 * 'http' => ['timeout' => 5].
 */
function ddblock_dynamodb_client(string $endpoint, array $options = []): Aws\DynamoDb\DynamoDbClient
{
    ddblock_require_aws_sdk();

    return new Aws\DynamoDb\DynamoDbClient($options + [
        'region' => getenv('AWS_DEFAULT_REGION') ?: 'us-east-1',
        'version' => 'latest',
        'endpoint' => $endpoint,
        'credentials' => [
            'key' => getenv('AWS_ACCESS_KEY_ID') ?: 'test',
            'secret' => getenv('AWS_SECRET_ACCESS_KEY') ?: 'test',
        ],
        'http_handler' => ddblock_http_handler(),
    ]);
}

/**
 * The SDK's HTTP handler over a plain curl handler: Debian's Guzzle 7.4 with its default
 * CurlMultiHandler prints a PHP 8.2 deprecation (dynamic property `$_mh`) on every client
 * (see ../shared/php/aws-sdk-php/README.md). `$inner` wraps the Guzzle handler (e.g. to record
 * each request).
 */
function ddblock_http_handler(?callable $inner = null): Aws\Handler\GuzzleV6\GuzzleHandler
{
    ddblock_require_aws_sdk();
    $handler = new GuzzleHttp\Handler\CurlHandler();

    return new Aws\Handler\GuzzleV6\GuzzleHandler(new GuzzleHttp\Client([
        'handler' => GuzzleHttp\HandlerStack::create($inner === null ? $handler : $inner($handler)),
    ]));
}

/**
 * Makes Illuminate\Cache\{DynamoDbStore, DynamoDbLock, Lock} upstream Laravel 13's (laravel/
 * framework v13.26.1, unmodified) while Debian's 8.83 provides everything else. Must run before
 * any of the three is loaded. Debian's 8.83 Support has no Illuminate\Support\Sleep, which 13's
 * Lock::block() calls between attempts: a test stand-in (compat-tests/laravel/sleep-shim.php)
 * provides it.
 */
function ddblock_use_laravel13(): void
{
    $dir = ddblock_shared_dir('DDBLOCK_LARAVEL13', 'laravel-13');
    foreach (['Illuminate\Cache\DynamoDbStore', 'Illuminate\Cache\DynamoDbLock', 'Illuminate\Cache\Lock'] as $class) {
        if (class_exists($class, false)) {
            throw new LogicException("$class is already loaded (8.83's): call ddblock_use_laravel13() first");
        }
    }
    spl_autoload_register(static function (string $class) use ($dir): void {
        if (in_array($class, ['Illuminate\Cache\DynamoDbStore', 'Illuminate\Cache\DynamoDbLock', 'Illuminate\Cache\Lock'], true)) {
            require $dir . '/' . str_replace('\\', '/', $class) . '.php';
        } elseif ($class === 'Illuminate\Support\Sleep') {
            require __DIR__ . '/sleep-shim.php';
        }
    }, true, true);
}

/**
 * The ddblock/laravel package under test: bindings/php, or DDBLOCK_DRIVER_DIR (the package as its
 * Composer archive unpacks, which the install tests point at).
 */
function ddblock_driver_dir(): string
{
    return getenv('DDBLOCK_DRIVER_DIR') ?: ddblock_repo_root() . '/bindings/php';
}

/**
 * Autoloads the ddblock/laravel package the way Composer would: the PSR-4 map of
 * bindings/php/composer.json.
 */
function ddblock_register_driver_autoloader(): void
{
    static $done = false;
    if ($done) {
        return;
    }
    $done = true;
    $package = ddblock_driver_dir();
    $composer = json_decode((string) file_get_contents($package . '/composer.json'), true, 512, JSON_THROW_ON_ERROR);
    foreach ($composer['autoload']['psr-4'] as $prefix => $dir) {
        $base = $package . '/' . rtrim($dir, '/') . '/';
        spl_autoload_register(static function (string $class) use ($prefix, $base): void {
            if (strncmp($class, $prefix, strlen($prefix)) === 0) {
                $file = $base . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
                if (is_file($file)) {
                    require $file;
                }
            }
        });
    }
}

/** Which Laravel's lock classes are loaded: '13' (upstream overlay) or '8.83' (Debian). */
function ddblock_laravel_version(): string
{
    return method_exists(Illuminate\Cache\DynamoDbStore::class, 'refreshIfOwned') ? '13' : '8.83';
}
