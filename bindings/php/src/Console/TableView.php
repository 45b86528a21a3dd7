<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Console;

use Aws\DynamoDb\DynamoDbClient;
use Ddblock\Laravel\DynamoDbStore;
use Ddblock\Laravel\LockItem;

/**
 * A store's table as the commands read it: the settings Laravel's store keeps protected (table,
 * attribute names, prefix), the key layout the installed Laravel writes, and what a raw item
 * means (owner, expiry), by the Rust core's rules (`format/item.rs`, `admin/scan.rs`).
 *
 * @internal
 */
final class TableView
{
    /** Laravel's owners (`Str::random()`) and ddblock's: 16 characters of [A-Za-z0-9]. */
    private const GENERATED_OWNER = '/^s:16:"[A-Za-z0-9]{16}";$/D';

    public DynamoDbStore $store;
    public DynamoDbClient $client;
    public string $table;
    public string $keyAttribute;
    public string $valueAttribute;
    public string $expirationAttribute;

    /** The prefix every key starts with, as the store has it (`app_:` on Laravel 8-10). */
    public string $prefix;

    /** `laravel8`, `laravel11` or `laravel12`: the layout the installed Laravel writes. */
    public string $layout;

    /** The prefix as configured (`cache.prefix`), without the `:` Laravel 8-10 append. */
    public string $configuredPrefix;

    public function __construct(DynamoDbStore $store)
    {
        $this->store = $store;
        // Laravel's store keeps these protected; read them as the store itself would.
        $settings = (fn (): array => [
            $this->table,
            $this->keyAttribute,
            $this->valueAttribute,
            $this->expirationAttribute,
        ])->call($store);
        [$this->table, $this->keyAttribute, $this->valueAttribute, $this->expirationAttribute] = $settings;
        $this->client = $store->getClient();
        $this->prefix = (string) $store->getPrefix();
        $this->layout = self::layoutOf($store);
        $this->configuredPrefix = $this->layout === 'laravel8' && $this->prefix !== ''
            ? substr($this->prefix, 0, -1) : $this->prefix;
    }

    /**
     * The key layout `$store`'s Laravel writes (docs/format.md), found by asking it: a copy
     * with the prefix `p` has prefix `p:` on Laravel 8-10 (`setPrefix()` appends `:`) and `p`
     * on 11+; its lock `x` has key `p:p:x` (8-10), `ppx` (11: `lock()` still prefixes the name)
     * or `px` (12+: the bare name, laravel/framework PR #52986).
     */
    public static function layoutOf(DynamoDbStore $store): string
    {
        $probe = clone $store;
        $probe->setPrefix('p');
        $key = $probe->lock('x', 0)->tableKey();
        if ($probe->getPrefix() === 'p:') {
            return 'laravel8';
        }

        return $key === 'ppx' ? 'laravel11' : 'laravel12';
    }

    /** The endpoint requests go to. */
    public function endpoint(): string
    {
        return (string) $this->client->getEndpoint();
    }

    /**
     * The expiry of a raw item: [Unix seconds or null, whether the attribute is there but not
     * a number]. A fraction is floored, as PHP's `>=` against an integer timestamp treats it.
     *
     * @param  array<string, mixed>  $item
     * @return array{0: int|null, 1: bool}
     */
    public function expiry(array $item): array
    {
        if (! array_key_exists($this->expirationAttribute, $item)) {
            return [null, false];
        }
        $n = $item[$this->expirationAttribute]['N'] ?? null;
        if (! is_string($n) || ! is_numeric($n) || ! is_finite((float) $n)) {
            return [null, true];
        }
        if (preg_match('/^\s*-?\d+\s*$/D', $n) === 1 && abs((float) $n) < 9.2e18) {
            return [(int) $n, false];
        }

        return [(int) max(-9.2e18, min(9.2e18, floor((float) $n))), false];
    }

    /**
     * The owner of a lock item as Laravel compares it: the number text of an `N`, the string
     * (or int) a `S` unserializes to; null for anything else. And the owner as the CLI's JSON
     * has it: a number for an `N`.
     *
     * @param  array<string, mixed>  $item
     * @return array{0: string|null, 1: int|float|string|null}
     */
    public function owner(array $item): array
    {
        $value = $item[$this->valueAttribute] ?? null;
        if (isset($value['N']) && is_string($value['N'])) {
            $n = trim($value['N']);
            $json = preg_match('/^-?\d+$/D', $n) === 1 && abs((float) $n) < 9.2e18 ? (int) $n
                : (is_numeric($n) ? (float) $n : $n);

            return [$n, $json];
        }
        if (! isset($value['S']) || ! is_string($value['S'])) {
            return [null, null];
        }
        $s = $value['S'];
        // Laravel's unserialize(): a numeric string is a number, anything else PHP's unserialize()
        // (no class is instantiated here).
        if (is_numeric($s)) {
            return [$s, $s];
        }
        $decoded = @unserialize($s, ['allowed_classes' => false]);
        if (is_string($decoded) || is_int($decoded)) {
            return [(string) $decoded, (string) $decoded];
        }

        return [null, null];
    }

    /**
     * What table key `$key` is under this store's prefix and layout: [`lock`, `cache` or `other`,
     * the lock name or cache key]. The core's `Store::classify`: with a double-prefixed layout
     * (8-11, a prefix) a key carrying the prefix twice is a lock; otherwise locks and cache
     * entries share one key space and a value of 16 [A-Za-z0-9] (a generated owner) is a lock, as
     * is an item with a fence and no value (a keep-fence release).
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
            return strncmp($rest, $p, strlen($p)) === 0
                ? ['lock', (string) substr($rest, strlen($p))]
                : ['cache', $rest];
        }
        $value = $item[$this->valueAttribute]['S'] ?? null;
        // Only a lock's keep-fence release leaves an item with a fence and no value (the Rust
        // core's scan classifies it the same way).
        $released = ! isset($item[$this->valueAttribute]) && LockItem::fenceOf($item) !== null;

        return [
            $released || (is_string($value) && preg_match(self::GENERATED_OWNER, $value) === 1) ? 'lock' : 'cache',
            $rest,
        ];
    }
}
