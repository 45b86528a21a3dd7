<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests\Laravel\Support;

use BackedEnum;
use BadMethodCallException;
use Illuminate\Cache\Limiters\ConcurrencyLimiterBuilder;
use Illuminate\Cache\Repository;
use Illuminate\Contracts\Cache\LockProvider;
use Illuminate\Support\Arr;
use UnitEnum;

/**
 * TEST STAND-INS for what the ported tests call and the mixed test Laravel lacks (Debian's 8.83
 * framework, with only upstream 13's DynamoDbStore, DynamoDbLock and Lock on DDBLOCK_LARAVEL=13),
 * each registered only when the installed Laravel does not have it, so a real Laravel 12/13 uses
 * its own:
 *
 *   - `Cache::funnel()` (Laravel 12.x+: Repository::funnel(), Illuminate\Cache\Limiters\
 *     {ConcurrencyLimiter, ConcurrencyLimiterBuilder, LimiterTimeoutException}): tests/Laravel/Shims,
 *     which make the lock calls upstream's limiter makes, in the same order (see there);
 *   - `Arr::mapWithKeys()` (Laravel 10+), which 13's DynamoDbStore::many() calls.
 */
final class Shims
{
    private const LIMITER_CLASSES = ['ConcurrencyLimiter', 'ConcurrencyLimiterBuilder', 'LimiterTimeoutException'];

    public static function register(): void
    {
        static $done = false;
        if ($done) {
            return;
        }
        $done = true;

        spl_autoload_register(static function (string $class): void {
            $prefix = 'Illuminate\\Cache\\Limiters\\';
            $name = substr($class, strlen($prefix));
            if (str_starts_with($class, $prefix) && in_array($name, self::LIMITER_CLASSES, true)) {
                require dirname(__DIR__) . '/Shims/' . $name . '.php';
            }
        });

        if (! method_exists(Repository::class, 'funnel') && ! Repository::hasMacro('funnel')) {
            // Upstream: Repository::funnel($name) refuses a store without locks, then builds a
            // ConcurrencyLimiterBuilder on this repository and the name (an enum's value/name).
            Repository::macro('funnel', function ($name) {
                /** @var Repository $this */
                if (! $this->getStore() instanceof LockProvider) {
                    throw new BadMethodCallException('This cache store does not support locks.');
                }
                if ($name instanceof BackedEnum) {
                    $name = $name->value;
                } elseif ($name instanceof UnitEnum) {
                    $name = $name->name;
                }

                return new ConcurrencyLimiterBuilder($this, $name);
            });
        }

        if (! method_exists(Arr::class, 'mapWithKeys') && ! Arr::hasMacro('mapWithKeys')) {
            // Laravel 10+'s Arr::mapWithKeys(): each callback($value, $key) returns [key => value].
            Arr::macro('mapWithKeys', static function (array $array, callable $callback): array {
                $result = [];
                foreach ($array as $key => $value) {
                    foreach ($callback($value, $key) as $mapKey => $mapValue) {
                        $result[$mapKey] = $mapValue;
                    }
                }

                return $result;
            });
        }
    }
}
