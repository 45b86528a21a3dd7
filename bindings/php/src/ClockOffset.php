<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

use Aws\Exception\AwsException;
use Aws\ResultInterface;
use DateTimeImmutable;
use DateTimeZone;

/**
 * This host's clock offset to DynamoDB's, bounded by the `Date` headers of its answers
 * (docs/semantics.md, "The takeover rule"): an interval of `local - server` seconds.
 */
final class ClockOffset
{
    /** Answers the doctor measures with, and the pause between them (s); doctor-cases.json pins both. */
    public const SAMPLES = 5;
    public const SPACING_SECONDS = 0.23;

    private function __construct(private ?float $low, private ?float $high, private int $samples)
    {
    }

    /**
     * The intersection of samples `[t0, t1, D]`: sent at `t0`, answered at `t1` with `Date: D`, each
     * allows `[t0 - D - 1, t1 - D]`.
     *
     * @param  iterable<array{0: float, 1: float, 2: int}>  $samples
     */
    public static function fromSamples(iterable $samples): self
    {
        [$low, $high, $n] = [null, null, 0];
        foreach ($samples as [$t0, $t1, $date]) {
            [$lo, $hi] = [(float) $t0 - $date - 1, (float) $t1 - $date];
            $low = $low === null ? $lo : max($low, $lo);
            $high = $high === null ? $hi : min($high, $hi);
            $n++;
        }

        return new self($low, $high, $n);
    }

    /**
     * Measures with `$samples` calls of `$request` (which returns its answer's Date header), `$spacing` s apart.
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
        $sleep ??= static fn (float $seconds) => usleep((int) round($seconds * 1e6));
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
     * The Date header of an SDK result, or of an error DynamoDB answered; null when none came.
     *
     * @param  ResultInterface|AwsException  $answer
     */
    public static function dateOf($answer): ?string
    {
        $date = $answer instanceof ResultInterface ? $answer['@metadata']['headers']['date'] ?? null
            : ($answer->getResponse() === null ? null : $answer->getResponse()->getHeaderLine('Date'));

        return is_string($date) && $date !== '' ? $date : null;
    }

    /** An HTTP-date (`Tue, 24 Nov 2026 18:22:20 GMT`) as Unix seconds; null when it is not one. */
    public static function parseDate(string $header): ?int
    {
        $parsed = DateTimeImmutable::createFromFormat('D, d M Y H:i:s \G\M\T', trim($header), new DateTimeZone('UTC'));

        return $parsed === false ? null : $parsed->getTimestamp();
    }

    /** The offset each host may have from DynamoDB's clock: `(margin + 1) / 2` seconds. */
    public static function allowance(int $margin): float
    {
        return ($margin + 1) / 2;
    }

    public function samples(): int
    {
        return $this->samples;
    }

    public function low(): ?float
    {
        return $this->low;
    }

    public function high(): ?float
    {
        return $this->high;
    }

    /** Whether no offset fits every sample (or there was none). */
    public function isEmpty(): bool
    {
        return $this->low === null || $this->high === null || $this->low > $this->high;
    }

    /** The middle of the interval; null when it is empty. */
    public function estimate(): ?float
    {
        return $this->isEmpty() ? null : ($this->low + $this->high) / 2;
    }

    /** The clock check's status for `$margin`: `ok`, `fail` (proven beyond), `warn` or `unknown`. */
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

    /** The smallest margin whose allowance covers the interval; null when it is empty. */
    public function marginNeeded(): ?int
    {
        if ($this->isEmpty()) {
            return null;
        }

        return max(0, (int) ceil(2 * max(abs($this->low), abs($this->high)) - 1 - 1e-9));
    }

    /** The finding in one sentence, worded as the core's doctor words it. */
    public function describe(int $margin): string
    {
        $allowed = sprintf('allowed ±%s s with margin %d', self::seconds(self::allowance($margin)), $margin);
        if ($this->samples === 0) {
            return "no answer carried a Date header, so the offset is unknown; $allowed";
        }
        if ($this->isEmpty()) {
            return "the Date headers of the answers contradict each other (no offset fits them all): was the clock "
                . "stepped while measuring?; $allowed";
        }
        $estimate = $this->estimate();
        $side = $estimate > 0 ? 'ahead of' : 'behind';
        $where = abs($estimate) < 0.005 ? "this host's clock agrees with DynamoDB's"
            : sprintf("this host's clock is %.2f s %s DynamoDB's", abs($estimate), $side);

        return sprintf(
            '%s (between %+.2f and %+.2f s over %s; the Date header has whole seconds); %s',
            $where,
            $this->low,
            $this->high,
            $this->samples === 1 ? '1 answer' : "{$this->samples} answers",
            $allowed
        );
    }

    /** `0.5`, `1`, `1.5`: seconds without trailing zeros. */
    public static function seconds(float $s): string
    {
        return rtrim(rtrim(sprintf('%.2f', $s), '0'), '.');
    }
}
