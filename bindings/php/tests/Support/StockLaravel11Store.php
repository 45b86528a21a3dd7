<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests\Support;

use Illuminate\Cache\DynamoDbStore;

/** Stock Laravel 11.x's store on Debian's 8.83: only setPrefix() differs (PR #47380). */
class StockLaravel11Store extends DynamoDbStore
{
    public function setPrefix($prefix)
    {
        $this->prefix = $prefix;
    }
}
