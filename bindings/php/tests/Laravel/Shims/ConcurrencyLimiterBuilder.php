<?php

namespace Illuminate\Cache\Limiters;

use Illuminate\Support\InteractsWithTime;

/**
 * TEST STAND-IN (tests/Laravel/Support/Shims), loaded only when the installed Laravel has no
 * Illuminate\Cache\Limiters (Laravel 12.x+). What `Cache::funnel($name)` returns upstream
 * (laravel/framework src/Illuminate/Cache/Limiters/ConcurrencyLimiterBuilder.php, commit
 * 24e32f5e1ff2), with its defaults (releaseAfter 60 s, block 3 s, 250 ms between tries):
 * then() runs a ConcurrencyLimiter on the repository's store with those settings, and hands a
 * LimiterTimeoutException to the failure callback when there is one.
 */
class ConcurrencyLimiterBuilder
{
    use InteractsWithTime;

    /** @var \Illuminate\Contracts\Cache\Repository */
    public $connection;

    /** @var string */
    public $name;

    /** @var int */
    public $maxLocks;

    /** @var int */
    public $releaseAfter = 60;

    /** @var int */
    public $timeout = 3;

    /** @var int */
    public $sleep = 250;

    /**
     * @param  \Illuminate\Contracts\Cache\Repository  $connection
     * @param  string  $name
     */
    public function __construct($connection, $name)
    {
        $this->connection = $connection;
        $this->name = $name;
    }

    /** @return $this */
    public function limit($maxLocks)
    {
        $this->maxLocks = $maxLocks;

        return $this;
    }

    /** @return $this */
    public function releaseAfter($releaseAfter)
    {
        $this->releaseAfter = $this->secondsUntil($releaseAfter);

        return $this;
    }

    /** @return $this */
    public function block($timeout)
    {
        $this->timeout = $timeout;

        return $this;
    }

    /** @return $this */
    public function sleep($sleep)
    {
        $this->sleep = $sleep;

        return $this;
    }

    /**
     * @return mixed
     */
    public function then(callable $callback, ?callable $failure = null)
    {
        $store = $this->connection->getStore();
        $limiter = new ConcurrencyLimiter($store, $this->name, $this->maxLocks, $this->releaseAfter);
        try {
            return $limiter->block($this->timeout, $callback, $this->sleep);
        } catch (LimiterTimeoutException $e) {
            if ($failure === null) {
                throw $e;
            }

            return $failure($e);
        }
    }
}
