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
//! | operations | [`cache`](mod@cache), [`lock`], [`once`](mod@once) (the once-only guard), [`cas`] (compare-and-set): each over the store and the layers below, never each other |
//! | handle | [`store`]: configuration + request layer |
//! | requests | `dynamo`: the only code that touches `aws-sdk-dynamodb` (and `s3`, `aws-sdk-s3`); [`sdk`]: the seam for a crate that sends its own (`ddblock-admin`) |
//! | format, config | [`format`](mod@format) (key layouts, codec, item meaning, input rules), [`config`]; above `config`: [`telemetry`] (what ddblock reports, named once) |
//! | leaves | [`error`], [`holder`], [`time`] |
#![warn(missing_docs)]

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
pub mod sdk;
pub mod store;
pub mod telemetry;
pub mod time;

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
pub use time::{Clock, DateAnswer, SystemClock};

/// Re-exported so callers can build their own client without a version mismatch.
pub use aws_sdk_dynamodb;
/// Re-exported for the same reason ([`Store::s3_client`]).
pub use aws_sdk_s3;
