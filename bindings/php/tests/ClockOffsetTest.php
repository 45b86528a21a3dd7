<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests;

use Aws\Command;
use Aws\DynamoDb\Exception\DynamoDbException;
use Aws\Result;
use Ddblock\Laravel\ClockOffset;
use GuzzleHttp\Psr7\Response;

/**
 * The clock offset measured from DynamoDB's Date header (ClockOffset): samples at different phases
 * of a second, a measurement with a simulated server clock, and a real one against moto, dynalite
 * and DynamoDB Local (which run on this host's clock). The intervals, verdicts, margins and wording
 * of given samples are the shared case table's (DoctorCasesTest), as is the doctor's clock check
 * under faketime.
 */
final class ClockOffsetTest extends TestCase
{
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

        // Behind: the mirror image.
        $behind = ClockOffset::fromSamples(self::simulate(-2.3, 1000.05, 5, 0.23, 0.01));
        $this->assertEqualsWithDelta(-2.3, $behind->estimate(), 0.15);
        $this->assertSame('fail', $behind->verdict(0));
        $this->assertGreaterThan(0.0, $behind->low() + 2.3 + 0.3);
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
