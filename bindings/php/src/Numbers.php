<?php

declare(strict_types=1);

namespace Ddblock\Laravel;

/**
 * DynamoDB number comparison, for telling whether a stored `N` owner is ours.
 *
 * DynamoDB compares numbers by value and real DynamoDB normalises what it stores (`007` comes
 * back as `7`, `1.50` as `1.5`), while Laravel writes a numeric owner as PHP's text of it. Floats
 * cannot compare them: DynamoDB keeps 38 significant digits. So both texts are reduced to
 * (sign, significant digits, position of the decimal point) and compared exactly.
 *
 * @internal
 */
final class Numbers
{
    /**
     * Whether two DynamoDB number texts are the same number (`007` = `7` = `7.0` = `0.7E1`).
     * Texts that are not numbers compare as plain strings.
     */
    public static function equal(string $a, string $b): bool
    {
        $x = self::canonical($a);
        $y = self::canonical($b);

        return $x !== null && $y !== null ? $x === $y : $a === $b;
    }

    /**
     * @return array{0: bool, 1: string, 2: int}|null  [negative, digits without leading or
     *     trailing zeros, exponent of the point], or null when `$text` is not a decimal number
     */
    private static function canonical(string $text): ?array
    {
        if (preg_match('/^\s*([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?\s*$/D', $text, $m) !== 1) {
            return null;
        }
        [, $sign, $int, $frac] = $m + [3 => ''];
        if ($int === '' && $frac === '') {
            return null;
        }
        $exponent = (int) ($m[4] ?? 0);
        $digits = $int . $frac;
        $significant = trim($digits, '0');
        if ($significant === '') {
            return [false, '', 0]; // zero, whatever its sign or exponent
        }
        $leadingZeros = strlen($digits) - strlen(ltrim($digits, '0'));

        return [$sign === '-', $significant, strlen($int) - $leadingZeros + $exponent];
    }
}
