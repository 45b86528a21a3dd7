<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests\Support;

/**
 * One combination of CrossLanguageTest: a server, a key layout, a peer (`cli`, `rust`, `python`
 * or `node`) and an owner (letters, or digits: stored as N).
 */
final class Crossing
{
    public function __construct(
        public string $server,
        public string $layout,
        public string $which,
        public string $owner
    ) {
    }

    /** The lock name of a test: `$prefix`, the peer, and whether the owner is numeric. */
    public function lockName(string $prefix): string
    {
        return "$prefix-{$this->which}-" . (ctype_digit($this->owner) ? 'n' : 's');
    }
}
