<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

use Closure;
use InvalidArgumentException;

/**
 * What a lock item is, in DynamoDB's wire format, on one store: its table key (the prefix put
 * once more before the lock name, checked against DynamoDB's key rules before any request), the
 * attribute names of Laravel's cache item, the owner as `add()` stores it, and what an item found
 * means (its expiry, its fencing token, whether it carries an owner). No requests. The Rust core's
 * `core/src/format/item.rs`, `format/layout.rs` (`checked_key`) and `dynamo/attr.rs`.
 *
 * @internal
 */
final class LockItem
{
    /** DynamoDB's limit on a partition key, in bytes (UTF-8). */
    public const MAX_KEY_BYTES = 2048;

    /** ddblock's fencing token on a lock item (N); Laravel neither reads nor writes it. */
    public const FENCE_ATTRIBUTE = 'ddblock_fence';

    /** The id of the acquire call that wrote a lock item (S, 16 characters of [A-Za-z0-9]). */
    public const ATTEMPT_ATTRIBUTE = 'ddblock_attempt';

    /**
     * When the holder began waiting (N, Unix ms): written by the core's waiting acquisitions for
     * fair waiting between processes; the driver only removes it when a keep-fence release
     * leaves the item.
     */
    public const SINCE_ATTRIBUTE = 'ddblock_since';

    /** @var string */
    private $prefix;

    /** @var string */
    private $keyAttribute;

    /** @var string */
    private $valueAttribute;

    /** @var string */
    private $expirationAttribute;

    /** @var Closure(mixed): array<string, string> */
    private $encode;

    /**
     * @param  string  $prefix  the cache prefix, put once more before every lock name
     * @param  string  $keyAttribute
     * @param  string  $valueAttribute
     * @param  string  $expirationAttribute
     * @param  Closure(mixed): array<string, string>  $encode  the attribute value `add()` writes
     *     for a value
     */
    public function __construct($prefix, $keyAttribute, $valueAttribute, $expirationAttribute, Closure $encode)
    {
        $this->prefix = $prefix;
        $this->keyAttribute = $keyAttribute;
        $this->valueAttribute = $valueAttribute;
        $this->expirationAttribute = $expirationAttribute;
        $this->encode = $encode;
    }

    /** @return string the name of the key attribute (`#key`) */
    public function keyAttribute()
    {
        return $this->keyAttribute;
    }

    /** @return string the name of the value attribute (`#value`), where the owner is */
    public function valueAttribute()
    {
        return $this->valueAttribute;
    }

    /** @return string the name of the expiry attribute (`#expires_at`) */
    public function expirationAttribute()
    {
        return $this->expirationAttribute;
    }

    /**
     * The table key of lock `$name` (the name as the lock holds it, prefixed once more like
     * every cache key).
     *
     * @param  string  $name
     */
    public function tableKey($name): string
    {
        return $this->prefix . $name;
    }

    /**
     * The `Key` of lock `$name`'s item.
     *
     * @param  string  $name
     * @return array<string, array<string, string>>
     *
     * @throws InvalidArgumentException  the table key is empty or over 2048 bytes
     */
    public function key($name): array
    {
        $key = $this->tableKey($name);
        // DynamoDB refuses an empty partition key and one over 2048 bytes (bytes, not
        // characters; dynalite and moto let some through): refused here, before any request, as
        // the core does, so no server ever holds such a lock.
        if ($key === '') {
            throw new InvalidArgumentException(
                'ddblock: invalid lock key "": it is empty; give a non-empty key or lock name'
            );
        }
        if (strlen($key) > self::MAX_KEY_BYTES) {
            throw new InvalidArgumentException(sprintf(
                'ddblock: invalid lock key "%s…": it is %d bytes once prefixed, and DynamoDB partition '
                . 'keys are at most %d bytes; use a shorter key (e.g. a hash of it)',
                mb_substr($key, 0, 64),
                strlen($key),
                self::MAX_KEY_BYTES
            ));
        }

        return [$this->keyAttribute => ['S' => $key]];
    }

    /**
     * The attribute value `add()` writes for `$value`: `N` when PHP's is_numeric(), else the
     * serialize()d `S`, through Laravel's own `type()` and `serialize()`.
     *
     * @param  mixed  $value
     * @return array<string, string>
     */
    public function stored($value): array
    {
        return ($this->encode)($value);
    }

    /**
     * Whether item `$item` holds the stored value `$stored`, compared as DynamoDB compares
     * attribute values: same type, and for N the same number (DynamoDB stores `007` as `7`).
     *
     * @param  array<string, mixed>  $item
     * @param  array<string, string>  $stored
     */
    public function carries(array $item, array $stored): bool
    {
        $value = $item[$this->valueAttribute] ?? null;
        if (! is_array($value)) {
            return false;
        }
        if (isset($stored['N'])) {
            return isset($value['N']) && Numbers::equal((string) $value['N'], $stored['N']);
        }

        return isset($value['S']) && $value['S'] === $stored['S'];
    }

    /**
     * The expiry of a lock item, or null when it has none or it is not a number (then the
     * acquire condition never takes it over).
     *
     * @param  array<string, mixed>  $item
     */
    public function expiryOf(array $item): ?int
    {
        $n = $item[$this->expirationAttribute]['N'] ?? null;
        if (! is_string($n) || ! is_numeric($n)) {
            return null;
        }
        $f = floor((float) $n);

        return is_finite($f) && abs($f) < 9.2e18 ? (int) $f : null;
    }

    /**
     * The fencing token of an item (or of UpdateItem's `Attributes`), when it has one.
     *
     * @param  array<string, mixed>  $item
     */
    public static function fenceOf(array $item): ?int
    {
        $n = $item[self::FENCE_ATTRIBUTE]['N'] ?? null;

        return is_string($n) && ctype_digit($n) ? (int) $n : null;
    }

    /**
     * Whether an item is a lock released in keep-fence mode: it has no value (no owner). The
     * keep-fence release is the only write that leaves a lock item without one (ddblock's and
     * Laravel's writes always have one); its fencing token, when the lock had one, stays.
     *
     * @param  array<string, mixed>  $item
     */
    public static function isReleased(array $item, string $valueAttribute): bool
    {
        return ! isset($item[$valueAttribute]);
    }

    /**
     * The id of the acquire call that wrote an item, when it carries one.
     *
     * @param  array<string, mixed>  $item
     * @return mixed  a string, or null
     */
    public static function attemptOf(array $item)
    {
        return $item[self::ATTEMPT_ATTRIBUTE]['S'] ?? null;
    }
}
