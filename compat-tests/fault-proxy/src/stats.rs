//! Request counters by operation and outcome.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// Outcome: forwarded upstream, which answered 2xx.
pub const FORWARDED_OK: &str = "forwarded_ok";
/// Outcome prefix: forwarded upstream, which answered an error; followed by the short `__type`.
pub const FORWARDED_ERROR_PREFIX: &str = "forwarded_error:";
/// Outcome: an eventually consistent read answered (at least partly) from the write history.
pub const STALE_SERVED: &str = "stale_served";
/// Outcome: forwarded upstream, then the client connection was closed without a response.
pub const DROPPED: &str = "dropped";
/// Outcome: closed before forwarding (nothing reached the server).
pub const DROPPED_REQUEST: &str = "dropped_request";
/// Outcome: forwarded upstream, then the client connection was reset (RST) without a response.
pub const RESET: &str = "reset";
/// Outcome: forwarded upstream, answered after `delay_response_ms`.
pub const DELAYED: &str = "delayed";
/// Outcome: answered 400 ProvisionedThroughputExceededException without forwarding.
pub const THROTTLED: &str = "throttled";
/// Outcome: answered 400 AccessDeniedException without forwarding (`deny_ops`).
pub const ACCESS_DENIED: &str = "access_denied";
/// Outcome: answered 400 ReplicatedWriteConflictException without forwarding (scripted).
pub const REPLICATED_CONFLICT: &str = "replicated_conflict";
/// Outcome: answered 500 InternalServerError without forwarding.
pub const ERROR_500: &str = "error500";
/// Outcome: request headers were dropped before forwarding (`strip_headers`); counted besides the
/// answer's outcome.
pub const STRIPPED: &str = "stripped";
/// Outcome: the upstream could not be reached (answered 502).
pub const UPSTREAM_UNREACHABLE: &str = "upstream_unreachable";

/// A snapshot of the counters: `ops[operation][outcome] = count`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Counts per operation name (e.g. `PutItem`), then per outcome (e.g. `forwarded_ok`).
    pub ops: BTreeMap<String, BTreeMap<String, u64>>,
    /// Key reads asked for without `ConsistentRead: true` (GetItem, each key of a BatchGetItem),
    /// whatever their outcome: what DynamoDB prices at half a read unit.
    #[serde(default)]
    pub eventual_reads: u64,
}

impl Stats {
    /// The count for one operation and outcome (0 if never seen).
    pub fn count(&self, op: &str, outcome: &str) -> u64 {
        self.ops
            .get(op)
            .and_then(|m| m.get(outcome))
            .copied()
            .unwrap_or(0)
    }

    /// All requests of one operation, whatever their outcome.
    pub fn total(&self, op: &str) -> u64 {
        self.ops.get(op).map(|m| m.values().sum()).unwrap_or(0)
    }

    /// All requests counted.
    pub fn grand_total(&self) -> u64 {
        self.ops.values().flat_map(|m| m.values()).sum()
    }

    /// The first fault a `sequence` scripted (each operation's first that is not `ok`) that these
    /// counters never saw, as `(operation, fault)`: a test whose faults did not happen proves
    /// nothing.
    pub fn unseen_scripted<'a>(
        &self,
        sequence: &'a BTreeMap<String, Vec<String>>,
    ) -> Option<(&'a str, &'a str)> {
        sequence.iter().find_map(|(op, script)| {
            let fault = script.iter().find(|f| *f != "ok")?;
            let outcome = match fault.as_str() {
                "drop" => DROPPED,
                "throttle" => THROTTLED,
                "error500" => ERROR_500,
                other => other,
            };
            (self.count(op, outcome) == 0).then_some((op.as_str(), fault.as_str()))
        })
    }
}

/// The live counters shared by the connection tasks.
#[derive(Debug, Default)]
pub(crate) struct Counters(Mutex<Stats>);

impl Counters {
    pub(crate) fn add(&self, op: &str, outcome: &str) {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *s.ops
            .entry(op.to_string())
            .or_default()
            .entry(outcome.to_string())
            .or_default() += 1;
    }

    pub(crate) fn add_eventual_reads(&self, n: usize) {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        s.eventual_reads += n as u64;
    }

    pub(crate) fn snapshot(&self) -> Stats {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn reset(&self) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Stats::default();
    }
}
