<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

use Aws\AwsClientInterface;
use Aws\CommandInterface;
use Aws\Exception\AwsException;
use Aws\HandlerList;
use Aws\ResultInterface;
use GuzzleHttp\Promise\Create;
use Illuminate\Container\Container;
use Psr\Http\Message\RequestInterface;

/**
 * An AWS SDK middleware that logs a warning when one of DynamoDB's answers proves this host's
 * clock beyond the allowance of the store's clock-skew margin: at most once a minute per store
 * (per client the middleware is attached to).
 *
 * It looks at the requests whose condition carries this host's clock (a `:now` value: the lock
 * acquire's UpdateItem, `refresh()`, Laravel's `add()`), the ones a wrong clock makes wrong. Each
 * attempt is one sample ({@see ClockOffset}): local time just before it is sent and just after its
 * answer (a result or an error DynamoDB answered, such as a failed condition), and the answer's
 * Date header, so the offset lies in `[t0 - D - 1, t1 - D]`. Only a sample that proves the offset
 * beyond `(margin + 1) / 2` warns; one answer cannot narrow the interval below a second, so this
 * catches clocks off by more than about the allowance plus a second, and `ddblock:doctor`
 * measures finer. Nothing is sent: the Date header comes with every answer.
 */
final class ClockSkewWarning
{
    /** The middleware's name in the client's handler list. */
    public const NAME = 'ddblock.clock_skew_warning';

    /** At most one warning per this many seconds (monotonic). */
    public const INTERVAL_SECONDS = 60;

    /** @var callable(): int */
    private $margin;

    /** @var callable(string, array<string, mixed>): void */
    private $warn;

    /** @var callable(): float */
    private $clock;

    private string $where;

    /** @var int|null when the last warning was logged (hrtime, ns) */
    private ?int $warnedAt = null;

    /**
     * @param  callable(): int  $margin  the store's clock-skew margin, read at every check
     * @param  string  $where  what the warning names: the store and table
     * @param  (callable(string, array<string, mixed>): void)|null  $warn  default: Laravel's
     *     logger (`log`), at level warning; else PHP's error_log()
     * @param  (callable(): float)|null  $clock  test seam: the local clock (`microtime(true)`)
     */
    public function __construct(callable $margin, string $where = '', ?callable $warn = null, ?callable $clock = null)
    {
        $this->margin = $margin;
        $this->where = $where;
        $this->warn = $warn ?? [self::class, 'log'];
        $this->clock = $clock ?? static fn (): float => microtime(true);
    }

    /**
     * Attaches a warning to `$client` (replacing one attached before), at the SDK's `attempt`
     * step where it has one (every attempt, inside the SDK's retries), else at `sign`.
     *
     * @param  callable(): int  $margin
     */
    public static function attach(
        AwsClientInterface $client,
        callable $margin,
        string $where = '',
        ?callable $warn = null,
        ?callable $clock = null
    ): self {
        $middleware = new self($margin, $where, $warn, $clock);
        $list = $client->getHandlerList();
        $list->remove(self::NAME);
        if (method_exists($list, 'appendAttempt')) {
            $list->appendAttempt($middleware, self::NAME);
        } else {
            $list->appendSign($middleware, self::NAME);
        }

        return $middleware;
    }

    /**
     * The middleware: wraps the next handler.
     */
    public function __invoke(callable $handler): callable
    {
        return function (CommandInterface $command, ?RequestInterface $request = null) use ($handler) {
            if (! isset($command['ExpressionAttributeValues'][':now'])) {
                return $handler($command, $request);
            }
            $t0 = ($this->clock)();

            return $handler($command, $request)->then(
                function ($result) use ($t0, $command) {
                    if ($result instanceof ResultInterface) {
                        $this->check($t0, ($this->clock)(), ClockOffset::dateOf($result), $command->getName());
                    }

                    return $result;
                },
                function ($reason) use ($t0, $command) {
                    if ($reason instanceof AwsException) {
                        $this->check($t0, ($this->clock)(), ClockOffset::dateOf($reason), $command->getName());
                    }

                    return Create::rejectionFor($reason);
                }
            );
        };
    }

    /**
     * Checks one sample; warns when it proves the offset beyond the allowance and the last
     * warning is a minute old.
     */
    public function check(float $t0, float $t1, ?string $date, string $operation): void
    {
        $server = $date === null ? null : ClockOffset::parseDate($date);
        if ($server === null) {
            return;
        }
        $margin = ($this->margin)();
        $offset = ClockOffset::fromSamples([[$t0, $t1, $server]]);
        if (! $offset->provesBeyond($margin)) {
            return;
        }
        $now = hrtime(true);
        if ($this->warnedAt !== null && $now - $this->warnedAt < self::INTERVAL_SECONDS * 1000000000) {
            return;
        }
        $this->warnedAt = $now;
        $ahead = $offset->low() > 0;
        ($this->warn)(sprintf(
            'ddblock: this host\'s clock is at least %.1f s %s DynamoDB\'s (the Date header of an answer to %s: '
            . 'between %+.2f and %+.2f s), beyond the ±%s s allowed with clock-skew margin %d%s: %s; synchronise '
            . 'the clock (NTP), or raise ddblock.clock_skew_margin on every host; `php artisan ddblock:doctor` '
            . 'measures it',
            $ahead ? $offset->low() : -$offset->high(),
            $ahead ? 'ahead of' : 'behind',
            $operation,
            $offset->low(),
            $offset->high(),
            ClockOffset::seconds(ClockOffset::allowance($margin)),
            $margin,
            $this->where === '' ? '' : " ($this->where)",
            $ahead ? 'this host may take locks over before their holders\' leases end'
                : 'this host may keep working under a lock another host has already taken over'
        ), [
            'offset_low' => $offset->low(),
            'offset_high' => $offset->high(),
            'allowed' => ClockOffset::allowance($margin),
            'margin' => $margin,
            'operation' => $operation,
        ]);
    }

    /**
     * Laravel's logger when the app has one, else PHP's error log.
     *
     * @param  array<string, mixed>  $context
     */
    public static function log(string $message, array $context): void
    {
        $container = Container::getInstance();
        if ($container->bound('log')) {
            $container->make('log')->warning($message, $context);

            return;
        }
        error_log($message);
    }
}
