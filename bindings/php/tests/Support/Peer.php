<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests\Support;

use RuntimeException;

/**
 * Another implementation holding locks on the same table: a long-lived peer of
 * compat-tests/support/peers/PROTOCOL.md (the Rust core's `ddblock-peer`, the Python binding's
 * `peer.py`, the Node binding's `peer.mjs`, the CLI's `peer_cli.py`: one `ddblock` process per
 * call), configured by the DDB_* environment and spoken to in JSON lines.
 */
final class Peer
{
    /** @var resource|null */
    private $process = null;
    /** @var array<int, resource> */
    private array $pipes = [];

    /** @param  array{table: string, prefix: string, layout: string, endpoint: string}  $config */
    private function __construct(public string $name)
    {
    }

    /**
     * The CLI's peer (compat-tests/support/peers/peer_cli.py) over the `ddblock` binary at `$binary`.
     *
     * @param  array{table: string, prefix: string, layout: string, endpoint: string}  $config
     */
    public static function cli(string $binary, array $config): self
    {
        $script = ddblock_repo_root() . '/compat-tests/support/peers/peer_cli.py';

        return self::start('cli', ['python3', $script], $config, ['DDBLOCK_CLI' => $binary]);
    }

    /**
     * Starts a protocol peer and waits for its `hello`.
     *
     * @param  list<string>  $command  the program (and interpreter and script)
     * @param  array{table: string, prefix: string, layout: string, endpoint: string}  $config
     * @param  array<string, string>  $env  more environment
     */
    public static function start(string $name, array $command, array $config, array $env = []): self
    {
        $peer = new self($name);
        $process = proc_open(
            $command,
            [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => STDERR],
            $pipes,
            null,
            $env + self::environment($config) + getenv()
        );
        if (! is_resource($process)) {
            throw new RuntimeException("cannot start the $name peer");
        }
        $peer->process = $process;
        $peer->pipes = $pipes;
        $peer->call(['op' => 'hello']);

        return $peer;
    }

    /**
     * A peer's configuration as the protocol's environment.
     *
     * @param  array{table: string, prefix: string, layout: string, endpoint: string}  $config
     * @return array<string, string>
     */
    public static function environment(array $config): array
    {
        return [
            'DDB_ENDPOINT' => $config['endpoint'], 'DDB_TABLE' => $config['table'],
            'DDB_LAYOUT' => $config['layout'], 'DDB_PREFIX' => $config['prefix'],
        ];
    }

    /** @return array{acquired: bool, owner: string} */
    public function acquire(string $name, int $ttl, ?string $owner = null): array
    {
        $command = ['op' => 'lock.acquire', 'name' => $name, 'ttl' => $ttl];
        $out = $this->call($owner === null ? $command : $command + ['owner' => $owner]);

        return ['acquired' => $out['acquired'], 'owner' => (string) $out['owner']];
    }

    public function release(string $name, string $owner): bool
    {
        return $this->call(['op' => 'lock.release', 'name' => $name, 'owner' => $owner])['released'];
    }

    /** @return array{owner: string, expires_at: int}|null who holds the lock (a consistent read) */
    public function holder(string $name): ?array
    {
        $holder = $this->call(['op' => 'lock.holder', 'name' => $name])['holder'];

        return $holder === null ? null : ['owner' => (string) $holder['owner'], 'expires_at' => $holder['expires_at']];
    }

    /** The table key of lock `$name`, as this peer computes it. */
    public function key(string $name): string
    {
        return (string) $this->call(['op' => 'lock.key', 'name' => $name])['key'];
    }

    /**
     * One request and its answer; an exception unless `"ok": true`.
     *
     * @param  array<string, mixed>  $command
     * @return array<string, mixed>
     */
    public function call(array $command): array
    {
        if ($this->process === null) {
            throw new RuntimeException("the {$this->name} peer is not a protocol peer, or closed");
        }
        fwrite($this->pipes[0], json_encode($command, JSON_UNESCAPED_SLASHES) . "\n");
        fflush($this->pipes[0]);
        $line = fgets($this->pipes[1]);
        if ($line === false) {
            throw new RuntimeException("the {$this->name} peer exited");
        }
        $answer = json_decode($line, true, 512, JSON_THROW_ON_ERROR);
        if (! ($answer['ok'] ?? false)) {
            throw new RuntimeException("{$this->name} peer: " . ($answer['error'] ?? $line));
        }

        return $answer;
    }

    /** Closes the peer's stdin (it exits) and waits for it; its exit status. */
    public function close(): int
    {
        $status = 0;
        if ($this->process !== null) {
            fclose($this->pipes[0]);
            fclose($this->pipes[1]);
            $status = proc_close($this->process);
            $this->process = null;
        }

        return $status;
    }
}
