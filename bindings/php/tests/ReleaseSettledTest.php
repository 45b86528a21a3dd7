<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests;

use Ddblock\Laravel\LockException;
use Ddblock\Laravel\OutcomeUnknownException;
use Ddblock\Laravel\Tests\Support\FaultProxy;

/**
 * A release whose every send reached the server and whose every answer was lost (issue 36 item 5;
 * docs/semantics.md, "Releasing: what the answer means"), in both release modes, through the
 * fault proxy: one consistent GetItem settles it. Not ours any more: the release landed, true.
 * Still ours: it did not land, a LockException says so and when the lock frees itself. The read
 * lost too: OutcomeUnknownException.
 */
final class ReleaseSettledTest extends TestCase
{
    /** Each mode's release request. */
    private const MODES = ['delete' => 'DeleteItem', 'keep-fence' => 'UpdateItem'];

    /** Three sends: the client's two SDK retries after the first. */
    private const SENDS = 3;

    /** @return array<string, array{0: string, 1: string}> [server, release mode] */
    public static function serversAndModes(): array
    {
        $cases = [];
        foreach (self::servers() as $label => [$server]) {
            foreach (array_keys(self::MODES) as $mode) {
                $cases["$label $mode"] = [$server, $mode];
            }
        }

        return $cases;
    }

    /** @dataProvider serversAndModes */
    public function testAReleaseWhoseAnswersWereAllLostIsSettledByOneRead(string $server, string $mode): void
    {
        $proxy = self::startedOnce(
            "fault-proxy $server",
            static fn (): FaultProxy => FaultProxy::start(self::cargoBinary('fault-proxy'), self::endpoint($server))
        );
        $direct = self::client($server);
        $table = self::sharedTable($server);
        $client = self::client($proxy->url, null, ['retries' => self::SENDS - 1]);
        $store = self::driverStore(self::layouts()[0], $client, $table)->setReleaseMode($mode);
        $op = self::MODES[$mode];
        $every = static fn (string $fault): array => array_fill(0, self::SENDS, $fault);

        // Landed: the first send released it, every answer (its and the resends') dropped.
        $lock = $store->lock("settled-landed-$mode", 30, 'a-secret-owner-token');
        $this->assertTrue($lock->get());
        $proxy->configure(['sequence' => [$op => $every('drop')]]);
        $proxy->reset();
        $this->assertTrue($lock->release(), 'the read found the lock no longer ours: released');
        $stats = $proxy->stats();
        $this->assertSame(['dropped' => self::SENDS], $stats[$op] ?? [], 'every send forwarded, no answer');
        $this->assertSame(['forwarded_ok' => 1], $stats['GetItem'] ?? [], 'one read settles it');
        $item = self::item($direct, $table, $lock->tableKey());
        $this->assertFalse(isset($item['value']), 'no owner left');

        // Not landed: every send closed before it reached the server; the lock is still ours.
        $lock = $store->lock("settled-not-landed-$mode", 30, 'a-secret-owner-token');
        $this->assertTrue($lock->get());
        $expiry = (int) self::item($direct, $table, $lock->tableKey())['expires_at']['N'];
        $proxy->configure(['sequence' => [$op => $every('drop_request')]]);
        $proxy->reset();
        try {
            $lock->release();
            $this->fail('release() answered');
        } catch (LockException $e) {
            $this->assertNotInstanceOf(OutcomeUnknownException::class, $e);
            $this->assertStringContainsString('could not release the lock with key', $e->getMessage());
            $this->assertStringContainsString(
                "a consistent read then found the lock still ours: the release did not land, and the lock "
                    . "frees itself at its expiry (Unix time $expiry) unless released again",
                $e->getMessage()
            );
            $this->assertStringNotContainsString('a-secret-owner-token', $e->getMessage());
        }
        $stats = $proxy->stats();
        $this->assertSame(['dropped_request' => self::SENDS], $stats[$op] ?? []);
        $this->assertSame(['forwarded_ok' => 1], $stats['GetItem'] ?? []);
        $this->assertSame('a-secret-owner-token', $lock->owner());
        $restored = $store->lock("settled-not-landed-$mode", 30, 'a-secret-owner-token');
        $this->assertTrue($restored->isOwnedByCurrentProcess(), 'the lock is still ours');
        $proxy->configure([]);
        $this->assertTrue($lock->release(), 'still ours: a release that gets its answer ends it');

        // The read gets no answer either: the outcome is unknown.
        $lock = $store->lock("settled-unknown-$mode", 30, 'a-secret-owner-token');
        $this->assertTrue($lock->get());
        // Every send closed unforwarded, however many (libcurl resends a read on a reused
        // connection by itself).
        $proxy->configure(['drop_request_rate' => 1.0, 'drop_request_ops' => [$op, 'GetItem']]);
        try {
            $lock->release();
            $this->fail('release() answered');
        } catch (OutcomeUnknownException $e) {
            $this->assertTrue($e->lockMayBeHeld());
            $this->assertStringContainsString('the outcome of releasing the lock with key', $e->getMessage());
            $this->assertStringContainsString('the read to tell whether the release landed failed', $e->getMessage());
            $this->assertStringNotContainsString('a-secret-owner-token', $e->getMessage());
        }
        $proxy->configure([]);
        $this->assertTrue($lock->release());
    }
}
