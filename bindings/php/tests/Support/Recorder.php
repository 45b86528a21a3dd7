<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests\Support;

use Psr\Http\Message\RequestInterface;

/**
 * Records every HTTP request the AWS SDK sends (retries included): the operation from
 * X-Amz-Target and the JSON body exactly as serialized. Wraps the Guzzle handler under the SDK.
 */
final class Recorder
{
    /** @var list<array{operation: string, body: mixed}> */
    public array $requests = [];

    public function wrap(callable $handler): callable
    {
        return function (RequestInterface $request, array $options) use ($handler) {
            $target = $request->getHeaderLine('X-Amz-Target');
            $this->requests[] = [
                'operation' => substr($target, (int) strrpos($target, '.') + 1),
                'body' => json_decode((string) $request->getBody(), true, 512, JSON_THROW_ON_ERROR),
            ];
            $request->getBody()->rewind();

            return $handler($request, $options);
        };
    }

    /** @return list<array{operation: string, body: mixed}> the requests so far, forgetting them */
    public function take(): array
    {
        $requests = $this->requests;
        $this->requests = [];

        return $requests;
    }

    /** @return array<string, int> requests per operation */
    public function counts(): array
    {
        $counts = [];
        foreach ($this->requests as $r) {
            $counts[$r['operation']] = ($counts[$r['operation']] ?? 0) + 1;
        }

        return $counts;
    }
}
