<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests\Laravel\Support;

use BadMethodCallException;
use Illuminate\Contracts\Queue\Job;

/** A mock of the queue Job contract (Support\Mockery): each method answers its expectation. */
final class JobMock implements Job
{
    /** @var array<string, JobMockExpectation> */
    private array $expectations = [];

    public function shouldReceive(string $method): JobMockExpectation
    {
        return $this->expectations[$method] = new JobMockExpectation();
    }

    /** @return array<string, JobMockExpectation> */
    public function expectations(): array
    {
        return $this->expectations;
    }

    /** @return mixed */
    private function answer(string $method)
    {
        $expectation = $this->expectations[$method] ?? null;
        if ($expectation === null) {
            throw new BadMethodCallException("Received JobMock::$method(), but no expectations were specified");
        }
        $expectation->calls++;

        return $expectation->return;
    }

    public function uuid()
    {
        return $this->answer(__FUNCTION__);
    }

    public function getJobId()
    {
        return $this->answer(__FUNCTION__);
    }

    public function payload()
    {
        return $this->answer(__FUNCTION__);
    }

    public function fire()
    {
        return $this->answer(__FUNCTION__);
    }

    public function release($delay = 0)
    {
        return $this->answer(__FUNCTION__);
    }

    public function isReleased()
    {
        return $this->answer(__FUNCTION__);
    }

    public function delete()
    {
        return $this->answer(__FUNCTION__);
    }

    public function isDeleted()
    {
        return $this->answer(__FUNCTION__);
    }

    public function isDeletedOrReleased()
    {
        return $this->answer(__FUNCTION__);
    }

    public function attempts()
    {
        return $this->answer(__FUNCTION__);
    }

    public function hasFailed()
    {
        return $this->answer(__FUNCTION__);
    }

    public function markAsFailed()
    {
        return $this->answer(__FUNCTION__);
    }

    public function fail($e = null)
    {
        return $this->answer(__FUNCTION__);
    }

    public function maxTries()
    {
        return $this->answer(__FUNCTION__);
    }

    public function maxExceptions()
    {
        return $this->answer(__FUNCTION__);
    }

    public function timeout()
    {
        return $this->answer(__FUNCTION__);
    }

    public function retryUntil()
    {
        return $this->answer(__FUNCTION__);
    }

    public function getName()
    {
        return $this->answer(__FUNCTION__);
    }

    public function resolveName()
    {
        return $this->answer(__FUNCTION__);
    }

    public function getConnectionName()
    {
        return $this->answer(__FUNCTION__);
    }

    public function getQueue()
    {
        return $this->answer(__FUNCTION__);
    }

    public function getRawBody()
    {
        return $this->answer(__FUNCTION__);
    }
}
