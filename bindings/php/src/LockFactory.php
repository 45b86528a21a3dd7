<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

use Aws\DynamoDb\DynamoDbClient;
use Closure;
use Ddblock\Laravel\Events\Emitter;
use InvalidArgumentException;

/**
 * A store's locks: what their items are (key, attribute names, stored owner, expiry, fence), and
 * the requests and acquire attempts made with the store's settings.
 *
 * @internal
 */
final class LockFactory
{
    public const MAX_KEY_BYTES = 2048;
    public const FENCE_ATTRIBUTE = 'ddblock_fence';
    public const ATTEMPT_ATTRIBUTE = 'ddblock_attempt';
    /** When a waiting holder began to wait (N, Unix ms): the core writes it, a keep-fence release removes it. */
    public const SINCE_ATTRIBUTE = 'ddblock_since';
    /** How far before a keep-fence release its `expires_at` is set: a day. */
    public const RELEASED_EXPIRY_BACK_SECONDS = 86400;

    public DynamoDbClient $dynamo;
    public string $table;
    public string $prefix;
    public string $keyAttribute;
    public string $valueAttribute;
    public string $expirationAttribute;
    public int $margin;
    /** Where the locks' events and warnings go. */
    public Emitter $events;
    private bool $keepFence;
    /** @var array{0: callable|null, 1: callable|null} test seam: attempt ids, fence bases */
    private array $lockIds;
    /** @var array<string, Closure> the store's encode (add()'s), decode (get()'s), now and expiry of a ttl */
    private array $laravel;

    /** The settings `$store` has now (a subclass or setPrefix() may change the prefix). */
    public function __construct(DynamoDbStore $store)
    {
        // Laravel's store keeps them protected, and its value encoding and clock too.
        [$events, $this->dynamo, $this->table, $this->prefix, $this->keyAttribute, $this->valueAttribute,
            $this->expirationAttribute, $this->margin, $mode, $this->lockIds, $this->laravel] = (fn (): array => [
                $this->lockEvents, $this->dynamo, $this->table, $this->prefix, $this->keyAttribute,
                $this->valueAttribute, $this->expirationAttribute, $this->clockSkewMargin, $this->releaseMode,
                $this->lockIds, [
                    'encode' => fn ($value): array => [$this->type($value) => (string) $this->serialize($value)],
                    'decode' => fn ($stored) => $this->unserialize($stored),
                    'now' => fn (): int => $this->currentTime(),
                    'expiry' => fn ($seconds): int => (int) $this->toTimestamp($seconds),
                ],
            ])->call($store);
        $this->keepFence = $mode === DynamoDbStore::RELEASE_KEEP_FENCE;
        $layout = static fn (): string => TableView::layoutOf($store);
        $this->events = new Emitter($events, $this->table, $this->prefix, $layout);
    }

    public function requests(): LockRequests
    {
        return new LockRequests($this->dynamo, $this);
    }

    public function attempt(): LockAttempt
    {
        return new LockAttempt($this->requests(), $this);
    }

    public function now(): int
    {
        return ($this->laravel['now'])();
    }

    /** @param  int|float  $seconds */
    public function expiry($seconds): int
    {
        return ($this->laravel['expiry'])($seconds);
    }

    /** The `expires_at` a keep-fence release writes (now minus a day); null in delete mode. */
    public function releasedExpiry(): ?int
    {
        return $this->keepFence ? $this->now() - self::RELEASED_EXPIRY_BACK_SECONDS : null;
    }

    /** A fresh attempt id: 16 characters of [A-Za-z0-9] from the CSPRNG. */
    public function attemptId(): string
    {
        $alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

        return $this->lockIds[0] !== null ? (string) ($this->lockIds[0])()
            : implode('', array_map(static fn (): string => $alphabet[random_int(0, 61)], range(1, 16)));
    }

    /** Where a fence starts when the item has none: the clock in microseconds, exactly. */
    public function fenceBase(): int
    {
        [$fraction, $seconds] = explode(' ', microtime());

        return $this->lockIds[1] !== null ? (int) ($this->lockIds[1])()
            : (int) $seconds * 1000000 + (int) substr($fraction, 2, 6);
    }

    /** The table key of lock `$name` (the name as the lock holds it, prefixed once more). */
    public function tableKey(string $name): string
    {
        return $this->prefix . $name;
    }

    /**
     * The `Key` of lock `$name`, refused before any request as the core refuses it.
     *
     * @return array<string, array<string, string>>
     *
     * @throws InvalidArgumentException
     */
    public function key(string $name): array
    {
        return [$this->keyAttribute => ['S' => self::checked($this->tableKey($name))]];
    }

    /**
     * `$key` if DynamoDB takes it as a partition key: not empty, at most 2048 bytes.
     *
     * @throws InvalidArgumentException
     */
    public static function checked(string $key): string
    {
        if ($key === '') {
            throw new InvalidArgumentException(
                'ddblock: invalid lock key "": it is empty; give a non-empty key or lock name'
            );
        }
        // Bytes, not characters: moto and dynalite let some longer keys through.
        if (strlen($key) > self::MAX_KEY_BYTES) {
            throw new InvalidArgumentException(sprintf(
                'ddblock: invalid lock key "%s…": it is %d bytes once prefixed, and DynamoDB partition keys are at '
                . 'most %d bytes; use a shorter key (e.g. a hash of it)',
                mb_substr($key, 0, 64),
                strlen($key),
                self::MAX_KEY_BYTES
            ));
        }

        return $key;
    }

    /**
     * The attribute value add() writes for `$owner`: N when numeric, else the serialized S.
     *
     * @param  mixed  $owner
     * @return array<string, string>
     */
    public function stored($owner): array
    {
        return ($this->laravel['encode'])($owner);
    }

    /**
     * Whether `$item` holds `$stored`, compared as DynamoDB compares values (`007` is `7`).
     *
     * @param  array<string, mixed>  $item
     * @param  array<string, string>  $stored
     */
    public function carries(array $item, array $stored): bool
    {
        $value = $item[$this->valueAttribute] ?? [];
        if (isset($stored['N'])) {
            return isset($value['N']) && self::number((string) $value['N']) === self::number($stored['N']);
        }

        return isset($value['S']) && $value['S'] === $stored['S'];
    }

    /**
     * A DynamoDB number text as [negative, significant digits, exponent]: 38 digits, no float.
     *
     * @return array{0: bool, 1: string, 2: int}|string  the text itself when it is not a number
     */
    private static function number(string $text)
    {
        if (preg_match('/^\s*([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?\s*$/D', $text, $m) !== 1) {
            return $text;
        }
        [, $sign, $int, $frac] = $m + [3 => ''];
        $digits = $int . $frac;
        $significant = trim($digits, '0');
        if ($digits === '' || $significant === '') {
            return $digits === '' ? $text : [false, '', 0]; // zero, whatever its sign or exponent
        }
        $point = strlen($int) - (strlen($digits) - strlen(ltrim($digits, '0'))) + (int) ($m[4] ?? 0);

        return [$sign === '-', $significant, $point];
    }

    /**
     * The owner in `$item` as Laravel's get() reads it (an int for an N), or null.
     *
     * @param  array<string, mixed>  $item
     * @return mixed
     */
    public function owner(array $item)
    {
        $value = $item[$this->valueAttribute] ?? [];
        $stored = $value['S'] ?? $value['N'] ?? null;

        return $stored === null ? null : ($this->laravel['decode'])($stored);
    }

    /**
     * The expiry of `$item`, or null when it has none or it is not a number.
     *
     * @param  array<string, mixed>  $item
     */
    public function expiryOf(array $item): ?int
    {
        $n = $item[$this->expirationAttribute]['N'] ?? null;
        $f = is_string($n) && is_numeric($n) ? floor((float) $n) : NAN;

        return is_finite($f) && abs($f) < 9.2e18 ? (int) $f : null;
    }

    /**
     * The fencing token of an item (or of UpdateItem's `Attributes`).
     *
     * @param  array<string, mixed>  $item
     */
    public static function fenceOf(array $item): ?int
    {
        $n = $item[self::FENCE_ATTRIBUTE]['N'] ?? null;

        return is_string($n) && ctype_digit($n) ? (int) $n : null;
    }
}
