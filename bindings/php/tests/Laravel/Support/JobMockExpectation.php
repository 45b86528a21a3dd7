<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests\Laravel\Support;

/** One `shouldReceive()` of a JobMock (Support\Mockery). */
final class JobMockExpectation
{
    /** @var mixed */
    public $return = null;

    /** exactly this many calls (`once()`: 1), or null for any number */
    public ?int $times = null;

    public int $calls = 0;

    /** @param mixed $value */
    public function andReturn($value): self
    {
        $this->return = $value;

        return $this;
    }

    public function once(): self
    {
        $this->times = 1;

        return $this;
    }
}
