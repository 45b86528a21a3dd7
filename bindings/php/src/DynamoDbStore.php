<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

use Closure;
use Illuminate\Cache\DynamoDbStore as LaravelDynamoDbStore;
use Illuminate\Contracts\Events\Dispatcher;
use InvalidArgumentException;
use ReflectionClass;

/** Laravel's DynamoDB cache store whose locks are ddblock's; every cache operation is Laravel's own. */
class DynamoDbStore extends LaravelDynamoDbStore implements FlushesLocks
{
    public const DEFAULT_CLOCK_SKEW_MARGIN = 0;
    public const RELEASE_DELETE = 'delete';
    public const RELEASE_KEEP_FENCE = 'keep-fence';
    public const DEFAULT_RELEASE_MODE = self::RELEASE_DELETE;

    /** @var int an expired lock is taken over once `expires_at < now - margin` */
    protected $clockSkewMargin = self::DEFAULT_CLOCK_SKEW_MARGIN;

    /** @var string `delete` or `keep-fence` */
    protected $releaseMode = self::DEFAULT_RELEASE_MODE;

    /** @var array{0: callable|null, 1: callable|null} test seam: attempt ids, fence bases */
    protected $lockIds = [null, null];

    /** @var Dispatcher|(Closure(): (Dispatcher|null))|null where the locks' events go (Events\LockEvent) */
    protected $lockEvents = null;

    /** This driver's copy of a store Laravel's CacheManager built, with every setting it has. */
    public static function fromLaravelStore(LaravelDynamoDbStore $store): self
    {
        $copy = (new ReflectionClass(self::class))->newInstanceWithoutConstructor();
        // From this subclass, get_object_vars() sees the protected properties of Laravel's store.
        foreach (get_object_vars($store) as $property => $value) {
            $copy->{$property} = $value;
        }
        ClockSkewWarning::attach($copy->dynamo, [$copy, 'clockSkewMargin'], sprintf('table `%s`', $copy->table));

        return $copy;
    }

    /**
     * Get a lock instance.
     *
     * @param  string  $name
     * @param  int  $seconds
     * @param  string|null  $owner
     * @return \Ddblock\Laravel\DynamoDbLock
     */
    public function lock($name, $seconds = 0, $owner = null)
    {
        // The name and owner the installed Laravel's lock() gives: 8-11 pass prefix.name, 12+ the bare name.
        [$name, $seconds, $owner] = (fn () => [$this->name, $this->seconds, $this->owner])
            ->call(parent::lock($name, $seconds, $owner));

        return new DynamoDbLock(new LockFactory($this), $name, $seconds, $owner);
    }

    /**
     * Restore a lock instance using the owner identifier.
     *
     * @param  string  $name
     * @param  string  $owner
     * @return \Ddblock\Laravel\DynamoDbLock
     */
    public function restoreLock($name, $owner)
    {
        return $this->lock($name, 0, $owner);
    }

    /** Remove all locks from the store: every lock item under the prefix, each as it was read. */
    public function flushLocks(): bool
    {
        (new TableView($this))->sweep(static fn (array $seen): ?string => $seen['kind'] === 'lock' ? 'lock' : null);

        return true;
    }

    /** Determine if the lock store is separate from the cache store (locks share Laravel's table). */
    public function hasSeparateLockStore(): bool
    {
        return false;
    }

    /** The clock-skew margin in seconds (`ddblock.clock_skew_margin`). */
    public function clockSkewMargin(): int
    {
        return $this->clockSkewMargin;
    }

    /**
     * Set the clock-skew margin: whole seconds, 0 or more (an int, or its text).
     *
     * @param  int|string  $seconds
     * @return $this
     */
    public function setClockSkewMargin($seconds)
    {
        $valid = is_int($seconds) || (is_string($seconds) && preg_match('/^\s*\d+\s*$/D', $seconds) === 1);
        if (! $valid || (int) $seconds < 0) {
            throw new InvalidArgumentException(sprintf(
                'ddblock: the clock-skew margin (ddblock.clock_skew_margin, DDBLOCK_CLOCK_SKEW_MARGIN) must be '
                . 'a whole number of seconds, 0 or more; got %s',
                var_export($seconds, true)
            ));
        }
        $this->clockSkewMargin = (int) $seconds;

        return $this;
    }

    /** How locks are released (`ddblock.release_mode`): `delete` or `keep-fence`. */
    public function releaseMode(): string
    {
        return $this->releaseMode;
    }

    /**
     * Set the release mode: `delete` or `keep-fence`, any case; null is the default.
     *
     * @param  string|null  $mode
     * @return $this
     */
    public function setReleaseMode($mode)
    {
        $word = $mode === null ? self::DEFAULT_RELEASE_MODE : (is_string($mode) ? strtolower(trim($mode)) : null);
        if ($word !== self::RELEASE_DELETE && $word !== self::RELEASE_KEEP_FENCE) {
            throw new InvalidArgumentException(sprintf(
                'ddblock: the release mode (ddblock.release_mode, DDBLOCK_RELEASE_MODE) must be '
                . '"delete" (the default) or "keep-fence"; got %s',
                var_export($mode, true)
            ));
        }
        $this->releaseMode = $word;

        return $this;
    }

    /**
     * Set where the locks' events go (Events\LockEvent): a dispatcher, or a closure that returns the
     * current one (the service provider's: the app's `events`, so that Event::fake() is seen); null: none.
     *
     * @param  Dispatcher|(Closure(): (Dispatcher|null))|null  $events
     * @return $this
     */
    public function setEventDispatcher($events)
    {
        $this->lockEvents = $events;

        return $this;
    }

    /**
     * Test seam (the conformance vectors): where attempt ids and fence bases come from; nulls: the defaults.
     *
     * @internal
     */
    public function setLockIds(?callable $attemptIds, ?callable $fenceBases): void
    {
        $this->lockIds = [$attemptIds, $fenceBases];
    }
}
