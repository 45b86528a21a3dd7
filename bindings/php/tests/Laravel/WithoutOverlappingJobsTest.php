<?php

namespace Ddblock\Laravel\Tests\Laravel;

use Ddblock\Laravel\Tests\Laravel\Fixtures\FailedOverlappingTestJob;
use Ddblock\Laravel\Tests\Laravel\Fixtures\OverlappingTestJob;
use Ddblock\Laravel\Tests\Laravel\Fixtures\SkipOverlappingTestJob;
use Ddblock\Laravel\Tests\Laravel\Support\Mockery as m;
use Exception;
use Illuminate\Bus\Dispatcher;
use Illuminate\Contracts\Cache\Repository as Cache;
use Illuminate\Contracts\Queue\Job;
use Illuminate\Queue\CallQueuedHandler;
use Illuminate\Queue\Middleware\WithoutOverlapping;

/**
 * Ported from laravel/framework tests/Integration/Queue/WithoutOverlappingJobsTest.php (commit
 * 0a3b9d700446): the test bodies and fixtures (tests/Laravel/Fixtures) as upstream has them, the
 * cache being the `dynamodb` store. Scaffolding replaced: QueueTestCase (LaravelTestCase) and
 * Mockery (Support\Mockery, the same calls). The middleware and CallQueuedHandler are the installed
 * Laravel's (8.83's in both runs here; WithoutOverlapping's lock calls are the same up to 13:
 * `lock($key, $expiresAfter)->get()`, then `release()`). Not ported: testCanShareKeyAcrossJobs and
 * testGetLock (WithoutOverlapping::shared() and enum keys are Laravel 9+/11+; testGetLock builds
 * keys only, no store).
 */
final class WithoutOverlappingJobsTest extends LaravelTestCase
{
    public function testNonOverlappingJobsAreExecuted()
    {
        OverlappingTestJob::$handled = false;
        $instance = new CallQueuedHandler(new Dispatcher($this->app), $this->app);

        $job = m::mock(Job::class);

        $job->shouldReceive('hasFailed')->andReturn(false);
        $job->shouldReceive('isReleased')->andReturn(false);
        $job->shouldReceive('isDeletedOrReleased')->andReturn(false);
        $job->shouldReceive('delete')->once();

        $instance->call($job, [
            'command' => serialize($command = new OverlappingTestJob()),
        ]);

        $lockKey = (new WithoutOverlapping())->getLockKey($command);

        $this->assertTrue(OverlappingTestJob::$handled);
        $this->assertTrue($this->app->get(Cache::class)->lock($lockKey, 10)->acquire());
    }

    public function testLockIsReleasedOnJobExceptions()
    {
        FailedOverlappingTestJob::$handled = false;
        $instance = new CallQueuedHandler(new Dispatcher($this->app), $this->app);

        $job = m::mock(Job::class);

        $job->shouldReceive('hasFailed')->andReturn(false);
        $job->shouldReceive('isReleased')->andReturn(false);
        $job->shouldReceive('isDeletedOrReleased')->andReturn(false);

        $this->expectException(Exception::class);

        try {
            $instance->call($job, [
                'command' => serialize($command = new FailedOverlappingTestJob()),
            ]);
        } finally {
            $lockKey = (new WithoutOverlapping())->getLockKey($command);

            $this->assertTrue(FailedOverlappingTestJob::$handled);
            $this->assertTrue($this->app->get(Cache::class)->lock($lockKey, 10)->acquire());
        }
    }

    public function testOverlappingJobsAreReleased()
    {
        OverlappingTestJob::$handled = false;
        $instance = new CallQueuedHandler(new Dispatcher($this->app), $this->app);

        $lockKey = (new WithoutOverlapping())->getLockKey($command = new OverlappingTestJob());
        $this->app->get(Cache::class)->lock($lockKey, 10)->acquire();

        $job = m::mock(Job::class);

        $job->shouldReceive('release')->once();
        $job->shouldReceive('hasFailed')->andReturn(false);
        $job->shouldReceive('isReleased')->andReturn(true);
        $job->shouldReceive('isDeletedOrReleased')->andReturn(true);

        $instance->call($job, [
            'command' => serialize($command),
        ]);

        $this->assertFalse(OverlappingTestJob::$handled);
    }

    public function testOverlappingJobsCanBeSkipped()
    {
        SkipOverlappingTestJob::$handled = false;
        $instance = new CallQueuedHandler(new Dispatcher($this->app), $this->app);

        $lockKey = (new WithoutOverlapping())->getLockKey($command = new SkipOverlappingTestJob());
        $this->app->get(Cache::class)->lock($lockKey, 10)->acquire();

        $job = m::mock(Job::class);

        $job->shouldReceive('hasFailed')->andReturn(false);
        $job->shouldReceive('isReleased')->andReturn(false);
        $job->shouldReceive('isDeletedOrReleased')->andReturn(false);
        $job->shouldReceive('delete')->once();

        $instance->call($job, [
            'command' => serialize($command),
        ]);

        $this->assertFalse(SkipOverlappingTestJob::$handled);
    }
}
