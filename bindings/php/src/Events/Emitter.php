<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Events;

use Closure;
use Ddblock\Laravel\ClockSkewWarning;
use Illuminate\Contracts\Events\Dispatcher;

/**
 * What a store's locks report: their events, each built and dispatched only when the dispatcher
 * has listeners for its class (wildcards included, as `hasListeners()` counts them), and their
 * warnings, to Laravel's log. Never the owner.
 *
 * @internal
 */
final class Emitter
{
    private ?string $layout = null;

    /**
     * @param  Dispatcher|(Closure(): (Dispatcher|null))|null  $events  the dispatcher, or what finds it at each event
     * @param  string  $prefix  the store's prefix, which the lock's key starts with
     * @param  Closure(): string  $keyLayout  the store's key layout, asked once, at the first report
     */
    public function __construct(
        private $events,
        private string $table,
        private string $prefix,
        private Closure $keyLayout
    ) {
    }

    /**
     * Dispatches `new $class(the lock, ...$details)` when there are listeners for `$class`.
     *
     * @param  class-string<LockEvent>  $class
     * @param  string  $name  the lock's name as the lock holds it (prefixed on Laravel 8 to 11)
     * @param  mixed  ...$details  the event's own fields
     */
    public function emit(string $class, string $name, ...$details): void
    {
        $this->listener($class)?->dispatch(new $class($this->lock($name), ...$details));
    }

    /**
     * Whether an event of `$class` would be dispatched: the dispatcher has listeners for it.
     *
     * @param  class-string<LockEvent>  $class
     */
    public function listens(string $class): bool
    {
        return $this->listener($class) !== null;
    }

    /**
     * Logs `$message` as warning `$event` (the core's name for it) about lock `$name`: to Laravel's
     * log when the app has one, else PHP's error log.
     */
    public function warn(string $event, string $name, string $message): void
    {
        [$lock, $key, $table] = $this->lock($name);
        ClockSkewWarning::log($message, ['event' => $event, 'lock' => $lock, 'key' => $key, 'table' => $table]);
    }

    /** Seconds since `$since` (hrtime, ns). */
    public static function since(int $since): float
    {
        return (hrtime(true) - $since) / 1e9;
    }

    /**
     * The dispatcher when it has listeners for `$class`, else null.
     *
     * @param  class-string<LockEvent>  $class
     */
    private function listener(string $class): ?Dispatcher
    {
        $events = $this->events instanceof Closure ? ($this->events)() : $this->events;

        return $events !== null && $events->hasListeners($class) ? $events : null;
    }

    /**
     * The lock's name as given to Cache::lock() (Laravel 8 to 11 prefix it once more), key, table and layout.
     *
     * @return array{0: string, 1: string, 2: string, 3: string}
     */
    private function lock(string $name): array
    {
        $this->layout ??= ($this->keyLayout)();
        $given = $this->layout === 'laravel12' ? $name : (string) substr($name, strlen($this->prefix));

        return [$given, $this->prefix . $name, $this->table, $this->layout];
    }
}
