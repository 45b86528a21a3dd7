<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests\Laravel\Support;

use Illuminate\Container\Container;
use Illuminate\Contracts\Queue\Job as JobContract;
use Illuminate\Queue\Jobs\Job;

/** A job popped from a MemoryQueue, as Laravel's DatabaseJob is one popped from the database queue. */
final class MemoryJob extends Job implements JobContract
{
    public function __construct(
        Container $container,
        private MemoryQueue $memory,
        private int $id,
        private string $payload,
        private int $attempts,
        string $connectionName,
        string $queue
    ) {
        $this->container = $container;
        $this->connectionName = $connectionName;
        $this->queue = $queue;
    }

    public function release($delay = 0)
    {
        parent::release($delay);

        $this->memory->releaseJob($this);
    }

    public function attempts()
    {
        return $this->attempts;
    }

    public function getJobId()
    {
        return $this->id;
    }

    public function getRawBody()
    {
        return $this->payload;
    }
}
