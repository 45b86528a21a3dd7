<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests;

use Aws\DynamoDb\DynamoDbClient;
use Ddblock\Laravel\DynamoDbStore;
use Ddblock\Laravel\Tests\Support\Crossing;
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
    /** @return array<string, array{0: Crossing}> */
    public static function combinations(): array
    {
        $rows = [];
        foreach (self::serversAndLayouts() as [$server, $layout]) {
            foreach (['cli', 'rust', 'python', 'node'] as $peer) {
                $owners = ['string owner' => 'xl' . bin2hex(random_bytes(6)), 'numeric owner' => '48151623'];
                foreach ($owners as $kind => $owner) {
                    $rows["$server $layout $peer $kind"] = [new Crossing($server, $layout, $peer, $owner)];
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
     * What a test of combination `$x` works with: the table the class's tests share on its
     * server, a client to it, its peer (one per server and layout), the driver's store on the
     * table, and the test's lock name (`$prefix`: the test's).
     *
     * @return array{0: DynamoDbClient, 1: string, 2: Peer, 3: DynamoDbStore, 4: string}
     */
    private static function meeting(Crossing $x, string $prefix): array
    {
        $table = self::sharedTable($x->server);
        $client = self::client($x->server);
        $peer = self::startedOnce(
            "{$x->which} {$x->server} {$x->layout}",
            static fn (): Peer => self::startPeer($x->which, $x->server, $x->layout, $table)
        );

        return [$client, $table, $peer, self::driverStore($x->layout, $client, $table), $x->lockName($prefix)];
    }

    /** @dataProvider combinations */
    public function testALockTakenInPhpIsSeenAndReleasedByThePeer(Crossing $x): void
    {
        [$client, $table, $peer, $store, $name] = self::meeting($x, 'from-php');

        $lock = $store->lock($name, 60, $x->owner);
        $this->assertTrue($lock->get());
        $this->assertSame($lock->tableKey(), $peer->key($name), "{$x->which} computes the same key");
        $item = self::item($client, $table, $lock->tableKey());
        $this->assertSame(
            ['owner' => $x->owner, 'expires_at' => (int) $item['expires_at']['N']],
            $peer->holder($name),
            "{$x->which} sees PHP's lock under the same key, owner and expiry"
        );
        $this->assertFalse($peer->acquire($name, 60)['acquired'], "{$x->which} cannot take it");
        $this->assertFalse(
            $peer->release($name, 'not-the-owner'),
            "{$x->which} does not release it with another owner"
        );
        $this->assertTrue($peer->release($name, $x->owner), "{$x->which} releases PHP's lock with its owner");
        $this->assertNull(self::item($client, $table, $lock->tableKey()));
        $this->assertFalse($lock->isLocked());
        $this->assertFalse($lock->release(), 'PHP finds it released');
    }

    /** @dataProvider combinations */
    public function testALockTakenByThePeerIsSeenAndReleasedInPhp(Crossing $x): void
    {
        [$client, $table, $peer, $store, $name] = self::meeting($x, 'to-php');

        $this->assertSame(['acquired' => true, 'owner' => $x->owner], $peer->acquire($name, 60, $x->owner));
        $restored = $store->restoreLock($name, $x->owner);
        $this->assertSame(self::lockKey($x->layout, 'app_', $name), $restored->tableKey());
        $this->assertTrue($restored->isOwnedByCurrentProcess(), "PHP sees {$x->which}'s lock as owned by {$x->owner}");
        // Laravel reads a numeric owner back as an int.
        $expected = ctype_digit($x->owner) ? (int) $x->owner : $x->owner;
        $this->assertSame($expected, (fn () => $this->getCurrentOwner())->call($restored));
        $this->assertFalse($store->lock($name, 60)->get(), 'PHP cannot take it');
        $this->assertFalse($restored->get(), "nor with {$x->which}'s owner (another handle: refused, as in Laravel)");
        $this->assertFalse($store->restoreLock($name, 'not-the-owner')->release());
        $t0 = time();
        $this->assertTrue($restored->refresh(90), "PHP refreshes {$x->which}'s lock");
        $t1 = time();
        $expires = $peer->holder($name)['expires_at'] ?? 0;
        $this->assertTrue($expires >= $t0 + 90 && $expires <= $t1 + 90, "{$x->which} sees the new expiry");
        $this->assertTrue($restored->release(), "PHP releases {$x->which}'s lock");
        $this->assertNull($peer->holder($name), "{$x->which} sees it free");
        $this->assertNull(self::item($client, $table, $restored->tableKey()));
    }
}
