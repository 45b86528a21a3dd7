<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Console;

use Aws\Exception\AwsException;
use Ddblock\Laravel\DynamoDbStore;
use Ddblock\Laravel\LockFactory;
use Ddblock\Laravel\TableView;
use Illuminate\Cache\DynamoDbStore as LaravelDynamoDbStore;
use Illuminate\Console\Command;
use InvalidArgumentException;
use Symfony\Component\Console\Output\OutputInterface;

/**
 * What the `ddblock:*` commands share: the store (`--store`), and the CLI's output and exit statuses.
 *
 * @internal
 */
abstract class DdblockCommand extends Command
{
    public const EXIT_OK = 0;
    public const EXIT_FAILURE = 1;
    public const EXIT_USAGE = 2;

    /** @var string the store option as the user gave it, for the commands printed: ` --store=NAME` or '' */
    protected string $storeOption = '';

    /**
     * The DynamoDB store `--store` names, else the default one, else the only one; null after saying why not.
     *
     * @return array{0: string, 1: DynamoDbStore, 2: bool}|null  [store name, store, whether it is Laravel's own]
     */
    protected function dynamoStore(): ?array
    {
        $config = $this->laravel['config'];
        $name = (string) $this->option('store');
        $this->storeOption = $name === '' ? '' : ' --store=' . self::shell($name);
        if ($name === '') {
            $default = $config->get('cache.default');
            $dynamo = array_keys(array_filter(
                (array) $config->get('cache.stores', []),
                static fn ($s): bool => in_array($s['driver'] ?? null, ['dynamodb', 'ddblock'], true)
            ));
            $name = in_array($default, $dynamo, true) ? (string) $default
                : (count($dynamo) === 1 ? (string) $dynamo[0] : '');
            if ($name === '') {
                $this->problem($dynamo === []
                    ? 'no cache store in config/cache.php uses the `dynamodb` or `ddblock` driver; pass --store=NAME'
                    : sprintf(
                        'the default cache store `%s` is not a DynamoDB store, and several are (%s): pass --store=NAME',
                        (string) $default,
                        implode(', ', $dynamo)
                    ));

                return null;
            }
        }
        if (! is_array($config->get("cache.stores.$name"))) {
            $this->problem(sprintf(
                'cache store `%s` is not defined in config/cache.php (stores: %s)',
                $name,
                implode(', ', array_keys((array) $config->get('cache.stores', []))) ?: 'none'
            ));

            return null;
        }
        try {
            $store = $this->laravel['cache']->store($name)->getStore();
        } catch (InvalidArgumentException $e) {
            $this->problem(sprintf('cache store `%s`: %s', $name, preg_replace('/^ddblock: /', '', $e->getMessage())));

            return null;
        }
        if ($store instanceof DynamoDbStore) {
            return [$name, $store, false];
        }
        if ($store instanceof LaravelDynamoDbStore) {
            // Laravel's own store (DDBLOCK_TAKEOVER_DYNAMODB=false): same table, items and keys; margin 0.
            return [$name, DynamoDbStore::fromLaravelStore($store)->setClockSkewMargin(0), true];
        }
        $this->problem(sprintf(
            'cache store `%s` does not use DynamoDB (driver `%s`): pass --store=NAME of a `dynamodb` or `ddblock` '
            . 'store',
            $name,
            (string) $config->get("cache.stores.$name.driver")
        ));

        return null;
    }

    /** The table key of lock `$name`, or null after saying why it cannot be one. */
    protected function lockKey(DynamoDbStore $store, string $name): ?string
    {
        try {
            // The driver takes an empty name under a prefix, as Laravel does; the commands do not.
            return LockFactory::checked($name === '' ? '' : $store->lock($name, 0)->tableKey());
        } catch (InvalidArgumentException $e) {
            $this->problem($e->getMessage());

            return null;
        }
    }

    /** A request that failed, as one problem line (`$message table T at E: cause` with `$view`); EXIT_FAILURE. */
    protected function failed(AwsException $e, string $message, ?TableView $view = null): int
    {
        $code = $e->getAwsErrorCode();
        if ($view !== null) {
            $cause = $code === null ? 'no answer from DynamoDB: ' . $e->getMessage()
                : $code . ': ' . ($e->getAwsErrorMessage() ?? 'no message');
            $message = sprintf('%s table `%s` at %s: %s', $message, $view->table, $view->endpoint(), $cause);
        }
        $kind = $code === 'ResourceNotFoundException' ? 'table_not_found' : 'service';
        $this->problem($message, $e->isConnectionError() ? 'transport' : $kind);

        return self::EXIT_FAILURE;
    }

    /** A line on stdout, as it is. */
    protected function say(string $line): void
    {
        $this->output->writeln($line, OutputInterface::OUTPUT_RAW);
    }

    /** One JSON object on a line of stdout. */
    protected function sayJson(array $value): void
    {
        $this->say((string) json_encode($value, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_THROW_ON_ERROR));
    }

    /** A problem as one `ddblock: ...` line on stderr; with `--json` also `{"error": ...}` on stdout. */
    protected function problem(string $message, string $kind = 'cli', bool $json = true): void
    {
        $message = preg_replace('/^ddblock: /', '', preg_replace('/\s+/', ' ', trim($message)) ?? $message) ?? $message;
        $this->output->getErrorStyle()->writeln('ddblock: ' . $message, OutputInterface::OUTPUT_RAW);
        if ($json && $this->hasOption('json') && $this->option('json')) {
            $this->sayJson(['error' => ['kind' => $kind, 'message' => $message]]);
        }
    }

    /** `$word` as a shell reads it back: bare when it is safe, else in single quotes. */
    public static function shell(string $word, bool $always = false): string
    {
        if (! $always && preg_match('/^[A-Za-z0-9@%+=:,.\/_-]+$/D', $word) === 1) {
            return $word;
        }

        return "'" . str_replace("'", "'\"'\"'", $word) . "'";
    }

    /** `until 2026-11-22 02:30:00 UTC (in 25s)`, or `without expiry`. */
    public static function until(?int $expiresAt, int $now): string
    {
        return $expiresAt === null ? 'without expiry'
            : sprintf('until %s UTC (%s)', gmdate('Y-m-d H:i:s', $expiresAt), self::relative($expiresAt - $now));
    }

    /** `in 25s`, `5m0s ago`, `now`. */
    public static function relative(int $seconds): string
    {
        if ($seconds === 0) {
            return 'now';
        }

        return $seconds > 0 ? 'in ' . self::duration($seconds) : self::duration(-$seconds) . ' ago';
    }

    /** Whole seconds in their two largest units: `25s`, `4m10s`, `23h59m`, `2d3h`. */
    public static function duration(int $seconds): string
    {
        $s = max(0, $seconds);
        [$d, $h, $m, $sec] = [intdiv($s, 86400), intdiv($s, 3600) % 24, intdiv($s, 60) % 60, $s % 60];
        if ($d > 0) {
            return "{$d}d{$h}h";
        }
        if ($h > 0) {
            return "{$h}h{$m}m";
        }

        return $m > 0 ? "{$m}m{$sec}s" : "{$sec}s";
    }
}
