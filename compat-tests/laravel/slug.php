<?php
/**
 * Laravel's own Str::slug (Debian's 8.83) for the names on stdin, one JSON string per line:
 * prints one JSON line per name, [name, Str::slug(name, '_'), Str::slug(name)]. Used by
 * compat-tests/interop/tests/default_prefix.rs to check ddblock's default cache prefix.
 */

declare(strict_types=1);

require_once 'Illuminate/Support/autoload.php';

use Illuminate\Support\Str;

while (($line = fgets(STDIN)) !== false) {
    if (trim($line) === '') {
        continue;
    }
    $name = json_decode($line, false, 2, JSON_THROW_ON_ERROR);
    echo json_encode([$name, Str::slug($name, '_'), Str::slug($name)], JSON_THROW_ON_ERROR), "\n";
}
