//! `ddblock-peer`: the Rust peer of the cross-language tests (compat-tests/support/peers/
//! PROTOCOL.md). Reads one JSON request per stdin line and writes one JSON answer per stdout line,
//! in order, over the core; configured once from the `DDB_*` environment (`config.rs`). Nothing
//! but answers goes to stdout; it exits when stdin closes.
//!
//! Modules: `request.rs` (fields, values, failures), `locks.rs` (the `lock.*` ops), `cache.rs`
//! (get/put/add/forget/increment/decrement), `once_cas.rs` (once, cas, lock.counter, takeover),
//! `loops.rs` (cycles and the record files), `chaos.rs` (the chaos worker).

mod cache;
mod chaos;
mod config;
mod locks;
mod loops;
mod once_cas;
mod request;

use std::io::Write;
use std::process::ExitCode;

use ddblock::Store;
use serde_json::{json, Map, Value};
use tokio::io::AsyncBufReadExt;

use request::{Failure, Req};

/// What a successful op answers: the fields after `"ok": true`.
type Fields = Map<String, Value>;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let store = match config::from_env() {
        Ok(cfg) => Store::new(cfg),
        Err(e) => {
            eprintln!("ddblock-peer: {e}");
            return ExitCode::from(2);
        }
    };
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    loop {
        let line = match lines.next_line().await {
            Ok(Some(line)) => line,
            Ok(None) => return ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ddblock-peer: reading stdin: {e}");
                return ExitCode::from(2);
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        let answer = answer(&store, &line).await;
        let mut out = std::io::stdout().lock();
        if writeln!(out, "{answer}")
            .and_then(|()| out.flush())
            .is_err()
        {
            // Nobody reads the answers any more.
            return ExitCode::SUCCESS;
        }
    }
}

/// The answer line for one request line: `{"ok":true,...}` or `{"ok":false,"error":...}`.
async fn answer(store: &Store, line: &str) -> Value {
    let req = match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(fields)) => Req(fields),
        Ok(_) => return Failure::bad("each line must be a JSON object").to_json(),
        Err(e) => return Failure::bad(format!("not JSON: {e}")).to_json(),
    };
    // Run as a task: a panic in an op (a bug, never bad input) answers ok:false, and the peer
    // goes on reading.
    let task = tokio::spawn(dispatch(store.clone(), req));
    let result = match task.await {
        Ok(result) => result,
        Err(e) => Err(Failure::Other(format!("panic: {e}"))),
    };
    match result {
        Ok(fields) => {
            let mut out = Map::new();
            out.insert("ok".into(), Value::Bool(true));
            out.extend(fields);
            Value::Object(out)
        }
        Err(f) => f.to_json(),
    }
}

/// Runs one request.
async fn dispatch(store: Store, req: Req) -> Result<Fields, Failure> {
    let op = req.str("op")?.to_owned();
    let s = &store;
    match op.as_str() {
        "hello" => Ok(fields(json!({
            "lang": "rust",
            "driver": "core",
            "now": loops::unix_now(),
        }))),
        "now" => Ok(fields(json!({ "now": s.now() }))),
        "lock.acquire" => locks::acquire(s, &req).await,
        "lock.block" => locks::block(s, &req).await,
        "lock.release" => locks::release(s, &req).await,
        "lock.refresh" => locks::refresh(s, &req).await,
        "lock.forceRelease" => locks::force_release(s, &req).await,
        "lock.get" => locks::get(s, &req).await,
        "lock.holder" => locks::holder(s, &req).await,
        "lock.key" => locks::key(s, &req),
        "get" => cache::get(s, &req).await,
        "put" => cache::put(s, &req).await,
        "add" => cache::add(s, &req).await,
        "forget" => cache::forget(s, &req).await,
        "increment" => cache::increment(s, &req, false).await,
        "decrement" => cache::increment(s, &req, true).await,
        "once" => once_cas::once(s, &req).await,
        "cas" => once_cas::cas(s, &req).await,
        "lock.counter" => once_cas::counter(s, &req).await,
        "takeover" => once_cas::takeover(s, &req).await,
        "cycles" => loops::cycles(s, &req).await,
        "chaos" => chaos::run(s, &req).await,
        _ => Err(Failure::Unsupported(op)),
    }
}

/// The fields of a JSON object literal.
fn fields(v: Value) -> Fields {
    match v {
        Value::Object(m) => m,
        _ => Fields::new(),
    }
}
