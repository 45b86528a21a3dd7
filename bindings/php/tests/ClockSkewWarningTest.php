<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests;

use Ddblock\Laravel\ClockSkewWarning;

/**
 * The SDK middleware that warns when an answer to a request carrying this host's clock (`:now`)
 * proves the clock beyond the margin's allowance: on moto, dynalite and DynamoDB Local, with a
 * local clock shifted by the middleware's clock seam (the servers run on this host's real clock).
 */
final class ClockSkewWarningTest extends TestCase
{
    /**
     * @return array{0: \Ddblock\Laravel\DynamoDbStore, 1: list<array{0: string, 1: array<string, mixed>}>}
     */
    private function storeWithWarning(string $server, string $table, float $skew, int $margin = 0): array
    {
        $client = self::client($server);
        $store = self::driverStore(self::layouts()[0], $client, $table);
        $store->setClockSkewMargin($margin);
        $warnings = new \ArrayObject();
        ClockSkewWarning::attach(
            $client,
            static fn (): int => $store->clockSkewMargin(),
            'store `dynamodb`, table `' . $table . '`',
            static function (string $message, array $context) use ($warnings): void {
                $warnings[] = [$message, $context];
            },
            static fn (): float => microtime(true) + $skew
        );

        return [$store, $warnings];
    }

    /** @dataProvider servers */
    public function testAnAnswerProvingTheClockAheadWarnsOnceAMinute(string $server): void
    {
        $table = self::table(self::client($server));
        [$store, $warnings] = $this->storeWithWarning($server, $table, 5.0);
        $this->assertSame([], (array) $warnings);
        $store->get('nothing');   // a GetItem carries no clock: not looked at
        $this->assertCount(0, $warnings);

        $lock = $store->lock('ahead', 30);
        $this->assertTrue($lock->get());
        $this->assertCount(1, $warnings);
        [$message, $context] = $warnings[0];
        $this->assertMatchesRegularExpression(
            '/^ddblock: this host\'s clock is at least [3-5]\.\d s ahead of DynamoDB\'s \(the Date header of an '
            . 'answer to UpdateItem: between \+[3-5]\.\d\d and \+[4-6]\.\d\d s\), beyond the ±0\.5 s allowed with '
            . 'clock-skew margin 0 \(store `dynamodb`, table `' . $table . '`\): this host may take locks over '
            . 'before their holders\' leases end; synchronise the clock \(NTP\), or raise '
            . 'ddblock\.clock_skew_margin on every host; `php artisan ddblock:doctor` measures it$/u',
            $message
        );
        $this->assertSame(
            ['event', 'offset_low', 'offset_high', 'allowed', 'margin', 'operation'],
            array_keys($context)
        );
        $this->assertSame('ddblock.clock.skew', $context['event']);
        $this->assertSame('UpdateItem', $context['operation']);

        // Within the minute: no second warning, from a refused acquire (an error answer) either.
        $this->assertTrue($lock->refresh(30));
        $this->assertFalse($store->lock('ahead', 30)->get());
        $this->assertCount(1, $warnings);
        $this->assertTrue($lock->release());
    }

    /** @dataProvider servers */
    public function testAnErrorAnswerWarnsTooAndAClockBehindIsNamed(string $server): void
    {
        $table = self::table(self::client($server));
        $holder = self::driverStore(self::layouts()[0], self::client($server), $table)->lock('held', 30);
        $this->assertTrue($holder->get());
        [$store, $warnings] = $this->storeWithWarning($server, $table, -5.0);
        $this->assertFalse($store->lock('held', 30)->get(), 'held: the refusal is still an answer');
        $this->assertCount(1, $warnings);
        $this->assertStringContainsString(
            ' s behind DynamoDB\'s (the Date header of an answer to UpdateItem:',
            $warnings[0][0]
        );
        $this->assertStringContainsString(
            ': this host may keep working under a lock another host has already taken over;',
            $warnings[0][0]
        );
    }

    /** @dataProvider servers */
    public function testNoWarningWithinTheAllowance(string $server): void
    {
        $table = self::table(self::client($server));
        // This host's own clock: the servers run on it.
        [$store, $warnings] = $this->storeWithWarning($server, $table, 0.0);
        $lock = $store->lock('fine', 30);
        $this->assertTrue($lock->get());
        $this->assertTrue($lock->refresh(30));
        $this->assertTrue($lock->release());
        // 5 s ahead is within ±5.5 s, the allowance of margin 10.
        [$store, $warnings10] = $this->storeWithWarning($server, $table, 5.0, 10);
        $this->assertTrue($store->lock('fine', 30)->get());
        $this->assertSame([[], []], [(array) $warnings, (array) $warnings10]);
    }
}
