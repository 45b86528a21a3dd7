<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests\Laravel\Support;

use Illuminate\Bus\BusServiceProvider;
use Illuminate\Contracts\Debug\ExceptionHandler;
use Illuminate\Foundation\Application;
use Illuminate\Queue\QueueServiceProvider;
use Illuminate\Queue\WorkerOptions;
use RuntimeException;

/**
 * The queue of the ported queue tests' app (what Testbench's QueueTestCase sets up): Laravel's bus
 * and queue service providers, the `sync` connection by default, and a `database` connection
 * whose backend is a MemoryQueue.
 */
final class QueueApp
{
    public static function register(Application $app): void
    {
        $app['config']->set('queue', [
            'default' => 'sync',
            'connections' => [
                'sync' => ['driver' => 'sync'],
                'database' => ['driver' => 'memory', 'queue' => 'default'],
            ],
            'failed' => ['driver' => 'null'],
        ]);
        $app->instance(ExceptionHandler::class, new ExceptionRecorder());
        $app->register(BusServiceProvider::class);
        $app->register(QueueServiceProvider::class);
        $app['queue']->addConnector('memory', static fn () => new class {
            public function connect(array $config): MemoryQueue
            {
                return new MemoryQueue($config['queue'] ?? 'default');
            }
        });
    }

    /**
     * `php artisan queue:work CONNECTION --once` in the app: what WorkCommand does with --once,
     * the worker's runNextJob() with the command's default options (tries 1, backoff 0, ...).
     *
     * @param  array<string, mixed>  $parameters
     */
    public static function artisan(Application $app, string $command, array $parameters): void
    {
        if ($command !== 'queue:work' || ($parameters['--once'] ?? false) !== true) {
            throw new RuntimeException("only `queue:work --once` runs here, not $command");
        }
        $connection = $parameters['connection'] ?? $app['config']['queue.default'];
        $queue = $parameters['--queue'] ?? $app['config']->get("queue.connections.$connection.queue", 'default');
        $app['queue.worker']->runNextJob($connection, $queue, new WorkerOptions());
    }
}
