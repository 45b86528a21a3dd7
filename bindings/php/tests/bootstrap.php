<?php

/**
 * PHPUnit bootstrap. DDBLOCK_LARAVEL selects the Laravel the suite runs on:
 *   8  (default) Debian's whole Laravel 8.83 framework (php-laravel-framework);
 *   13 upstream Laravel 13's DynamoDbStore, DynamoDbLock and Lock (laravel/framework v13.26.1,
 *      unmodified, ../shared/php/laravel-13) loaded in place of 8.83's, the rest 8.83.
 * Then the real AWS SDK for PHP and this package, autoloaded from composer.json's PSR-4 map, or by
 * Composer's own autoloader in an app where Composer installed it (DDBLOCK_APP_DIR).
 */

declare(strict_types=1);

require_once dirname(__DIR__, 3) . '/compat-tests/laravel/support.php';

$laravel = getenv('DDBLOCK_LARAVEL') ?: '8';
if (! in_array($laravel, ['8', '13'], true)) {
    fwrite(STDERR, "DDBLOCK_LARAVEL must be 8 or 13, not '$laravel'\n");
    exit(2);
}
if ($laravel === '13') {
    ddblock_use_laravel13();
}
require_once 'Illuminate/autoload.php';
ddblock_require_aws_sdk();
// In an app where Composer installed the package (DDBLOCK_APP_DIR), Composer's autoloader loads it.
if (getenv('DDBLOCK_APP_DIR')) {
    require_once getenv('DDBLOCK_APP_DIR') . '/vendor/autoload.php';
} else {
    ddblock_register_driver_autoloader();
}

spl_autoload_register(static function (string $class): void {
    $prefix = 'Ddblock\\Laravel\\Tests\\';
    if (strncmp($class, $prefix, strlen($prefix)) === 0) {
        $file = __DIR__ . '/' . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
        if (is_file($file)) {
            require $file;
        }
    }
});

if (ddblock_laravel_version() !== ($laravel === '13' ? '13' : '8.83')) {
    fwrite(STDERR, "expected Laravel $laravel's lock classes, got " . ddblock_laravel_version() . "\n");
    exit(2);
}
