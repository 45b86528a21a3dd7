<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Console;

use Ddblock\Laravel\DynamoDbStore;
use Illuminate\Cache\DynamoDbStore as LaravelDynamoDbStore;
use Illuminate\Console\Command;
use InvalidArgumentException;
use Symfony\Component\Console\Output\OutputInterface;

/**
 * What the `ddblock:*` Artisan commands share: finding the DynamoDB cache store (`--store`),
 * printing as the `ddblock` CLI prints (results on stdout, one `ddblock: ...` line per problem on
 * stderr, `--json` objects), and its exit statuses.
 *
 * @internal
 */
abstract class DdblockCommand extends Command
{
    /** The `ddblock` CLI's exit statuses: success, an error, a bad command line. */
    public const EXIT_OK = 0;
    public const EXIT_FAILURE = 1;
    public const EXIT_USAGE = 2;

    /**
     * The DynamoDB store `--store` names, else the default store when it is a DynamoDB one, else
     * the only DynamoDB store in config/cache.php. A store of Laravel's own `dynamodb` driver
     * (the takeover switched off) is read through the driver's class, with margin 0, Laravel's
     * rule. Returns null after printing why there is none.
     *
     * @return array{0: string, 1: DynamoDbStore, 2: bool}|null  [store name, store, stock Laravel's]
     */
    protected function dynamoStore(): ?array
    {
        $config = $this->laravel['config'];
        $name = $this->option('store');
        if ($name === null || $name === '') {
            $default = $config->get('cache.default');
            $dynamo = [];
            foreach ((array) $config->get('cache.stores', []) as $store => $settings) {
                if (in_array($settings['driver'] ?? null, ['dynamodb', 'ddblock'], true)) {
                    $dynamo[] = (string) $store;
                }
            }
            if (in_array($default, $dynamo, true)) {
                $name = (string) $default;
            } elseif (count($dynamo) === 1) {
                $name = $dynamo[0];
            } else {
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
            // E.g. a clock-skew margin that is not a whole number (the driver's own message).
            $this->problem(sprintf('cache store `%s`: %s', $name, preg_replace('/^ddblock: /', '', $e->getMessage())));

            return null;
        }
        if ($store instanceof DynamoDbStore) {
            return [$name, $store, false];
        }
        if ($store instanceof LaravelDynamoDbStore) {
            // Laravel's own store (DDBLOCK_TAKEOVER_DYNAMODB=false): same table, items and keys.
            return [$name, DynamoDbStore::fromLaravelStore($store)->setClockSkewMargin(0), true];
        }
        $this->problem(sprintf(
            'cache store `%s` does not use DynamoDB (driver `%s`): pass --store=NAME of a `dynamodb` or '
            . '`ddblock` store',
            $name,
            (string) $config->get("cache.stores.$name.driver")
        ));

        return null;
    }

    /**
     * The table key of lock `$name` in `$store` (as Laravel's `lock()` builds it), or null after
     * printing why the name cannot be a lock: empty, or a key over DynamoDB's 2048 bytes.
     */
    protected function lockKey(DynamoDbStore $store, string $name): ?string
    {
        if ($name === '') {
            $this->problem('invalid lock name "": it is empty; give a non-empty lock name');

            return null;
        }
        $key = $store->lock($name, 0)->tableKey();
        if (strlen($key) > DynamoDbStore::MAX_KEY_BYTES) {
            $this->problem(sprintf(
                'invalid lock name "%s": it is %d bytes once prefixed, and DynamoDB partition keys are at most '
                . '%d bytes',
                mb_substr($name, 0, 64) . (mb_strlen($name) > 64 ? '…' : ''),
                strlen($key),
                DynamoDbStore::MAX_KEY_BYTES
            ));

            return null;
        }

        return $key;
    }

    /** A line on stdout, as it is (no console markup). */
    protected function say(string $line): void
    {
        $this->output->writeln($line, OutputInterface::OUTPUT_RAW);
    }

    /** One JSON object on a line of stdout, as the CLI's `--json`. */
    protected function sayJson(array $value): void
    {
        $this->say((string) json_encode($value, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_THROW_ON_ERROR));
    }

    /**
     * A problem as one `ddblock: ...` line on stderr (on the command's output when it has no
     * separate error output, as under `Artisan::call()`); with `--json`, also
     * `{"error": {"kind", "message"}}` on stdout, as the CLI.
     */
    protected function problem(string $message, string $kind = 'cli'): void
    {
        $message = preg_replace('/\s+/', ' ', trim($message)) ?? $message;
        if (strncmp($message, 'ddblock: ', 9) === 0) {
            $message = substr($message, 9);
        }
        $this->output->getErrorStyle()->writeln('ddblock: ' . $message, OutputInterface::OUTPUT_RAW);
        if ($this->hasOption('json') && $this->option('json')) {
            $this->sayJson(['error' => ['kind' => $kind, 'message' => $message]]);
        }
    }

    /** `2026-11-22 02:30:00 UTC`. */
    public static function utc(int $timestamp): string
    {
        return gmdate('Y-m-d H:i:s', $timestamp) . ' UTC';
    }

    /** `until 2026-11-22 02:30:00 UTC (in 25s)`, or `without expiry`: the CLI's wording. */
    public static function until(?int $expiresAt, int $now): string
    {
        return $expiresAt === null
            ? 'without expiry'
            : sprintf('until %s (%s)', self::utc($expiresAt), self::relative($expiresAt - $now));
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
