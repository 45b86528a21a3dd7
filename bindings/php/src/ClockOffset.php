<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

use Aws\Exception\AwsException;
use Aws\ResultInterface;
use DateTimeImmutable;
use DateTimeZone;

/**
 * How far this host's clock is from DynamoDB's, measured from the HTTP `Date` header DynamoDB
 * puts on every answer, never assumed.
 *
 * One sample is a request: this host's time `t0` just before it and `t1` just after its answer
 * (float seconds, `microtime(true)`), and the answer's `Date` header `D` (whole seconds: the
 * server's clock truncated). The server read its clock at some moment `s` with `D <= s < D + 1`,
 * and that moment lies within `[t0, t1]` by this host's clock, so the offset `local - server`
 * lies in `[t0 - D - 1, t1 - D]`. Samples are intersected (the largest low, the smallest high):
 * samples whose second boundaries fall at different places of the window narrow the interval
 * well below a second (the doctor spaces 5 samples about 0.23 s apart). An empty intersection
 * means the samples contradict each other: the clock was stepped while measuring.
 *
 * The allowance per host is `(margin + 1) / 2` seconds, `margin` being the store's clock-skew
 * margin ({@see DynamoDbStore::clockSkewMargin()}). Why: Laravel's expiry is whole seconds
 * (`expires_at = floor(now) + ttl`) and a contender takes an expired lock over only when
 * `now' - margin > expires_at` by its own clock, so a holder that watches its lease by its own
 * clock is safe against a contender whose clock runs up to `margin + 1` seconds ahead of its own.
 * If every host is within half of that of DynamoDB's clock, any two hosts are within it of each
 * other. The Rust core uses the same measurement and allowance.
 */
final class ClockOffset
{
    /** Samples the doctor takes, and the pause between them (seconds): phases 0.23 s apart. */
    public const SAMPLES = 5;
    public const SPACING_SECONDS = 0.23;

    /** @var float|null the largest low bound; null when there is no sample */
    private ?float $low;

    /** @var float|null the smallest high bound */
    private ?float $high;

    private int $samples;

    private function __construct(?float $low, ?float $high, int $samples)
    {
        $this->low = $low;
        $this->high = $high;
        $this->samples = $samples;
    }

    /**
     * The offset interval of one sample: `[t0 - D - 1, t1 - D]`.
     *
     * @return array{0: float, 1: float}
     */
    public static function bounds(float $t0, float $t1, int $date): array
    {
        return [$t0 - $date - 1, $t1 - $date];
    }

    /**
     * The intersection of samples `[t0, t1, D]` (local seconds before and after the request, the
     * answer's Date header in Unix seconds).
     *
     * @param  iterable<array{0: float, 1: float, 2: int}>  $samples
     */
    public static function fromSamples(iterable $samples): self
    {
        $low = null;
        $high = null;
        $n = 0;
        foreach ($samples as [$t0, $t1, $date]) {
            [$lo, $hi] = self::bounds((float) $t0, (float) $t1, (int) $date);
            $low = $low === null ? $lo : max($low, $lo);
            $high = $high === null ? $hi : min($high, $hi);
            $n++;
        }

        return new self($low, $high, $n);
    }

    /**
     * Measures: `$samples` calls of `$request` (which sends one cheap request and returns its
     * answer's Date header, or null when it had none), `$spacing` seconds apart. Answers
     * without a Date header are left out. `$clock` and `$sleep` are test seams (default
     * `microtime(true)` and `usleep`).
     *
     * @param  callable(): (string|null)  $request
     * @param  (callable(): float)|null  $clock
     * @param  (callable(float): void)|null  $sleep
     */
    public static function measure(
        callable $request,
        int $samples = self::SAMPLES,
        float $spacing = self::SPACING_SECONDS,
        ?callable $clock = null,
        ?callable $sleep = null
    ): self {
        $clock ??= static fn (): float => microtime(true);
        $sleep ??= static function (float $seconds): void {
            usleep((int) round($seconds * 1e6));
        };
        $taken = [];
        for ($i = 0; $i < $samples; $i++) {
            if ($i > 0) {
                $sleep($spacing);
            }
            $t0 = $clock();
            $header = $request();
            $t1 = $clock();
            $date = $header === null ? null : self::parseDate($header);
            if ($date !== null) {
                $taken[] = [$t0, $t1, $date];
            }
        }

        return self::fromSamples($taken);
    }

    /**
     * The Date header of an SDK answer: a result (`@metadata.headers.date`) or an error
     * DynamoDB answered (its response); null when there is none (no answer came).
     *
     * @param  ResultInterface|AwsException  $answer
     */
    public static function dateOf($answer): ?string
    {
        if ($answer instanceof ResultInterface) {
            $date = $answer['@metadata']['headers']['date'] ?? null;

            return is_string($date) && $date !== '' ? $date : null;
        }
        $response = $answer->getResponse();
        $date = $response !== null ? $response->getHeaderLine('Date') : '';

        return $date !== '' ? $date : null;
    }

    /**
     * An HTTP-date (`Tue, 24 Nov 2026 18:22:20 GMT`, RFC 9110's preferred form) as Unix
     * seconds; null when it is not one.
     */
    public static function parseDate(string $header): ?int
    {
        $parsed = DateTimeImmutable::createFromFormat('D, d M Y H:i:s \G\M\T', trim($header), new DateTimeZone('UTC'));

        return $parsed === false ? null : $parsed->getTimestamp();
    }

    /**
     * The offset each host may have from DynamoDB's clock, in seconds: `(margin + 1) / 2`.
     */
    public static function allowance(int $margin): float
    {
        return ($margin + 1) / 2;
    }

    /** How many samples went in. */
    public function samples(): int
    {
        return $this->samples;
    }

    /** The smallest offset (local - DynamoDB, seconds) the samples allow; null without samples. */
    public function low(): ?float
    {
        return $this->low;
    }

    /** The largest offset the samples allow; null without samples. */
    public function high(): ?float
    {
        return $this->high;
    }

    /** Whether the samples contradict each other (or there were none): no offset fits them all. */
    public function isEmpty(): bool
    {
        return $this->low === null || $this->high === null || $this->low > $this->high;
    }

    /** The midpoint of the interval, the best estimate; null when it is empty. */
    public function estimate(): ?float
    {
        return $this->isEmpty() ? null : ($this->low + $this->high) / 2;
    }

    /**
     * How the offset compares with the allowance of `$margin`: `ok` (the whole interval is
     * within it), `fail` (the interval proves it beyond), `warn` (the interval straddles it, or
     * the samples contradict each other: the clock was stepped while measuring), or `unknown`
     * (no sample: no answer had a Date header). The Rust core's doctor decides the same way.
     */
    public function verdict(int $margin): string
    {
        if ($this->samples === 0) {
            return 'unknown';
        }
        if ($this->isEmpty()) {
            return 'warn';
        }
        $allowed = self::allowance($margin);
        if ($this->low > $allowed || $this->high < -$allowed) {
            return 'fail';
        }

        return $this->low >= -$allowed && $this->high <= $allowed ? 'ok' : 'warn';
    }

    /**
     * Whether the interval proves the offset beyond the allowance of `$margin`.
     */
    public function provesBeyond(int $margin): bool
    {
        return $this->verdict($margin) === 'fail';
    }

    /**
     * The smallest margin whose allowance covers the whole interval (`2 * max(|low|, |high|) - 1`,
     * rounded up, at least 0); null when the interval is empty.
     */
    public function marginNeeded(): ?int
    {
        if ($this->isEmpty()) {
            return null;
        }

        return max(0, (int) ceil(2 * max(abs($this->low), abs($this->high)) - 1 - 1e-9));
    }

    /**
     * The finding in one sentence: "this host's clock is 0.20 s ahead of DynamoDB's (between
     * -0.30 and +0.70 s over 5 answers; the Date header has whole seconds); allowed ±0.5 s with
     * margin 0".
     */
    public function describe(int $margin): string
    {
        $allowed = sprintf('allowed ±%s s with margin %d', self::seconds(self::allowance($margin)), $margin);
        if ($this->samples === 0) {
            return "no answer carried a Date header, so the offset is unknown; $allowed";
        }
        $answers = $this->samples === 1 ? '1 answer' : "{$this->samples} answers";
        if ($this->isEmpty()) {
            return sprintf(
                "the Date headers of %s contradict each other (no offset fits them all: between %+.2f and %+.2f s): "
                . 'was the clock stepped while measuring?; %s',
                $answers,
                $this->low,
                $this->high,
                $allowed
            );
        }
        $estimate = $this->estimate();
        $where = abs($estimate) < 0.005
            ? "this host's clock agrees with DynamoDB's"
            : sprintf(
                "this host's clock is %.2f s %s DynamoDB's",
                abs($estimate),
                $estimate > 0 ? 'ahead of' : 'behind'
            );

        return sprintf(
            '%s (between %+.2f and %+.2f s over %s; the Date header has whole seconds); %s',
            $where,
            $this->low,
            $this->high,
            $answers,
            $allowed
        );
    }

    /**
     * `0.5`, `1`, `1.5`: an allowance without trailing zeros.
     *
     * @internal also used by {@see ClockSkewWarning}
     */
    public static function seconds(float $s): string
    {
        return rtrim(rtrim(sprintf('%.2f', $s), '0'), '.');
    }
}
