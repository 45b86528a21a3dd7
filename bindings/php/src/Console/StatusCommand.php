<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Console;

use Aws\DynamoDb\Exception\DynamoDbException;
use Ddblock\Laravel\LockException;
use Ddblock\Laravel\LockFactory;
use Ddblock\Laravel\TableView;
use Illuminate\Support\Carbon;

/** `php artisan ddblock:status NAME`: who holds a lock, until when, and its fencing token (the CLI's `status`). */
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
        $name = (string) $this->argument('name');
        $key = $found === null ? null : $this->lockKey($found[1], $name);
        if ($key === null) {
            return self::EXIT_FAILURE;
        }
        $view = new TableView($found[1]);
        try {
            $item = $view->client->getItem([
                'TableName' => $view->table,
                'Key' => [$view->keyAttribute => ['S' => $key]],
                'ConsistentRead' => true,
            ])['Item'] ?? [];
        } catch (DynamoDbException $e) {
            return $this->failed($e, LockException::fromAws($e, 'read the owner of', $view->table, $key)->getMessage());
        }
        $now = Carbon::now()->getTimestamp();
        [$expiresAt] = $view->expiry($item);
        // Laravel's isExpired(): an expired item still in the table reads as free.
        $held = $item !== [] && ($expiresAt === null || $now < $expiresAt);
        $owner = $held ? $view->owner($item) : null;
        $fence = $held ? LockFactory::fenceOf($item) : null;
        if ($this->option('json')) {
            $this->sayJson([
                'name' => $name,
                'key' => $key,
                'held' => $held,
                'owner' => $owner,
                'expires_at' => $held ? $expiresAt : null,
                'expires_in' => $held && $expiresAt !== null ? $expiresAt - $now : null,
                'fence' => $fence,
            ]);
        } elseif (! $held) {
            $this->say(sprintf('lock %s (key %s) is free', self::shell($name), self::shell($key)));
        } else {
            $this->say(sprintf(
                'lock %s (key %s) is held by owner %s %s, %s',
                self::shell($name),
                self::shell($key),
                $owner === null ? '(not a string)' : (string) $owner,
                self::until($expiresAt, $now),
                $fence === null ? 'no fencing token (taken by stock Laravel)' : 'fencing token ' . $fence
            ));
        }

        return self::EXIT_OK;
    }
}
