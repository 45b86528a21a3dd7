<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Console;

use Ddblock\Laravel\LockException;

/**
 * `php artisan ddblock:release NAME --force`: deletes lock NAME whoever holds it (the lock's
 * `forceRelease()`, one DeleteItem), for an operator who knows the holder is gone. Without
 * `--force` nothing is deleted and it exits 2, a bad command line, as `ddblock release NAME`
 * without `--owner` does; with it, as `ddblock force-release NAME`: exit 0, also when there was
 * no lock.
 */
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
                'ddblock:release deletes lock `%s` whoever holds it, and its holder may still be working: '
                . 'pass --force to delete it (see who holds it with `php artisan ddblock:status %s`; '
                . 'a holder releases its own lock with Cache::restoreLock($name, $owner)->release())',
                $name,
                $name
            ));

            return self::EXIT_USAGE;
        }
        $found = $this->dynamoStore();
        if ($found === null) {
            return self::EXIT_FAILURE;
        }
        [, $store] = $found;
        $key = $this->lockKey($store, $name);
        if ($key === null) {
            return self::EXIT_FAILURE;
        }
        try {
            $store->lock($name, 0)->forceRelease();
        } catch (LockException $e) {
            $this->problem(
                $e->getMessage(),
                $e->isConnectionError() ? 'transport'
                    : ($e->getAwsErrorCode() === 'ResourceNotFoundException' ? 'table_not_found' : 'service')
            );

            return self::EXIT_FAILURE;
        }
        if ($this->option('json')) {
            $this->sayJson(['force_released' => true, 'name' => $name, 'key' => $key]);
        } else {
            $this->say(sprintf('force-released lock `%s` (key %s)', $name, $key));
        }

        return self::EXIT_OK;
    }
}
