//! ddblock-admin: table administration and diagnostics for a [`ddblock::Store`]: creating the
//! table, scanning items, sweeping expired ones (and, on request, locks stuck since taken with ttl
//! 0), and `doctor` (the table, TTL, stuck-looking ttl-0 locks, the key layout, this host's clock
//! offset, and, with the s3 lock backend, a probe of the bucket's conditional requests). The CLI's `list`, `sweep`, `doctor` and `create-table`, and
//! the Python and Node admin methods, are thin layers over [`Admin`]; nothing here prints. Long
//! operations report progress through a callback (`Fn(&ScanProgress)`), called after every page
//! of every scan segment.
//!
//! Scans use DynamoDB's parallel scan (`Segment`/`TotalSegments`), eventually consistent reads,
//! and, for [`Scope::Prefix`], a server-side `begins_with(#key, :prefix)` filter. A scan still
//! reads (and is billed for) the whole table; the filter only saves transfer.
//!
//! Nothing in ddblock's lock, cache or pattern requests uses this crate. Its requests go through
//! the store's clients and the core's error classifier (`ddblock::sdk`), in `requests.rs` and
//! `s3_requests.rs`, the only files here that touch the SDKs.
#![warn(missing_docs)]

mod clock;
mod doctor;
mod layout_check;
mod report;
mod requests;
mod s3_probe;
mod s3_requests;
mod scan;
mod sweep;
mod table;

use ddblock::{LockBackendKind, Store, StoreConfig};

pub use clock::{ClockOffset, ClockReading, OffsetVerdict, CLOCK_SPACING};
pub use doctor::{
    DoctorOptions, DEFAULT_CLOCK_ANSWERS, DEFAULT_EXAMPLES, DEFAULT_LONG_LOCK_SECS,
    DEFAULT_TTL_SKEW_SECS,
};
pub use report::{Check, CheckId, CheckStatus, DoctorReport, ItemCounts, S3ProbeReport};
pub use requests::{TableInfo, TtlState};
pub use s3_probe::PROBE_KEY_PREFIX;
pub use scan::{
    looks_like_generated_owner, ItemKind, ScanItem, ScanOptions, ScanProgress, ScanReport, Scope,
    DEFAULT_SEGMENTS, MAX_SEGMENTS,
};
pub use sweep::{SweepOptions, SweepReason, SweepReport, SweptItem, DEFAULT_SWEEP_GRACE_SECS};
pub use table::{CreateTableOptions, CreateTableReport, DEFAULT_CREATE_WAIT};

/// Administration of one store's table (and bucket): cheap to clone.
#[derive(Clone, Debug)]
pub struct Admin {
    store: Store,
}

impl Admin {
    /// Administration of `store`'s table, with its configuration and clients.
    pub fn new(store: &Store) -> Admin {
        Admin {
            store: store.clone(),
        }
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    fn config(&self) -> &StoreConfig {
        self.store.config()
    }

    /// The bucket that holds the locks, with the s3 lock backend.
    fn lock_bucket(&self) -> Option<&str> {
        let c = self.config();
        c.s3_bucket()
            .filter(|_| c.lock_backend() == LockBackendKind::S3)
    }
}
