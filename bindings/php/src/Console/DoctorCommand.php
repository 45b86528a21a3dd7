<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Console;

use Aws\Exception\AwsException;

/**
 * `php artisan ddblock:doctor`: checks the store's table and this host's clock and says what to
 * fix; the `ddblock doctor` command of the CLI (same checks, lines and exit statuses: 1 when a
 * check fails, else 0, warnings included), with the layout the installed Laravel writes, plus
 * the `clock` check ({@see \Ddblock\Laravel\ClockOffset}).
 */
class DoctorCommand extends DdblockCommand
{
    /** @var string */
    protected $signature = 'ddblock:doctor
        {--store= : the cache store (default: the default store if it is a DynamoDB one, else the only DynamoDB store)}
        {--no-scan : skip the item checks (no Scan of the table)}
        {--all : scan every item, not only those under the prefix}
        {--min-remaining=3600 : a live lock with more than this many seconds left (at most 86460) is a ttl-0 lock}
        {--json : one JSON object on stdout, as `ddblock doctor --json`}';

    /** @var string */
    protected $description = 'Check the DynamoDB cache table, its locks and this host\'s clock';

    public function handle(): int
    {
        $found = $this->dynamoStore();
        if ($found === null) {
            return self::EXIT_FAILURE;
        }
        [$storeName, $store, $stock] = $found;
        $minRemaining = (string) $this->option('min-remaining');
        if (preg_match('/^\d+$/D', $minRemaining) !== 1) {
            $this->problem(sprintf('--min-remaining must be a whole number of seconds, not "%s"', $minRemaining));

            return self::EXIT_USAGE;
        }
        $view = new TableView($store);
        try {
            $r = (new Doctor($view))->run(! $this->option('no-scan'), (bool) $this->option('all'), (int) $minRemaining);
        } catch (AwsException $e) {
            $this->problem(sprintf(
                'doctor could not check table `%s` at %s: %s',
                $view->table,
                $view->endpoint(),
                $e->isConnectionError() || $e->getAwsErrorCode() === null
                    ? 'no answer from DynamoDB: ' . $e->getMessage()
                    : $e->getAwsErrorCode() . ': ' . ($e->getAwsErrorMessage() ?? 'no message')
            ), $e->isConnectionError() ? 'transport' : 'service');

            return self::EXIT_FAILURE;
        }
        if ($this->option('json')) {
            $this->sayJson([
                'table' => $view->table,
                'endpoint' => $view->endpoint(),
                'store' => $storeName,
                'layout' => $view->layout,
                'prefix' => $view->prefix,
                'healthy' => $r['healthy'],
                'table_status' => $r['table_status'],
                'billing_mode' => $r['billing_mode'],
                'ttl' => $r['ttl'],
                'checks' => $r['checks'],
                'counts' => $r['counts'],
                'default_ttl_locks' => $r['default_ttl_locks'],
                'clock' => $r['clock'],
            ]);
        } else {
            $this->say(sprintf(
                'table `%s` at %s (cache store `%s`%s, layout `%s`, prefix `%s`)',
                $view->table,
                $view->endpoint(),
                $storeName,
                $stock ? ', Laravel\'s own lock' : '',
                $view->layout,
                $view->prefix
            ));
            foreach ($r['checks'] as $check) {
                $this->say(sprintf('  %-7s %-17s %s', $check['status'], $check['id'], $check['detail']));
                if ($check['fix'] !== null) {
                    $this->say(sprintf('  %-7s %-17s fix: %s', '', '', $check['fix']));
                }
            }
            foreach ($r['default_ttl_locks'] as $lock) {
                $this->say(sprintf(
                    '          ttl-0 lock `%s` (key %s), %s',
                    $lock['name'] ?? '?',
                    $lock['key'],
                    self::until($lock['expires_at'], $r['now'])
                ));
            }
            $this->say($r['healthy'] ? 'no failures' : 'FAILED: see the fixes above');
        }

        return $r['healthy'] ? self::EXIT_OK : self::EXIT_FAILURE;
    }
}
