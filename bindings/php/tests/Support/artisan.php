<?php

/**
 * `php artisan` for the test app: boots TestApp with the configuration in the environment
 * variable DDBLOCK_TEST_APP (JSON: {"cache": config/cache.php, "ddblock": config/ddblock.php or
 * null}) and runs the command line through Laravel's console kernel, as an app's artisan script
 * does (stdout and stderr apart, the exit status). The Laravel version is DDBLOCK_LARAVEL's, as
 * in the suite. ArtisanCommandsTest runs it, also under faketime.
 *
 *   DDBLOCK_TEST_APP='{"cache": {...}}' php tests/Support/artisan.php ddblock:doctor --no-scan
 */

declare(strict_types=1);

use Ddblock\Laravel\Tests\Support\TestApp;
use Symfony\Component\Console\Input\ArgvInput;
use Symfony\Component\Console\Output\ConsoleOutput;

require dirname(__DIR__) . '/bootstrap.php';

$config = json_decode((string) getenv('DDBLOCK_TEST_APP'), true, 512, JSON_THROW_ON_ERROR);
$app = TestApp::boot($config['cache'], $config['ddblock'] ?? null);
$kernel = TestApp::console($app);
$input = new ArgvInput();
$status = $kernel->handle($input, new ConsoleOutput());
$kernel->terminate($input, $status);

exit($status);
