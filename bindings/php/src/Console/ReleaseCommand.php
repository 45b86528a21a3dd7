<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Console;

use Ddblock\Laravel\LockException;

/** `php artisan ddblock:release NAME --force`: deletes a lock whoever holds it (the CLI's `force-release`). */
class ReleaseCommand extends DdblockCommand
{
    /** @var string */
    protected $signature = 'ddblock:release
        {name : the lock name, as the app\'s code names it}
        {--force : delete the lock whoever holds it (required: the holder may still be working)}
        {--store= : the cache store (default: the default store if it is a DynamoDB one, else the only DynamoDB store)}
        {--json : one JSON object on stdout, as `ddblock force-release --json`}';

    /** @var string */
    protected $description = 'Delete a lock whoever holds it (--force): for a lock whose holder is gone';

    public function handle(): int
    {
        $name = (string) $this->argument('name');
        if (! $this->option('force')) {
            $this->problem(sprintf(
                'ddblock:release deletes lock %s whoever holds it, and its holder may still be working: pass --force '
                . 'to delete it (see who holds it with `php artisan ddblock:status %s`; a holder releases its own lock '
                . 'with Cache::restoreLock($name, $owner)->release())',
                self::shell($name),
                self::shell($name)
            ));

            return self::EXIT_USAGE;
        }
        $found = $this->dynamoStore();
        $key = $found === null ? null : $this->lockKey($found[1], $name);
        if ($key === null) {
            return self::EXIT_FAILURE;
        }
        $store = $found[1];
        $table = (fn () => $this->table)->call($store);
        try {
            // The lock's forceRelease() request, which says whether there was an item.
            $released = (fn (): bool => $this->locks->requests()
                ->forceRelease($this->name, $this->locks->releasedExpiry()))->call($store->lock($name, 0));
        } catch (LockException $e) {
            return $this->failed($e, $e->getMessage());
        }
        $result = ['released' => $released, 'force_released' => $released, 'name' => $name, 'key' => $key];
        if (! $released) {
            // A name pasted without quotes loses its backslashes: say so rather than report a release.
            $this->problem(sprintf(
                'no lock named %s in table `%s` (key %s); names are exact: quote names that hold backslashes',
                self::shell($name, true),
                $table,
                self::shell($key)
            ), 'not_found', false);
            if ($this->option('json')) {
                $this->sayJson($result + ['reason' => 'not_found', 'table' => $table]);
            }

            return self::EXIT_FAILURE;
        }
        $this->option('json') ? $this->sayJson($result)
            : $this->say(sprintf('force-released lock %s (key %s)', self::shell($name), self::shell($key)));

        return self::EXIT_OK;
    }
}
