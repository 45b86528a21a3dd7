<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Console;

use Aws\Exception\AwsException;
use Closure;
use Ddblock\Laravel\TableView;
use Illuminate\Support\Carbon;

/**
 * `php artisan ddblock:sweep`: lists, and with `--force` removes, the expired items the CLI's `sweep`
 * removes and, with `--locks-older-than`, the locks that look taken with ttl 0 longer ago than that.
 */
class SweepCommand extends DdblockCommand
{
    /** @var string */
    protected $signature = 'ddblock:sweep
        {--force : remove what is listed (without it, nothing is removed)}
        {--grace=60 : only items expired more than this many seconds ago}
        {--locks-older-than= : also locks that look taken with ttl 0 longer ago than this (1h if no value; 90m, 3600)}
        {--all : every item in the table, not only those under the prefix}
        {--store= : the cache store (default: the default store if it is a DynamoDB one, else the only DynamoDB store)}
        {--json : one JSON object on stdout}';

    /** @var string */
    protected $description = 'Remove expired items, and locks stuck since taken with ttl 0 (a dry run without --force)';

    public function handle(): int
    {
        $grace = (string) $this->option('grace');
        $given = $this->option('locks-older-than');
        $age = $given !== null ? self::seconds((string) $given)
            : ($this->input->hasParameterOption('--locks-older-than') ? Doctor::LONG_LOCK_SECONDS : null);
        if (preg_match('/^\d+$/D', $grace) !== 1 || $age === false) {
            $this->problem($age === false
                ? "--locks-older-than must be a duration: seconds (3600) or with units (90m, 2h30m, 1d), not \"$given\""
                : "--grace must be a whole number of seconds, not \"$grace\"");

            return self::EXIT_USAGE;
        }
        $found = $this->dynamoStore();
        if ($found === null) {
            return self::EXIT_FAILURE;
        }
        $view = new TableView($found[1]);
        $now = Carbon::now()->getTimestamp();
        $cutoff = $now - (int) $grace;
        $force = (bool) $this->option('force');
        try {
            $r = $view->sweep(self::selector($now, $cutoff, $age), ! $force, (bool) $this->option('all'), $cutoff);
        } catch (AwsException $e) {
            return $this->failed($e, 'sweep could not scan or delete in', $view);
        }
        [$n, $reasons] = [count($r['found']), array_count_values(array_column($r['found'], 'reason'))];
        $deleted = count(array_filter(array_column($r['found'], 'removed')));
        if ($this->option('json')) {
            $this->sayJson(['table' => $view->table, 'dry_run' => ! $force, 'scanned' => $r['scanned'],
                'expired' => $reasons['expired'] ?? 0, 'stuck_locks' => $reasons['stuck_lock'] ?? 0,
                'deleted' => $deleted, 'skipped' => $force ? $n - $deleted : 0, 'cutoff' => $cutoff,
                'locks_older_than' => $age, 'items' => $r['found']]);

            return self::EXIT_OK;
        }
        $this->say($force
            ? sprintf('removed %d of %d items found in table `%s` (%d scanned); %d changed since the scan and '
                . 'were left', $deleted, $n, $view->table, $r['scanned'], $n - $deleted)
            : sprintf(
                'dry run: %d items in table `%s` would be removed (%d scanned); --force removes them',
                $n,
                $view->table,
                $r['scanned']
            ));
        foreach ($r['found'] as $item) {
            $left = $item['expires_at'] - $now;
            $this->say(sprintf(
                '  %s%s %s (key %s): %s',
                $item['removed'] === false ? 'left, changed since the scan: ' : '',
                $item['kind'],
                $item['name'] === null ? '-' : self::shell($item['name']),
                self::shell($item['key']),
                $item['reason'] === 'expired'
                    ? sprintf('expired %s ago, past the %d s grace', self::duration(-$left), (int) $grace)
                    : sprintf(
                        '%s left, so taken about %s ago if with ttl 0 (a day): older than %s',
                        self::duration($left),
                        self::duration(Doctor::DEFAULT_LOCK_TTL - $left),
                        self::duration((int) $age)
                    )
            ));
        }

        return self::EXIT_OK;
    }

    /**
     * What the sweep removes, and why: `expired` before `$cutoff`; with `$age`, a `stuck_lock`, live with
     * more than LONG_LOCK_SECONDS left (the doctor's ttl-0 heuristic) and taken `$age` ago if for a day.
     *
     * @return Closure(array<string, mixed>): (string|null)
     */
    public static function selector(int $now, int $cutoff, ?int $age): Closure
    {
        return static function (array $seen) use ($now, $cutoff, $age): ?string {
            $e = $seen['expires_at'];
            if ($e !== null && $e < $cutoff) {
                return 'expired';
            }
            $ttl0 = $seen['kind'] === 'lock' && $e !== null && $age !== null && $e - $now > Doctor::LONG_LOCK_SECONDS;

            return $ttl0 && $e - $now < Doctor::DEFAULT_LOCK_TTL - $age ? 'stuck_lock' : null;
        };
    }

    /** `3600`, `90m`, `2h30m`, `1d` as seconds; false when it is not a duration. */
    private static function seconds(string $text): int|false
    {
        $text = trim($text);
        if ($text === '' || preg_match('/^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s?)?$/D', $text, $m) !== 1) {
            return false;
        }
        $m = array_map('intval', $m + [1 => 0, 0, 0, 0]);

        return $m[1] * 86400 + $m[2] * 3600 + $m[3] * 60 + $m[4];
    }
}
