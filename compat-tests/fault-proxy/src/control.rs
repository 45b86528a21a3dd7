//! The control endpoints on the proxy's own address (`/__proxy/...`): stats, reset, config,
//! clock, journal.

use std::time::Duration;

use serde_json::{json, Value};

use crate::config::FaultConfig;
use crate::http1::{Request, Response};
use crate::shared::Shared;

/// Whether `path` (with its query) is a control endpoint rather than a DynamoDB request.
pub(crate) fn is_control(path: &str) -> bool {
    let path_only = path.split('?').next().unwrap_or("");
    path_only == "/__proxy" || path_only.starts_with("/__proxy/")
}

/// Answers a `/__proxy/...` request.
pub(crate) fn control(sh: &Shared, req: &Request) -> Response {
    let (path, query) = req.path.split_once('?').unwrap_or((&req.path, ""));
    let body_json: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let flag = |name: &str| body_json.get(name).and_then(Value::as_bool) == Some(true);
    let ok = |v: Value| sh.json_response(200, "application/json", &v);
    let bad = |status: u16, msg: String| {
        sh.json_response(status, "application/json", &json!({"error": msg}))
    };
    match (req.method.as_str(), path) {
        ("GET", "/__proxy/stats") => {
            ok(serde_json::to_value(sh.counters.snapshot()).unwrap_or_default())
        }
        ("POST", "/__proxy/reset") => {
            let history = flag("history")
                || query
                    .split('&')
                    .any(|kv| kv == "history=1" || kv == "history=true");
            sh.counters.reset();
            if flag("journal") {
                sh.journal.clear();
            }
            if history {
                sh.reset_history();
            }
            ok(json!({"reset": true, "history_cleared": history}))
        }
        ("GET", "/__proxy/journal") => ok(Value::Array(sh.journal.snapshot())),
        ("GET", "/__proxy/config") => ok(serde_json::to_value(&*sh.config()).unwrap_or_default()),
        ("POST", "/__proxy/config") => match serde_json::from_slice::<FaultConfig>(&req.body) {
            Ok(cfg) => match cfg.validate() {
                Ok(()) => {
                    sh.set_config(cfg.clone());
                    ok(serde_json::to_value(&cfg).unwrap_or_default())
                }
                Err(e) => bad(400, e.to_string()),
            },
            Err(e) => bad(400, format!("invalid config JSON: {e}")),
        },
        ("POST", "/__proxy/clock") => match body_json.get("advance_ms").and_then(Value::as_u64) {
            Some(ms) => {
                sh.advance_clock(Duration::from_millis(ms));
                ok(json!({"now_ms": sh.now_us() / 1000}))
            }
            None => bad(400, "expected {\"advance_ms\": N}".into()),
        },
        _ => bad(
            404,
            format!(
                "unknown control endpoint {} {}; try GET /__proxy/stats, POST /__proxy/reset, \
                 GET|POST /__proxy/config, POST /__proxy/clock, GET /__proxy/journal",
                req.method, path
            ),
        ),
    }
}
