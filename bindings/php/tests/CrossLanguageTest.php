<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests;

use Aws\DynamoDb\DynamoDbClient;
use Ddblock\Laravel\DynamoDbStore;
use Ddblock\Laravel\Tests\Support\Peer;

/**
 * One lock, two languages, both ways, in every layout the loaded Laravel writes, on moto, dynalite
 * and DynamoDB Local: a lock the PHP driver takes is seen, restored and released by the Rust core
 * (the `ddblock` CLI and `ddblock-peer`), Python and Node (their peers of
 * compat-tests/support/peers/PROTOCOL.md); a lock they take is seen, restored and released by the
 * driver. String owners and numeric owners (stored as N, which stock Laravel cannot release).
 */
final class CrossLanguageTest extends TestCase
{
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

    private static function startPeer(string $which, string $server, string $layout, string $table): Peer
    {
        $config = ['table' => $table, 'prefix' => 'app_', 'layout' => $layout, 'endpoint' => self::endpoint($server)];
        $peers = self::root() . '/compat-tests/support/peers';
        switch ($which) {
            case 'cli':
                return Peer::cli(self::cargoBinary('ddblock'), $config);
            case 'rust':
                return Peer::start('rust', [self::cargoBinary('ddblock-peer')], $config);
            case 'python':
                $python = self::root() . '/bindings/python/.venv/bin/python';

                return Peer::start('python', [$python, "$peers/peer.py"], $config);
            default:
                return Peer::start('node', ['node', "$peers/peer.mjs"], $config);
        }
    }

    /**
     * What a test of one combination works with: the table the class's tests share on `$server`,
     * a client to it, the peer `$which` (one per server and layout) and the driver's store on it.
     *
     * @return array{0: DynamoDbClient, 1: string, 2: Peer, 3: DynamoDbStore}
     */
    private static function meeting(string $server, string $layout, string $which): array
    {
        $table = self::sharedTable($server);
        $client = self::client($server);
        $peer = self::startedOnce(
            "$which $server $layout",
            static fn (): Peer => self::startPeer($which, $server, $layout, $table)
        );

        return [$client, $table, $peer, self::driverStore($layout, $client, $table)];
    }

    /** The lock name of a test: `$prefix`, the peer, and whether the owner is numeric. */
    private static function lockName(string $prefix, string $which, string $owner): string
    {
        return "$prefix-$which-" . (ctype_digit($owner) ? 'n' : 's');
    }

    /** @dataProvider combinations */
    public function testALockTakenInPhpIsSeenAndReleasedByThePeer(
        string $server,
        string $layout,
        string $which,
        string $owner
    ): void {
        [$client, $table, $peer, $store] = self::meeting($server, $layout, $which);
        $name = self::lockName('from-php', $which, $owner);

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
        [$client, $table, $peer, $store] = self::meeting($server, $layout, $which);
        $name = self::lockName('to-php', $which, $owner);

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
