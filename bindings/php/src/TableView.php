<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

use Aws\DynamoDb\DynamoDbClient;
use Aws\DynamoDb\Exception\DynamoDbException;

/**
 * A store's table as the admin code reads it: settings, key layout, what an item is (the core's
 * `admin/scan.rs` rules), the scan, and the sweep that removes items found by it.
 *
 * @internal
 */
final class TableView
{
    /** Laravel's owners (`Str::random()`) and ddblock's: 16 characters of [A-Za-z0-9]. */
    private const GENERATED_OWNER = '/^s:16:"[A-Za-z0-9]{16}";$/D';

    public DynamoDbClient $client;
    public string $table;
    public string $keyAttribute;
    public string $valueAttribute;
    public string $expirationAttribute;
    /** The prefix keys start with, as the store has it (`app_:` on Laravel 8-10). */
    public string $prefix;
    /** `laravel8`, `laravel11` or `laravel12`: the layout the installed Laravel writes. */
    public string $layout;
    /** The prefix as configured, without the `:` Laravel 8-10 append. */
    public string $configuredPrefix;

    public function __construct(public DynamoDbStore $store)
    {
        [$this->table, $this->keyAttribute, $this->valueAttribute, $this->expirationAttribute] = (fn (): array => [
            $this->table,
            $this->keyAttribute,
            $this->valueAttribute,
            $this->expirationAttribute,
        ])->call($store);
        $this->client = $store->getClient();
        $this->prefix = (string) $store->getPrefix();
        $this->layout = self::layoutOf($store);
        $this->configuredPrefix = $this->layout === 'laravel8' && $this->prefix !== ''
            ? substr($this->prefix, 0, -1) : $this->prefix;
    }

    /**
     * The layout `$store`'s Laravel writes, asked of a copy with prefix `p`: `p:p:x` (8-10), `ppx` (11), `px` (12+).
     */
    public static function layoutOf(DynamoDbStore $store): string
    {
        $probe = clone $store;
        $probe->setPrefix('p');
        if ($probe->getPrefix() === 'p:') {
            return 'laravel8';
        }

        return $probe->lock('x', 0)->tableKey() === 'ppx' ? 'laravel11' : 'laravel12';
    }

    public function endpoint(): string
    {
        return (string) $this->client->getEndpoint();
    }

    /**
     * The expiry of a raw item: [Unix seconds or null, whether it is there but not a number].
     *
     * @param  array<string, mixed>  $item
     * @return array{0: int|null, 1: bool}
     */
    public function expiry(array $item): array
    {
        $n = $item[$this->expirationAttribute]['N'] ?? null;
        if (! is_string($n) || ! is_numeric($n) || ! is_finite((float) $n)) {
            return [null, array_key_exists($this->expirationAttribute, $item)];
        }
        // Exact for integers; a fraction is floored, as PHP's `>=` against an integer treats it.
        $exact = preg_match('/^\s*-?\d+\s*$/D', $n) === 1 && abs((float) $n) < 9.2e18;

        return [$exact ? (int) $n : (int) max(-9.2e18, min(9.2e18, floor((float) $n))), false];
    }

    /**
     * The owner of a lock item as the CLI's JSON has it: a number for an N, else the string.
     *
     * @param  array<string, mixed>  $item
     * @return int|float|string|null
     */
    public function owner(array $item)
    {
        $value = $item[$this->valueAttribute] ?? null;
        if (isset($value['N']) && is_string($value['N'])) {
            $n = trim($value['N']);

            return preg_match('/^-?\d+$/D', $n) === 1 && abs((float) $n) < 9.2e18 ? (int) $n
                : (is_numeric($n) ? (float) $n : $n);
        }
        $s = $value['S'] ?? null;
        // Laravel's unserialize(): a numeric string is a number; no class is instantiated here.
        $decoded = ! is_string($s) || is_numeric($s) ? $s : @unserialize($s, ['allowed_classes' => false]);

        return is_string($decoded) || is_int($decoded) ? (string) $decoded : null;
    }

    /**
     * What table key `$key` is: [`lock`, `cache` or `other`, the lock name or cache key].
     *
     * @param  array<string, mixed>  $item
     * @return array{0: string, 1: string|null}
     */
    public function classify(string $key, array $item): array
    {
        $p = $this->prefix;
        if (strncmp($key, $p, strlen($p)) !== 0) {
            return ['other', null];
        }
        $rest = (string) substr($key, strlen($p));
        if ($p !== '' && $this->layout !== 'laravel12') {
            $lock = str_starts_with($rest, $p);
            [$kind, $name] = [$lock ? 'lock' : 'cache', $lock ? (string) substr($rest, strlen($p)) : $rest];
        } else {
            $value = $item[$this->valueAttribute]['S'] ?? null;
            $kind = is_string($value) && preg_match(self::GENERATED_OWNER, $value) === 1 ? 'lock' : 'cache';
            $name = $rest;
        }
        // Only a keep-fence release leaves an item with a fence and no value.
        $released = ! isset($item[$this->valueAttribute]) && LockFactory::fenceOf($item) !== null;

        return [$released ? 'lock' : $kind, $name];
    }

    /**
     * The Scan pages of the items whose key starts with `$prefix` (every item when it is '').
     *
     * @return iterable<array<string, mixed>>
     */
    public function pages(string $prefix): iterable
    {
        $params = ['TableName' => $this->table];
        if ($prefix !== '') {
            $params += [
                'FilterExpression' => 'begins_with(#key, :prefix)',
                'ExpressionAttributeNames' => ['#key' => $this->keyAttribute],
                'ExpressionAttributeValues' => [':prefix' => ['S' => $prefix]],
            ];
        }

        return $this->client->getPaginator('Scan', $params);
    }

    /**
     * Removes the items under the store's prefix (every item with `$all`) that `$select` gives a
     * reason for: `expired` ones while `expires_at < $cutoff`, any other only while unchanged
     * since the scan read it. Nothing with `$dryRun`.
     *
     * @param  callable(array<string, mixed>): (string|null)  $select  gets key, kind, name, expires_at, item
     * @return array{scanned: int, found: list<array<string, mixed>>}
     */
    public function sweep(callable $select, bool $dryRun = false, bool $all = false, int $cutoff = 0): array
    {
        [$scanned, $found] = [0, []];
        foreach ($this->pages($all ? '' : $this->prefix) as $page) {
            $scanned += (int) ($page['ScannedCount'] ?? 0);
            foreach ($page['Items'] ?? [] as $item) {
                $key = $item[$this->keyAttribute]['S'] ?? null;
                if (! is_string($key)) {
                    continue;
                }
                [$kind, $name] = $this->classify($key, $item);
                $seen = ['key' => $key, 'kind' => $kind, 'name' => $name, 'expires_at' => $this->expiry($item)[0]];
                $reason = $select($seen + ['item' => $item]);
                if ($reason !== null) {
                    $removed = $dryRun ? null : $this->delete($item, $reason === 'expired' ? $cutoff : null);
                    $found[] = $seen + ['reason' => $reason, 'removed' => $removed];
                }
            }
        }

        return ['scanned' => $scanned, 'found' => $found];
    }

    /**
     * One DeleteItem of `$item` while it is expired before `$cutoff`, or else while it is as read.
     *
     * @param  array<string, mixed>  $item
     */
    private function delete(array $item, ?int $cutoff): bool
    {
        $names = ['#e' => $this->expirationAttribute];
        [$conditions, $values] = [['#e < :e'], [':e' => ['N' => (string) $cutoff]]];
        if ($cutoff === null) {
            $names += ['#k' => $this->keyAttribute, '#v' => $this->valueAttribute,
                '#a' => LockFactory::ATTEMPT_ATTRIBUTE, '#f' => LockFactory::FENCE_ATTRIBUTE];
            [$conditions, $values] = [['attribute_exists(#k)'], []];
            foreach (['#e', '#v', '#a', '#f'] as $n) {
                $value = $item[$names[$n]] ?? null;
                $conditions[] = $value === null ? "attribute_not_exists($n)" : "$n = :" . substr($n, 1);
                $values += $value === null ? [] : [':' . substr($n, 1) => $value];
            }
        }
        try {
            $this->client->deleteItem(array_filter([
                'TableName' => $this->table,
                'Key' => [$this->keyAttribute => $item[$this->keyAttribute]],
                'ConditionExpression' => implode(' AND ', $conditions),
                'ExpressionAttributeNames' => $names,
                'ExpressionAttributeValues' => $values,
            ]));

            return true;
        } catch (DynamoDbException $e) {
            if ($e->getAwsErrorCode() === 'ConditionalCheckFailedException') {
                return false;
            }
            throw $e;
        }
    }
}
