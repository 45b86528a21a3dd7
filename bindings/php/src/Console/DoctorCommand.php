<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Console;

use Aws\Exception\AwsException;
use Ddblock\Laravel\TableView;

/** `php artisan ddblock:doctor`: checks the store's table and this host's clock (the CLI's `doctor`). */
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
            $doctor = new Doctor($view, $this->storeOption);
            $r = $doctor->run(! $this->option('no-scan'), (bool) $this->option('all'), (int) $minRemaining);
        } catch (AwsException $e) {
            return $this->failed($e, 'doctor could not check', $view);
        }
        if ($this->option('json')) {
            $this->sayJson(['table' => $view->table, 'endpoint' => $view->endpoint(), 'store' => $storeName,
                'layout' => $view->layout, 'prefix' => $view->prefix] + array_diff_key($r, ['now' => 0]));
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
                foreach (explode("\n", $check['fix'] ?? '') as $i => $line) {
                    if ($line !== '') {
                        $this->say(str_repeat(' ', 28) . ($i === 0 ? 'fix: ' : '     ') . $line);
                    }
                }
            }
            foreach ($r['default_ttl_locks'] as $lock) {
                $this->say(sprintf(
                    '          ttl-0 lock %s (key %s), %s',
                    self::shell((string) $lock['name']),
                    self::shell($lock['key']),
                    self::until($lock['expires_at'], $r['now'])
                ));
            }
            $this->say($r['healthy'] ? 'no failures' : 'FAILED: see the fixes above');
        }

        return $r['healthy'] ? self::EXIT_OK : self::EXIT_FAILURE;
    }
}
