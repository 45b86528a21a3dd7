<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests\Support;

use GuzzleHttp\Client;
use RuntimeException;

/**
 * The project's fault-injecting proxy (compat-tests/fault-proxy, the `fault-proxy` binary) in
 * front of a local server: stale eventually consistent reads, dropped responses, and request
 * counts per operation (`GET /__proxy/stats`).
 */
final class FaultProxy
{
    /** @var resource */
    private $process;
    /** @var array<int, resource> */
    private array $pipes;
    private Client $http;
    public string $url;

    /** @param  list<string>  $flags  e.g. ['--stale-ms', '500'] */
    public static function start(string $binary, string $upstream, array $flags = []): self
    {
        $proxy = new self();
        $process = proc_open(
            [$binary, '--upstream', $upstream, ...$flags],
            [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['file', '/dev/null', 'w']],
            $pipes
        );
        if (! is_resource($process)) {
            throw new RuntimeException("cannot start $binary");
        }
        $proxy->process = $process;
        $proxy->pipes = $pipes;
        $line = fgets($pipes[1]); // "listening http://127.0.0.1:PORT", once it accepts connections
        if ($line === false || ! preg_match('#^listening (http://\S+)#', $line, $m)) {
            $proxy->stop();
            throw new RuntimeException("fault-proxy did not start: " . var_export($line, true));
        }
        $proxy->url = $m[1];
        $proxy->http = new Client(['base_uri' => $proxy->url, 'timeout' => 10]);

        return $proxy;
    }

    /** @return array<string, array<string, int>> requests per operation and outcome */
    public function stats(): array
    {
        $stats = json_decode((string) $this->http->get('/__proxy/stats')->getBody(), true, 512, JSON_THROW_ON_ERROR);

        return $stats['ops'];
    }

    /** @return array<string, int> requests per operation, whatever their outcome */
    public function requests(): array
    {
        return array_map('array_sum', $this->stats());
    }

    public function reset(): void
    {
        $this->http->post('/__proxy/reset', ['json' => ['history' => true]]);
    }

    /** @param  array<string, mixed>  $faults  the whole fault config (missing fields: no fault) */
    public function configure(array $faults): void
    {
        $this->http->post('/__proxy/config', ['json' => $faults]);
    }

    public function stop(): void
    {
        if (is_resource($this->process)) {
            proc_terminate($this->process);
            foreach ($this->pipes as $pipe) {
                if (is_resource($pipe)) {
                    fclose($pipe);
                }
            }
            proc_close($this->process);
        }
    }

    public function __destruct()
    {
        $this->stop();
    }
}
