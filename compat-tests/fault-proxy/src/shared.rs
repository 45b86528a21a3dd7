//! The state shared by the accept loop, the connection tasks and the handle (fault config,
//! planner, upstream, counters, write history, journal, learned key schemas, proxy clock), and
//! the answers the proxy writes itself.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::{json, Value};

use crate::config::FaultConfig;
use crate::crc32::crc32;
use crate::history::History;
use crate::http1::Response;
use crate::journal::Journal;
use crate::plan::Planner;
use crate::stats::Counters;
use crate::upstream::Upstream;

const ERROR_NS: &str = "com.amazonaws.dynamodb.v20120810#";

/// State shared by the accept loop, the connection tasks and the handle.
pub(crate) struct Shared {
    pub(crate) upstream: Upstream,
    config: Mutex<Arc<FaultConfig>>,
    pub(crate) planner: Planner,
    pub(crate) counters: Counters,
    pub(crate) history: History,
    pub(crate) journal: Journal,
    /// Key attribute names (sorted) per table.
    schemas: Mutex<HashMap<String, Vec<String>>>,
    clock_start: Instant,
    clock_offset_us: AtomicI64,
    request_ids: AtomicU64,
}

impl Shared {
    /// `authority` is the upstream's `host:port`.
    pub(crate) fn new(authority: String, faults: FaultConfig) -> Shared {
        Shared {
            upstream: Upstream::new(authority),
            planner: Planner::new(faults.seed),
            config: Mutex::new(Arc::new(faults)),
            counters: Counters::default(),
            history: History::default(),
            journal: Journal::default(),
            schemas: Mutex::new(HashMap::new()),
            clock_start: Instant::now(),
            clock_offset_us: AtomicI64::new(0),
            request_ids: AtomicU64::new(0),
        }
    }

    pub(crate) fn config(&self) -> Arc<FaultConfig> {
        self.config
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replaces the fault config and re-seeds the RNG from it.
    pub(crate) fn set_config(&self, faults: FaultConfig) {
        self.planner.reseed(faults.seed);
        *self.config.lock().unwrap_or_else(|e| e.into_inner()) = Arc::new(faults);
    }

    /// The proxy clock in microseconds: real time since start plus test advances.
    pub(crate) fn now_us(&self) -> i64 {
        self.clock_start.elapsed().as_micros() as i64 + self.clock_offset_us.load(Ordering::SeqCst)
    }

    pub(crate) fn advance_clock(&self, by: Duration) {
        self.clock_offset_us
            .fetch_add(by.as_micros() as i64, Ordering::SeqCst);
    }

    fn schemas(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<String>>> {
        self.schemas.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The key attribute names learned for `table`, sorted.
    pub(crate) fn schema(&self, table: &str) -> Option<Vec<String>> {
        self.schemas().get(table).cloned()
    }

    /// Remembers `table`'s key attribute names (sorted).
    pub(crate) fn learn_schema(&self, table: &str, names: Vec<String>) {
        let mut schemas = self.schemas();
        if schemas.get(table) != Some(&names) {
            schemas.insert(table.to_string(), names);
        }
    }

    /// Forgets the write history and the learned key schemas.
    pub(crate) fn reset_history(&self) {
        self.history.clear();
        self.schemas().clear();
    }

    fn next_request_id(&self) -> String {
        format!(
            "FAULTPROXY{:016X}",
            self.request_ids.fetch_add(1, Ordering::SeqCst)
        )
    }

    /// An answer of the proxy's own, with a request id and a CRC header.
    pub(crate) fn json_response(&self, status: u16, content_type: &str, body: &Value) -> Response {
        let body = serde_json::to_vec(body).unwrap_or_default();
        let crc = crc32(&body).to_string();
        Response {
            status,
            headers: vec![
                ("content-type".into(), content_type.as_bytes().to_vec()),
                (
                    "x-amzn-requestid".into(),
                    self.next_request_id().into_bytes(),
                ),
                ("x-amz-crc32".into(), crc.into_bytes()),
            ],
            body: Bytes::from(body),
        }
    }

    /// A DynamoDB (JSON 1.0) answer.
    pub(crate) fn ddb_response(&self, status: u16, body: &Value) -> Response {
        self.json_response(status, "application/x-amz-json-1.0", body)
    }

    /// A DynamoDB error answer: `short_type` is the `__type` without its namespace.
    pub(crate) fn ddb_error(&self, status: u16, short_type: &str, message: &str) -> Response {
        self.ddb_response(
            status,
            &json!({"__type": format!("{ERROR_NS}{short_type}"), "message": message}),
        )
    }
}
