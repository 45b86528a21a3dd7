<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests;

use RuntimeException;

/**
 * Every ```php block of docs/php.md, docs/migration.md, README.md and bindings/php/README.md
 * runs as written, each as its own `php` process with zend.assertions on, after
 * tests/docs-prelude.php (a Laravel app with the package installed, against moto), and must exit
 * 0 without writing to stderr. A block that cannot run here (a config fragment, an excerpt of a
 * class) carries `<!-- not run: reason -->` on the line before its fence.
 */
final class DocsTest extends TestCase
{
    private const DOCS = ['docs/php.md', 'docs/migration.md', 'README.md', 'bindings/php/README.md'];

    private static ?string $table = null;

    /**
     * @return array<string, array{0: string, 1: int, 2: string, 3: ?string}> [file, line, code, not-run reason]
     */
    public static function blocks(): array
    {
        $rows = [];
        foreach (self::DOCS as $doc) {
            $lines = file(self::root() . '/' . $doc, FILE_IGNORE_NEW_LINES);
            if ($lines === false) {
                throw new RuntimeException("$doc is missing");
            }
            for ($i = 0; $i < count($lines); $i++) {
                if (trim($lines[$i]) !== '```php') {
                    continue;
                }
                $start = $i + 1;
                $reason = null;
                if ($i > 0 && preg_match('/^<!-- not run: (.+) -->$/', trim($lines[$i - 1]), $m)) {
                    $reason = $m[1];
                }
                $code = [];
                for ($i++; $i < count($lines) && trim($lines[$i]) !== '```'; $i++) {
                    $code[] = $lines[$i];
                }
                $rows["$doc:$start"] = [$doc, $start, implode("\n", $code) . "\n", $reason];
            }
        }

        return $rows;
    }

    public function testTheDocsHaveRunnablePhpBlocks(): void
    {
        foreach (self::DOCS as $doc) {
            $run = array_filter(self::blocks(), static fn (array $b): bool => $b[0] === $doc && $b[3] === null);
            $this->assertNotEmpty($run, "$doc has PHP blocks that run");
        }
    }

    /** @dataProvider blocks */
    public function testTheBlockRunsAsWritten(string $doc, int $line, string $code, ?string $notRun): void
    {
        if ($notRun !== null) {
            $this->assertNotSame('', trim($notRun), "$doc:$line says why it does not run");
            $this->assertNotSame('', trim($code));

            return;
        }
        self::$table ??= self::table(self::client('moto'));
        $file = sys_get_temp_dir() . '/ddblock-doc-' . getmypid() . '-' . bin2hex(random_bytes(4)) . '.php';
        file_put_contents($file, str_starts_with(ltrim($code), '<?php') ? $code : "<?php\n" . $code);
        $process = proc_open(
            [
                PHP_BINARY, '-d', 'zend.assertions=1', '-d', 'assert.exception=1', '-d', 'display_errors=stderr',
                '-d', 'auto_prepend_file=' . __DIR__ . '/docs-prelude.php', $file,
            ],
            [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['pipe', 'w']],
            $pipes,
            null,
            ['DDBLOCK_DOCS_ENDPOINT' => self::endpoint('moto'), 'DDBLOCK_DOCS_TABLE' => self::$table] + getenv()
        );
        $stdout = stream_get_contents($pipes[1]);
        $stderr = stream_get_contents($pipes[2]);
        fclose($pipes[1]);
        fclose($pipes[2]);
        $status = proc_close($process);
        unlink($file);
        $this->assertSame(0, $status, "$doc:$line exited $status\nstdout: $stdout\nstderr: $stderr");
        $this->assertSame('', $stderr, "$doc:$line wrote to stderr");
    }
}
