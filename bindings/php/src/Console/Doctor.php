<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Console;

use Aws\DynamoDb\Exception\DynamoDbException;
use Aws\Exception\AwsException;
use Ddblock\Laravel\ClockOffset;
use Ddblock\Laravel\DynamoDbStore;
use Illuminate\Support\Carbon;

/**
 * The checks of `php artisan ddblock:doctor`: the Rust core's doctor (`core/src/admin/doctor.rs`,
 * `layout_check.rs`), same checks, order, statuses and wording, with the layout the installed
 * Laravel writes instead of a `DDBLOCK_LAYOUT` setting, plus `clock`: this host's clock against
 * DynamoDB's, measured ({@see ClockOffset}).
 *
 * A missing table is a failed check, not an error; a request that fails for another reason
 * (network, permissions) throws the SDK's exception.
 *
 * @internal
 */
final class Doctor
{
    /** A live lock with more than this many seconds left counts as a ttl-0 lock (`--min-remaining`). */
    public const DEFAULT_MIN_REMAINING = 3600;

    /** Clock skew allowed above 86400 s by the ttl-0 heuristic. */
    public const TTL_SKEW = 60;

    /** How many ttl-0 locks the report lists. */
    public const EXAMPLES = 10;

    private const AFTER_TABLE = ['key_schema', 'ttl', 'expired_items', 'default_ttl_locks', 'invalid_items', 'layout'];
    private const SCAN_CHECKS = ['expired_items', 'default_ttl_locks', 'invalid_items', 'layout'];

    private TableView $view;

    /** @var callable(): ClockOffset */
    private $measureClock;

    /**
     * @param  (callable(): ClockOffset)|null  $measureClock  test seam; default: 5 DescribeTable
     *     requests 0.23 s apart ({@see ClockOffset::measure()})
     */
    public function __construct(TableView $view, ?callable $measureClock = null)
    {
        $this->view = $view;
        $this->measureClock = $measureClock ?? fn (): ClockOffset => ClockOffset::measure([$this, 'sampleDate']);
    }

    /**
     * Runs every check. `$scan` false skips the item checks (no Scan); `$all` scans every item
     * instead of those under the prefix.
     *
     * @return array{
     *     checks: list<array{id: string, status: string, detail: string, fix: string|null}>,
     *     table_status: string|null, billing_mode: string|null,
     *     ttl: array{status: string, attribute: string|null}|null,
     *     counts: array<string, int>|null, default_ttl_locks: list<array<string, mixed>>,
     *     clock: array<string, mixed>, now: int, healthy: bool
     * }
     */
    public function run(bool $scan = true, bool $all = false, int $minRemaining = self::DEFAULT_MIN_REMAINING): array
    {
        $v = $this->view;
        $now = Carbon::now()->getTimestamp();
        $report = [
            'checks' => [],
            'table_status' => null,
            'billing_mode' => null,
            'ttl' => null,
            'counts' => null,
            'default_ttl_locks' => [],
            'clock' => [],
            'now' => $now,
            'healthy' => true,
        ];
        try {
            $table = $v->client->describeTable(['TableName' => $v->table])['Table'] ?? [];
        } catch (DynamoDbException $e) {
            if ($e->getAwsErrorCode() !== 'ResourceNotFoundException') {
                throw $e;
            }
            $table = null;
        }
        if ($table === null) {
            $this->add($report, 'table', 'fail', sprintf('table `%s` does not exist at %s', $v->table, $v->endpoint()));
            foreach (self::AFTER_TABLE as $id) {
                $this->add($report, $id, 'skipped', 'the table does not exist');
            }
        } else {
            $this->tableChecks($report, $table);
            $ttl = $this->ttlCheck($report);
            if ($scan) {
                $this->itemChecks($report, $ttl, $all, $minRemaining, $now);
            } else {
                foreach (self::SCAN_CHECKS as $id) {
                    $this->add($report, $id, 'skipped', 'the scan was turned off');
                }
            }
        }
        $this->clockCheck($report);
        $report['healthy'] = ! in_array('fail', array_column($report['checks'], 'status'), true);

        return $report;
    }

    /**
     * One clock sample: a DescribeTable (answered with the table, or with an error such as a
     * missing table: either carries DynamoDB's Date header). Returns the Date header, or null.
     *
     * @internal
     */
    public function sampleDate(): ?string
    {
        try {
            return ClockOffset::dateOf($this->view->client->describeTable(['TableName' => $this->view->table]));
        } catch (AwsException $e) {
            if ($e->getResponse() === null) {
                throw $e; // no answer at all: nothing to measure with
            }

            return ClockOffset::dateOf($e);
        }
    }

    /**
     * @param  array<string, mixed>  $report
     * @param  array<string, mixed>  $table  DescribeTable's `Table`
     */
    private function tableChecks(array &$report, array $table): void
    {
        $v = $this->view;
        $status = (string) ($table['TableStatus'] ?? 'UNKNOWN');
        $billing = $table['BillingModeSummary']['BillingMode'] ?? null;
        $report['table_status'] = $status;
        $report['billing_mode'] = $billing;
        $this->add($report, 'table', $status === 'ACTIVE' ? 'ok' : 'warn', sprintf(
            'table `%s` exists, status %s%s',
            $v->table,
            $status,
            ['PAY_PER_REQUEST' => ', on-demand', 'PROVISIONED' => ', provisioned capacity'][$billing] ?? ''
        ));
        $problem = $this->keySchemaProblem($table);
        $this->add(
            $report,
            'key_schema',
            $problem === null ? 'ok' : 'fail',
            $problem ?? sprintf('one string partition key `%s`', $v->keyAttribute)
        );
    }

    /**
     * Why the table's key schema is not one string HASH key named as configured, if it is not.
     *
     * @param  array<string, mixed>  $table
     */
    private function keySchemaProblem(array $table): ?string
    {
        $want = $this->view->keyAttribute;
        $types = [];
        foreach ($table['AttributeDefinitions'] ?? [] as $d) {
            $types[$d['AttributeName'] ?? ''] = $d['AttributeType'] ?? '?';
        }
        $keys = $table['KeySchema'] ?? [];
        if (
            count($keys) === 1 && ($keys[0]['AttributeName'] ?? null) === $want
            && ($keys[0]['KeyType'] ?? null) === 'HASH' && ($types[$want] ?? null) === 'S'
        ) {
            return null;
        }
        $described = array_map(static fn (array $k): string => sprintf(
            '`%s` (%s, %s)',
            $k['AttributeName'] ?? '',
            $k['KeyType'] ?? '?',
            $types[$k['AttributeName'] ?? ''] ?? '?'
        ), $keys);

        return sprintf(
            'the key schema is %s; Laravel\'s cache table needs exactly one string (S) partition key named `%s` '
            . '(or configure the key attribute to match)',
            implode(' + ', $described),
            $want
        );
    }

    /**
     * The `ttl` check (DescribeTimeToLive). Returns the TTL state: [status, attribute].
     *
     * @param  array<string, mixed>  $report
     * @return array{0: string, 1: string|null}
     */
    private function ttlCheck(array &$report): array
    {
        $exp = $this->view->expirationAttribute;
        $reason = null;
        try {
            $result = $this->view->client->describeTimeToLive(['TableName' => $this->view->table]);
            $d = $result['TimeToLiveDescription'] ?? null;
            if (! is_array($d)) {
                $reason = 'DescribeTimeToLive returned no description';
            }
        } catch (DynamoDbException $e) {
            $code = $e->getAwsErrorCode();
            if ($code === null || $code === 'ResourceNotFoundException') {
                throw $e;
            }
            $d = null;
            $reason = $code === 'UnknownOperationException'
                ? 'the server does not implement DescribeTimeToLive'
                : sprintf('DescribeTimeToLive failed with %s: %s', $code, $e->getAwsErrorMessage() ?? 'no message');
        }
        $state = 'unknown';
        $attribute = null;
        if ($reason === null) {
            $raw = $d['TimeToLiveStatus'] ?? null;
            $state = is_string($raw) && in_array($raw, ['ENABLED', 'ENABLING', 'DISABLING', 'DISABLED'], true)
                ? strtolower($raw) : 'unknown';
            $attribute = $state === 'disabled' ? null : (string) ($d['AttributeName'] ?? '');
            if ($state === 'unknown') {
                $reason = sprintf('unexpected TTL status %s', var_export($raw, true));
            }
        }
        $covers = in_array($state, ['enabled', 'enabling'], true) && $attribute === $exp;
        if ($covers) {
            $detail = $state === 'enabled' ? "TTL is enabled on `$exp`" : "TTL is being enabled on `$exp`";
        } elseif ($state === 'unknown') {
            $detail = "TTL status unknown: $reason";
        } elseif ($state === 'disabled') {
            $detail = "TTL is disabled: expired items stay in the table until deleted (reads and lock conditions "
                . "check `$exp` themselves, so this is garbage, not a bug)";
        } else {
            $detail = "TTL is $state on `$attribute`, not on the expiration attribute `$exp`: DynamoDB never "
                . 'deletes expired cache items and locks';
        }
        $status = $covers ? 'ok' : ($state === 'unknown' ? 'unknown' : 'warn');
        $this->add($report, 'ttl', $status, $detail, [$state, $attribute]);
        $report['ttl'] = ['status' => $state, 'attribute' => $attribute];

        return [$state, $attribute];
    }

    /**
     * Scans the items in scope: expired but present, ttl-0 locks, items that are not Laravel's,
     * keys of another Laravel version's layout.
     *
     * @param  array<string, mixed>  $report
     * @param  array{0: string, 1: string|null}  $ttl
     */
    private function itemChecks(array &$report, array $ttl, bool $all, int $minRemaining, int $now): void
    {
        $v = $this->view;
        $maxRemaining = DynamoDbStore::DEFAULT_LOCK_SECONDS + self::TTL_SKEW;
        $counts = array_fill_keys([
            'scanned', 'items', 'locks', 'cache', 'other', 'expired_but_present', 'default_ttl_locks',
            'invalid_expiry', 'skipped',
        ], 0);
        $examples = [];
        $layout = new LayoutTally($v->configuredPrefix, $v->layout);
        // The items under the prefix as configured: on Laravel 8-10 that is `app_`, not the `app_:`
        // its keys start with, so the keys other versions write for the same prefix (`app_x`,
        // `app_app_x`) are scanned too, as `other` items, and the layout check sees them. (The
        // core scans under `app_:`, where only --all shows them.)
        $params = ['TableName' => $v->table];
        if (! $all && $v->configuredPrefix !== '') {
            $params += [
                'FilterExpression' => 'begins_with(#key, :prefix)',
                'ExpressionAttributeNames' => ['#key' => $v->keyAttribute],
                'ExpressionAttributeValues' => [':prefix' => ['S' => $v->configuredPrefix]],
            ];
        }
        foreach ($v->client->getPaginator('Scan', $params) as $page) {
            $counts['scanned'] += (int) ($page['ScannedCount'] ?? 0);
            foreach ($page['Items'] ?? [] as $item) {
                $key = $item[$v->keyAttribute]['S'] ?? null;
                if (! is_string($key)) {
                    $counts['skipped']++;
                    continue;
                }
                $layout->see($key);
                $counts['items']++;
                [$kind, $name] = $v->classify($key, $item);
                $counts[$kind === 'lock' ? 'locks' : $kind]++;
                [$expiresAt, $invalid] = $v->expiry($item);
                $expiresIn = $expiresAt === null ? null : $expiresAt - $now;
                $expired = $expiresAt !== null && $now >= $expiresAt;
                $counts['expired_but_present'] += (int) $expired;
                $counts['invalid_expiry'] += (int) $invalid;
                $ttl0 = $kind === 'lock' && $expiresIn !== null
                    && $expiresIn > $minRemaining && $expiresIn <= $maxRemaining;
                if ($ttl0) {
                    $counts['default_ttl_locks']++;
                    $examples[] = [
                        'key' => $key,
                        'kind' => $kind,
                        'name' => $name,
                        'owner' => $v->owner($item)[1],
                        'expires_at' => $expiresAt,
                        'expires_in' => $expiresIn,
                        'expired_but_present' => $expired,
                    ];
                }
            }
        }
        // Longest remaining first, then by key.
        usort($examples, static fn (array $a, array $b): int
            => [$b['expires_in'], $a['key']] <=> [$a['expires_in'], $b['key']]);
        $exp = $v->expirationAttribute;
        $ttlOn = in_array($ttl[0], ['enabled', 'enabling'], true) && $ttl[1] === $exp;
        $n = $counts['expired_but_present'];
        $this->add($report, 'expired_items', $n === 0 || $ttlOn ? 'ok' : 'warn', $n === 0
            ? sprintf('no expired items among %d in scope', $counts['items'])
            : sprintf(
                $ttlOn ? '%d of %d items are expired but still present; TTL deletes them (it lags up to 48 h)'
                    : '%d of %d items are expired but still present, and TTL will not delete them',
                $n,
                $counts['items']
            ));
        $ttl0 = $counts['default_ttl_locks'];
        $this->add($report, 'default_ttl_locks', $ttl0 === 0 ? 'ok' : 'warn', $ttl0 === 0
            ? sprintf(
                'no live lock looks like a ttl-0 lock (of %d locks; heuristic: more than %d s and at most %d s left)',
                $counts['locks'],
                $minRemaining,
                $maxRemaining
            )
            : sprintf(
                '%d of %d locks look like ttl-0 locks (86400 s; more than %d s left): possibly stuck by Laravel\'s '
                . 'read-then-delete release, they block their name until they expire',
                $counts['default_ttl_locks'],
                $counts['locks'],
                $minRemaining
            ));
        $invalid = $counts['invalid_expiry'] + $counts['skipped'];
        $this->add($report, 'invalid_items', $invalid === 0 ? 'ok' : 'warn', $invalid === 0
            ? 'every item has a string key and a numeric (or no) expiry'
            : sprintf(
                '%d items have a non-numeric `%s` and %d have no string `%s`: not written by Laravel or ddblock',
                $counts['invalid_expiry'],
                $exp,
                $counts['skipped'],
                $v->keyAttribute
            ));
        [$status, $detail] = $layout->check();
        $this->add($report, 'layout', $status, $detail);
        $report['counts'] = $counts;
        $report['default_ttl_locks'] = array_slice($examples, 0, self::EXAMPLES);
    }

    /**
     * The `clock` check: this host's clock against DynamoDB's, measured from the Date header of
     * 5 answers ({@see ClockOffset}), against the allowance of the store's clock-skew margin.
     *
     * @param  array<string, mixed>  $report
     */
    private function clockCheck(array &$report): void
    {
        $margin = $this->view->store->clockSkewMargin();
        $offset = ($this->measureClock)();
        $verdict = $offset->verdict($margin);
        $this->add($report, 'clock', $verdict, $offset->describe($margin), [$offset, $margin]);
        // The shape of `ddblock doctor --json`'s `clock`, plus the margin.
        $report['clock'] = $offset->isEmpty() ? [
            'unmeasured' => $offset->samples() === 0 ? 'no Date header' : 'the answers disagree',
            'allowed' => ClockOffset::allowance($margin),
            'margin' => $margin,
        ] : [
            'offset' => $offset->estimate(),
            'low' => $offset->low(),
            'high' => $offset->high(),
            'answers' => $offset->samples(),
            'allowed' => ClockOffset::allowance($margin),
            'margin' => $margin,
        ];
    }

    /**
     * @param  array<string, mixed>  $report
     * @param  mixed  $context  what the fix needs (the TTL state; the clock offset and margin)
     */
    private function add(array &$report, string $id, string $status, string $detail, $context = null): void
    {
        $fix = $this->fix($id, $status, $context);
        $report['checks'][] = ['id' => $id, 'status' => $status, 'detail' => $detail, 'fix' => $fix];
    }

    /**
     * What to do about a check that is not ok, in an app's terms.
     *
     * @param  mixed  $context
     */
    private function fix(string $id, string $status, $context): ?string
    {
        if (in_array($status, ['ok', 'skipped'], true)) {
            return null;
        }
        $v = $this->view;
        $exp = $v->expirationAttribute;
        switch ($id) {
            case 'table':
                return $status === 'fail'
                    ? sprintf(
                        'create it (one string partition key `%s`; `ddblock create-table` does it and enables TTL), '
                        . 'or fix the store\'s `table`, `endpoint` or `region` in config/cache.php',
                        $v->keyAttribute
                    )
                    : 'wait until the table is ACTIVE';
            case 'key_schema':
                return 'a key schema cannot be changed: point the store\'s `table` at Laravel\'s cache table, or set '
                    . 'its `attributes.key` to the table\'s partition key';
            case 'ttl':
                if ($status === 'unknown') {
                    return 'check TTL in the AWS console (local emulators may not implement it)';
                }

                return ($context[0] ?? null) === 'disabled'
                    ? "enable TTL on `$exp` (the AWS console, `aws dynamodb update-time-to-live`, or "
                        . '`ddblock create-table` on the existing table), or schedule `ddblock sweep`'
                    : "TTL works on one attribute: disable it and enable it on `$exp`, or schedule `ddblock sweep`";
            case 'expired_items':
                return "enable TTL on `$exp`, or run `ddblock sweep` (deletes only expired items)";
            case 'default_ttl_locks':
                return 'see who holds one with `php artisan ddblock:status NAME`; if its holder is gone, '
                    . '`php artisan ddblock:release NAME --force`; locks released by this driver cannot stick';
            case 'invalid_items':
                return 'find what else writes to this table (`ddblock list --all`); Laravel and ddblock leave these '
                    . 'items alone';
            case 'layout':
                return sprintf(
                    'this app\'s Laravel writes the `%s` layout: give every process on this table the same one '
                    . '(the same Laravel major version; DDBLOCK_LAYOUT=%s for ddblock\'s CLI and libraries) and the '
                    . 'same prefix; `ddblock list --all` shows every key',
                    $v->layout,
                    $v->layout
                );
            case 'clock':
                [$offset, $margin] = $context;
                if ($status === 'fail') {
                    return sprintf(
                        'synchronise this host\'s clock (NTP: chrony, systemd-timesyncd; on AWS the Amazon Time '
                        . 'Sync Service), or raise `ddblock.clock_skew_margin` (DDBLOCK_CLOCK_SKEW_MARGIN) to at '
                        . 'least %d on every host that takes these locks',
                        max($margin + 1, (int) $offset->marginNeeded())
                    );
                }

                return 'run it again (a slow or busy network widens the interval); if it stays, check this host\'s NTP '
                    . 'synchronisation';
        }

        return null;
    }
}
