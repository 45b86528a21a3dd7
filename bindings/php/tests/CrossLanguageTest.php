<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests;

use Ddblock\Laravel\Tests\Support\Peer;

/**
 * One lock, two languages, both ways, in every layout the loaded Laravel writes, on moto and
 * dynalite: a lock the PHP driver takes is seen, restored and released by the Rust core (the
 * `ddblock` CLI and `ddblock-peer`), Python and Node (their peers of
 * compat-tests/support/peers/PROTOCOL.md); a lock they take is seen, restored and released by the
 * driver. String owners and numeric owners (stored as N, which stock Laravel cannot release).
 */
final class CrossLanguageTest extends TestCase
{
    /** @var array<string, Peer> */
    private static array $peers = [];
    /** @var array<string, string> */
    private static array $tables = [];

    public static function tearDownAfterClass(): void
    {
        foreach (self::$peers as $peer) {
            $peer->close();
        }
        self::$peers = [];
        parent::tearDownAfterClass();
    }

    /** @return array<string, array{0: string, 1: string, 2: string, 3: string}> */
    public static function combinations(): array
    {
        $rows = [];
        foreach (self::serversAndLayouts() as [$server, $layout]) {
            foreach (['cli', 'rust', 'python', 'node'] as $peer) {
                $owners = ['string owner' => 'xl' . bin2hex(random_bytes(6)), 'numeric owner' => '48151623'];
                foreach ($owners as $kind => $owner) {
                    $rows["$server $layout $peer $kind"] = [$server, $layout, $peer, $owner];
                }
            }
        }

        return $rows;
    }

    private function peer(string $which, string $server, string $layout, string $table): Peer
    {
        $key = "$which $server $layout";
        if (isset(self::$peers[$key])) {
            return self::$peers[$key];
        }
        $config = ['table' => $table, 'prefix' => 'app_', 'layout' => $layout, 'endpoint' => self::endpoint($server)];
        $peers = self::root() . '/compat-tests/support/peers';
        switch ($which) {
            case 'cli':
                $peer = Peer::cli(self::cargoBinary('ddblock'), $config);
                break;
            case 'rust':
                $peer = Peer::start('rust', [self::cargoBinary('ddblock-peer')], $config);
                break;
            case 'python':
                $python = self::root() . '/bindings/python/.venv/bin/python';
                $peer = Peer::start('python', [$python, "$peers/peer.py"], $config);
                break;
            default:
                $peer = Peer::start('node', ['node', "$peers/peer.mjs"], $config);
        }

        return self::$peers[$key] = $peer;
    }

    /** @dataProvider combinations */
    public function testALockTakenInPhpIsSeenAndReleasedByThePeer(
        string $server,
        string $layout,
        string $which,
        string $owner
    ): void {
        $client = self::client($server);
        $table = self::$tables[$server] ??= self::table($client);
        $peer = $this->peer($which, $server, $layout, $table);
        $store = self::driverStore($layout, $client, $table);
        $name = "from-php-$which-" . (ctype_digit($owner) ? 'n' : 's');

        $lock = $store->lock($name, 60, $owner);
        $this->assertTrue($lock->get());
        $this->assertSame($lock->tableKey(), $peer->key($name), "$which computes the same key");
        $item = self::item($client, $table, $lock->tableKey());
        $this->assertSame(
            ['owner' => $owner, 'expires_at' => (int) $item['expires_at']['N']],
            $peer->holder($name),
            "$which sees PHP's lock under the same key, owner and expiry"
        );
        $this->assertFalse($peer->acquire($name, 60)['acquired'], "$which cannot take it");
        $this->assertFalse($peer->release($name, 'not-the-owner'), "$which does not release it with another owner");
        $this->assertTrue($peer->release($name, $owner), "$which releases PHP's lock with its owner");
        $this->assertNull(self::item($client, $table, $lock->tableKey()));
        $this->assertFalse($lock->isLocked());
        $this->assertFalse($lock->release(), 'PHP finds it released');
    }

    /** @dataProvider combinations */
    public function testALockTakenByThePeerIsSeenAndReleasedInPhp(
        string $server,
        string $layout,
        string $which,
        string $owner
    ): void {
        $client = self::client($server);
        $table = self::$tables[$server] ??= self::table($client);
        $peer = $this->peer($which, $server, $layout, $table);
        $store = self::driverStore($layout, $client, $table);
        $name = "to-php-$which-" . (ctype_digit($owner) ? 'n' : 's');

        $this->assertSame(['acquired' => true, 'owner' => $owner], $peer->acquire($name, 60, $owner));
        $restored = $store->restoreLock($name, $owner);
        $this->assertSame(self::lockKey($layout, 'app_', $name), $restored->tableKey());
        $this->assertTrue($restored->isOwnedByCurrentProcess(), "PHP sees $which's lock as owned by $owner");
        $expected = ctype_digit($owner) ? (int) $owner : $owner; // Laravel reads a numeric owner back as an int
        $this->assertSame($expected, (fn () => $this->getCurrentOwner())->call($restored));
        $this->assertFalse($store->lock($name, 60)->get(), 'PHP cannot take it');
        $this->assertFalse($restored->get(), "nor with $which's owner (another handle: refused, as in Laravel)");
        $this->assertFalse($store->restoreLock($name, 'not-the-owner')->release());
        $t0 = time();
        $this->assertTrue($restored->refresh(90), "PHP refreshes $which's lock");
        $t1 = time();
        $expires = $peer->holder($name)['expires_at'] ?? 0;
        $this->assertTrue($expires >= $t0 + 90 && $expires <= $t1 + 90, "$which sees the new expiry");
        $this->assertTrue($restored->release(), "PHP releases $which's lock");
        $this->assertNull($peer->holder($name), "$which sees it free");
        $this->assertNull(self::item($client, $table, $restored->tableKey()));
    }
}
