<?php

namespace Ddblock\Laravel\Tests\Laravel\Fixtures;

/** laravel/framework tests/Cache/ConcurrencyLimiterTest.php's fixture, as upstream has it. */
enum ConcurrencyLimiterUnitEnum
{
    case TestFunnel;
}
