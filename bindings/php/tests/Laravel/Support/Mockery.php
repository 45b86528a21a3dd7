<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests\Laravel\Support;

use BadMethodCallException;
use Illuminate\Contracts\Queue\Job;
use PHPUnit\Framework\AssertionFailedError;

/**
 * TEST STAND-IN for the part of Mockery the ported queue tests use (Mockery is not installed):
 * `m::mock(Job::class)`, `->shouldReceive($method)`, `->andReturn($value)`, `->once()`. As with
 * Mockery, a call no expectation names throws, and `close()` (LaravelTestCase::tearDown(), where
 * Testbench closes Mockery) fails the test when a `once()` method was not called exactly once.
 */
final class Mockery
{
    /** @var list<JobMock> */
    private static array $mocks = [];

    public static function mock(string $class): JobMock
    {
        if ($class !== Job::class) {
            throw new BadMethodCallException("this stand-in mocks only " . Job::class . ", not $class");
        }

        return self::$mocks[] = new JobMock();
    }

    /**
     * Checks every expectation of the mocks made since the last close(), then forgets them.
     *
     * @return int the number of expectations checked
     */
    public static function close(): int
    {
        [$mocks, self::$mocks] = [self::$mocks, []];
        $checked = 0;
        foreach ($mocks as $mock) {
            foreach ($mock->expectations() as $method => $expectation) {
                if ($expectation->times !== null && $expectation->calls !== $expectation->times) {
                    throw new AssertionFailedError(sprintf(
                        'Method %s() from %s should be called exactly %d times but called %d times.',
                        $method,
                        Job::class,
                        $expectation->times,
                        $expectation->calls
                    ));
                }
                $checked++;
            }
        }

        return $checked;
    }
}
