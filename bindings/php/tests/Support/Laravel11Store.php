<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests\Support;

use Ddblock\Laravel\DynamoDbStore;

/**
 * The driver as it runs on Laravel 11.x, on Debian's 8.83: 11's setPrefix() keeps the prefix as
 * given (laravel/framework PR #47380) instead of appending ':'; lock() is still 8-11's (the name
 * passed prefixed), which the driver takes from the parent. That is the whole laravel11 layout.
 */
class Laravel11Store extends DynamoDbStore
{
    public function setPrefix($prefix)
    {
        $this->prefix = $prefix;
    }
}
