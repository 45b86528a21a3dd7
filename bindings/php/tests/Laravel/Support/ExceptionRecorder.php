<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests\Laravel\Support;

use Illuminate\Contracts\Debug\ExceptionHandler;
use Throwable;

/**
 * The exception handler of the ported queue tests' app: the queue worker reports a failed job's
 * exception to it (and goes on), as Laravel's handler would log it.
 */
final class ExceptionRecorder implements ExceptionHandler
{
    /** @var list<Throwable> */
    public array $reported = [];

    public function report(Throwable $e)
    {
        $this->reported[] = $e;
    }

    public function shouldReport(Throwable $e)
    {
        return true;
    }

    public function render($request, Throwable $e)
    {
        throw $e;
    }

    public function renderForConsole($output, Throwable $e)
    {
    }
}
