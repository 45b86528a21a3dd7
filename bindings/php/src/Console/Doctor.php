<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Console;

use Aws\DynamoDb\Exception\DynamoDbException;
use Aws\Exception\AwsException;
use Ddblock\Laravel\ClockOffset;
use Ddblock\Laravel\TableView;
use Illuminate\Support\Carbon;

/**
 * The checks of `ddblock:doctor`: the core's doctor (`admin/doctor.rs`), held to the same answers by
 * compat-tests/conformance/doctor-cases.json, with the layout the installed Laravel writes.
 *
 * @internal
 */
final class Doctor
{
    /** A live lock with more than this many seconds left looks like a ttl-0 lock; also sweep's default age. */
    public const LONG_LOCK_SECONDS = 3600;
    /** Laravel's lock ttl for 0, and the clock skew allowed above it. */
    public const DEFAULT_LOCK_TTL = 86400;
    public const TTL_SKEW = 60;
    /** How many ttl-0 locks the report lists. */
    public const EXAMPLES = 10;

    private const SCAN_CHECKS = ['expired_items', 'default_ttl_locks', 'invalid_items', 'layout'];
    private const VERSIONS = ['laravel8' => '8-10', 'laravel11' => '11', 'laravel12' => '11+'];

    /** @var array<string, array{0: int, 1: string}> keys of another layout: layout => [count, an example] */
    private array $otherLayouts = [];

    /** @param  string  $storeOption  ` --store=NAME` for the commands the fixes print, or '' */
    public function __construct(private TableView $view, private string $storeOption = '')
    {
    }

    /**
     * Runs every check: `$scan` false skips the item checks, `$all` scans every item, `$clock` false skips the clock.
     *
     * @return array<string, mixed>
     */
    public function run(
        bool $scan = true,
        bool $all = false,
        int $minRemaining = self::LONG_LOCK_SECONDS,
        bool $clock = true
    ): array {
        $v = $this->view;
        $report = ['healthy' => true, 'table_status' => null, 'billing_mode' => null, 'ttl' => null, 'checks' => [],
            'counts' => null, 'default_ttl_locks' => [], 'clock' => [], 'now' => Carbon::now()->getTimestamp()];
        $denied = false;
        try {
            $table = $v->client->describeTable(['TableName' => $v->table])['Table'] ?? [];
        } catch (DynamoDbException $e) {
            $denied = $e->getAwsErrorCode() === 'AccessDeniedException';
            if (! $denied && $e->getAwsErrorCode() !== 'ResourceNotFoundException') {
                throw $e;
            }
            $table = null;
        }
        if ($denied) {
            // A policy without dynamodb:DescribeTable: what it would tell is unknown, the other checks go on.
            foreach (
                [
                    'table' => 'whether the table exists and is ACTIVE',
                    'key_schema' => 'its key schema',
                    'regions' => 'whether it spans Regions',
                ] as $id => $what
            ) {
                $this->add($report, $id, 'unknown', "DescribeTable was denied, so $what is unknown");
            }
        } elseif ($table === null) {
            $this->add($report, 'table', 'fail', sprintf('table `%s` does not exist at %s', $v->table, $v->endpoint()));
            foreach (['key_schema', 'regions', 'ttl', ...self::SCAN_CHECKS] as $id) {
                $this->add($report, $id, 'skipped', 'the table does not exist');
            }
        } else {
            $status = (string) ($table['TableStatus'] ?? 'UNKNOWN');
            $billing = $table['BillingModeSummary']['BillingMode'] ?? null;
            [$report['table_status'], $report['billing_mode']] = [$status, $billing];
            $this->add($report, 'table', $status === 'ACTIVE' ? 'ok' : 'warn', sprintf(
                'table `%s` exists, status %s%s',
                $v->table,
                $status,
                ['PAY_PER_REQUEST' => ', on-demand', 'PROVISIONED' => ', provisioned capacity'][$billing] ?? ''
            ));
            $problem = $this->keySchemaProblem($table);
            $this->add($report, 'key_schema', $problem === null ? 'ok' : 'fail', $problem
                ?? sprintf('one string partition key `%s`', $v->keyAttribute));
            $this->regionsCheck($report, $table);
        }
        if ($denied || $table !== null) {
            $ttlOn = $this->ttlCheck($report);
            if ($scan) {
                $this->itemChecks($report, $ttlOn, $all, $minRemaining);
            } else {
                foreach (self::SCAN_CHECKS as $id) {
                    $this->add($report, $id, 'skipped', 'the scan was turned off');
                }
            }
        }
        if ($clock) {
            $this->clockCheck($report);
        } else {
            $this->add($report, 'clock', 'skipped', 'the clock measurement was turned off');
        }
        $report['healthy'] = ! in_array('fail', array_column($report['checks'], 'status'), true);

        return $report;
    }

    /**
     * Which Regions the table spans (docs/semantics.md "Multi-Region"): a global table with eventual consistency
     * (MREC: `Replicas`, `MultiRegionConsistency` EVENTUAL or absent) checks a conditional write in one Region only,
     * so two Regions can hold one lock. This driver sends no DescribeTable when it locks (a PHP process lives one
     * request: a per-process check would be one more request per request), so the doctor is where it is seen.
     *
     * @param  array<string, mixed>  $table  DescribeTable's `Table`
     */
    private function regionsCheck(array &$report, array $table): void
    {
        $replicas = implode(', ', array_map(
            static fn (array $r): string => (string) ($r['RegionName'] ?? '?'),
            $table['Replicas'] ?? []
        ));
        if ($replicas === '') {
            $this->add($report, 'regions', 'ok', 'a single-Region table');
        } elseif (($table['MultiRegionConsistency'] ?? 'EVENTUAL') === 'STRONG') {
            $this->add($report, 'regions', 'ok', "a global table with multi-Region strong consistency (MRSC; replicas: "
                . "$replicas): conditional writes hold across Regions");
        } else {
            $this->add($report, 'regions', 'fail', "a global table with multi-Region eventual consistency (MREC; "
                . "replicas: $replicas): a conditional write is checked in one Region only, so two Regions can hold "
                . 'the same lock');
        }
    }

    /** One clock sample: the Date header of a DescribeTable's answer (a missing table's error has one too). */
    private function sampleDate(): ?string
    {
        try {
            return ClockOffset::dateOf($this->view->client->describeTable(['TableName' => $this->view->table]));
        } catch (AwsException $e) {
            if ($e->getResponse() === null) {
                throw $e;
            }

            return ClockOffset::dateOf($e);
        }
    }

    /** @param  array<string, mixed>  $table  DescribeTable's `Table` */
    private function keySchemaProblem(array $table): ?string
    {
        $want = $this->view->keyAttribute;
        $types = array_column($table['AttributeDefinitions'] ?? [], 'AttributeType', 'AttributeName');
        $keys = $table['KeySchema'] ?? [];
        $key = $keys[0] ?? [];
        $hash = count($keys) === 1 && ($key['AttributeName'] ?? '') === $want && ($key['KeyType'] ?? '') === 'HASH';
        if ($hash && ($types[$want] ?? '') === 'S') {
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
     * The `ttl` check; whether TTL deletes expired items.
     *
     * @param  array<string, mixed>  $report
     */
    private function ttlCheck(array &$report): bool
    {
        $exp = $this->view->expirationAttribute;
        try {
            $d = $this->view->client->describeTimeToLive(['TableName' => $this->view->table])['TimeToLiveDescription']
                ?? null;
            $raw = $d['TimeToLiveStatus'] ?? null;
            $known = in_array($raw, ['ENABLED', 'ENABLING', 'DISABLING', 'DISABLED'], true);
            $state = $known ? strtolower($raw) : 'unknown';
            $reason = is_array($d) ? sprintf('unexpected TTL status %s', var_export($raw, true))
                : 'DescribeTimeToLive returned no description';
        } catch (DynamoDbException $e) {
            $code = $e->getAwsErrorCode();
            if ($code === null || $code === 'ResourceNotFoundException') {
                throw $e;
            }
            [$d, $state, $reason] = [null, 'unknown', $code === 'UnknownOperationException'
                ? 'the server does not implement DescribeTimeToLive'
                : sprintf('DescribeTimeToLive failed with %s: %s', $code, $e->getAwsErrorMessage() ?? 'no message')];
        }
        $attribute = in_array($state, ['disabled', 'unknown'], true) ? null : (string) ($d['AttributeName'] ?? '');
        $covers = in_array($state, ['enabled', 'enabling'], true) && $attribute === $exp;
        if ($covers) {
            $detail = $state === 'enabled' ? "TTL is enabled on `$exp`" : "TTL is being enabled on `$exp`";
        } elseif ($state === 'unknown') {
            $detail = "TTL status unknown: $reason";
        } elseif ($state === 'disabled') {
            $detail = 'TTL is disabled: expired items stay in the table until deleted (reads and lock conditions '
                . "check `$exp` themselves, so this is garbage, not a bug)";
        } else {
            $detail = "TTL is $state on `$attribute`, not on the expiration attribute `$exp`: DynamoDB never "
                . 'deletes expired cache items and locks';
        }
        $this->add($report, 'ttl', $covers ? 'ok' : ($state === 'unknown' ? 'unknown' : 'warn'), $detail, $state);
        $report['ttl'] = ['status' => $state, 'attribute' => $attribute];

        return $covers;
    }

    /**
     * Scans the items in scope: expired but present, ttl-0 locks, items not Laravel's, another layout's keys.
     *
     * @param  array<string, mixed>  $report
     */
    private function itemChecks(array &$report, bool $ttlOn, bool $all, int $minRemaining): void
    {
        $v = $this->view;
        $now = $report['now'];
        $max = self::DEFAULT_LOCK_TTL + self::TTL_SKEW;
        $counts = array_fill_keys(['scanned', 'items', 'locks', 'cache', 'other', 'expired_but_present',
            'default_ttl_locks', 'invalid_expiry', 'skipped'], 0);
        $locks = [];
        // Under the prefix as configured (`app_`, not 8-10's `app_:`): other layouts' keys are seen too.
        foreach ($v->pages($all ? '' : $v->configuredPrefix) as $page) {
            $counts['scanned'] += (int) ($page['ScannedCount'] ?? 0);
            foreach ($page['Items'] ?? [] as $item) {
                $key = $item[$v->keyAttribute]['S'] ?? null;
                if (! is_string($key)) {
                    $counts['skipped']++;
                    continue;
                }
                $theirs = $this->layoutOf($key);
                if ($theirs !== null) {
                    $this->otherLayouts[$theirs] = [($this->otherLayouts[$theirs][0] ?? 0) + 1,
                        $this->otherLayouts[$theirs][1] ?? $key];
                }
                $counts['items']++;
                [$kind, $name] = $v->classify($key, $item);
                $counts[$kind === 'lock' ? 'locks' : $kind]++;
                [$expiresAt, $invalid] = $v->expiry($item);
                $expiresIn = $expiresAt === null ? null : $expiresAt - $now;
                $counts['expired_but_present'] += (int) ($expiresAt !== null && $now >= $expiresAt);
                $counts['invalid_expiry'] += (int) $invalid;
                if ($kind === 'lock' && $expiresIn !== null && $expiresIn > $minRemaining && $expiresIn <= $max) {
                    $counts['default_ttl_locks']++;
                    $locks[] = ['key' => $key, 'kind' => $kind, 'name' => $name, 'owner' => $v->owner($item),
                        'expires_at' => $expiresAt, 'expires_in' => $expiresIn, 'expired_but_present' => false];
                }
            }
        }
        // Longest remaining first, then by key.
        usort($locks, static fn (array $a, array $b): int
            => [$b['expires_in'], $a['key']] <=> [$a['expires_in'], $b['key']]);
        $report['counts'] = $counts;
        $report['default_ttl_locks'] = array_slice($locks, 0, self::EXAMPLES);
        $n = $counts['expired_but_present'];
        $this->add($report, 'expired_items', $n === 0 || $ttlOn ? 'ok' : 'warn', $n === 0
            ? sprintf('no expired items among %d in scope', $counts['items'])
            : sprintf($ttlOn ? '%d of %d items are expired but still present; TTL deletes them (it lags up to 48 h)'
                : '%d of %d items are expired but still present, and TTL will not delete them', $n, $counts['items']));
        $n = $counts['default_ttl_locks'];
        $this->add($report, 'default_ttl_locks', $n === 0 ? 'ok' : 'warn', $n === 0
            ? sprintf(
                'no live lock looks like a ttl-0 lock (of %d locks; heuristic: more than %d s and at most %d s left)',
                $counts['locks'],
                $minRemaining,
                $max
            )
            : sprintf(
                '%d of %d locks look like ttl-0 locks (86400 s; more than %d s left): possibly stuck by Laravel\'s '
                . 'read-then-delete release, they block their name until they expire',
                $n,
                $counts['locks'],
                $minRemaining
            ), [$report['default_ttl_locks'], $n]);
        $n = $counts['invalid_expiry'] + $counts['skipped'];
        $this->add($report, 'invalid_items', $n === 0 ? 'ok' : 'warn', $n === 0
            ? 'every item has a string key and a numeric (or no) expiry'
            : sprintf(
                '%d items have a non-numeric `%s` and %d have no string `%s`: not written by Laravel or ddblock',
                $counts['invalid_expiry'],
                $v->expirationAttribute,
                $counts['skipped'],
                $v->keyAttribute
            ));
        $this->add($report, 'layout', ...$this->layoutCheck());
    }

    /** The layout `$key` suggests when it is not this app's (the core's `admin/layout_check.rs`). */
    private function layoutOf(string $key): ?string
    {
        $p = $this->view->configuredPrefix;
        if ($p === '' || ! str_starts_with($key, $p)) {
            return null;
        }
        $rest = (string) substr($key, strlen($p));
        if (! str_starts_with($rest, ':') && ! str_starts_with($rest, $p)) {
            // A single prefix without ':' is 11's and 12's cache keys and 12's locks.
            return $this->view->layout === 'laravel8' ? 'laravel12' : null;
        }
        // A double prefix is 11's (or a cache key that starts with the prefix: a hint, hence a warning).
        $theirs = str_starts_with($rest, ':') ? 'laravel8' : 'laravel11';

        return $theirs === $this->view->layout ? null : $theirs;
    }

    /** @return array{0: string, 1: string} the layout check's status and detail */
    private function layoutCheck(): array
    {
        $layout = $this->view->layout;
        if ($this->otherLayouts === []) {
            return ['ok', "no key looks like another Laravel version's layout than `$layout`"];
        }
        $theirs = null;
        foreach ($this->otherLayouts as $other => [$n]) {
            if ($theirs === null || $n >= $this->otherLayouts[$theirs][0]) { // the last of equals, as Rust's max_by_key
                $theirs = $other;
            }
        }
        [$n, $example] = $this->otherLayouts[$theirs];
        $versions = self::VERSIONS[$theirs];

        return ['warn', "$n keys look like Laravel $versions's layout (e.g. `$example`), but this app's Laravel writes "
            . "`$layout`: whatever wrote them (an app on Laravel $versions, or a ddblock front with DDBLOCK_LAYOUT="
            . "$theirs) never meets this app's locks"];
    }

    /**
     * The `clock` check: this host's offset to DynamoDB's clock against the margin's allowance.
     *
     * @param  array<string, mixed>  $report
     */
    private function clockCheck(array &$report): void
    {
        $margin = $this->view->store->clockSkewMargin();
        $offset = ClockOffset::measure(fn (): ?string => $this->sampleDate());
        $this->add($report, 'clock', $offset->verdict($margin), $offset->describe($margin), $offset);
        $allowed = ['allowed' => ClockOffset::allowance($margin), 'margin' => $margin];
        $report['clock'] = $offset->isEmpty()
            ? ['unmeasured' => $offset->samples() === 0 ? 'no Date header' : 'the answers disagree'] + $allowed
            : ['offset' => $offset->estimate(), 'low' => $offset->low(), 'high' => $offset->high(),
                'answers' => $offset->samples()] + $allowed;
    }

    /**
     * @param  array<string, mixed>  $report
     * @param  mixed  $context  what the fix needs: the TTL state, the ttl-0 locks, the clock offset
     */
    private function add(array &$report, string $id, string $status, string $detail, $context = null): void
    {
        $fix = in_array($status, ['ok', 'skipped'], true) ? null : $this->fix($id, $status, $context);
        $report['checks'][] = ['id' => $id, 'status' => $status, 'detail' => $detail, 'fix' => $fix];
    }

    /**
     * What to do about a check that is not ok, in an app's terms; commands on lines of their own.
     *
     * @param  mixed  $context
     */
    private function fix(string $id, string $status, $context): ?string
    {
        $v = $this->view;
        $exp = $v->expirationAttribute;
        $sweep = "`php artisan ddblock:sweep --force{$this->storeOption}`";
        if ($status === 'unknown' && in_array($id, ['table', 'key_schema', 'regions'], true)) {
            return 'grant `dynamodb:DescribeTable` on the table (docs/deploy.md), and run the doctor again';
        }
        switch ($id) {
            case 'regions':
                return 'lock on a global table with multi-Region strong consistency (MRSC) or on a single-Region table '
                    . '(the store\'s `table`): this driver does not check the table when it locks, and two Regions can '
                    . 'hold the same lock';
            case 'table':
                return $status === 'fail' ? sprintf(
                    'create it (one string partition key `%s`; `ddblock create-table` does it and enables TTL), or '
                    . 'fix the store\'s `table`, `endpoint` or `region` in config/cache.php',
                    $v->keyAttribute
                ) : 'wait until the table is ACTIVE';
            case 'key_schema':
                return 'a key schema cannot be changed: point the store\'s `table` at Laravel\'s cache table, or set '
                    . 'its `attributes.key` to the table\'s partition key';
            case 'ttl':
                if ($status === 'unknown') {
                    return 'check TTL in the AWS console (local emulators may not implement it)';
                }

                return ($context === 'disabled'
                    ? "enable TTL on `$exp` (the AWS console, `aws dynamodb update-time-to-live`, or "
                        . '`ddblock create-table` on the existing table)'
                    : "TTL works on one attribute: disable it and enable it on `$exp`") . ", or schedule $sweep";
            case 'expired_items':
                return "enable TTL on `$exp`, or run $sweep (deletes only expired items)";
            case 'default_ttl_locks':
                [$listed, $found] = $context;
                $more = $found - count($listed);

                return implode("\n", [
                    "if a holder is gone (`php artisan ddblock:status NAME{$this->storeOption}` shows it), release "
                        . 'its lock:',
                    ...array_map(fn (array $lock): string => '  php artisan ddblock:release '
                        . DdblockCommand::shell((string) $lock['name']) . " --force{$this->storeOption}", $listed),
                    sprintf(
                        '%s`php artisan ddblock:sweep --locks-older-than%s` lists those taken with ttl 0 more than %s '
                        . 'ago (--force removes them); locks released by this driver cannot stick',
                        $more > 0 ? "$more more not listed: " : 'or: ',
                        $this->storeOption,
                        DdblockCommand::duration(self::LONG_LOCK_SECONDS)
                    ),
                ]);
            case 'invalid_items':
                return 'find what else writes to this table (`ddblock list --all`); Laravel and ddblock leave these '
                    . 'items alone';
            case 'layout':
                return sprintf(
                    'this app\'s Laravel writes the `%s` layout: give every process on this table the same one (the '
                    . 'same Laravel major version; DDBLOCK_LAYOUT=%s for ddblock\'s CLI and libraries) and the same '
                    . 'prefix; `ddblock list --all` shows every key',
                    $v->layout,
                    $v->layout
                );
            case 'clock':
                return $status === 'fail' ? sprintf(
                    'synchronise this host\'s clock (NTP: chrony, systemd-timesyncd; on AWS the Amazon Time Sync '
                    . 'Service), or raise `ddblock.clock_skew_margin` (DDBLOCK_CLOCK_SKEW_MARGIN) to at least %d on '
                    . 'every host that takes these locks',
                    $context->marginNeeded()
                ) : 'run it again (a slow or busy network widens the interval); if it stays, check this host\'s NTP '
                    . 'synchronisation';
        }

        return null;
    }
}
