<?php

namespace Ddblock\Laravel\Tests\Laravel\Fixtures;

use Illuminate\Cache\Limiters\ConcurrencyLimiter;

/** laravel/framework tests/Cache/ConcurrencyLimiterTest.php's fixture, as upstream has it. */
class ConcurrencyLimiterMockThatDoesntRelease extends ConcurrencyLimiter
{
    protected function release($lock)
    {
        //
    }
}
