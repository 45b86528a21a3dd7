<?php
/**
 * Checks harness.php against one DynamoDB endpoint and one key layout, by
 * spawning it and speaking its JSON-lines protocol (compat-tests/support/peers/PROTOCOL.md), as
 * other test suites do.
 * Run by selftest.sh:  php selftest.php ENDPOINT LAYOUT
 * Prints one line per check; exit status 1 if any check failed.
 */

declare(strict_types=1);

[, $endpoint, $layout] = $argv + [null, null, null];
if (! $endpoint || ! in_array($layout, ['laravel8', 'laravel11', 'laravel12'], true)) {
    fwrite(STDERR, "usage: php selftest.php ENDPOINT laravel8|laravel11|laravel12\n");
    exit(2);
}
$table = "ddblock_php_selftest_{$layout}_" . getmypid();
$prefix = 'app_';

// The item keys each Laravel version writes for prefix 'app_' (see harness.php).
[$cacheKey, $lockKey] = [
    'laravel8' => [fn ($k) => "app_:$k", fn ($n) => "app_:app_:$n"],
    'laravel11' => [fn ($k) => "app_$k", fn ($n) => "app_app_$n"],
    'laravel12' => [fn ($k) => "app_$k", fn ($n) => "app_$n"],
][$layout];

$env = array_merge(getenv(), ['DDB_ENDPOINT' => $endpoint, 'DDB_TABLE' => $table, 'DDB_LAYOUT' => $layout, 'DDB_PREFIX' => $prefix]);
$proc = proc_open([PHP_BINARY, __DIR__ . '/harness.php'], [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => STDERR], $pipes, null, $env);
[$toHarness, $fromHarness] = $pipes;

function call(array $cmd): array
{
    global $toHarness, $fromHarness;
    fwrite($toHarness, json_encode($cmd, JSON_UNESCAPED_SLASHES) . "\n");
    fflush($toHarness);
    $line = fgets($fromHarness);
    if ($line === false) {
        throw new RuntimeException('harness exited');
    }

    return json_decode($line, true, 512, JSON_THROW_ON_ERROR);
}

/** A call that must succeed. */
function ok(array $cmd): array
{
    $r = call($cmd);
    if (! ($r['ok'] ?? false)) {
        throw new RuntimeException(json_encode($cmd) . ' failed: ' . ($r['error'] ?? json_encode($r)));
    }

    return $r;
}

$failures = 0;
function check(string $what, bool $pass, $detail = null): void
{
    global $failures, $layout;
    $failures += $pass ? 0 : 1;
    echo ($pass ? '  ok   ' : '  FAIL ') . "[$layout] $what" . ($pass || $detail === null ? '' : ' -- got ' . json_encode($detail, JSON_UNESCAPED_SLASHES)) . "\n";
}

function b64($value): string
{
    return base64_encode(serialize($value));
}

/** The raw item at $key (strongly consistent read), or null. */
function item(string $key): ?array
{
    global $table;

    return ok(['op' => 'raw', 'call' => 'GetItem', 'params' => ['TableName' => $table, 'Key' => ['key' => ['S' => $key]], 'ConsistentRead' => true]])['result']['Item'] ?? null;
}

/**
 * Is $item exactly {key: S $key, value: $value, expires_at: N} with
 * expires_at within [$lo, $hi]?
 */
function item_is(?array $item, string $key, array $value, int $lo, int $hi): bool
{
    if ($item === null || array_diff(array_keys($item), ['key', 'value', 'expires_at']) || count($item) !== 3) {
        return false;
    }
    $exp = $item['expires_at'];

    return $item['key'] === ['S' => $key] && $item['value'] === $value
        && array_keys($exp) === ['N'] && ctype_digit($exp['N']) && (int) $exp['N'] >= $lo && (int) $exp['N'] <= $hi;
}

function now(): int
{
    return ok(['op' => 'now'])['now'];
}

try {
    // --- table -------------------------------------------------------------
    ok(['op' => 'raw', 'call' => 'CreateTable', 'params' => [
        'TableName' => $table, 'BillingMode' => 'PAY_PER_REQUEST',
        'AttributeDefinitions' => [['AttributeName' => 'key', 'AttributeType' => 'S']],
        'KeySchema' => [['AttributeName' => 'key', 'KeyType' => 'HASH']],
    ]]);
    for ($i = 0; ok(['op' => 'raw', 'call' => 'DescribeTable', 'params' => ['TableName' => $table]])['result']['Table']['TableStatus'] !== 'ACTIVE'; $i++) {
        if ($i > 100) {
            throw new RuntimeException("table $table not ACTIVE after 10 s");
        }
        usleep(100000); // dynalite: CREATING first (moto and DynamoDB Local: ACTIVE at once)
    }

    // --- start-up -------------------------------------------------------------
    $h = ok(['op' => 'hello']);
    check('hello -> lang php, driver laravel, now (fractional)', $h['lang'] === 'php' && $h['driver'] === 'laravel'
        && is_numeric($h['now']) && abs($h['now'] - microtime(true)) < 5, $h);

    $want = [
        'laravel8' => 'my_shop_app_cache',
        'laravel11' => 'my_shop_app_cache_',
        'laravel12' => 'my-shop-app-cache-',
    ][$layout];
    $sl = ok(['op' => 'slug', 'name' => 'My Shop-App']);
    check("slug 'My Shop-App' -> my-shop-app, my_shop_app, prefix $want", $sl['slug'] === 'my-shop-app'
        && $sl['slug_underscore'] === 'my_shop_app' && $sl['prefix'] === $want, $sl);

    // --- lock acquire / release ---------------------------------------------
    $k = ok(['op' => 'lock.key', 'name' => 'orders']);
    check("lock.key orders -> {$lockKey('orders')}", $k['key'] === $lockKey('orders'), $k);
    $t0 = now();
    $a = ok(['op' => 'lock.acquire', 'name' => 'orders', 'ttl' => 10]);
    $t1 = now();
    $owner = $a['owner'];
    check('lock.acquire orders ttl 10 -> true, 16-char random owner', $a['acquired'] === true && strlen($owner) === 16, $a);
    $it = item($lockKey('orders'));
    check("lock item is exactly {key: S {$lockKey('orders')}, value: S 's:16:\"<owner>\";', expires_at: N now+10}",
        item_is($it, $lockKey('orders'), ['S' => serialize($owner)], $t0 + 10, $t1 + 10), $it);
    $b = ok(['op' => 'lock.acquire', 'name' => 'orders', 'ttl' => 10]);
    check('second lock.acquire of a held lock -> false', $b['acquired'] === false && $b['owner'] !== $owner, $b);
    $h = ok(['op' => 'lock.holder', 'name' => 'orders']);
    check('lock.holder orders -> the owner and the item\'s expires_at', $h['holder'] === ['owner' => $owner, 'expires_at' => (int) $it['expires_at']['N']], $h);
    $g = ok(['op' => 'lock.get', 'name' => 'orders']);
    check('lock.get orders -> the owner string', $g['value'] === b64($owner), $g);
    $r = ok(['op' => 'lock.release', 'name' => 'orders', 'owner' => 'someone-else']);
    check('lock.release by another owner -> false, item stays', $r['released'] === false && item($lockKey('orders')) !== null, $r);
    $r = ok(['op' => 'lock.release', 'name' => 'orders', 'owner' => $owner]);
    check('lock.release by the owner -> true, item deleted', $r['released'] === true && item($lockKey('orders')) === null, $r);
    check('lock.get of a free lock -> null', ok(['op' => 'lock.get', 'name' => 'orders'])['value'] === b64(null));
    check('lock.holder of a free lock -> null', ok(['op' => 'lock.holder', 'name' => 'orders'])['holder'] === null);

    // Numeric owners are stored as N and read back as int: release() compares
    // int 12345 === '12345' and fails (Laravel's bug), the lock stays.
    $t0 = now();
    $a = ok(['op' => 'lock.acquire', 'name' => 'num', 'ttl' => 10, 'owner' => '12345']);
    $it = item($lockKey('num'));
    check("owner '12345' -> value N 12345", $a['acquired'] === true && $a['owner'] === '12345'
        && item_is($it, $lockKey('num'), ['N' => '12345'], $t0 + 10, now() + 10), $it);
    check('lock.get num -> int 12345', ok(['op' => 'lock.get', 'name' => 'num'])['value'] === b64(12345));
    check("lock.holder num -> owner '12345' (the N text)", ok(['op' => 'lock.holder', 'name' => 'num'])['holder']['owner'] === '12345');
    $r = ok(['op' => 'lock.release', 'name' => 'num', 'owner' => '12345']);
    check("lock.release num '12345' -> false (strict === against int), item stays", $r['released'] === false && item($lockKey('num')) !== null, $r);
    ok(['op' => 'lock.forceRelease', 'name' => 'num']);
    check('lock.forceRelease num deletes the item', item($lockKey('num')) === null);

    $t0 = now();
    $a = ok(['op' => 'lock.acquire', 'name' => 'zero', 'ttl' => 0]);
    check('lock ttl 0 -> expires_at now+86400', $a['acquired'] === true
        && item_is(item($lockKey('zero')), $lockKey('zero'), ['S' => serialize($a['owner'])], $t0 + 86400, now() + 86400));

    // block(): polls acquire() until it succeeds or the seconds run out.
    $start = microtime(true);
    $bl = ok(['op' => 'lock.block', 'name' => 'zero', 'ttl' => 5, 'seconds' => 1, 'sleep_ms' => 100]);
    $took = microtime(true) - $start;
    // Lock::block() counts whole seconds (time()): block(1) gives up at the next
    // second boundary after at least one 100 ms sleep, i.e. after 0.1 to ~1.1 s.
    check('lock.block on a held lock, 1 s -> acquired false (LockTimeoutException)', $bl['acquired'] === false && $took >= 0.09 && $took < 2.5, [$bl, $took]);
    $bl = ok(['op' => 'lock.block', 'name' => 'free', 'ttl' => 5, 'seconds' => 1, 'owner' => 'me']);
    check('lock.block on a free lock -> acquired true, given owner', $bl['acquired'] === true && $bl['owner'] === 'me', $bl);

    // --- cache values -------------------------------------------------------
    $t0 = now();
    $p = ok(['op' => 'put', 'key' => 'k', 'v' => b64(['a' => 1]), 'ttl' => 60]);
    $it = item($cacheKey('k'));
    check("put k ['a'=>1] 60 -> {key: S {$cacheKey('k')}, value: S 'a:1:{s:1:\"a\";i:1;}', expires_at: now+60}",
        $p['result'] === true && item_is($it, $cacheKey('k'), ['S' => 'a:1:{s:1:"a";i:1;}'], $t0 + 60, now() + 60), $it);
    check('get k -> the array', ok(['op' => 'get', 'key' => 'k'])['value'] === b64(['a' => 1]));
    ok(['op' => 'put', 'key' => 'n', 'v' => b64(42), 'ttl' => 60]);
    ok(['op' => 'put', 'key' => 'fl', 'v' => b64(1.5), 'ttl' => 60]);
    ok(['op' => 'put', 'key' => 's', 'v' => b64('hello'), 'ttl' => 60]);
    check("put 42 / 1.5 / 'hello' -> N '42' / N '1.5' / S 's:5:\"hello\";'",
        item($cacheKey('n'))['value'] === ['N' => '42'] && item($cacheKey('fl'))['value'] === ['N' => '1.5']
        && item($cacheKey('s'))['value'] === ['S' => 's:5:"hello";']);
    check('get fl -> float 1.5', ok(['op' => 'get', 'key' => 'fl'])['value'] === b64(1.5));
    check('increment of a missing key -> false', ok(['op' => 'increment', 'key' => 'missing'])['result'] === false);
    check('increment n by 3 -> 45', ok(['op' => 'increment', 'key' => 'n', 'by' => 3])['result'] === 45);
    check('decrement n by 5 -> 40', ok(['op' => 'decrement', 'key' => 'n', 'by' => 5])['result'] === 40);
    check('add a1 -> true', ok(['op' => 'add', 'key' => 'a1', 'v' => b64('x'), 'ttl' => 60])['result'] === true);
    check('add a1 again -> false', ok(['op' => 'add', 'key' => 'a1', 'v' => b64('y'), 'ttl' => 60])['result'] === false);
    ok(['op' => 'putMany', 'values' => ['m1' => b64(1), 'm2' => b64('two')], 'ttl' => 60]);
    $m = ok(['op' => 'many', 'keys' => ['m1', 'm2', 'nope']])['values'];
    check('putMany + many -> {m1: 1, m2: "two", nope: null}', $m === ['m1' => b64(1), 'm2' => b64('two'), 'nope' => b64(null)], $m);
    $t0 = now();
    ok(['op' => 'forever', 'key' => 'f', 'v' => b64('x')]);
    $exp = (int) item($cacheKey('f'))['expires_at']['N'];
    // forever() passes a timestamp (now + 5 years) as seconds: now + now + 5y.
    check('forever -> expires_at = now + (now + 5 years)', $exp >= 2 * $t0 + 1826 * 86400 && $exp <= 2 * now() + 1827 * 86400 + 1, $exp);
    check('forget k -> true, get k -> null', ok(['op' => 'forget', 'key' => 'k'])['result'] === true
        && ok(['op' => 'get', 'key' => 'k'])['value'] === b64(null));

    // --- refresh (laravel12 only) -------------------------------------------
    if ($layout === 'laravel12') {
        $a = ok(['op' => 'lock.acquire', 'name' => 'ref', 'ttl' => 10, 'owner' => 'o1']);
        $t0 = now();
        $r = ok(['op' => 'lock.refresh', 'name' => 'ref', 'owner' => 'o1', 'ttl' => 30]);
        check('lock.refresh by the owner -> true, expires_at now+30', $r['refreshed'] === true
            && item_is(item($lockKey('ref')), $lockKey('ref'), ['S' => serialize('o1')], $t0 + 30, now() + 30), $r);
        $r = ok(['op' => 'lock.refresh', 'name' => 'ref', 'owner' => 'o2', 'ttl' => 30]);
        check('lock.refresh by another owner -> false', $r['refreshed'] === false, $r);
        $t0 = now();
        $r = ok(['op' => 'lock.refresh', 'name' => 'ref', 'owner' => 'o1', 'ttl' => 0]);
        check('lock.refresh ttl 0 -> expires_at now+86400', $r['refreshed'] === true
            && item_is(item($lockKey('ref')), $lockKey('ref'), ['S' => serialize('o1')], $t0 + 86400, now() + 86400), $r);
        ok(['op' => 'lock.acquire', 'name' => 'numref', 'ttl' => 10, 'owner' => '777']);
        check("lock.refresh with numeric owner '777' (N) -> true",
            ok(['op' => 'lock.refresh', 'name' => 'numref', 'owner' => '777', 'ttl' => 20])['refreshed'] === true);
        check('lock.refresh of a missing lock -> false',
            ok(['op' => 'lock.refresh', 'name' => 'gone', 'owner' => 'o1', 'ttl' => 20])['refreshed'] === false);
    } else {
        $r = call(['op' => 'lock.refresh', 'name' => 'ref', 'owner' => 'o1', 'ttl' => 30]);
        check("lock.refresh is refused for $layout", $r['ok'] === false, $r);
    }

    // --- loops -----------------------------------------------------------------
    $record = tempnam(sys_get_temp_dir(), 'selftest-cycles-');
    $c = ok(['op' => 'cycles', 'names' => ['cyc'], 'cycles' => 4, 'ttl' => 5, 'work_ms' => 5, 'record' => $record, 'warmup' => 1]);
    $recs = array_map(fn ($l) => json_decode($l, true), file($record, FILE_IGNORE_NEW_LINES));
    unlink($record);
    check('cycles: 4 uncontended cycles acquired and released, CPU and wall figures',
        array_intersect_key($c, array_flip(['cycles', 'acquired', 'released', 'release_false', 'errors']))
            === ['cycles' => 4, 'acquired' => 4, 'released' => 4, 'release_false' => 0, 'errors' => 0]
        && $c['cpu_s'] >= 0 && $c['wall_s'] > 0, $c);
    $r0 = $recs[0] ?? [];
    check('cycles: one record per cycle with the protocol\'s fields', count($recs) === 4
        && array_keys($r0) === ['lang', 'driver', 'pid', 'name', 'owner', 'acquired', 't_try', 't_acq', 't_rel', 't_rel_end', 'released']
        && $r0['lang'] === 'php' && $r0['driver'] === 'laravel' && $r0['name'] === 'cyc' && $r0['released'] === true
        && $r0['t_try'] <= $r0['t_acq'] && $r0['t_acq'] <= $r0['t_rel'] && $r0['t_rel'] <= $r0['t_rel_end'], $recs);
    $out = tempnam(sys_get_temp_dir(), 'selftest-chaos-');
    $c = ok(['op' => 'chaos', 'keys' => ['ch'], 'ttl' => 5, 'work_ms' => 5, 'wait_ms' => 1000, 'duration_ms' => 10000,
        'acquisitions' => 2, 'seed' => 1, 'worker' => 'laravel-1', 'out' => $out]);
    $recs = array_map(fn ($l) => json_decode($l, true), file($out, FILE_IGNORE_NEW_LINES));
    unlink($out);
    check('chaos: 2 acquisitions, stock Laravel (lang laravel): no fence, two unconditional writes, released',
        $c === ['ok' => true, 'cycles' => 2, 'acquired' => 2] && count($recs) === 2
        && $recs[1]['lang'] === 'laravel' && $recs[1]['worker'] === 'laravel-1' && $recs[1]['acquire'] === 'acquired'
        && $recs[1]['fence'] === null && $recs[1]['writes'] === ['accepted', 'accepted'] && $recs[1]['release'] === 'released', [$c, $recs]);
    $res = item('res_ch');
    check('chaos: res_ch counts 4 writes', ($res['writes'] ?? null) === ['N' => '4'], $res);

    // --- errors never end the loop ------------------------------------------
    $r = call(['op' => 'put', 'key' => 'bin', 'v' => b64("\xff\xfe"), 'ttl' => 60]);
    check('non-UTF-8 string value -> ok:false (JSON cannot carry it)', $r['ok'] === false, $r);
    $r = call(['op' => 'no-such-op']);
    check('unknown op -> ok:false, "unsupported: no-such-op"', $r === ['ok' => false, 'error' => 'unsupported: no-such-op'], $r);
    $r = call(['op' => 'raw', 'call' => 'GetItem', 'params' => ['TableName' => 'no_such_table_xyz', 'Key' => ['key' => ['S' => 'x']]]]);
    check('DynamoDB error -> ok:false with the error code', $r['ok'] === false && str_contains($r['error'], 'ResourceNotFoundException'), $r);
    check('the loop still answers', is_int(now()));
} catch (Throwable $e) {
    check('no unexpected error', false, get_class($e) . ': ' . $e->getMessage());
} finally {
    try {
        call(['op' => 'raw', 'call' => 'DeleteTable', 'params' => ['TableName' => $table]]);
    } catch (Throwable $e) {
        // the harness is gone: already reported
    }
    fclose($toHarness);
    $status = proc_close($proc);
    check('harness exits 0 at EOF', $status === 0, $status);
}

exit($failures ? 1 : 0);
