<?php

/**
 * Runs before each PHP block of the docs DocsTest runs (docs/php.md, docs/migration.md, the READMEs; via
 * `php -d auto_prepend_file=`): a minimal Laravel application with ddblock/laravel installed as
 * Composer installs it (auto-discovered provider, no config change), whose `dynamodb` cache store
 * (the default store, prefix `app_`) is the test server's table DDBLOCK_DOCS_TABLE at
 * DDBLOCK_DOCS_ENDPOINT. DDBLOCK_LARAVEL=13 loads upstream Laravel 13's lock classes first.
 */

declare(strict_types=1);

require_once dirname(__DIR__, 3) . '/compat-tests/laravel/support.php';
if (getenv('DDBLOCK_LARAVEL') === '13') {
    ddblock_use_laravel13();
}
require_once 'Illuminate/autoload.php';
ddblock_require_aws_sdk();
ddblock_register_driver_autoloader();
require_once __DIR__ . '/Support/TestApp.php';

// With its console kernel, so that blocks can run the package's Artisan commands (Artisan::call()).
Ddblock\Laravel\Tests\Support\TestApp::console(Ddblock\Laravel\Tests\Support\TestApp::boot(
    Ddblock\Laravel\Tests\Support\TestApp::cacheConfig(
        (string) getenv('DDBLOCK_DOCS_ENDPOINT'),
        (string) getenv('DDBLOCK_DOCS_TABLE')
    )
));
