<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests\Support;

/**
 * Laravel 11.x's DynamoDbStore on Debian's 8.83, for the driver's store and stock Laravel's: 11's
 * setPrefix() keeps the prefix as given (laravel/framework PR #47380) instead of appending ':'.
 * That is the whole laravel11 layout.
 */
trait Laravel11Prefix
{
    public function setPrefix($prefix)
    {
        $this->prefix = $prefix;
    }
}
