//! The chaos run's record (`compat-tests/chaos`): one line per worker cycle, written by every
//! language's peer (`{"op":"chaos"}` in compat-tests/support/peers/PROTOCOL.md) and read by the
//! chaos checker. Here rather than in the chaos crate so the Rust peer writes the same type.

use serde::{Deserialize, Serialize};

/// One worker's account of one cycle (a line of its record file).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Cycle {
    /// `rust`, `python`, `node`, `php`, or `laravel` (the control group).
    pub lang: String,
    /// Worker id.
    pub worker: String,
    /// Lock name.
    pub name: String,
    /// The lock's owner token.
    pub owner: String,
    /// `acquired`, `held` (not acquired within the wait), or `error`.
    pub acquire: String,
    /// The fencing token, when acquired.
    #[serde(default)]
    pub fence: Option<u64>,
    /// Guarded writes: `accepted`, `refused` (the fence condition failed), `skipped` (too little
    /// lease left), `error`.
    #[serde(default)]
    pub writes: Vec<String>,
    /// `released`, `not_held`, `held_by_other`, `lease_lost`, `error`, or absent.
    #[serde(default)]
    pub release: Option<String>,
    /// With `lease_lost`: milliseconds of the lease that were left by the holder's own monotonic
    /// clock when its body ended (more than 0 with no refresh that saw the lock taken: a false
    /// lease loss, such as a release whose first answer was lost being taken for one).
    #[serde(default)]
    pub lease_left_ms: Option<u64>,
    /// With `lease_lost`: whether a refresh during the body saw the lock no longer ours.
    #[serde(default)]
    pub lost_by_refresh: Option<bool>,
    /// The counter's read-modify-write in the critical section (`guarded::counter_key`):
    /// `counted` (read and written), `error` (the write may or may not have landed), or absent
    /// (not run: not acquired, too little lease left, or no `DDB_COUNTER_ENDPOINT`).
    #[serde(default)]
    pub counter: Option<String>,
    /// Errors seen in this cycle: `(operation, kind)`, kind as the front names it (Rust
    /// `ErrorKind`, Python exception class, Node `code`, PHP exception class).
    #[serde(default)]
    pub errors: Vec<(String, String)>,
    /// Errors that were not the library's typed errors (a panic, an untyped exception).
    #[serde(default)]
    pub untyped: Vec<String>,
}
