<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

use Aws\AwsClientInterface;
use Aws\CommandInterface;
use Aws\Exception\AwsException;
use Aws\ResultInterface;
use GuzzleHttp\Promise\Create;
use Illuminate\Container\Container;
use Psr\Http\Message\RequestInterface;

/**
 * An AWS SDK middleware that logs a warning, at most once a minute, when the Date header of an
 * answer to a request carrying this host's clock (`:now`) proves the offset beyond the allowance.
 */
final class ClockSkewWarning
{
    public const NAME = 'ddblock.clock_skew_warning';
    public const INTERVAL_SECONDS = 60;

    /** @var callable(string, array<string, mixed>): void */
    private $warn;

    /** @var callable(): float */
    private $clock;

    /** @var int|null when the last warning was logged (hrtime, ns) */
    private ?int $warnedAt = null;

    /**
     * @param  callable(): int  $margin  the store's clock-skew margin, read at every check
     * @param  (callable(string, array<string, mixed>): void)|null  $warn  default: Laravel's log, else error_log()
     * @param  (callable(): float)|null  $clock  test seam: microtime(true)
     */
    public function __construct(
        private $margin,
        private string $where = '',
        ?callable $warn = null,
        ?callable $clock = null
    ) {
        $this->warn = $warn ?? [self::class, 'log'];
        $this->clock = $clock ?? static fn (): float => microtime(true);
    }

    /**
     * Attaches a warning to `$client` (replacing an earlier one), at every attempt where the SDK has that step.
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
        method_exists($list, 'appendAttempt') ? $list->appendAttempt($middleware, self::NAME)
            : $list->appendSign($middleware, self::NAME);

        return $middleware;
    }

    public function __invoke(callable $handler): callable
    {
        return function (CommandInterface $command, ?RequestInterface $request = null) use ($handler) {
            if (! isset($command['ExpressionAttributeValues'][':now'])) {
                return $handler($command, $request);
            }
            $t0 = ($this->clock)();
            $check = function ($answer) use ($t0, $command): void {
                if ($answer instanceof ResultInterface || $answer instanceof AwsException) {
                    $this->check($t0, ($this->clock)(), ClockOffset::dateOf($answer), $command->getName());
                }
            };

            return $handler($command, $request)->then(function ($result) use ($check) {
                $check($result);

                return $result;
            }, function ($reason) use ($check) {
                $check($reason);

                return Create::rejectionFor($reason);
            });
        };
    }

    /** Warns when one sample proves the offset beyond the allowance and the last warning is a minute old. */
    public function check(float $t0, float $t1, ?string $date, string $operation): void
    {
        $server = $date === null ? null : ClockOffset::parseDate($date);
        $margin = ($this->margin)();
        $offset = ClockOffset::fromSamples($server === null ? [] : [[$t0, $t1, $server]]);
        $now = hrtime(true);
        if (
            $offset->verdict($margin) !== 'fail'
            || ($this->warnedAt !== null && $now - $this->warnedAt < self::INTERVAL_SECONDS * 1000000000)
        ) {
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
            'event' => 'ddblock.clock.skew',
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
        $container->bound('log') ? $container->make('log')->warning($message, $context) : error_log($message);
    }
}
