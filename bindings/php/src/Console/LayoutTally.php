<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Console;

/**
 * The doctor's layout check: keys in the table that another Laravel version's layout would
 * write, a sign that another app or process on the table uses another layout than this app's
 * Laravel (then their locks never meet). The Rust core's rule (`admin/layout_check.rs`), with
 * the layout the installed Laravel writes.
 *
 * @internal
 */
final class LayoutTally
{
    private const VERSIONS = ['laravel8' => '8-10', 'laravel11' => '11', 'laravel12' => '11+'];

    private string $prefix;
    private string $layout;

    /** @var array<string, array{0: int, 1: string}> layout => [count, an example key] */
    private array $other = [];

    /**
     * @param  string  $prefix  the prefix as configured (without Laravel 8-10's `:`)
     * @param  string  $layout  `laravel8`, `laravel11` or `laravel12`
     */
    public function __construct(string $prefix, string $layout)
    {
        $this->prefix = $prefix;
        $this->layout = $layout;
    }

    /** The layout `$key` suggests, when it is not this one. */
    public function suggests(string $key): ?string
    {
        $p = $this->prefix;
        if ($p === '' || strncmp($key, $p, strlen($p)) !== 0) {
            return null; // every layout writes the same keys without a prefix
        }
        $rest = (string) substr($key, strlen($p));
        if (strncmp($rest, ':', 1) === 0) {
            $theirs = 'laravel8'; // setPrefix() appends ':' in 8-10
        } elseif (strncmp($rest, $p, strlen($p)) === 0) {
            $theirs = 'laravel11'; // a double prefix without ':' (11; 8-10 would have ':')
        } else {
            // A single prefix without ':' is what 11 and 12 write for cache keys, and 12 for locks:
            // it tells nothing unless 8-10's ':' is expected.
            return $this->layout === 'laravel8' ? 'laravel12' : null;
        }
        // 12 writes single-prefixed lock keys; a double-prefixed one is 11's (or a cache key that
        // itself starts with the prefix: the check is a hint, hence a warning).
        return $theirs === $this->layout ? null : $theirs;
    }

    public function see(string $key): void
    {
        $theirs = $this->suggests($key);
        if ($theirs === null) {
            return;
        }
        if (isset($this->other[$theirs])) {
            $this->other[$theirs][0]++;
        } else {
            $this->other[$theirs] = [1, $key];
        }
    }

    /**
     * The check: [status, detail].
     *
     * @return array{0: string, 1: string}
     */
    public function check(): array
    {
        if ($this->other === []) {
            return ['ok', sprintf('no key looks like another Laravel version\'s layout than `%s`', $this->layout)];
        }
        $theirs = null;
        foreach ($this->other as $layout => [$n]) {
            if ($theirs === null || $n >= $this->other[$theirs][0]) { // the last of equals, as Rust's max_by_key
                $theirs = $layout;
            }
        }
        [$n, $example] = $this->other[$theirs];
        $versions = self::VERSIONS[$theirs];

        return ['warn', sprintf(
            '%d keys look like Laravel %s\'s layout (e.g. `%s`), but this app\'s Laravel writes `%s`: whatever wrote '
            . 'them (an app on Laravel %s, or a ddblock front with DDBLOCK_LAYOUT=%s) never meets this app\'s locks',
            $n,
            $versions,
            $example,
            $this->layout,
            $versions,
            $theirs
        )];
    }
}
