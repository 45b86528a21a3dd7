<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests\Support;

use RuntimeException;

/**
 * Another implementation holding locks on the same table: the ddblock CLI (the Rust core), or
 * the Python or Node binding through a JSON-lines peer script (tests/peers/).
 */
final class Peer
{
    /** @var resource|null */
    private $process = null;
    /** @var array<int, resource> */
    private array $pipes = [];

    /** @param  array{table: string, prefix: string, layout: string, endpoint: string}  $config */
    private function __construct(public string $name, private array $config, private ?string $cli = null)
    {
    }

    /** @param  array{table: string, prefix: string, layout: string, endpoint: string}  $config */
    public static function cli(string $binary, array $config): self
    {
        return new self('cli', $config, $binary);
    }

    /**
     * @param  list<string>  $command  the interpreter and script; the config is passed as JSON
     * @param  array{table: string, prefix: string, layout: string, endpoint: string}  $config
     * @param  array<string, string>  $env
     */
    public static function script(string $name, array $command, array $config, array $env = []): self
    {
        $peer = new self($name, $config);
        $process = proc_open(
            [...$command, json_encode($config)],
            [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => STDERR],
            $pipes,
            null,
            $env + getenv()
        );
        if (! is_resource($process)) {
            throw new RuntimeException("cannot start the $name peer");
        }
        $peer->process = $process;
        $peer->pipes = $pipes;

        return $peer;
    }

    /** @return array{acquired: bool, owner: string} */
    public function acquire(string $name, int $ttl, ?string $owner = null): array
    {
        if ($this->cli !== null) {
            $args = ['acquire', $name, '--ttl', (string) $ttl];
            if ($owner !== null) {
                $args = [...$args, '--owner', $owner];
            }
            $out = $this->runCli($args, [0, 75]);

            return ['acquired' => $out['acquired'], 'owner' => (string) $out['owner']];
        }

        $out = $this->call(['op' => 'acquire', 'name' => $name, 'ttl' => $ttl, 'owner' => $owner]);

        return ['acquired' => $out['acquired'], 'owner' => (string) $out['owner']];
    }

    public function release(string $name, string $owner): bool
    {
        if ($this->cli !== null) {
            return $this->runCli(['release', $name, '--owner', $owner], [0, 1])['released'];
        }

        return $this->call(['op' => 'release', 'name' => $name, 'owner' => $owner])['released'];
    }

    /** @return array{owner: string, expires_at: int}|null who holds the lock (a consistent read) */
    public function holder(string $name): ?array
    {
        if ($this->cli !== null) {
            $out = $this->runCli(['status', $name], [0]);

            return $out['held'] ? ['owner' => (string) $out['owner'], 'expires_at' => $out['expires_at']] : null;
        }
        $holder = $this->call(['op' => 'holder', 'name' => $name])['holder'];

        return $holder === null ? null : ['owner' => (string) $holder['owner'], 'expires_at' => $holder['expires_at']];
    }

    /**
     * @param  list<string>  $args
     * @param  list<int>  $statuses  the exit statuses that are answers
     * @return array<string, mixed>
     */
    private function runCli(array $args, array $statuses): array
    {
        $c = $this->config;
        $command = [
            $this->cli, '--json', '--endpoint', $c['endpoint'], '--table', $c['table'],
            '--prefix', $c['prefix'], '--layout', $c['layout'], ...$args,
        ];
        $process = proc_open($command, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        $stdout = stream_get_contents($pipes[1]);
        $stderr = stream_get_contents($pipes[2]);
        fclose($pipes[1]);
        fclose($pipes[2]);
        $status = proc_close($process);
        if (! in_array($status, $statuses, true)) {
            throw new RuntimeException("ddblock {$args[0]} exited $status: $stderr");
        }

        return json_decode((string) $stdout, true, 512, JSON_THROW_ON_ERROR);
    }

    /**
     * @param  array<string, mixed>  $command
     * @return array<string, mixed>
     */
    private function call(array $command): array
    {
        fwrite($this->pipes[0], json_encode($command) . "\n");
        $line = fgets($this->pipes[1]);
        if ($line === false) {
            throw new RuntimeException("the {$this->name} peer exited");
        }
        $answer = json_decode($line, true, 512, JSON_THROW_ON_ERROR);
        if (! $answer['ok']) {
            throw new RuntimeException("{$this->name} peer: {$answer['error']}");
        }

        return $answer;
    }

    public function close(): void
    {
        if ($this->process !== null) {
            fclose($this->pipes[0]);
            fclose($this->pipes[1]);
            proc_close($this->process);
            $this->process = null;
        }
    }
}
