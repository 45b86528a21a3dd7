<?php

// phpcs:disable Generic.Files.LineLength -- upstream's lines, kept as they are

namespace Ddblock\Laravel\Tests\Laravel;

use Ddblock\Laravel\Tests\Laravel\Fixtures\ConcurrencyLimiterBackedEnum;
use Ddblock\Laravel\Tests\Laravel\Fixtures\ConcurrencyLimiterMockThatDoesntRelease;
use Ddblock\Laravel\Tests\Laravel\Fixtures\ConcurrencyLimiterUnitEnum;
use Error;
use Illuminate\Cache\Limiters\ConcurrencyLimiter;
use Illuminate\Cache\Limiters\LimiterTimeoutException;
use Illuminate\Cache\Repository;
use Illuminate\Support\Facades\Cache;
use Throwable;

/**
 * Ported from laravel/framework tests/Cache/ConcurrencyLimiterTest.php (the 13.x form, with the enum
 * funnel names), which runs on `new Repository(new ArrayStore)`: here the repository is the
 * `dynamodb` store, the rest is upstream's (fixtures in tests/Laravel/Fixtures). The limiter is
 * Laravel's own where the installed Laravel has Illuminate\Cache\Limiters (12.x+), else the
 * stand-in of Support\Shims, which makes upstream's lock calls. Not ported:
 * testFunnelThrowsExceptionWhenStoreDoesNotSupportLocks (a mocked store without locks, no DynamoDB).
 */
final class ConcurrencyLimiterTest extends LaravelTestCase
{
    protected Repository $repository;

    protected function setUp(): void
    {
        parent::setUp();

        $this->repository = Cache::store('dynamodb');
        if ($this->getName(false) === 'testItFailsImmediatelyOrRetriesForAWhileBasedOnAGivenTimeout') {
            // Not upstream's: DynamoDB's expiry is whole seconds (`expires_at < now`), so a
            // 2-second slot taken at second T frees at T+3, and block(3) started just after T
            // sees it free only for the fraction of a second it started past T; block() retries
            // every 250 ms, so a start at .0x could miss that window (CI saw it, stock Laravel,
            // about 1 run in 6). Starting mid-second leaves a window of 0.5 s, two retries.
            $fraction = fmod(microtime(true), 1.0);
            usleep((int) ((($fraction < 0.5 ? 0.5 : 1.5) - $fraction) * 1_000_000));
        }
    }

    /** The tests that wait for real seconds run on one server (dynalite). */
    protected static function serversFor(string $method): array
    {
        $slow = [
            'testItReleasesLockIfTaskTookTooLong',
            'testItFailsImmediatelyOrRetriesForAWhileBasedOnAGivenTimeout',
            'testItFailsAfterRetryTimeout',
        ];

        return in_array($method, $slow, true) ? ['dynalite'] : parent::serversFor($method);
    }

    public function testItLocksTasksWhenNoSlotAvailable()
    {
        $store = [];

        foreach (range(1, 2) as $i) {
            (new ConcurrencyLimiterMockThatDoesntRelease($this->repository->getStore(), 'key', 2, 5))->block(2, function () use (&$store, $i) {
                $store[] = $i;
            });
        }

        try {
            (new ConcurrencyLimiterMockThatDoesntRelease($this->repository->getStore(), 'key', 2, 5))->block(0, function () use (&$store) {
                $store[] = 3;
            });
        } catch (Throwable $e) {
            $this->assertInstanceOf(LimiterTimeoutException::class, $e);
        }

        (new ConcurrencyLimiterMockThatDoesntRelease($this->repository->getStore(), 'other_key', 2, 5))->block(2, function () use (&$store) {
            $store[] = 4;
        });

        $this->assertEquals([1, 2, 4], $store);
    }

    public function testItReleasesLockAfterTaskFinishes()
    {
        $store = [];

        foreach (range(1, 4) as $i) {
            (new ConcurrencyLimiter($this->repository->getStore(), 'key', 2, 5))->block(2, function () use (&$store, $i) {
                $store[] = $i;
            });
        }

        $this->assertEquals([1, 2, 3, 4], $store);
    }

    public function testItReleasesLockIfTaskTookTooLong()
    {
        $store = [];

        $lock = new ConcurrencyLimiterMockThatDoesntRelease($this->repository->getStore(), 'key', 1, 1);

        $lock->block(2, function () use (&$store) {
            $store[] = 1;
        });

        try {
            $lock->block(0, function () use (&$store) {
                $store[] = 2;
            });
        } catch (Throwable $e) {
            $this->assertInstanceOf(LimiterTimeoutException::class, $e);
        }

        usleep(1.2 * 1000000);

        $lock->block(0, function () use (&$store) {
            $store[] = 3;
        });

        $this->assertEquals([1, 3], $store);
    }

    public function testItFailsImmediatelyOrRetriesForAWhileBasedOnAGivenTimeout()
    {
        $store = [];

        $lock = new ConcurrencyLimiterMockThatDoesntRelease($this->repository->getStore(), 'key', 1, 2);

        $lock->block(2, function () use (&$store) {
            $store[] = 1;
        });

        try {
            $lock->block(0, function () use (&$store) {
                $store[] = 2;
            });
        } catch (Throwable $e) {
            $this->assertInstanceOf(LimiterTimeoutException::class, $e);
        }

        $lock->block(3, function () use (&$store) {
            $store[] = 3;
        });

        $this->assertEquals([1, 3], $store);
    }

    public function testItFailsAfterRetryTimeout()
    {
        $store = [];

        $lock = new ConcurrencyLimiterMockThatDoesntRelease($this->repository->getStore(), 'key', 1, 10);

        $lock->block(2, function () use (&$store) {
            $store[] = 1;
        });

        try {
            $lock->block(2, function () use (&$store) {
                $store[] = 2;
            });
        } catch (\Throwable $e) {
            $this->assertInstanceOf(LimiterTimeoutException::class, $e);
        }

        $this->assertEquals([1], $store);
    }

    public function testItReleasesIfErrorIsThrown()
    {
        $store = [];

        $lock = new ConcurrencyLimiter($this->repository->getStore(), 'key', 1, 5);

        try {
            $lock->block(1, function () {
                throw new Error();
            });
        } catch (Error) {
        }

        $lock = new ConcurrencyLimiter($this->repository->getStore(), 'key', 1, 5);
        $lock->block(1, function () use (&$store) {
            $store[] = 1;
        });

        $this->assertEquals([1], $store);
    }

    public function testFunnelMethodOnRepository()
    {
        $store = [];

        $result = $this->repository->funnel('test-funnel')
            ->limit(2)
            ->releaseAfter(5)
            ->block(2)
            ->then(function () use (&$store) {
                $store[] = 1;

                return 'ok';
            });

        $this->assertEquals([1], $store);
        $this->assertSame('ok', $result);
    }

    public function testFunnelMethodAcceptsBackedEnum()
    {
        $store = [];

        $result = $this->repository->funnel(ConcurrencyLimiterBackedEnum::TestFunnel)
            ->limit(2)
            ->releaseAfter(5)
            ->block(2)
            ->then(function () use (&$store) {
                $store[] = 1;

                return 'ok';
            });

        $this->assertEquals([1], $store);
        $this->assertSame('ok', $result);
    }

    public function testFunnelMethodAcceptsUnitEnum()
    {
        $store = [];

        $result = $this->repository->funnel(ConcurrencyLimiterUnitEnum::TestFunnel)
            ->limit(2)
            ->releaseAfter(5)
            ->block(2)
            ->then(function () use (&$store) {
                $store[] = 1;

                return 'ok';
            });

        $this->assertEquals([1], $store);
        $this->assertSame('ok', $result);
    }

    public function testFunnelBackedEnumSharesKeyWithStringEquivalent()
    {
        // Fill all slots using the backed enum's string value
        foreach (range(1, 2) as $i) {
            (new ConcurrencyLimiterMockThatDoesntRelease($this->repository->getStore(), 'test-funnel', 2, 5))->block(2, function () {
            });
        }

        // Try to acquire via the BackedEnum — should conflict with the string key
        $result = $this->repository->funnel(ConcurrencyLimiterBackedEnum::TestFunnel)
            ->limit(2)
            ->releaseAfter(5)
            ->block(0)
            ->then(
                function () {
                    return 'success';
                },
                function () {
                    return 'failed';
                }
            );

        $this->assertSame('failed', $result);
    }

    public function testFunnelWithFailureCallback()
    {
        $store = [];

        // Fill all slots without releasing
        foreach (range(1, 2) as $i) {
            (new ConcurrencyLimiterMockThatDoesntRelease($this->repository->getStore(), 'funnel-key', 2, 5))->block(2, function () use (&$store, $i) {
                $store[] = $i;
            });
        }

        // Try to acquire when all slots are full
        $result = $this->repository->funnel('funnel-key')
            ->limit(2)
            ->releaseAfter(5)
            ->block(0)
            ->then(
                function () use (&$store) {
                    $store[] = 'success';
                },
                function ($e) use (&$store) {
                    $this->assertInstanceOf(LimiterTimeoutException::class, $e);
                    $store[] = 'failed';

                    return 'failure-result';
                }
            );

        $this->assertEquals([1, 2, 'failed'], $store);
        $this->assertSame('failure-result', $result);
    }
}
