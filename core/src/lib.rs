//! ddblock: Laravel-compatible DynamoDB locks and cache, with a lock release that is ONE
//! owner-conditioned `DeleteItem` instead of Laravel's eventually consistent read-then-delete.
//!
//! The items read and written are exactly those of `Illuminate\Cache\DynamoDbStore`, so PHP, Rust
//! (and the Python/Node bindings) share locks and cache entries in one table. See `docs/format.md`.
#![warn(missing_docs)]

pub mod admin;
pub mod codec;
pub mod config;
pub mod error;
mod item;
pub mod lock;
pub mod store;

pub use admin::{
    CheckId, CheckStatus, CreateTableOptions, CreateTableReport, DoctorOptions, DoctorReport,
    ItemKind, ScanItem, ScanOptions, ScanProgress, ScanReport, Scope, SweepOptions, SweepReport,
    TtlState,
};
pub use codec::{PhpKey, PhpObject, PhpValue, StoredValue};
pub use config::{Backoff, Clock, KeyLayout, StoreConfig, StoreConfigBuilder, SystemClock};
pub use error::{Error, ErrorKind, Result};
pub use lock::{AcquireOutcome, Holder, Lock, LockGuard, ReleaseOutcome};
pub use store::{Consistency, Store};

/// Re-exported so callers can build their own client without a version mismatch.
pub use aws_sdk_dynamodb;
