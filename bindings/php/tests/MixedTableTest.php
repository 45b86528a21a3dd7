<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests;

use Ddblock\Laravel\Tests\Support\Peer;

/**
 * One table during a migration: stock Laravel's lock, the driver and ddblock (the CLI, the Rust
 * core) side by side on the same lock names. Each excludes the others and releases what is its
 * own; the driver also releases numeric-owner locks stock Laravel leaves behind. (The same mix
 * under stale reads and concurrency: FaultProxyTest and compat-tests/stuck-locks.)
 */
final class MixedTableTest extends TestCase
{
    /** @dataProvider serversAndLayouts */
    public function testStockLaravelTheDriverAndDdblockShareOneTable(string $server, string $layout): void
    {
        $client = self::client($server);
        $table = self::table($client);
        $stock = self::stockStore($layout, $client, $table);
        $driver = self::driverStore($layout, $client, $table);
        $cli = Peer::cli(self::cargoBinary('ddblock'), [
            'table' => $table, 'prefix' => 'app_', 'layout' => $layout, 'endpoint' => self::endpoint($server),
        ]);

        // Stock Laravel holds it: nobody else gets it; its own release still works.
        $s = $stock->lock('shared', 60);
        $this->assertTrue($s->get());
        $this->assertFalse($driver->lock('shared', 60)->get());
        $this->assertFalse($cli->acquire('shared', 60)['acquired']);
        $this->assertSame($s->owner(), $cli->holder('shared')['owner'] ?? null);
        $this->assertTrue($s->release());

        // The driver holds it: stock Laravel and ddblock are kept out; stock Laravel's restoreLock
        // with the right owner can release it (the item is Laravel's own format).
        $d = $driver->lock('shared', 60);
        $this->assertTrue($d->get());
        $this->assertFalse($stock->lock('shared', 60)->get());
        $this->assertFalse($cli->acquire('shared', 60)['acquired']);
        $this->assertFalse($cli->release('shared', 'not-the-owner'));
        $restored = $stock->restoreLock('shared', $d->owner());
        // Protected in Laravel 8's Lock, public from 9 on.
        $owned = (fn () => $this->isOwnedByCurrentProcess())->call($restored);
        $this->assertTrue($owned, "stock Laravel sees it as that owner's");
        $this->assertTrue($d->release());

        // ddblock holds it: stock Laravel and the driver are kept out; both can release it with
        // its owner.
        $owner = $cli->acquire('shared', 60)['owner'];
        $this->assertFalse($stock->lock('shared', 60)->get());
        $this->assertFalse($driver->lock('shared', 60)->get());
        $this->assertTrue($driver->restoreLock('shared', $owner)->release());
        $owner = $cli->acquire('shared', 60)['owner'];
        $this->assertTrue($stock->restoreLock('shared', $owner)->release());
        $this->assertNull($cli->holder('shared'));

        // A numeric owner: stock Laravel cannot release its own lock, the driver and ddblock can.
        $this->assertTrue($stock->lock('numeric', 60, '777')->get());
        $this->assertFalse($stock->restoreLock('numeric', '777')->release(), 'stock Laravel leaves it');
        $this->assertTrue($driver->restoreLock('numeric', '777')->release());
        $this->assertTrue($stock->lock('numeric', 60, '777')->get());
        $this->assertTrue($cli->release('numeric', '777'));

        // forceRelease from either PHP side clears the other's lock.
        $this->assertTrue($driver->lock('forced', 60)->get());
        $stock->lock('forced')->forceRelease();
        $this->assertTrue($stock->lock('forced', 60)->get());
        $driver->lock('forced')->forceRelease();
        $this->assertNull($cli->holder('forced'));
        $this->assertSame(0, $cli->close(), "the CLI peer exited cleanly");
    }
}
