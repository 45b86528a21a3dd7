<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests;

use Aws\DynamoDb\DynamoDbClient;
use Ddblock\Laravel\DynamoDbLock;
use Ddblock\Laravel\DynamoDbStore;
use Ddblock\Laravel\LockException;
use Ddblock\Laravel\OutcomeUnknownException;
use Ddblock\Laravel\Tests\Support\FaultProxy;
use Ddblock\Laravel\Tests\Support\Recorder;
use Illuminate\Support\Carbon;
use RuntimeException;

/**
 * The lock conformance vectors (compat-tests/conformance/v2, the wire-format spec published in
 * docs/format.md) run against the driver: for each case the table is set to `before`, the lock
 * operation runs with the case's fixed clock (Carbon's test time, which Laravel's store reads),
 * margin, release mode, attempt id and fence base (the store's `setLockIds()` test seam), with
 * the SDK's own retries off, and the requests the real AWS SDK sends (recorded under it, as serialized), the
 * answer Laravel's API gives (and the fence) and the item after must be the vector's. A case
 * with `faults` runs through the fault proxy, which drops the answers (`answers_lost`) or the
 * requests (`requests_lost`) of the operations it names, and gives an operation's next requests
 * the faults its `sequence` lists (a reset, a throttling, ...), with the SDK's retries on where
 * `sdk_attempts` says (a release's resend). The Rust core runs the same files
 * (core/tests/conformance.rs).
 */
final class ConformanceTest extends TestCase
{
    private static function vectorsDir(): string
    {
        return self::root() . '/compat-tests/conformance/v2';
    }

    /**
     * The endpoint a case's requests go to: the server, or for a case with faults the fault
     * proxy in front of it, set to those faults.
     *
     * @param  array<string, mixed>|null  $faults
     */
    private static function endpointFor(string $server, ?array $faults): string
    {
        if ($faults === null) {
            return self::endpoint($server);
        }
        // One fault proxy per server, for the cases with faults.
        $proxy = self::startedOnce(
            "fault-proxy $server",
            static fn (): FaultProxy => FaultProxy::start(self::cargoBinary('fault-proxy'), self::endpoint($server))
        );
        $answers = $faults['answers_lost'] ?? [];
        $requests = $faults['requests_lost'] ?? [];
        $proxy->configure([
            'drop_response_rate' => $answers === [] ? 0.0 : 1.0,
            'drop_ops' => $answers,
            'drop_request_rate' => $requests === [] ? 0.0 : 1.0,
            'drop_request_ops' => $requests,
            // The faults of an operation's next requests, in order ("reset", "throttle", ...);
            // an object even when empty.
            'sequence' => (object) ($faults['sequence'] ?? []),
        ]);

        return $proxy->url;
    }

    /** @return array<string, mixed> */
    private static function vectorFile(string $path): array
    {
        $text = (string) file_get_contents(self::vectorsDir() . '/' . $path);

        return json_decode($text, true, 512, JSON_THROW_ON_ERROR);
    }

    /** @return array<string, array{0: string, 1: string, 2: string, 3: string}> [server, layout, operation, case id] */
    public static function cases(): array
    {
        $rows = [];
        foreach (self::layouts() as $layout) {
            $files = glob(self::vectorsDir() . "/$layout/*.json") ?: [];
            if (count($files) !== 6) {
                throw new RuntimeException("expected 6 vector files for $layout, found " . count($files));
            }
            foreach ($files as $file) {
                $doc = json_decode((string) file_get_contents($file), true, 512, JSON_THROW_ON_ERROR);
                foreach ($doc['cases'] as $case) {
                    foreach (array_keys(self::SERVERS) as $server) {
                        $row = [$server, $layout, $doc['operation'], $case['id']];
                        $rows["$server $layout/{$doc['operation']} {$case['id']}"] = $row;
                    }
                }
            }
        }

        return $rows;
    }

    /** @dataProvider cases */
    public function testTheDriverSendsAndAnswersWhatTheVectorSays(
        string $server,
        string $layout,
        string $operation,
        string $id
    ): void {
        $doc = self::vectorFile("$layout/$operation.json");
        $this->assertSame(2, $doc['version']);
        $case = array_values(array_filter($doc['cases'], static fn (array $c): bool => $c['id'] === $id))[0];
        $recorder = new Recorder();
        $plain = self::client($server);
        $attributes = [
            'key' => $case['table']['key_attribute'],
            'value' => $case['table']['value_attribute'],
            'expiration' => $case['table']['expiration_attribute'],
        ];
        $table = self::sharedTable($server, $attributes['key']);
        $input = $case['input'];
        Carbon::setTestNow(Carbon::createFromTimestamp($input['now']));
        // The vectors list the protocol's requests: the SDK's own retries (which would repeat one
        // as it is) are off, unless the case's faults.sdk_attempts says how many sends it takes.
        $retries = ($case['faults']['sdk_attempts'] ?? 1) - 1;
        $endpoint = self::endpointFor($server, $case['faults'] ?? null);
        $recording = self::client($endpoint, $recorder, ['retries' => $retries]);
        $store = self::driverStore($layout, $recording, $table, $input['prefix'], $attributes);
        // The release mode of the release and force_release cases (absent: delete, the default).
        $store->setReleaseMode($input['release_mode'] ?? DynamoDbStore::DEFAULT_RELEASE_MODE);
        if (isset($input['attempt'])) {
            $store->setClockSkewMargin($input['margin']);
            $store->setLockIds(static fn (): string => $input['attempt'], static fn (): int => $input['fence_base']);
        }
        $lock = $store->lock($input['name'], $input['ttl'], $input['owner']);
        $this->assertInstanceOf(DynamoDbLock::class, $lock);

        $key = [$attributes['key'] => ['S' => $lock->tableKey()]];
        $plain->deleteItem(['TableName' => $table, 'Key' => $key]);
        if ($case['before'] !== null) {
            $plain->putItem(['TableName' => $table, 'Item' => $case['before']]);
        }

        $result = $this->runOperation($operation, $lock, $input);

        $sent = array_map(static function (array $r) use ($table): array {
            if (($r['body']['TableName'] ?? null) === $table) {
                $r['body']['TableName'] = 'cache';
            }

            return $r;
        }, $recorder->take());
        $expected = ! self::returnsAllOld($server) && isset($case['requests_without_all_old'])
            ? $case['requests_without_all_old'] : $case['requests'];
        $this->assertSame(null, self::compareRequests($expected, $sent), 'the requests sent');
        $this->assertSame($case['laravel_result'], $result, 'the answer');
        if ($operation === 'acquire') {
            $lease = $case['outcome']['acquired'] ?? $case['outcome']['recovered'] ?? null;
            $this->assertSame($lease['fence'] ?? null, $lock->fence(), 'the fence');
        }
        $this->assertSame(
            self::canonical($case['after']),
            self::canonical(self::item($plain, $table, $lock->tableKey(), $attributes['key'])),
            'the item after'
        );
        // The other ways Laravel's API asks the same question agree (requests no longer recorded).
        if ($operation === 'current_owner') {
            $this->assertSame($result !== null, $lock->isLocked(), 'isLocked()');
        } elseif ($operation === 'is_owned_by') {
            $this->assertSame($result, $lock->isOwnedBy($input['owner']), 'isOwnedBy($owner)');
            if ($input['owner'] !== null) { // restoreLock(name, null) makes a random owner
                $restored = $store->restoreLock($input['name'], $input['owner']);
                $this->assertSame($result, $restored->isOwnedByCurrentProcess());
            }
        }
    }

    /**
     * @param  array<string, mixed>  $input
     * @return mixed what Laravel's lock API returns
     */
    private function runOperation(string $operation, DynamoDbLock $lock, array $input)
    {
        switch ($operation) {
            case 'acquire':
                try {
                    return $lock->acquire();
                } catch (OutcomeUnknownException $e) {
                    return ['throws' => 'outcome_unknown', 'cleanup' => $e->cleanup()];
                } catch (LockException $e) {
                    return ['throws' => 'lock_exception', 'code' => $e->getAwsErrorCode()];
                }
            case 'release':
                return $lock->release();
            case 'force_release':
                return $lock->forceRelease();
            case 'refresh':
                return $lock->refresh($input['seconds']);
            case 'current_owner':
                return (fn () => $this->getCurrentOwner())->call($lock);
            case 'is_owned_by':
                // A null owner is isOwnedBy(null): "is the lock free?" as Laravel answers it.
                return $input['owner'] === null ? $lock->isOwnedBy(null) : $lock->isOwnedByCurrentProcess();
        }
        throw new RuntimeException("unknown operation $operation");
    }

    /**
     * Null when `$sent` is `$expected` in order; else what differs. An expected request marked
     * optional (a read only an implementation that reports the holder of a lock it did not
     * release needs) may be absent; every other one must be there exactly, and nothing more.
     *
     * @param  list<array<string, mixed>>  $expected
     * @param  list<array<string, mixed>>  $sent
     */
    public static function compareRequests(array $expected, array $sent): ?string
    {
        $i = 0;
        foreach ($expected as $n => $exp) {
            $s = $sent[$i] ?? null;
            if (
                $s !== null && $s['operation'] === $exp['operation']
                && self::canonical($s['body']) === self::canonical($exp['body'])
            ) {
                $i++;
            } elseif (! ($exp['optional'] ?? false)) {
                return $s === null
                    ? "request $n ({$exp['operation']}) was not sent"
                    : "request $n: expected " . json_encode($exp) . "\n  sent " . json_encode($s);
            }
        }

        return $i < count($sent) ? 'extra requests: ' . json_encode(array_slice($sent, $i)) : null;
    }

    /**
     * JSON objects compared regardless of member order.
     *
     * @param  mixed  $value
     * @return mixed
     */
    private static function canonical($value)
    {
        if (is_array($value)) {
            if (! array_is_list($value)) {
                ksort($value);
            }

            return array_map([self::class, 'canonical'], $value);
        }

        return $value;
    }

    /** The comparison fails for a request that differs in one member, an extra and a missing one. */
    public function testAChangedRequestFailsTheComparison(): void
    {
        $doc = self::vectorFile('laravel8/release.json');
        $expected = $doc['cases'][0]['requests'];
        $strip = static fn (array $r): array => ['operation' => $r['operation'], 'body' => $r['body']];
        $sent = array_map($strip, $expected);
        $this->assertNull(self::compareRequests($expected, $sent));

        $changed = $sent;
        $changed[0]['body']['ConditionExpression'] = 'attribute_exists(#value)';
        $this->assertNotNull(self::compareRequests($expected, $changed));
        $untyped = $sent;
        $untyped[0]['body']['ExpressionAttributeValues'][':owner'] = ['N' => '1'];
        $this->assertNotNull(self::compareRequests($expected, $untyped));
        $this->assertNotNull(self::compareRequests($expected, [...$sent, $sent[0]]));
        $this->assertNotNull(self::compareRequests($expected, []));

        $isMissing = static fn (array $c): bool => $c['id'] === 'missing';
        $missing = array_values(array_filter($doc['cases'], $isMissing))[0]['requests'];
        $this->assertTrue($missing[1]['optional']);
        $this->assertNull(self::compareRequests($missing, [$strip($missing[0])]));
        $this->assertNotNull(self::compareRequests($missing, [$strip($missing[0]), $strip($missing[0])]));
    }
}
