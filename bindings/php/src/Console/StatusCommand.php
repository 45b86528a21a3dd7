<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Console;

use Aws\DynamoDb\Exception\DynamoDbException;
use Ddblock\Laravel\DynamoDbStore;
use Ddblock\Laravel\LockException;
use Illuminate\Support\Carbon;

/**
 * `php artisan ddblock:status NAME`: who holds lock NAME now (one strongly consistent GetItem),
 * until when, and its fencing token; the `ddblock status` command of the CLI, same fields,
 * wording and exit statuses (0 whether held or free, 1 on an error).
 */
class StatusCommand extends DdblockCommand
{
    /** @var string */
    protected $signature = 'ddblock:status
        {name : the lock name, as the app\'s code names it (Cache::lock(\'orders\') is orders)}
        {--store= : the cache store (default: the default store if it is a DynamoDB one, else the only DynamoDB store)}
        {--json : one JSON object on stdout, as `ddblock status --json`}';

    /** @var string */
    protected $description = 'Show who holds a lock, until when, and its fencing token';

    public function handle(): int
    {
        $found = $this->dynamoStore();
        if ($found === null) {
            return self::EXIT_FAILURE;
        }
        [, $store] = $found;
        $name = (string) $this->argument('name');
        $key = $this->lockKey($store, $name);
        if ($key === null) {
            return self::EXIT_FAILURE;
        }
        $view = new TableView($store);
        try {
            $item = $view->client->getItem([
                'TableName' => $view->table,
                'Key' => [$view->keyAttribute => ['S' => $key]],
                'ConsistentRead' => true,
            ])['Item'] ?? null;
        } catch (DynamoDbException $e) {
            $error = LockException::fromAws($e, 'read the owner of', $view->table, $key);
            $kind = $e->getAwsErrorCode() === 'ResourceNotFoundException' ? 'table_not_found' : 'service';
            $this->problem($error->getMessage(), $e->isConnectionError() ? 'transport' : $kind);

            return self::EXIT_FAILURE;
        }
        $now = Carbon::now()->getTimestamp();
        $holder = null;
        if (is_array($item) && $item !== []) {
            [$expiresAt] = $view->expiry($item);
            // Laravel's isExpired(): expired once now >= expires_at; an expired item still in the
            // table reads as free, as it does for Laravel and for acquire.
            if ($expiresAt === null || $now < $expiresAt) {
                [$owner, $ownerJson] = $view->owner($item);
                $holder = [
                    'owner' => $owner,
                    'owner_json' => $ownerJson,
                    'expires_at' => $expiresAt,
                    'fence' => DynamoDbStore::fenceOf($item),
                ];
            }
        }
        if ($this->option('json')) {
            $this->sayJson([
                'name' => $name,
                'key' => $key,
                'held' => $holder !== null,
                'owner' => $holder['owner_json'] ?? null,
                'expires_at' => $holder['expires_at'] ?? null,
                'expires_in' => isset($holder['expires_at']) ? $holder['expires_at'] - $now : null,
                'fence' => $holder['fence'] ?? null,
            ]);

            return self::EXIT_OK;
        }
        if ($holder === null) {
            $this->say(sprintf('lock `%s` (key %s) is free', $name, $key));

            return self::EXIT_OK;
        }
        $this->say(sprintf(
            'lock `%s` (key %s) is held by owner %s %s, %s',
            $name,
            $key,
            $holder['owner'] ?? '(not a string)',
            self::until($holder['expires_at'], $now),
            $holder['fence'] === null
                ? 'no fencing token (taken by stock Laravel)' : 'fencing token ' . $holder['fence']
        ));

        return self::EXIT_OK;
    }
}
