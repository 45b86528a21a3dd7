<?php

namespace Illuminate\Cache\Limiters;

use Illuminate\Support\Str;
use Throwable;

/**
 * TEST STAND-IN (tests/Laravel/Support/Shims), loaded only when the installed Laravel has no
 * Illuminate\Cache\Limiters (Laravel 12.x+). Written here, not copied: it makes the calls upstream's
 * ConcurrencyLimiter makes (laravel/framework src/Illuminate/Cache/Limiters/ConcurrencyLimiter.php,
 * commit 9c16cc2f0dd1), in the same order, because those calls are what reach the lock store:
 *
 *   block(): a 20-character random id; then, until a slot is had, one acquire() pass, and a pause of
 *   `$sleep` ms after a failed pass unless `time() - $timeout >= $starting` (then
 *   LimiterTimeoutException); the callback runs, and the slot's release() follows it, also when it
 *   throws.
 *   acquire(): `$store->lock($name . $i, $releaseAfter, $id)->acquire()` for $i = 1..limit, the
 *   first lock acquired is the slot. release(): `$lock->release()`.
 *
 * `release()` is protected, as upstream's, so ConcurrencyLimiterTest's subclass can override it.
 */
class ConcurrencyLimiter
{
    /** @var \Illuminate\Contracts\Cache\LockProvider */
    protected $store;

    /** @var string */
    protected $name;

    /** @var int */
    protected $maxLocks;

    /** @var int */
    protected $releaseAfter;

    /**
     * @param  \Illuminate\Contracts\Cache\LockProvider  $store
     * @param  string  $name
     * @param  int  $maxLocks
     * @param  int  $releaseAfter
     */
    public function __construct($store, $name, $maxLocks, $releaseAfter)
    {
        $this->store = $store;
        $this->name = $name;
        $this->maxLocks = $maxLocks;
        $this->releaseAfter = $releaseAfter;
    }

    /**
     * @param  int  $timeout
     * @param  callable|null  $callback
     * @param  int  $sleep
     * @return mixed
     */
    public function block($timeout, $callback = null, $sleep = 250)
    {
        $starting = time();
        $id = Str::random(20);
        for ($slot = $this->acquire($id); $slot === false; $slot = $this->acquire($id)) {
            if (time() - $timeout >= $starting) {
                throw new LimiterTimeoutException();
            }
            usleep($sleep * 1000);
        }
        if (! is_callable($callback)) {
            return true;
        }
        try {
            $result = $callback();
        } catch (Throwable $e) {
            $this->release($slot);

            throw $e;
        }
        $this->release($slot);

        return $result;
    }

    /**
     * @param  string  $id
     * @return \Illuminate\Contracts\Cache\Lock|false
     */
    protected function acquire($id)
    {
        foreach (range(1, $this->maxLocks) as $i) {
            $lock = $this->store->lock($this->name . $i, $this->releaseAfter, $id);
            if ($lock->acquire()) {
                return $lock;
            }
        }

        return false;
    }

    /**
     * @param  \Illuminate\Contracts\Cache\Lock  $lock
     * @return void
     */
    protected function release($lock)
    {
        $lock->release();
    }
}
