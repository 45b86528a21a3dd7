//! One client request, end to end: control endpoints aside, draw the plan, apply the faults
//! before forwarding, serve stale reads, forward (journaled, writes recorded in the history),
//! then apply the faults on the answer.

use bytes::Bytes;
use serde_json::{json, Value};

use crate::config::FaultConfig;
use crate::control::{control, is_control};
use crate::faults;
use crate::history::Item;
use crate::http1::{Reply, Request, Response};
use crate::journal::Delivery;
use crate::plan::{count_eventual_reads, Plan};
use crate::shared::Shared;
use crate::stale::{self, StaleRead};
use crate::stats;
use crate::upstream::{UpstreamResponse, TARGET_PREFIX};
use crate::writes::{WriteEffect, Writes};

/// Handles one client request.
pub(crate) async fn handle(sh: &Shared, req: Request) -> Reply {
    if is_control(&req.path) {
        return Reply::Send(control(sh, &req));
    }
    // A request without a DynamoDB target (S3's REST requests) is counted by its method.
    let op = req
        .header("x-amz-target")
        .map(|t| t.strip_prefix(TARGET_PREFIX).unwrap_or(t).to_string())
        .unwrap_or_else(|| req.method.clone());
    let cfg = sh.config();
    let req = strip_headers(sh, &cfg, &op, req);
    let body: Option<Item> = match serde_json::from_slice(&req.body) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    };
    let reads = body.as_ref().map_or(0, |b| count_eventual_reads(&op, b));
    if reads > 0 {
        sh.counters.add_eventual_reads(reads);
    }
    let plan = sh.planner.draw(&cfg, &op, reads);

    if let Some(reply) = faults::before_forward(sh, &cfg, &plan, &op).await {
        // A single-item write refused here is journaled too: it was sent, and never landed.
        if cfg.journal && matches!(op.as_str(), "PutItem" | "UpdateItem" | "DeleteItem") {
            let request = body.clone().map(Value::Object).unwrap_or(Value::Null);
            let why = match (plan.drop_request, plan.throttle) {
                (true, _) => "dropped before forwarding",
                (_, true) => "throttled",
                _ => "500",
            };
            let answer = json!({ "not_forwarded": why });
            sh.journal
                .record(&op, request, 0, answer, Delivery::NotForwarded);
        }
        return reply;
    }

    let stale_read = match &body {
        Some(b) => stale::read(sh, &op, b, &plan.stale),
        None => StaleRead::Fresh,
    };
    let (forward_body, batch_served) = match stale_read {
        StaleRead::Fresh => (req.body.clone(), None),
        StaleRead::Answered(resp) => {
            sh.counters.add(&op, stats::STALE_SERVED);
            return Reply::Send(resp);
        }
        StaleRead::Partial { served, rest } => (rest, Some(served)),
    };

    // Writes: learn the key schema and, if stale reads are on, the state before the first write.
    let writes = Writes {
        sh,
        req: &req,
        cfg: &cfg,
    };
    let effects = match &body {
        Some(b) => writes.effects(&op, b).await,
        None => Vec::new(),
    };
    writes.record_baselines(&effects).await;

    let forwarded = Forward {
        req: &req,
        cfg: &cfg,
        op: &op,
        body: body.as_ref(),
        effects: &effects,
    };
    let resp = match forwarded.send(sh, &plan, forward_body).await {
        Ok(r) => r,
        Err(e) => {
            sh.counters.add(&op, stats::UPSTREAM_UNREACHABLE);
            let msg = format!("fault-proxy: {e}");
            return Reply::Send(sh.ddb_error(502, "ServiceUnavailable", &msg));
        }
    };
    if resp.ok() && !effects.is_empty() {
        writes.record(&op, effects, &resp).await;
    }

    if let Some(reply) = faults::after_forward(sh, &cfg, &plan, &op).await {
        return reply;
    }
    match batch_served {
        Some(served) if resp.ok() => {
            sh.counters.add(&op, stats::STALE_SERVED);
            Reply::Send(stale::merge_batch(resp, served))
        }
        _ if op == "DescribeTable" && resp.ok() && !cfg.describe_table.is_empty() => {
            sh.counters.add(&op, &resp.outcome());
            Reply::Send(as_global_table(sh, &cfg, resp))
        }
        _ => {
            sh.counters.add(&op, &resp.outcome());
            Reply::Send(resp.into_response())
        }
    }
}

/// A `DescribeTable` answer with `cfg.describe_table`'s fields set in its `Table`, as DynamoDB
/// describes a global table (fresh CRC32, as the SDKs check it).
fn as_global_table(sh: &Shared, cfg: &FaultConfig, resp: UpstreamResponse) -> Response {
    let Some(mut body) = resp.json() else {
        return resp.into_response();
    };
    if let Some(Value::Object(table)) = body.get_mut("Table") {
        for (k, v) in &cfg.describe_table {
            table.insert(k.clone(), v.clone());
        }
    }
    sh.ddb_response(resp.status, &Value::Object(body))
}

/// The request without the headers `cfg.strip_headers` drops from its method, counted.
fn strip_headers(sh: &Shared, cfg: &FaultConfig, op: &str, mut req: Request) -> Request {
    let names = cfg.stripped_from(&req.method);
    let before = req.headers.len();
    req.headers
        .retain(|(n, _)| !names.iter().any(|s| s.eq_ignore_ascii_case(n)));
    if req.headers.len() < before {
        sh.counters.add(op, stats::STRIPPED);
    }
    req
}

/// A client request on its way upstream.
struct Forward<'a> {
    req: &'a Request,
    cfg: &'a FaultConfig,
    op: &'a str,
    /// The request body as JSON, if it is an object.
    body: Option<&'a Item>,
    effects: &'a [WriteEffect],
}

impl Forward<'_> {
    /// Forwards the request with `body`. With the journal on, a write is journaled with the
    /// server's answer, and writes to one item go upstream one at a time (commit order).
    async fn send(
        &self,
        sh: &Shared,
        plan: &Plan,
        body: Bytes,
    ) -> Result<UpstreamResponse, String> {
        let journaled = self.cfg.journal && !self.effects.is_empty();
        let item_lock = match self.effects {
            [one] if journaled && matches!(self.op, "PutItem" | "UpdateItem" | "DeleteItem") => {
                Some(sh.journal.item_lock(&one.hkey))
            }
            _ => None,
        };
        let _serialized = match &item_lock {
            Some(l) => Some(l.lock().await),
            None => None,
        };
        let req = self.req;
        let sent = sh
            .upstream
            .send(&req.method, &req.path, &req.headers, None, body)
            .await;
        if journaled {
            let request = self.body.cloned().map(Value::Object).unwrap_or(Value::Null);
            let (status, answer, delivery) = match &sent {
                Ok(resp) => (
                    resp.status,
                    resp.json().map(Value::Object).unwrap_or(Value::Null),
                    faults::delivery(plan),
                ),
                Err(e) => (0, json!({"error": e}), Delivery::Unreachable),
            };
            sh.journal
                .record(self.op, request, status, answer, delivery);
        }
        sent
    }
}
