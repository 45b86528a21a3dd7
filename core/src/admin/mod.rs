//! Table administration: scanning items, sweeping expired ones, health checks (`doctor`) and
//! creating the table. The CLI's `list`, `sweep`, `doctor` and `create-table` are thin layers over
//! these methods on [`Store`]; nothing here prints. Long operations report progress through a
//! callback (`Fn(&ScanProgress)`), called after every page of every scan segment.
//!
//! Scans use DynamoDB's parallel scan (`Segment`/`TotalSegments`), eventually consistent reads,
//! and, for [`Scope::Prefix`], a server-side `begins_with(#key, :prefix)` filter. A scan still
//! reads (and is billed for) the whole table; the filter only saves transfer.

#[cfg(doc)]
use crate::store::Store;

mod doctor;
mod layout_check;
mod s3_probe;
mod scan;
mod sweep;
mod table;

pub use crate::dynamo::{ClockReading, TableInfo, TtlState};
pub use doctor::{
    Check, CheckId, CheckStatus, DoctorOptions, DoctorReport, ItemCounts, DEFAULT_CLOCK_ANSWERS,
    DEFAULT_LONG_LOCK_SECS, DEFAULT_TTL_SKEW_SECS,
};
pub use s3_probe::{S3ProbeReport, PROBE_KEY_PREFIX};
pub use scan::{
    looks_like_generated_owner, ItemKind, ScanItem, ScanOptions, ScanProgress, ScanReport, Scope,
    DEFAULT_SEGMENTS, MAX_SEGMENTS,
};
pub use sweep::{SweepOptions, SweepReport, DEFAULT_SWEEP_GRACE_SECS};
pub use table::{CreateTableOptions, CreateTableReport, DEFAULT_CREATE_WAIT};
