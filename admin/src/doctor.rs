//! Health checks: [`Admin::doctor`] runs them (the report's vocabulary is `report.rs`).

use std::sync::Mutex;
use std::time::Duration;

use ddblock::format::input::DEFAULT_LOCK_TTL_SECS;
use ddblock::sdk::Replication;
use ddblock::time::allowed_offset;
use ddblock::{Error, Result};

use crate::clock::{self, ClockReading, OffsetVerdict};
use crate::layout_check::LayoutTally;
use crate::report::{Check, CheckId, CheckStatus, DoctorReport, ItemCounts};
use crate::requests::{TableInfo, TtlState};
use crate::s3_probe;
#[cfg(doc)]
use crate::scan::Scope;
use crate::scan::{ItemKind, ScanItem, ScanOptions, ScanProgress};
use crate::Admin;

/// Default of [`DoctorOptions::min_remaining_secs`]: a live lock with more than an hour left counts
/// as a ttl-0 (86400 s) lock.
pub const DEFAULT_LONG_LOCK_SECS: i64 = 3600;
/// Clock skew allowed above 86400 s by the ttl-0 lock heuristic.
pub const DEFAULT_TTL_SKEW_SECS: i64 = 60;
/// Default of [`DoctorOptions::clock_answers`]: answers whose `Date` headers measure the clock.
pub const DEFAULT_CLOCK_ANSWERS: u32 = 5;
/// The answer to a request the caller's policy does not allow.
const ACCESS_DENIED: &str = "AccessDeniedException";
/// Default of [`DoctorOptions::examples`]: ttl-0 locks listed.
pub const DEFAULT_EXAMPLES: usize = 10;

/// Options of [`Admin::doctor`].
#[derive(Debug, Clone)]
pub struct DoctorOptions {
    scan: Option<ScanOptions>,
    min_remaining_secs: i64,
    examples: usize,
    clock_answers: u32,
}

impl Default for DoctorOptions {
    fn default() -> Self {
        DoctorOptions {
            scan: Some(ScanOptions::default()),
            min_remaining_secs: DEFAULT_LONG_LOCK_SECS,
            examples: DEFAULT_EXAMPLES,
            clock_answers: DEFAULT_CLOCK_ANSWERS,
        }
    }
}

impl DoctorOptions {
    /// Defaults: scan with 4 segments in [`Scope::Prefix`], 3600 s threshold, 10 examples.
    pub fn new() -> Self {
        Self::default()
    }
    /// How to scan the items; `None` skips the item checks (no Scan request at all).
    pub fn scan(mut self, scan: Option<ScanOptions>) -> Self {
        self.scan = scan;
        self
    }
    /// A live lock counts as a ttl-0 lock when more than this many seconds are left (and at most
    /// 86400 + 60).
    pub fn min_remaining_secs(mut self, secs: i64) -> Self {
        self.min_remaining_secs = secs;
        self
    }
    /// How many ttl-0 locks to return as examples.
    pub fn examples(mut self, n: usize) -> Self {
        self.examples = n;
        self
    }
    /// How many DescribeTable answers measure the clock offset (default 5, about a second);
    /// 0 skips the clock check.
    pub fn clock_answers(mut self, n: u32) -> Self {
        self.clock_answers = n;
        self
    }
}

impl Admin {
    /// Checks the table: it exists and is ACTIVE; its key schema is one string partition key named
    /// as configured; TTL is enabled on the expiration attribute (DescribeTimeToLive; a server that
    /// cannot say gives [`CheckStatus::Unknown`]); and, scanning the items in scope, how many are
    /// expired but still present, how many are not Laravel items, and how many live locks look like
    /// ttl-0 locks left by Laravel's stuck release.
    ///
    /// The ttl-0 heuristic: how long a lock was taken for is not stored, only its `expires_at`. A
    /// lock item ([`Admin::classify`]) counts when it is live and its remaining time `r =
    /// expires_at - now` satisfies `min_remaining_secs < r <= 86400 + 60`: a lock with an explicit
    /// ttl of at most `min_remaining_secs` (default an hour) can never match, and a ttl-0 lock
    /// matches for all but its last `min_remaining_secs` (after which it frees itself soon anyway).
    /// Locks with more than a day left were taken with a longer explicit ttl and do not count.
    /// Expired locks do not count either: they no longer block anyone (`acquire` takes them over).
    ///
    /// The clock check measures this host's offset to DynamoDB's clock from the `Date` headers of
    /// [`DoctorOptions::clock_answers`] DescribeTable answers (`time::ClockOffset`): ok when it is
    /// proven within [`ddblock::time::allowed_offset`] of the clock-skew margin, fail when proven
    /// beyond, warn when the whole-second headers cannot tell.
    ///
    /// The regions check reads the same DescribeTable answer: a single-Region table or a global
    /// table with strong consistency (MRSC) is ok; one with eventual consistency (MREC) fails
    /// (warns with `allow_eventual_global_table`): two Regions can hold the same lock.
    ///
    /// A missing table is a failed check, not an error; a denied DescribeTable makes the table,
    /// key schema and regions checks unknown; a request that fails for another reason (network)
    /// is an error.
    ///
    /// With the s3 lock backend, the bucket is probed too (the `s3_*` checks, after the table's):
    /// on a scratch object of its own, whether `If-None-Match: *` refuses an existing object, the
    /// ETag changes on overwrite, `If-Match` with a replaced ETag is refused on PutObject and on
    /// DeleteObject, and the versioning state; a result that would break the lock fails. The
    /// scratch object (and each version of it) is removed afterwards, whatever happened before.
    /// There a missing table is a warning: the locks do not need it, only cache entries,
    /// once-only guards and compare-and-set do.
    pub async fn doctor(
        &self,
        opts: &DoctorOptions,
        progress: impl Fn(&ScanProgress) + Send + Sync,
    ) -> Result<DoctorReport> {
        let mut report = self.table_doctor(opts, progress).await?;
        if let Some(bucket) = crate::s3_requests::Bucket::of(&self.store).await? {
            let (checks, probed) = s3_probe::probe(&bucket).await;
            report.checks.extend(checks);
            report.s3 = Some(probed);
        }
        Ok(report)
    }

    /// The table's checks of [`Admin::doctor`].
    async fn table_doctor(
        &self,
        opts: &DoctorOptions,
        progress: impl Fn(&ScanProgress) + Send + Sync,
    ) -> Result<DoctorReport> {
        let c = self.config();
        let now = self.store.now();
        let mut report = DoctorReport {
            checks: Vec::new(),
            table_status: None,
            billing_mode: None,
            ttl: None,
            counts: None,
            default_ttl_examples: Vec::new(),
            now,
            clock: None,
            clock_allowed: allowed_offset(c.clock_skew_margin()),
            s3: None,
        };
        let clock_check = if opts.clock_answers == 0 {
            Check {
                id: CheckId::Clock,
                status: CheckStatus::Skipped,
                detail: "the clock measurement was turned off".to_owned(),
            }
        } else {
            let reading = clock::measure(&self.store, opts.clock_answers).await;
            report.clock = Some(reading);
            reading.check(c.clock_skew_margin())
        };
        let skipped = |id, why: &str| Check {
            id,
            status: CheckStatus::Skipped,
            detail: why.to_owned(),
        };
        let table = match self.describe_table().await {
            Ok(t) => Some(t),
            Err(Error::TableNotFound { endpoint, .. }) => {
                // With the s3 backend the locks live in the bucket: the table serves only cache
                // entries, once-only guards and compare-and-set, which a lock-only user never calls.
                let (status, locks) = match self.lock_bucket() {
                    Some(b) => (
                        CheckStatus::Warn,
                        format!(
                            " (locks live in bucket `{}`; the table is needed only for cache \
                             entries, once-only guards and compare-and-set)",
                            b
                        ),
                    ),
                    None => (CheckStatus::Fail, String::new()),
                };
                report.checks.push(Check {
                    id: CheckId::Table,
                    status,
                    detail: format!("table `{}` does not exist at {endpoint}{locks}", c.table()),
                });
                let why = "the table does not exist";
                for id in [
                    CheckId::KeySchema,
                    CheckId::Regions,
                    CheckId::Ttl,
                    CheckId::ExpiredItems,
                    CheckId::DefaultTtlLocks,
                    CheckId::InvalidItems,
                    CheckId::Layout,
                ] {
                    report.checks.push(skipped(id, why));
                }
                report.checks.push(clock_check);
                return Ok(report);
            }
            // A policy without dynamodb:DescribeTable: what it would tell is unknown; the other
            // checks go on (the locks do too, with one warning).
            Err(e) if e.code() == Some(ACCESS_DENIED) => None,
            Err(e) => return Err(e),
        };
        match table {
            Some(table) => self.table_checks(&mut report, table),
            None => {
                for (id, what) in [
                    (CheckId::Table, "whether the table exists and is ACTIVE"),
                    (CheckId::KeySchema, "its key schema"),
                    (CheckId::Regions, "whether it spans Regions"),
                ] {
                    report.checks.push(Check {
                        id,
                        status: CheckStatus::Unknown,
                        detail: format!("DescribeTable was denied, so {what} is unknown"),
                    });
                }
            }
        }
        let ttl = self.describe_ttl().await?;
        let exp = c.expiration_attribute();
        report.checks.push(Check {
            id: CheckId::Ttl,
            status: match &ttl {
                _ if ttl.covers(exp) => CheckStatus::Ok,
                TtlState::Unknown { .. } => CheckStatus::Unknown,
                _ => CheckStatus::Warn,
            },
            detail: match &ttl {
                TtlState::Enabled { attribute } if attribute == exp => {
                    format!("TTL is enabled on `{exp}`")
                }
                TtlState::Enabling { attribute } if attribute == exp => {
                    format!("TTL is being enabled on `{exp}`")
                }
                TtlState::Enabled { attribute }
                | TtlState::Enabling { attribute }
                | TtlState::Disabling { attribute } => format!(
                    "TTL is {} on `{attribute}`, not on the expiration attribute `{exp}`: DynamoDB \
                     never deletes expired cache items and locks",
                    ttl.as_str()
                ),
                TtlState::Disabled => format!(
                    "TTL is disabled: expired items stay in the table until deleted (reads and \
                     lock conditions check `{exp}` themselves, so this is garbage, not a bug)"
                ),
                TtlState::Unknown { reason } => format!("TTL status unknown: {reason}"),
            },
        });
        report.ttl = Some(ttl.clone());
        let Some(scan) = &opts.scan else {
            let why = "the scan was turned off";
            for id in [
                CheckId::ExpiredItems,
                CheckId::DefaultTtlLocks,
                CheckId::InvalidItems,
                CheckId::Layout,
            ] {
                report.checks.push(skipped(id, why));
            }
            report.checks.push(clock_check);
            return Ok(report);
        };
        let max_remaining = DEFAULT_LOCK_TTL_SECS + DEFAULT_TTL_SKEW_SECS;
        let acc = Mutex::new((
            ItemCounts::default(),
            Vec::<ScanItem>::new(),
            LayoutTally::new(c),
        ));
        let scanned = self
            .scan_collect(scan, now, &progress, |item| {
                let mut guard = acc.lock().unwrap_or_else(|e| e.into_inner());
                let (counts, examples, layout) = &mut *guard;
                let Some(item) = item else {
                    counts.skipped += 1;
                    return;
                };
                layout.see(&item.key);
                counts.items += 1;
                match item.kind {
                    ItemKind::Lock => counts.locks += 1,
                    ItemKind::Cache => counts.cache += 1,
                    ItemKind::Other => counts.other += 1,
                }
                counts.expired_but_present += u64::from(item.expired_but_present);
                counts.invalid_expiry += u64::from(item.invalid_expiry);
                let ttl0 = item.kind == ItemKind::Lock
                    && item
                        .expires_in
                        .is_some_and(|r| r > opts.min_remaining_secs && r <= max_remaining);
                if ttl0 {
                    counts.default_ttl_locks += 1;
                    examples.push(item);
                    examples
                        .sort_by(|a, b| b.expires_in.cmp(&a.expires_in).then(a.key.cmp(&b.key)));
                    examples.truncate(opts.examples);
                }
            })
            .await?;
        let (mut counts, examples, layout) = acc.into_inner().unwrap_or_else(|e| e.into_inner());
        counts.scanned = scanned;
        let ttl_on = ttl.covers(exp);
        report.checks.push(Check {
            id: CheckId::ExpiredItems,
            status: if counts.expired_but_present == 0 || ttl_on {
                CheckStatus::Ok
            } else {
                CheckStatus::Warn
            },
            detail: match (counts.expired_but_present, ttl_on) {
                (0, _) => format!("no expired items among {} in scope", counts.items),
                (n, true) => format!(
                    "{n} of {} items are expired but still present; TTL deletes them (it lags up to 48 h)",
                    counts.items
                ),
                (n, false) => format!(
                    "{n} of {} items are expired but still present, and TTL will not delete them",
                    counts.items
                ),
            },
        });
        report.checks.push(Check {
            id: CheckId::DefaultTtlLocks,
            status: if counts.default_ttl_locks == 0 {
                CheckStatus::Ok
            } else {
                CheckStatus::Warn
            },
            detail: match counts.default_ttl_locks {
                0 => format!(
                    "no live lock looks like a ttl-0 lock (of {} locks; heuristic: more than {} s \
                     and at most {max_remaining} s left)",
                    counts.locks, opts.min_remaining_secs
                ),
                n => format!(
                    "{n} of {} locks look like ttl-0 locks (86400 s; more than {} s left): \
                     possibly stuck by Laravel's read-then-delete release, they block their \
                     name until they expire",
                    counts.locks, opts.min_remaining_secs
                ),
            },
        });
        let invalid = counts.invalid_expiry + counts.skipped;
        report.checks.push(Check {
            id: CheckId::InvalidItems,
            status: if invalid == 0 {
                CheckStatus::Ok
            } else {
                CheckStatus::Warn
            },
            detail: if invalid == 0 {
                "every item has a string key and a numeric (or no) expiry".to_owned()
            } else {
                format!(
                    "{} items have a non-numeric `{exp}` and {} have no string `{}`: not written \
                     by Laravel or ddblock",
                    counts.invalid_expiry,
                    counts.skipped,
                    c.key_attribute()
                )
            },
        });
        report.checks.push(layout.check(scanned));
        report.checks.push(clock_check);
        report.counts = Some(counts);
        report.default_ttl_examples = examples;
        Ok(report)
    }
}

impl Admin {
    /// The checks DescribeTable's answer settles: the table, its key schema, its Regions.
    fn table_checks(&self, report: &mut DoctorReport, table: TableInfo) {
        let c = self.config();
        let status = table.status.clone();
        let billing = table.billing_mode.clone();
        report.checks.push(Check {
            id: CheckId::Table,
            status: if table.active {
                CheckStatus::Ok
            } else {
                CheckStatus::Warn
            },
            detail: format!(
                "table `{}` exists, status {status}{}",
                c.table(),
                match billing.as_deref() {
                    Some("PAY_PER_REQUEST") => ", on-demand",
                    Some("PROVISIONED") => ", provisioned capacity",
                    _ => "",
                }
            ),
        });
        report.table_status = Some(status);
        report.billing_mode = billing;
        report.checks.push(match &table.key_schema_problem {
            None => Check {
                id: CheckId::KeySchema,
                status: CheckStatus::Ok,
                detail: format!("one string partition key `{}`", c.key_attribute()),
            },
            Some(p) => Check {
                id: CheckId::KeySchema,
                status: CheckStatus::Fail,
                detail: p.clone(),
            },
        });
        report.checks.push(regions_check(
            &table.replication,
            c.allow_eventual_global_table(),
        ));
    }
}

/// The regions check: worded as the PHP driver's `php artisan ddblock:doctor` words it.
fn regions_check(kind: &Replication, allowed: bool) -> Check {
    let (status, detail) = match kind {
        Replication::SingleRegion => (CheckStatus::Ok, "a single-Region table".to_owned()),
        Replication::Strong { replicas } => (
            CheckStatus::Ok,
            format!(
                "a global table with multi-Region strong consistency (MRSC; replicas: {}): \
                 conditional writes hold across Regions",
                replicas.join(", ")
            ),
        ),
        Replication::Eventual { replicas } => (
            if allowed {
                CheckStatus::Warn
            } else {
                CheckStatus::Fail
            },
            format!(
                "a global table with multi-Region eventual consistency (MREC; replicas: {}): a \
                 conditional write is checked in one Region only, so two Regions can hold the \
                 same lock",
                replicas.join(", ")
            ),
        ),
        Replication::Unknown { .. } => (
            CheckStatus::Unknown,
            "DescribeTable was denied, so whether it spans Regions is unknown".to_owned(),
        ),
    };
    Check {
        id: CheckId::Regions,
        status,
        detail,
    }
}

impl ClockReading {
    /// The doctor's clock check of this reading: this host's offset to DynamoDB's clock against
    /// the offset the clock-skew margin allows.
    pub fn check(self, margin: Duration) -> Check {
        clock_check(self, margin)
    }
}

/// The clock check: this host's offset to DynamoDB's clock against the offset the margin allows.
fn clock_check(reading: ClockReading, margin: Duration) -> Check {
    // Worded as the PHP driver's `php artisan ddblock:doctor` words it (ClockOffset::describe).
    let allowed = format!("{:.2}", allowed_offset(margin));
    let allowed = allowed.trim_end_matches('0').trim_end_matches('.');
    let rule = format!("allowed ±{allowed} s with margin {}", margin.as_secs());
    let (status, detail) = match reading {
        ClockReading::NoDate => (
            CheckStatus::Unknown,
            format!("no answer carried a Date header, so the offset is unknown; {rule}"),
        ),
        ClockReading::Inconsistent => (
            CheckStatus::Warn,
            format!(
                "the Date headers of the answers contradict each other (no offset fits them \
                 all): was the clock stepped while measuring?; {rule}"
            ),
        ),
        ClockReading::Measured(o) => {
            let e = o.estimate();
            let place = if e.abs() < 0.005 {
                "this host's clock agrees with DynamoDB's".to_owned()
            } else {
                let side = if e > 0.0 { "ahead of" } else { "behind" };
                format!("this host's clock is {:.2} s {side} DynamoDB's", e.abs())
            };
            let answers = match o.samples {
                1 => "1 answer".to_owned(),
                n => format!("{n} answers"),
            };
            let detail = format!(
                "{place} (between {:+.2} and {:+.2} s over {answers}; the Date header has whole \
                 seconds); {rule}",
                o.low, o.high
            );
            let status = match o.verdict(allowed_offset(margin)) {
                OffsetVerdict::Within => CheckStatus::Ok,
                OffsetVerdict::Undecided => CheckStatus::Warn,
                OffsetVerdict::Beyond => CheckStatus::Fail,
            };
            (status, detail)
        }
    };
    Check {
        id: CheckId::Clock,
        status,
        detail,
    }
}
