//! ddblock: Laravel-compatible DynamoDB locks and cache, with a lock release that is ONE
//! owner-conditioned `DeleteItem` instead of Laravel's eventually consistent read-then-delete.
//!
//! The items read and written are exactly those of `Illuminate\Cache\DynamoDbStore`, so PHP, Rust
//! (and the Python/Node bindings) share locks and cache entries in one table. See `docs/format.md`.
//!
//! Layers, arrows pointing down only (checked by `core/tests/layers.rs`; map in `CONTRIBUTING.md`):
//!
//! | layer | modules |
//! | --- | --- |
//! | operations | [`cache`](mod@cache), [`lock`], [`admin`], [`once`](mod@once) (the once-only guard), [`cas`] (compare-and-set): each over the store and the layers below, never each other |
//! | handle | [`store`]: configuration + request layer |
//! | requests | `dynamo`: the only code that touches `aws-sdk-dynamodb` |
//! | format, config | [`format`] (key layouts, codec, item meaning, input rules), [`config`] |
//! | leaves | [`error`], [`holder`], [`time`] |
#![warn(missing_docs)]

pub mod admin;
mod aws;
pub mod cache;
pub mod cas;
pub mod config;
mod dynamo;
pub mod error;
pub mod format;
pub mod holder;
pub mod lock;
pub mod once;
mod s3;
pub mod store;
pub mod time;

pub use admin::{
    CheckId, CheckStatus, ClockReading, CreateTableOptions, CreateTableReport, DoctorOptions,
    DoctorReport, ItemKind, ScanItem, ScanOptions, ScanProgress, ScanReport, Scope, SweepOptions,
    SweepReport, TableInfo, TtlState,
};
pub use cache::{Consistency, ManyEntry};
pub use cas::{CasOptions, CasOutcome, ConflictRetry, Versioned};
pub use config::{Backoff, LockBackendKind, ReleaseMode, StoreConfig, StoreConfigBuilder};
pub use error::{CodecError, Error, ErrorKind, Result};
pub use format::codec;
pub use format::codec::{PhpKey, PhpObject, PhpValue};
pub use format::input::Amount;
pub use format::layout::KeyLayout;
pub use holder::{redact_owner, Holder, StoredValue};
pub use lock::{
    AcquireOutcome, Heartbeat, Held, Lease, LeaseSignal, Lock, LockGuard, ReleaseOutcome, Wait,
    WorkError,
};
pub use once::{Claim, ClaimOutcome, Once, OnceRun, OnceState, OnceStatus};
pub use store::Store;
pub use time::{Clock, ClockOffset, OffsetVerdict, SystemClock};

/// Re-exported so callers can build their own client without a version mismatch.
pub use aws_sdk_dynamodb;
