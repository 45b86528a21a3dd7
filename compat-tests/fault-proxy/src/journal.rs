//! The journal: every write the proxy forwarded and the server's answer to it, for checkers that
//! judge a run by what the server actually did rather than by what clients believe.
//!
//! While the journal is on (`FaultConfig::journal`), single-item writes (PutItem, UpdateItem,
//! DeleteItem) to one item are forwarded one at a time, so the journal lists the writes of each
//! item in the order the server committed them (DynamoDB serializes writes to one item too).
//! Writes the proxy refuses before forwarding (throttled, 500s, dropped requests) are journaled
//! too, with status 0 and delivery `not_forwarded`: a trace of what clients sent.
//! Entries carry the wall clock of the answer in microseconds (the proxy's clock is not skewed
//! even when clients' are) and a sequence number over all items.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::history::HistoryKey;

/// Recorded writes, and the per-item locks that keep one item's writes in commit order.
#[derive(Debug, Default)]
pub(crate) struct Journal {
    entries: Mutex<Vec<Value>>,
    item_locks: Mutex<HashMap<HistoryKey, Arc<tokio::sync::Mutex<()>>>>,
}

/// How the answer reached the client (or did not).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Delivery {
    /// Answered as the server answered.
    Answered,
    /// The connection was closed instead (the write may have landed: it did, if `status` is 200).
    Dropped,
    /// The connection was reset instead.
    Reset,
    /// Answered after `delay_response_ms`.
    Delayed,
    /// The server could not be reached: nothing was written.
    Unreachable,
    /// Refused by the proxy before forwarding (an injected throttle or 500, a dropped request):
    /// nothing was written (status 0).
    NotForwarded,
}

impl Delivery {
    fn as_str(self) -> &'static str {
        match self {
            Delivery::Answered => "answered",
            Delivery::Dropped => "dropped",
            Delivery::Reset => "reset",
            Delivery::Delayed => "delayed",
            Delivery::Unreachable => "unreachable",
            Delivery::NotForwarded => "not_forwarded",
        }
    }
}

fn wall_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

impl Journal {
    /// The lock that serializes writes to one item.
    pub(crate) fn item_lock(&self, key: &HistoryKey) -> Arc<tokio::sync::Mutex<()>> {
        self.item_locks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key.clone())
            .or_default()
            .clone()
    }

    /// Records one forwarded write: the operation, the request body, the server's status and body.
    pub(crate) fn record(
        &self,
        op: &str,
        request: Value,
        status: u16,
        response: Value,
        delivery: Delivery,
    ) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let seq = entries.len();
        entries.push(json!({
            "seq": seq,
            "wall_us": wall_us(),
            "op": op,
            "request": request,
            "status": status,
            "response": response,
            "delivery": delivery.as_str(),
        }));
    }

    /// Every entry so far, in order.
    pub(crate) fn snapshot(&self) -> Vec<Value> {
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Forgets every entry.
    pub(crate) fn clear(&self) {
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }
}
