<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests\Laravel;

use Ddblock\Laravel\Tests\Laravel\Support\Excluded;
use Ddblock\Laravel\Tests\TestCase;
use ReflectionClass;
use ReflectionMethod;

/**
 * tests/Laravel/README.md keeps up with the tests: a row of its results table for every test of
 * this directory, and its excluded list exactly Support\Excluded, reason for reason.
 */
final class ReadmeTest extends TestCase
{
    private static function readme(): string
    {
        return (string) file_get_contents(__DIR__ . '/README.md');
    }

    public function testEveryTestHasARowInTheResultsTable(): void
    {
        $tests = [];
        foreach (glob(__DIR__ . '/*Test.php') ?: [] as $file) {
            $class = __NAMESPACE__ . '\\' . basename($file, '.php');
            $reflection = new ReflectionClass($class);
            if (! $reflection->isSubclassOf(LaravelTestCase::class)) {
                continue;
            }
            foreach ($reflection->getMethods(ReflectionMethod::IS_PUBLIC) as $method) {
                if (str_starts_with($method->getName(), 'test') && $method->class === $class) {
                    $tests[] = $reflection->getShortName() . '::' . $method->getName();
                }
            }
        }
        preg_match_all('/^\| `(\w+::\w+)`/m', self::readme(), $rows);
        sort($tests);
        $listed = $rows[1];
        sort($listed);
        $this->assertNotEmpty($tests);
        $this->assertSame($tests, $listed, 'README.md: one row per test, no row for a test that is gone');
    }

    public function testTheExcludedListIsSupportExcluded(): void
    {
        $expected = [];
        foreach (Excluded::TESTS as $test => $versions) {
            foreach ($versions as $version => $reason) {
                $expected[] = sprintf('- `%s` (%s): %s.', $test, $version === '*' ? '8.83 and 13' : $version, $reason);
            }
        }
        preg_match_all('/^- `\w+::\w+` \((?:8\.83|13|8\.83 and 13)\): .*$/m', self::readme(), $lines);
        $this->assertSame($expected, $lines[0], 'README.md lists Support\Excluded, in order, with its reasons');
    }
}
