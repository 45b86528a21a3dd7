//! The Rust peer (`ddblock-peer`, compat-tests/support/peers/PROTOCOL.md) over JSON lines, on a
//! fresh table of each local server: start-up, locks, cache values, the patterns, and failures
//! answered as `ok:false` while the peer goes on reading.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use ddblock_test_support::{client_for, new_table, on_servers, Server};
use serde_json::{json, Value};

/// One peer process on a fresh table (layout laravel8, prefix `app_`).
struct Peer {
    child: Child,
    /// `None` once closed.
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Peer {
    fn start(server: Server) -> Peer {
        let endpoint = server.endpoint();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let table = rt.block_on(new_table(&client_for(&endpoint), "key"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_ddblock-peer"))
            .env("DDB_ENDPOINT", &endpoint)
            .env("DDB_TABLE", &table)
            .env("DDB_PREFIX", "app_")
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start ddblock-peer");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Peer {
            child,
            stdin: Some(stdin),
            stdout,
        }
    }

    /// Sends one line, returns the answer.
    fn line(&mut self, line: &str) -> Value {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}").expect("write request");
        stdin.flush().expect("flush");
        let mut answer = String::new();
        self.stdout.read_line(&mut answer).expect("read answer");
        assert!(!answer.is_empty(), "the peer exited on {line}");
        serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{answer:?}: {e}"))
    }

    /// Closes stdin and waits: whether the peer exited 0.
    fn close(&mut self) -> bool {
        drop(self.stdin.take());
        self.child.wait().expect("wait").success()
    }

    /// Sends a request that must succeed.
    fn ok(&mut self, req: Value) -> Value {
        let answer = self.line(&req.to_string());
        assert_eq!(answer["ok"], true, "{req} answered {answer}");
        answer
    }

    /// Sends a request that must fail; returns the error text.
    fn fails(&mut self, line: &str) -> String {
        let answer = self.line(line);
        assert_eq!(answer["ok"], false, "{line} answered {answer}");
        answer["error"].as_str().expect("error text").to_owned()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn b64(serialized: &str) -> String {
    B64.encode(serialized)
}

fn peer_round_trips(server: Server) {
    let mut p = Peer::start(server);

    let hello = p.ok(json!({"op": "hello"}));
    assert_eq!(
        (hello["lang"].as_str(), hello["driver"].as_str()),
        (Some("rust"), Some("core"))
    );
    assert!(hello["now"].as_f64().unwrap() > 1.6e9);
    assert!(p.ok(json!({"op": "now"}))["now"].is_i64());

    // Locks.
    assert_eq!(
        p.ok(json!({"op": "lock.key", "name": "a"}))["key"],
        "app_:app_:a"
    );
    let got = p.ok(json!({"op": "lock.acquire", "name": "a", "ttl": 30}));
    assert_eq!(got["acquired"], true);
    assert!(got["fence"].is_u64());
    let owner = got["owner"].as_str().unwrap().to_owned();
    let holder = p.ok(json!({"op": "lock.holder", "name": "a"}))["holder"].clone();
    assert_eq!(holder["owner"], owner.as_str());
    assert!(holder["expires_at"].is_i64());
    let current = p.ok(json!({"op": "lock.get", "name": "a"}))["value"].clone();
    assert_eq!(current, b64(&format!("s:16:\"{owner}\";")));
    let other = p.ok(json!({"op": "lock.acquire", "name": "a", "ttl": 30, "owner": "me"}));
    assert_eq!(
        (&other["acquired"], &other["owner"]),
        (&json!(false), &json!("me"))
    );
    let req = json!({"op": "lock.refresh", "name": "a", "owner": owner, "ttl": 60});
    assert_eq!(p.ok(req)["refreshed"], true);
    let req = json!({"op": "lock.release", "name": "a", "owner": "me"});
    assert_eq!(p.ok(req)["released"], false);
    let req = json!({"op": "lock.release", "name": "a", "owner": owner});
    assert_eq!(p.ok(req)["released"], true);
    assert_eq!(
        p.ok(json!({"op": "lock.holder", "name": "a"}))["holder"],
        Value::Null
    );
    assert_eq!(
        p.ok(json!({"op": "lock.get", "name": "a"}))["value"],
        b64("N;")
    );

    // Cache values, PHP-serialized both ways.
    for (i, v) in [
        "s:5:\"hello\";",
        "i:42;",
        "d:0.5;",
        "b:0;",
        "a:1:{s:1:\"a\";b:1;}",
    ]
    .iter()
    .enumerate()
    {
        let key = format!("k{i}");
        let req = json!({"op": "put", "key": key, "v": b64(v), "ttl": 60});
        assert_eq!(p.ok(req)["result"], true);
        assert_eq!(
            p.ok(json!({"op": "get", "key": key}))["value"],
            b64(v),
            "{v}"
        );
    }
    assert_eq!(
        p.ok(json!({"op": "get", "key": "missing"}))["value"],
        b64("N;")
    );
    let req = json!({"op": "add", "key": "k1", "v": b64("i:1;"), "ttl": 60});
    assert_eq!(p.ok(req)["result"], false);
    assert_eq!(
        p.ok(json!({"op": "increment", "key": "k1", "by": 3}))["result"],
        45
    );
    assert_eq!(p.ok(json!({"op": "decrement", "key": "k1"}))["result"], 44);
    assert_eq!(
        p.ok(json!({"op": "increment", "key": "nope"}))["result"],
        false
    );
    assert_eq!(p.ok(json!({"op": "forget", "key": "k1"}))["result"], true);

    // Patterns.
    let req = json!({"op": "once", "events": ["e1", "e2"], "ttl": 60});
    assert_eq!(p.ok(req)["won"], json!(["e1", "e2"]));
    let req = json!({"op": "once", "events": ["e2", "e3"], "ttl": 60});
    assert_eq!(p.ok(req)["won"], json!(["e3"]));
    p.ok(json!({"op": "put", "key": "counter", "v": b64("i:0;"), "ttl": 60}));
    let cas = p.ok(json!({"op": "cas", "key": "counter", "n": 3}));
    assert_eq!(
        (&cas["increments"], &cas["conflicts"]),
        (&json!(3), &json!(0))
    );
    assert_eq!(
        p.ok(json!({"op": "get", "key": "counter"}))["value"],
        b64("i:3;")
    );
    let won = p.ok(json!({"op": "takeover", "names": ["t1"], "ttl": 30}))["won"].clone();
    assert!(won["t1"].is_u64(), "{won}");

    // Failures answer ok:false and the peer goes on.
    assert_eq!(p.fails(r#"{"op":"nope"}"#), "unsupported: nope");
    p.fails("not json");
    p.fails("[1]");
    p.fails(r#"{"op":"lock.acquire","name":"a"}"#);
    p.fails(r#"{"op":"put","key":"k","v":"!!","ttl":5}"#);
    let bad = p.line(r#"{"op":"lock.acquire","name":"","ttl":5}"#);
    assert_eq!(
        (&bad["ok"], &bad["kind"]),
        (&json!(false), &json!("invalid_key"))
    );
    p.ok(json!({"op": "hello"}));

    // The peer exits when its input ends.
    assert!(p.close(), "the peer did not exit 0 at the end of its input");
}

/// `cycles` with the Rust peer's own fields: two loops in one process waiting for one lock, by
/// the core's `block()` and by a write per try. Every hold is alone, both loops get the lock,
/// and each record names its loop.
fn peer_cycles(server: Server) {
    let mut p = Peer::start(server);
    for wait in ["block", "writes"] {
        let record = std::env::temp_dir().join(format!(
            "ddblock-peer-cycles-{}.jsonl",
            ddblock::lock::random_owner()
        ));
        let _ = std::fs::remove_file(&record);
        let now = p.ok(json!({"op": "hello"}))["now"].as_f64().unwrap();
        let answer = p.ok(json!({
            "op": "cycles", "names": ["hot"], "cycles": 1000, "ttl": 10, "work_ms": 20,
            "think_ms": 20, "block": true, "wait": wait, "tasks": 2, "start_at": now + 0.2,
            "until": now + 1.5, "record": record.display().to_string(),
        }));
        let text = std::fs::read_to_string(&record).expect("record file");
        let _ = std::fs::remove_file(&record);
        let records: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(answer["cycles"], records.len(), "{wait}: {answer}");
        assert_eq!(answer["errors"], 0, "{wait}: {answer}");
        let mut holds: Vec<(f64, f64)> = Vec::new();
        for task in [0, 1] {
            let got = records
                .iter()
                .filter(|r| r["task"] == task && r["acquired"] == true)
                .count();
            assert!(got > 0, "{wait}: loop {task} never got the lock: {text}");
        }
        for r in records.iter().filter(|r| r["acquired"] == true) {
            assert_eq!(r["released"], true, "{wait}: {r}");
            holds.push((r["t_acq"].as_f64().unwrap(), r["t_rel"].as_f64().unwrap()));
        }
        holds.sort_by(|a, b| a.0.total_cmp(&b.0));
        for pair in holds.windows(2) {
            assert!(pair[0].1 <= pair[1].0, "{wait}: holds overlap: {pair:?}");
        }
    }
    let bad = r#"{"op":"cycles","names":["n"],"cycles":1,"ttl":5,"record":"/dev/null","block":true,"wait":"poll"}"#;
    assert!(p.fails(bad).contains("block or writes"));
}

on_servers!(sync peer_round_trips, peer_cycles);
