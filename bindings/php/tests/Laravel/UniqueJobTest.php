<?php

namespace Ddblock\Laravel\Tests\Laravel;

use Ddblock\Laravel\Tests\Laravel\Fixtures\UniqueTestFailJob;
use Ddblock\Laravel\Tests\Laravel\Fixtures\UniqueTestJob;
use Ddblock\Laravel\Tests\Laravel\Fixtures\UniqueTestReleasedJob;
use Ddblock\Laravel\Tests\Laravel\Fixtures\UniqueTestRetryJob;
use Ddblock\Laravel\Tests\Laravel\Fixtures\UniqueUntilStartTestJob;
use Ddblock\Laravel\Tests\Laravel\Support\QueueApp;
use Exception;
use Illuminate\Contracts\Cache\Repository as Cache;
use Illuminate\Foundation\Application;
use Illuminate\Support\Facades\Bus;

/**
 * Ported from laravel/framework tests/Integration/Queue/UniqueJobTest.php in its 8.x form (commit
 * 4f3e4a7672dd), the one that matches the installed bus and queue code (Debian's 8.83 in both runs
 * here: the unique lock is `lock('laravel_unique_job:' . get_class($job) . $uniqueId, $uniqueFor ??
 * 0)->get()` on dispatch and `->forceRelease()` when done); the test bodies and fixtures
 * (tests/Laravel/Fixtures) as upstream has them, the cache being the `dynamodb` store. Scaffolding
 * replaced: Testbench's app and `jobs` table (Support\QueueApp: the bus, the queue, a `database`
 * connection kept in memory) and `$this->artisan('queue:work', ...)` (the worker's runNextJob(), what
 * queue:work --once runs). Laravel 13.24+'s release by owner is UniqueLockByOwnerTest.
 */
final class UniqueJobTest extends LaravelTestCase
{
    protected function defineEnvironment(Application $app): void
    {
        QueueApp::register($app);
    }

    protected function artisan(string $command, array $parameters): void
    {
        QueueApp::artisan($this->app, $command, $parameters);
    }

    public function testUniqueJobsAreNotDispatched()
    {
        Bus::fake();

        UniqueTestJob::dispatch();
        Bus::assertDispatched(UniqueTestJob::class);

        $this->assertFalse(
            $this->app->get(Cache::class)->lock($this->getLockKey(UniqueTestJob::class), 10)->get()
        );

        Bus::fake();
        UniqueTestJob::dispatch();
        Bus::assertNotDispatched(UniqueTestJob::class);

        $this->assertFalse(
            $this->app->get(Cache::class)->lock($this->getLockKey(UniqueTestJob::class), 10)->get()
        );
    }

    public function testLockIsReleasedForSuccessfulJobs()
    {
        UniqueTestJob::$handled = false;
        dispatch($job = new UniqueTestJob());

        $this->assertTrue($job::$handled);
        $this->assertTrue($this->app->get(Cache::class)->lock($this->getLockKey($job), 10)->get());
    }

    public function testLockIsReleasedForFailedJobs()
    {
        UniqueTestFailJob::$handled = false;

        $this->expectException(Exception::class);

        try {
            dispatch($job = new UniqueTestFailJob());
        } finally {
            $this->assertTrue($job::$handled);
            $this->assertTrue($this->app->get(Cache::class)->lock($this->getLockKey($job), 10)->get());
        }
    }

    public function testLockIsNotReleasedForJobRetries()
    {
        UniqueTestRetryJob::$handled = false;

        dispatch($job = new UniqueTestRetryJob());

        $this->assertFalse($this->app->get(Cache::class)->lock($this->getLockKey($job), 10)->get());

        $this->artisan('queue:work', [
            'connection' => 'database',
            '--once' => true,
        ]);

        $this->assertTrue($job::$handled);
        $this->assertFalse($this->app->get(Cache::class)->lock($this->getLockKey($job), 10)->get());

        UniqueTestRetryJob::$handled = false;
        $this->artisan('queue:work', [
            'connection' => 'database',
            '--once' => true,
        ]);

        $this->assertTrue($job::$handled);
        $this->assertTrue($this->app->get(Cache::class)->lock($this->getLockKey($job), 10)->get());
    }

    public function testLockIsNotReleasedForJobReleases()
    {
        UniqueTestReleasedJob::$handled = false;
        dispatch($job = new UniqueTestReleasedJob());

        $this->assertFalse($this->app->get(Cache::class)->lock($this->getLockKey($job), 10)->get());

        $this->artisan('queue:work', [
            'connection' => 'database',
            '--once' => true,
        ]);

        $this->assertTrue($job::$handled);
        $this->assertFalse($this->app->get(Cache::class)->lock($this->getLockKey($job), 10)->get());

        UniqueTestReleasedJob::$handled = false;
        $this->artisan('queue:work', [
            'connection' => 'database',
            '--once' => true,
        ]);

        $this->assertFalse($job::$handled);
        $this->assertTrue($this->app->get(Cache::class)->lock($this->getLockKey($job), 10)->get());
    }

    public function testLockCanBeReleasedBeforeProcessing()
    {
        UniqueUntilStartTestJob::$handled = false;

        dispatch($job = new UniqueUntilStartTestJob());

        $this->assertFalse($this->app->get(Cache::class)->lock($this->getLockKey($job), 10)->get());

        $this->artisan('queue:work', [
            'connection' => 'database',
            '--once' => true,
        ]);

        $this->assertTrue($job::$handled);
        $this->assertTrue($this->app->get(Cache::class)->lock($this->getLockKey($job), 10)->get());
    }

    protected function getLockKey($job)
    {
        return 'laravel_unique_job:' . (is_string($job) ? $job : get_class($job));
    }
}
