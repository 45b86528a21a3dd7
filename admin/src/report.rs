//! What `doctor` reports: the checks, their ids and statuses, the counts of its scan; the
//! vocabulary every front prints and maps (`doctor.rs` runs the checks).

use crate::clock::ClockReading;
use crate::requests::TtlState;
use crate::scan::ScanItem;
#[cfg(doc)]
use crate::{scan::Scope, Admin, DoctorOptions};

/// What a doctor check looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CheckId {
    /// The table exists and is ACTIVE.
    Table,
    /// Exactly one string partition key named as configured.
    KeySchema,
    /// One Region, or a global table whose conditional writes hold across Regions (MRSC); a
    /// global table with eventual consistency (MREC) fails: two Regions can hold one lock.
    Regions,
    /// TTL enabled on the expiration attribute.
    Ttl,
    /// Expired items still in the table.
    ExpiredItems,
    /// Live locks that look like ttl-0 (86400 s) locks.
    DefaultTtlLocks,
    /// Items that are not Laravel cache items (no string key, non-numeric expiry).
    InvalidItems,
    /// Keys another Laravel version's layout would write (the layout setting looks wrong).
    Layout,
    /// This host's clock offset to DynamoDB's, against the clock-skew margin.
    Clock,
    /// S3 lock backend: `If-None-Match: *` on PutObject creates an absent object and is refused
    /// over an existing one.
    S3CreateIfAbsent,
    /// S3 lock backend: overwriting an object with other bytes changes its ETag.
    S3EtagChanges,
    /// S3 lock backend: `If-Match` on PutObject takes the current ETag and refuses a replaced one.
    S3IfMatchPut,
    /// S3 lock backend: `If-Match` on DeleteObject refuses a replaced ETag and deletes on the
    /// current one.
    S3IfMatchDelete,
    /// S3 lock backend: the bucket's versioning state.
    S3Versioning,
    /// S3 lock backend: the probe's scratch object was removed.
    S3Cleanup,
}

impl CheckId {
    /// `table`, `key_schema`, `regions`, `ttl`, `expired_items`, `default_ttl_locks`, `invalid_items`,
    /// `layout`, `clock`; with the s3 lock backend also `s3_create_if_absent`, `s3_etag_changes`,
    /// `s3_if_match_put`, `s3_if_match_delete`, `s3_versioning`, `s3_cleanup`.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckId::Table => "table",
            CheckId::KeySchema => "key_schema",
            CheckId::Regions => "regions",
            CheckId::Ttl => "ttl",
            CheckId::ExpiredItems => "expired_items",
            CheckId::DefaultTtlLocks => "default_ttl_locks",
            CheckId::InvalidItems => "invalid_items",
            CheckId::Layout => "layout",
            CheckId::Clock => "clock",
            CheckId::S3CreateIfAbsent => "s3_create_if_absent",
            CheckId::S3EtagChanges => "s3_etag_changes",
            CheckId::S3IfMatchPut => "s3_if_match_put",
            CheckId::S3IfMatchDelete => "s3_if_match_delete",
            CheckId::S3Versioning => "s3_versioning",
            CheckId::S3Cleanup => "s3_cleanup",
        }
    }
}

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CheckStatus {
    /// Fine.
    Ok,
    /// Works, but worth fixing.
    Warn,
    /// Broken: ddblock (and Laravel) cannot work with this table; for an `s3_*` check, the s3
    /// lock backend cannot be trusted with this bucket.
    Fail,
    /// The server could not tell.
    Unknown,
    /// Not checked (an earlier check failed, or the scan was turned off).
    Skipped,
}

impl CheckStatus {
    /// `ok`, `warn`, `fail`, `unknown`, `skipped`.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckStatus::Ok => "ok",
            CheckStatus::Warn => "warn",
            CheckStatus::Fail => "fail",
            CheckStatus::Unknown => "unknown",
            CheckStatus::Skipped => "skipped",
        }
    }
}

/// One doctor check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// What was checked.
    pub id: CheckId,
    /// How it came out.
    pub status: CheckStatus,
    /// What was found, in one sentence.
    pub detail: String,
}

/// Item counts of a doctor scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ItemCounts {
    /// Items DynamoDB evaluated.
    pub scanned: u64,
    /// Items in scope.
    pub items: u64,
    /// Lock items in scope.
    pub locks: u64,
    /// Cache items in scope.
    pub cache: u64,
    /// Items outside the prefix ([`Scope::All`] only).
    pub other: u64,
    /// Items that read as expired but are still in the table.
    pub expired_but_present: u64,
    /// Live locks that look like ttl-0 locks (see [`Admin::doctor`]).
    pub default_ttl_locks: u64,
    /// Items whose expiry attribute is not a number.
    pub invalid_expiry: u64,
    /// Items without a string key attribute.
    pub skipped: u64,
}

/// What [`Admin::doctor`] found.
#[derive(Debug, Clone)]
pub struct DoctorReport {
    /// Every check, in the order of [`CheckId`].
    pub checks: Vec<Check>,
    /// The table status (`ACTIVE`, `CREATING`, ...), `None` when the table does not exist.
    pub table_status: Option<String>,
    /// `PAY_PER_REQUEST` or `PROVISIONED`, when the server says.
    pub billing_mode: Option<String>,
    /// The TTL setting, `None` when the table does not exist.
    pub ttl: Option<TtlState>,
    /// Item counts, `None` when the scan was skipped.
    pub counts: Option<ItemCounts>,
    /// Up to [`DoctorOptions::examples`] ttl-0 locks, longest remaining first.
    pub default_ttl_examples: Vec<ScanItem>,
    /// The time used for expiry decisions.
    pub now: i64,
    /// What the clock measurement found, `None` when it was skipped.
    pub clock: Option<ClockReading>,
    /// The offset allowed for the configured clock-skew margin ([`ddblock::time::allowed_offset`]), seconds.
    pub clock_allowed: f64,
    /// The bucket probe, with the s3 lock backend (`None` with locks in the table).
    pub s3: Option<S3ProbeReport>,
}

impl DoctorReport {
    /// True when no check failed (warnings and unknowns allowed).
    pub fn healthy(&self) -> bool {
        self.checks.iter().all(|c| c.status != CheckStatus::Fail)
    }

    /// The check with this id.
    pub fn check(&self, id: CheckId) -> Option<&Check> {
        self.checks.iter().find(|c| c.id == id)
    }
}

/// What the S3 probe of [`Admin::doctor`] looked at (its results are the `s3_*` checks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3ProbeReport {
    /// The bucket probed.
    pub bucket: String,
    /// The scratch object's key.
    pub scratch_key: String,
    /// Whether every version of the scratch object was removed afterwards.
    pub cleaned_up: bool,
}
