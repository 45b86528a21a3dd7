<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests;

use Aws\Command;
use Aws\DynamoDb\Exception\DynamoDbException;
use Aws\Result;
use Ddblock\Laravel\ClockOffset;
use GuzzleHttp\Psr7\Response;

/**
 * The clock offset measured from DynamoDB's Date header (ClockOffset): one sample's interval,
 * intersections, the verdict against the allowance `(margin + 1) / 2`, the wording, a measurement
 * with a simulated server clock, and a real one against moto, dynalite and DynamoDB Local (which
 * run on this host's clock). ArtisanCommandsTest runs the doctor's clock check end to end, under
 * faketime too.
 */
final class ClockOffsetTest extends TestCase
{
    public function testOneSampleBoundsTheOffsetByTheRequestAndTheWholeSecond(): void
    {
        // Sent at 100.2, answered at 100.3, stamped "100": the server read s in [100, 101) at some
        // local moment in [100.2, 100.3], so local - server is in [100.2 - 101, 100.3 - 100].
        [$low, $high] = ClockOffset::bounds(100.2, 100.3, 100);
        $this->assertEqualsWithDelta(-0.8, $low, 1e-9);
        $this->assertEqualsWithDelta(0.3, $high, 1e-9);

        $one = ClockOffset::fromSamples([[100.2, 100.3, 100]]);
        $this->assertSame(1, $one->samples());
        $this->assertEqualsWithDelta(-0.25, $one->estimate(), 1e-9);
        $this->assertSame('ok', $one->verdict(1), 'allowed ±1 s with margin 1');
        $this->assertSame('warn', $one->verdict(0), '[-0.8, 0.3] straddles ±0.5');
    }

    public function testSamplesAtDifferentPhasesNarrowTheInterval(): void
    {
        // The host runs 2.3 s ahead; requests take 10 ms; samples 0.23 s apart.
        $samples = self::simulate(2.3, 1000.05, 5, 0.23, 0.01);
        $offset = ClockOffset::fromSamples($samples);
        $this->assertSame(5, $offset->samples());
        $this->assertLessThanOrEqual(2.3, $offset->low());
        $this->assertGreaterThanOrEqual(2.3, $offset->high());
        $this->assertLessThan(0.3, $offset->high() - $offset->low(), 'well under the second of one sample');
        $this->assertEqualsWithDelta(2.3, $offset->estimate(), 0.15);
        $this->assertSame('fail', $offset->verdict(0), 'beyond ±0.5 s');
        $this->assertSame('fail', $offset->verdict(2), 'beyond ±1.5 s');
        $this->assertSame('ok', $offset->verdict(5), 'within ±3 s');
        $this->assertTrue($offset->provesBeyond(2));
        $this->assertFalse($offset->provesBeyond(5));

        // Behind: the mirror image.
        $behind = ClockOffset::fromSamples(self::simulate(-2.3, 1000.05, 5, 0.23, 0.01));
        $this->assertEqualsWithDelta(-2.3, $behind->estimate(), 0.15);
        $this->assertSame('fail', $behind->verdict(0));
        $this->assertGreaterThan(0.0, $behind->low() + 2.3 + 0.3);
    }

    public function testTheVerdictAgainstTheAllowance(): void
    {
        $this->assertSame(0.5, ClockOffset::allowance(0));
        $this->assertSame(1.5, ClockOffset::allowance(2));
        $this->assertSame(5.5, ClockOffset::allowance(10));

        $interval = static fn (float $low, float $high): ClockOffset
            => ClockOffset::fromSamples([[$low + 101.0, $high + 100.0, 100], [$low + 101.0, $high + 100.0, 100]]);
        $this->assertSame('ok', $interval(-0.5, 0.5)->verdict(0), 'the bounds themselves are allowed');
        $this->assertSame('ok', $interval(-0.1, 0.2)->verdict(0));
        $this->assertSame('warn', $interval(0.3, 0.7)->verdict(0), 'may be beyond, may not');
        $this->assertSame('warn', $interval(-0.7, -0.3)->verdict(0));
        $this->assertSame('fail', $interval(0.51, 0.9)->verdict(0), 'proved ahead beyond it');
        $this->assertSame('fail', $interval(-0.9, -0.51)->verdict(0), 'proved behind beyond it');
        $this->assertSame('ok', $interval(0.51, 0.9)->verdict(1));
        $this->assertSame(1, $interval(0.51, 0.9)->marginNeeded(), '2 * 0.9 - 1, rounded up');
        $this->assertSame(0, $interval(-0.1, 0.2)->marginNeeded());
        $this->assertSame(10, $interval(4.9, 5.1)->marginNeeded());
    }

    public function testContradictingSamplesCannotTell(): void
    {
        // The clock stepped by 3 s between two samples: no offset fits both.
        $offset = ClockOffset::fromSamples([[100.2, 100.3, 100], [203.2, 203.3, 200]]);
        $this->assertTrue($offset->isEmpty());
        $this->assertNull($offset->estimate());
        $this->assertNull($offset->marginNeeded());
        $this->assertSame('warn', $offset->verdict(0), 'cannot tell: measure again');
        $this->assertSame(
            'the Date headers of 2 answers contradict each other (no offset fits them all: between +2.20 and +0.30 s): '
            . 'was the clock stepped while measuring?; allowed ±0.5 s with margin 0',
            $offset->describe(0)
        );

        $none = ClockOffset::fromSamples([]);
        $this->assertSame('unknown', $none->verdict(2));
        $this->assertSame(
            'no answer carried a Date header, so the offset is unknown; allowed ±1.5 s with margin 2',
            $none->describe(2)
        );
    }

    public function testTheWording(): void
    {
        // 0.4 s ahead: stamped 99 from 100.35 to 100.45 (the server read 99.95-100.05), then 100
        // from 100.5 to 100.55: [0.35, 1.45] and [-0.5, 0.55].
        $ahead = ClockOffset::fromSamples([[100.35, 100.45, 99], [100.5, 100.55, 100]]);
        $this->assertSame(
            "this host's clock is 0.45 s ahead of DynamoDB's (between +0.35 and +0.55 s over 2 answers; the Date "
            . 'header has whole seconds); allowed ±0.5 s with margin 0',
            $ahead->describe(0)
        );
        $behind = ClockOffset::fromSamples([[99.0, 99.2, 99], [99.7, 99.8, 100]]);
        $this->assertSame(
            "this host's clock is 0.60 s behind DynamoDB's (between -1.00 and -0.20 s over 2 answers; the Date "
            . 'header has whole seconds); allowed ±1 s with margin 1',
            $behind->describe(1)
        );
        $agrees = ClockOffset::fromSamples([[99.9, 100.1, 99], [100.0, 100.1, 100]]);
        $this->assertSame(
            "this host's clock agrees with DynamoDB's (between -0.10 and +0.10 s over 2 answers; the Date header has "
            . 'whole seconds); allowed ±1.5 s with margin 2',
            $agrees->describe(2)
        );
    }

    public function testMeasureTakesSpacedSamplesOfTheDateHeader(): void
    {
        // A simulated host 1.7 s ahead of the server, requests of 20 ms, fake sleeps.
        $now = 5000.4;
        $sleeps = [];
        $offset = ClockOffset::measure(
            static function () use (&$now): ?string {
                $now += 0.01;
                $date = gmdate('D, d M Y H:i:s', (int) floor($now - 1.7)) . ' GMT';
                $now += 0.01;

                return $date;
            },
            5,
            0.23,
            static function () use (&$now): float {
                return $now;
            },
            static function (float $s) use (&$now, &$sleeps): void {
                $sleeps[] = $s;
                $now += $s;
            }
        );
        $this->assertSame([0.23, 0.23, 0.23, 0.23], $sleeps, '5 samples, 0.23 s apart');
        $this->assertSame(5, $offset->samples());
        $this->assertLessThanOrEqual(1.7, $offset->low());
        $this->assertGreaterThanOrEqual(1.7, $offset->high());
        $this->assertSame('fail', $offset->verdict(2), '1.7 s is beyond ±1.5 s, and the interval proves it');

        // Answers without a Date header are left out.
        $this->assertSame(0, ClockOffset::measure(static fn (): ?string => null, 3, 0.0)->samples());
    }

    public function testTheDateHeaderOfAnAnswer(): void
    {
        $this->assertSame(1795544540, ClockOffset::parseDate('Tue, 24 Nov 2026 18:22:20 GMT'));
        $this->assertNull(ClockOffset::parseDate('yesterday'));
        $result = new Result(['@metadata' => ['headers' => ['date' => 'Tue, 24 Nov 2026 18:22:20 GMT']]]);
        $this->assertSame('Tue, 24 Nov 2026 18:22:20 GMT', ClockOffset::dateOf($result));
        $this->assertNull(ClockOffset::dateOf(new Result([])));
        $error = new DynamoDbException('no table', new Command('GetItem'), [
            'response' => new Response(400, ['Date' => 'Tue, 24 Nov 2026 18:22:21 GMT']),
        ]);
        $this->assertSame('Tue, 24 Nov 2026 18:22:21 GMT', ClockOffset::dateOf($error));
        $this->assertNull(ClockOffset::dateOf(new DynamoDbException('no answer', new Command('GetItem'))));
    }

    /**
     * DynamoDB's Date header from the local servers, which run on this host's clock: the offset
     * is within the narrowest allowance, through the SDK's real answers and errors alike.
     *
     * @dataProvider servers
     */
    public function testMeasuredAgainstARealServer(string $server): void
    {
        $client = self::client($server);
        $table = self::table($client);
        $offset = ClockOffset::measure(
            static fn (): ?string => ClockOffset::dateOf($client->describeTable(['TableName' => $table]))
        );
        $this->assertSame(5, $offset->samples());
        $this->assertSame('ok', $offset->verdict(0), $offset->describe(0));
        $this->assertLessThan(0.5, $offset->high() - $offset->low(), $offset->describe(0));

        $missing = ClockOffset::measure(static function () use ($client): ?string {
            try {
                $client->getItem(['TableName' => 'no_such_table', 'Key' => ['key' => ['S' => 'x']]]);
            } catch (DynamoDbException $e) {
                return ClockOffset::dateOf($e);
            }

            return null;
        }, 2, 0.0);
        $this->assertSame(2, $missing->samples(), 'an error answer has the header too');
        $this->assertNotSame('fail', $missing->verdict(0));
    }

    /**
     * Samples of a host `$offset` seconds ahead of the server: `$n` requests from local time
     * `$start`, `$spacing` apart, each taking `$rtt` (the server reads its clock halfway).
     *
     * @return list<array{0: float, 1: float, 2: int}>
     */
    private static function simulate(float $offset, float $start, int $n, float $spacing, float $rtt): array
    {
        $samples = [];
        $t = $start;
        for ($i = 0; $i < $n; $i++) {
            $samples[] = [$t, $t + $rtt, (int) floor($t + $rtt / 2 - $offset)];
            $t += $rtt + $spacing;
        }

        return $samples;
    }
}
