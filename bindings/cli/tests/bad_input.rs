//! The shared table of bad input and outcomes (compat-tests/conformance/bad-input.json) through
//! the binary: every case gets the error kind, or the outcome, every other front gets.

mod common;

use common::{json_of, scratch, Ctx, Server};
use ddblock::aws_sdk_dynamodb::types::AttributeValue;
use ddblock_fault_proxy::{FaultConfig, ProxyHandle};
use ddblock_test_support::faulty::faulty;
use serde_json::{json, Value};
use tokio::runtime::Runtime;

/// The shared table: `cases` (bad input) and `outcomes` (waits and leases).
fn shared_table() -> Value {
    let path = common::root().join("compat-tests/conformance/bad-input.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A fault proxy in front of `upstream`, scripted by `faults`.
fn proxy(rt: &Runtime, upstream: &str, faults: FaultConfig) -> ProxyHandle {
    rt.block_on(faulty(upstream, faults)).proxy
}

/// The bad-input cases of the shared table through the CLI: each case gets the kind every other
/// front gets, in `--json`'s `error.kind`, with exit 1.
#[test]
fn bad_input_gets_the_same_kinds() {
    let table = shared_table();
    let base = Ctx::new(Server::Moto);
    let rt = Runtime::new().unwrap();
    for c in table["cases"].as_array().unwrap() {
        let mut ctx = base.via(base.endpoint.clone());
        // Keep the proxy alive until the case has run.
        let mut _proxy = None;
        match c["server"].as_str() {
            None | Some("no_credentials") => {}
            Some("unreachable") => ctx.endpoint = ddblock_test_support::closed_endpoint(),
            Some("throttling") => {
                let faults = FaultConfig {
                    throttle_rate: 1.0,
                    ..Default::default()
                };
                let p = proxy(&rt, &base.endpoint, faults);
                ctx.endpoint = p.url();
                _proxy = Some(p);
            }
            Some(other) => panic!("unknown server {other}"),
        }
        if let Some(text) = c["stored"].as_str() {
            rt.block_on(
                ddblock_test_support::client_for(&base.endpoint)
                    .put_item()
                    .table_name(&base.table)
                    .item("key", AttributeValue::S(c["key"].as_str().unwrap().into()))
                    .item("value", AttributeValue::S(text.into()))
                    .send(),
            )
            .expect("raw PutItem");
        }
        let name = match c.get("name_repeat") {
            Some(r) => r[0]
                .as_str()
                .unwrap()
                .repeat(r[1].as_u64().unwrap() as usize),
            None => c["name"].as_str().unwrap_or_default().to_owned(),
        };
        let ttl = c["ttl"].to_string();
        let mut args: Vec<String> = Vec::new();
        match c["op"].as_str().unwrap() {
            "config" => {
                for flag in ["layout", "endpoint", "table"] {
                    if let Some(v) = c[flag].as_str() {
                        args.extend([format!("--{flag}"), v.to_owned()]);
                    }
                }
                if let Some(m) = c.get("clock_skew_margin") {
                    args.extend(["--clock-skew-margin".into(), m.to_string()]);
                }
                args.extend(["status".into(), "x".into()]);
            }
            op => {
                if c["table"] == "missing" {
                    args.extend(["--table".into(), "ddblock_no_such_table".into()]);
                }
                args.extend([
                    "--prefix".into(),
                    String::new(),
                    "--max-attempts".into(),
                    "2".into(),
                ]);
                match op {
                    // The CLI has no lock handle without a request: `acquire` checks the name
                    // and ttl first, as constructing a lock does in the other fronts.
                    "lock" | "acquire" => {
                        args.extend(["acquire".into(), name, "--ttl".into(), ttl])
                    }
                    "get" => args.extend(["get".into(), c["key"].as_str().unwrap().into()]),
                    "put" | "put_if_version" => {
                        args.extend([
                            "put".into(),
                            c["key"].as_str().unwrap().into(),
                            c["value"].as_str().unwrap().into(),
                            "--ttl".into(),
                            ttl,
                        ]);
                        if op == "put_if_version" {
                            args.extend(["--if-version".into(), c["version"].to_string()]);
                        }
                    }
                    "once" => args.extend([
                        "once".into(),
                        name,
                        "--ttl".into(),
                        ttl,
                        "--".into(),
                        "true".into(),
                    ]),
                    other => panic!("unknown op {other}"),
                }
            }
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, v) = if c["server"] == "no_credentials" {
            // No AWS credentials anywhere: none in the environment, an empty HOME.
            let home = scratch();
            let mut cmd = std::process::Command::new(common::bin());
            ctx.env(&mut cmd);
            for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("AWS_")) {
                cmd.env_remove(k);
            }
            cmd.env_remove("AWS_ACCESS_KEY_ID")
                .env_remove("AWS_SECRET_ACCESS_KEY")
                .env("AWS_DEFAULT_REGION", "us-east-1")
                .env("AWS_EC2_METADATA_DISABLED", "true")
                .env("HOME", &home);
            let out = cmd.arg("--json").args(&refs).output().unwrap();
            json_of(&out, "ddblock without credentials")
        } else {
            ctx.json(&refs)
        };
        assert_eq!(code, 1, "{}: {v}", c["case"]);
        assert_eq!(v["error"]["kind"], c["kind"], "{}: {v}", c["case"]);
    }
}

/// The wait and lease cases of the shared table (`outcomes`) through the CLI: `acquire --wait`, `run --heartbeat -- sh -c BODY` and `once -- sh -c BODY`
/// get the outcome every other front gets. Exit 0: acquired or ok; 75: held; 76: lease lost;
/// 1: an error (its kind in `--json`); 3: the body's own failure, with the clean-up's error
/// and its kind on stderr.
#[test]
fn wait_and_lease_cases_have_their_outcomes() {
    let table = shared_table();
    let base = Ctx::new(Server::Moto);
    let rt = Runtime::new().unwrap();
    for (i, c) in table["outcomes"].as_array().unwrap().iter().enumerate() {
        let case = c["case"].as_str().unwrap();
        let faults: FaultConfig = c
            .get("faults")
            .map(|f| serde_json::from_value(f.clone()).expect("the case's faults"))
            .unwrap_or_default();
        let sequence = faults.sequence.clone();
        let proxy = proxy(&rt, &base.endpoint, faults);
        let ctx = base.via(proxy.url());
        // One table for every case: a name of its own for each.
        let name = &format!("{}-{i}", c["name"].as_str().unwrap());
        let ttl = c["ttl"].to_string();
        let wait = match &c["wait"] {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        let body = match c["body"].as_str().unwrap_or_default() {
            "raise" => "exit 3".to_owned(),
            // The heartbeat (ttl 3: a refresh each second) sees the lock gone and stops CMD.
            "lose_lease" => format!(
                "'{}' --prefix '' force-release {name}; sleep 10",
                common::bin().display()
            ),
            // Removed before any refresh (ttl 30): run's release finds it gone at its first send.
            "remove" => format!(
                "'{}' --prefix '' force-release {name}",
                common::bin().display()
            ),
            _ => "true".to_owned(),
        };
        let mut args = vec!["--prefix", ""];
        match c["op"].as_str().unwrap() {
            "acquire" => {
                if c["held_by_other"] == true {
                    let (code, _, err) =
                        base.text(&["--prefix", "", "acquire", name, "--ttl", "60"]);
                    assert_eq!(code, 0, "{err}");
                }
                args.extend(["--json", "acquire", name, "--ttl", &ttl, "--wait", &wait]);
            }
            "with_lock" => args.extend([
                "run",
                name,
                "--ttl",
                &ttl,
                "--wait",
                &wait,
                "--heartbeat",
                "--",
                "sh",
                "-c",
                &body,
            ]),
            "once_run" => args.extend(["once", name, "--ttl", &ttl, "--", "sh", "-c", &body]),
            other => panic!("unknown op {other}"),
        }
        let (code, out, err) = ctx.text(&args);
        let got = match code {
            0 if c["op"] == "acquire" => json!({"acquired": true}),
            0 => json!({"ok": true}),
            75 => json!({"acquired": false}),
            76 => json!({"error": "lease_lost"}),
            1 => {
                let v: Value = serde_json::from_str(&out).expect(&err);
                json!({"error": v["error"]["kind"]})
            }
            3 => json!({"body_error": true, "attached": attached_kind(&err)}),
            other => panic!("{case}: exit {other}: {out}{err}"),
        };
        // The scripted faults happened (a case that passes without them proves nothing).
        let unseen = proxy
            .stats()
            .unseen_scripted(&sequence)
            .map(|(op, f)| (op.to_owned(), f.to_owned()));
        assert_eq!(unseen, None, "{case}: a scripted fault never happened");
        assert_eq!(got, c["expect"], "{case}: {err}");
        if c["free_after"] == true {
            let (_, status) = base.json(&["--prefix", "", "status", name]);
            assert_eq!(status["held"], false, "{case}");
        }
        rt.block_on(proxy.shutdown());
    }
}

/// The kind the CLI names in parentheses on stderr after a failed clean-up: "could not release
/// lock x (throttled): ..." or "giving the claim back failed too (throttled): ...".
fn attached_kind(err: &str) -> Option<String> {
    ["could not release lock ", "failed too ("]
        .iter()
        .find_map(|start| {
            let rest = &err[err.find(start)?..];
            let open = rest.find('(')? + 1;
            let close = open + rest[open..].find(')')?;
            Some(rest[open..close].to_owned())
        })
}
