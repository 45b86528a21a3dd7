<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests\Laravel\Support;

use Illuminate\Contracts\Queue\Queue as QueueContract;
use Illuminate\Queue\Queue;

/**
 * The queue backend of the ported queue tests, in memory: upstream runs them on the `database`
 * queue (Testbench migrations, SQLite), which this machine cannot (no pdo_sqlite). It keeps
 * Laravel's database queue's bookkeeping: pop() reserves the oldest job of the queue and counts
 * an attempt, release() puts it back with its attempts, delete() removes it. Delays are not
 * waited for (the tests release with no delay and a backoff of 0).
 */
final class MemoryQueue extends Queue implements QueueContract
{
    /** @var array<int, array{queue: string, payload: string, attempts: int}> id => job, oldest first */
    private array $jobs = [];

    private int $nextId = 1;

    public function __construct(private string $default = 'default')
    {
    }

    public function size($queue = null)
    {
        $queue = $this->getQueue($queue);

        return count(array_filter($this->jobs, static fn (array $job): bool => $job['queue'] === $queue));
    }

    public function push($job, $data = '', $queue = null)
    {
        return $this->enqueueUsing(
            $job,
            $this->createPayload($job, $this->getQueue($queue), $data),
            $queue,
            null,
            fn ($payload, $queue) => $this->pushRaw($payload, $queue)
        );
    }

    public function pushRaw($payload, $queue = null, array $options = [])
    {
        return $this->store($this->getQueue($queue), $payload, 0);
    }

    public function later($delay, $job, $data = '', $queue = null)
    {
        return $this->push($job, $data, $queue);
    }

    public function pop($queue = null)
    {
        $queue = $this->getQueue($queue);
        foreach ($this->jobs as $id => $job) {
            if ($job['queue'] === $queue) {
                unset($this->jobs[$id]);

                $attempts = $job['attempts'] + 1; // reserving a job counts an attempt

                $connection = $this->connectionName;

                return new MemoryJob($this->container, $this, $id, $job['payload'], $attempts, $connection, $queue);
            }
        }

        return null;
    }

    /** Puts a released job back, with the attempts it has made. */
    public function releaseJob(MemoryJob $job): void
    {
        $this->store($job->getQueue(), $job->getRawBody(), $job->attempts());
    }

    public function getQueue($queue)
    {
        return $queue ?: $this->default;
    }

    private function store(string $queue, string $payload, int $attempts): int
    {
        $id = $this->nextId++;
        $this->jobs[$id] = ['queue' => $queue, 'payload' => $payload, 'attempts' => $attempts];

        return $id;
    }
}
