<?php

namespace Ddblock\Laravel\Tests\Laravel;

use Illuminate\Cache\Limiters\LimiterTimeoutException;
use Illuminate\Contracts\Cache\Repository;
use Illuminate\Support\Facades\Cache;
use Throwable;

/**
 * Ported from laravel/framework tests/Integration/Cache/CacheFunnelTestCase.php (commit
 * 66859287305f), the funnel tests Laravel runs on its array, file, database and Redis stores
 * (ArrayCacheFunnelTest, FileCacheFunnelTest, ...), with cache() the `dynamodb` store: the test
 * bodies, setUp() and tearDown() as upstream has them. `Cache::funnel()` (Laravel 12.x+) is
 * Laravel's own where the installed Laravel has it, else the stand-in of Support\Shims, which makes
 * upstream's lock calls (tests/Laravel/Shims/ConcurrencyLimiter.php).
 */
final class CacheFunnelTest extends LaravelTestCase
{
    protected function cache(): Repository
    {
        return Cache::store('dynamodb');
    }

    protected function setUp(): void
    {
        parent::setUp();

        try {
            $this->releaseFunnelLocks();
        } catch (Throwable) {
        }
    }

    public function testFunnelBasicHappyPath()
    {
        $result = $this->cache()->funnel('test')
            ->limit(2)
            ->releaseAfter(60)
            ->block(0)
            ->then(fn () => 'hello');

        $this->assertSame('hello', $result);
    }

    public function testFunnelReleasesLockAfterCallback()
    {
        for ($i = 0; $i < 5; $i++) {
            $result = $this->cache()->funnel('test')
                ->limit(1)
                ->releaseAfter(60)
                ->block(0)
                ->then(fn () => 'ok');

            $this->assertSame('ok', $result);
        }
    }

    public function testFunnelLockReleasedOnException()
    {
        try {
            $this->cache()->funnel('test')
                ->limit(1)
                ->releaseAfter(60)
                ->block(0)
                ->then(function () {
                    throw new \Exception('fail');
                });
        } catch (\Exception) {
        }

        $result = $this->cache()->funnel('test')
            ->limit(1)
            ->releaseAfter(60)
            ->block(0)
            ->then(fn () => 'recovered');

        $this->assertSame('recovered', $result);
    }

    public function testFunnelTimeoutExceptionWithoutFailureCallback()
    {
        $this->cache()->lock('test1', 60)->get();
        $this->cache()->lock('test2', 60)->get();

        $this->expectException(LimiterTimeoutException::class);

        $this->cache()->funnel('test')
            ->limit(2)
            ->releaseAfter(60)
            ->block(0)
            ->then(fn () => 'should not run');
    }

    public function testFunnelFailureCallbackReceivesException()
    {
        $this->cache()->lock('test1', 60)->get();
        $this->cache()->lock('test2', 60)->get();

        $result = $this->cache()->funnel('test')
            ->limit(2)
            ->releaseAfter(60)
            ->block(0)
            ->then(
                fn () => 'should not run',
                function ($e) {
                    $this->assertInstanceOf(LimiterTimeoutException::class, $e);

                    return 'failed';
                }
            );

        $this->assertSame('failed', $result);
    }

    public function testFunnelIndependentKeys()
    {
        $this->cache()->lock('key-a1', 60)->get();

        $result = $this->cache()->funnel('key-b')
            ->limit(1)
            ->releaseAfter(60)
            ->block(0)
            ->then(fn () => 'key-b-ok');

        $this->assertSame('key-b-ok', $result);
    }

    protected function releaseFunnelLocks(): void
    {
        $this->cache()->lock('test1')->forceRelease();
        $this->cache()->lock('test2')->forceRelease();
        $this->cache()->lock('key-a1')->forceRelease();
        $this->cache()->lock('key-b1')->forceRelease();
    }

    protected function tearDown(): void
    {
        try {
            $this->releaseFunnelLocks();
        } catch (Throwable) {
        }

        parent::tearDown();
    }
}
