//! The shared doctor and sweep cases (compat-tests/conformance/doctor-cases.json; the format is
//! doctor-cases.md beside it) through the `ddblock` binary, on moto, dynalite and DynamoDB Local
//! in every layout: `doctor --json`'s checks (status, detail, fix), counts and listed ttl-0 locks,
//! the clock check under `faketime`, the clock measurement's answers, and the items `sweep`
//! removes and why. The PHP driver runs the same file (bindings/php/tests/DoctorCasesTest.php), so
//! the two doctors give one answer; the constants both use are asserted equal to the table's.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use common::{block_on, json_of, now, on_servers, root, Ctx, Server, CHECK_IDS};
use ddblock::aws_sdk_dynamodb::types::{
    AttributeValue, KeyType, ScalarAttributeType, TimeToLiveSpecification,
};
use ddblock::format::input::DEFAULT_LOCK_TTL_SECS;
use ddblock::time::allowed_offset;
use ddblock_admin::{
    ClockOffset, ClockReading, CLOCK_SPACING, DEFAULT_CLOCK_ANSWERS, DEFAULT_EXAMPLES,
    DEFAULT_LONG_LOCK_SECS, DEFAULT_SWEEP_GRACE_SECS, DEFAULT_TTL_SKEW_SECS,
};
use ddblock_fault_proxy::FaultConfig;
use ddblock_test_support::faulty::faulty;
use ddblock_test_support::{create_keyed_table, put_raw_item, unique};
use serde_json::{json, Value};

const LAYOUTS: [&str; 3] = ["laravel8", "laravel11", "laravel12"];

/// The case table.
fn cases() -> Value {
    let path = root().join("compat-tests/conformance/doctor-cases.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The Rust doctor's and sweep's constants, by the table's names.
fn rust_constants() -> Value {
    json!({
        "long_lock_secs": DEFAULT_LONG_LOCK_SECS,
        "ttl_skew_secs": DEFAULT_TTL_SKEW_SECS,
        "default_lock_ttl_secs": DEFAULT_LOCK_TTL_SECS,
        "examples": DEFAULT_EXAMPLES,
        "sweep_grace_secs": DEFAULT_SWEEP_GRACE_SECS,
        "clock_answers": DEFAULT_CLOCK_ANSWERS,
        "clock_spacing_ms": CLOCK_SPACING.as_millis() as u64,
    })
}

/// Where the Rust constants and the table's differ (`None`: nowhere).
fn constants_differ(table: &Value, rust: &Value) -> Option<String> {
    (table != rust)
        .then(|| format!("doctor-cases.json's constants {table} != the Rust doctor's {rust}"))
}

#[test]
fn the_rust_constants_are_the_tables() {
    let table = &cases()["constants"];
    assert_eq!(constants_differ(table, &rust_constants()), None);
    // A disagreement fails: one constant changed in a copy of the table.
    let mut changed = table.clone();
    changed["long_lock_secs"] = json!(7200);
    assert!(constants_differ(&changed, &rust_constants()).is_some());
}

/// The clock measurement's answers: the interval, the allowance, the margin needed, the check.
#[test]
fn the_clock_measurement_gives_the_tables_answers() {
    for case in cases()["clock"].as_array().unwrap() {
        let name = &case["case"];
        let answers = case["samples"].as_array().unwrap().iter().map(|s| {
            let f = |i: usize| s[i].as_f64().unwrap();
            ClockOffset::from_answer(f(0), f(1), s[2].as_i64().unwrap())
        });
        let reading = ClockReading::of(answers.collect::<Vec<_>>());
        let margin = Duration::from_secs(case["margin"].as_u64().unwrap());
        let e = &case["expect"];
        let (low, high, needed) = match reading {
            ClockReading::Measured(o) => (Some(o.low), Some(o.high), Some(o.margin_needed())),
            _ => (None, None, None),
        };
        for (got, want) in [(low, &e["low"]), (high, &e["high"])] {
            match want.as_f64() {
                None => assert_eq!(got, None, "{name}"),
                Some(w) => assert!((got.unwrap() - w).abs() < 1e-9, "{name}: {got:?} != {w}"),
            }
        }
        assert_eq!(json!(needed), e["margin_needed"], "{name}");
        assert_eq!(json!(allowed_offset(margin)), e["allowed"], "{name}");
        let check = reading.check(margin);
        assert_eq!(check.status.as_str(), e["status"], "{name}");
        assert_eq!(check.detail, e["detail"], "{name}");
    }
}

/// A case text for the Rust fronts: the string, or the `rust` one where the fronts differ.
fn rust_text(v: &Value) -> Option<&str> {
    match v {
        Value::Object(m) => m["rust"].as_str(),
        other => other.as_str(),
    }
}

/// Where `check` differs from `expect` (placeholders in `vars` filled in), if it does.
fn check_differs(expect: &Value, check: &Value, vars: &[(&str, &str)]) -> Vec<String> {
    let fill = |s: &str| vars.iter().fold(s.to_owned(), |s, (k, v)| s.replace(k, v));
    let id = &check["id"];
    let mut out = Vec::new();
    let mut same = |what: &str, want: Option<String>, got: &Value| {
        if let Some(w) = want {
            if got.as_str() != Some(w.as_str()) {
                out.push(format!("{id} {what}:\n  want {w:?}\n  got  {got}"));
            }
        }
    };
    same(
        "status",
        expect["status"].as_str().map(str::to_owned),
        &check["status"],
    );
    same(
        "detail",
        rust_text(&expect["detail"]).map(fill),
        &check["detail"],
    );
    same("fix", rust_text(&expect["fix"]).map(fill), &check["fix"]);
    for (what, got) in [("detail_re", &check["detail"]), ("fix_re", &check["fix"])] {
        if let Some(re) = rust_text(&expect[what]) {
            let text = got.as_str().unwrap_or_default();
            if !regex_lite::Regex::new(re).unwrap().is_match(text) {
                out.push(format!("{id} {what}: {re:?} does not match {got}"));
            }
        }
    }
    let fixed = expect.get("fix").or(expect.get("fix_re")).is_some();
    if !fixed
        && matches!(check["status"].as_str(), Some("ok" | "skipped"))
        && !check["fix"].is_null()
    {
        out.push(format!(
            "{id}: a fix on a check that is {}",
            check["status"]
        ));
    }
    out
}

/// The table key of a case item in `layout`, with the table's `prefix`.
fn key_of(spec: &Value, layout: &str, p: &str) -> String {
    if let Some(k) = spec["key"].as_str() {
        return k.to_owned();
    }
    if let Some(name) = spec["lock"].as_str() {
        return match layout {
            "laravel8" => format!("{p}:{p}:{name}"),
            "laravel11" => format!("{p}{p}{name}"),
            _ => format!("{p}{name}"),
        };
    }
    let key = spec["cache"].as_str().unwrap();
    match layout {
        "laravel8" => format!("{p}:{key}"),
        _ => format!("{p}{key}"),
    }
}

/// An attribute value in the wire format of the cases (`{"S": ...}`, `{"N": ...}`).
fn attribute(v: &Value) -> AttributeValue {
    match (v["S"].as_str(), v["N"].as_str()) {
        (Some(s), _) => AttributeValue::S(s.to_owned()),
        (_, Some(n)) => AttributeValue::N(n.to_owned()),
        _ => panic!("an attribute the cases do not use: {v}"),
    }
}

/// Writes the case's items with plain PutItems; returns id => table key.
fn write(ctx: &Ctx, layout: &str, items: &Value) -> BTreeMap<String, String> {
    let prefix = cases()["prefix"].as_str().unwrap().to_owned();
    let (client, t) = (ctx.client(), now());
    let mut keys = BTreeMap::new();
    for spec in items.as_array().into_iter().flatten() {
        let key = key_of(spec, layout, &prefix);
        let mut item = HashMap::from([("key".to_owned(), AttributeValue::S(key.clone()))]);
        if !spec["value"].is_null() {
            item.insert("value".into(), attribute(&spec["value"]));
        }
        if let Some(secs) = spec["expires_in"].as_i64() {
            item.insert(
                "expires_at".into(),
                AttributeValue::N((t + secs).to_string()),
            );
        } else if !spec["expires_at"].is_null() {
            item.insert("expires_at".into(), attribute(&spec["expires_at"]));
        }
        if let Some(f) = spec["fence"].as_u64() {
            item.insert("ddblock_fence".into(), AttributeValue::N(f.to_string()));
        }
        block_on(put_raw_item(&client, &ctx.table, item));
        keys.insert(spec["id"].as_str().unwrap().to_owned(), key);
    }
    keys
}

/// A fresh table as the case's `table` says (`None`: left out, the server lacks the TTL API).
fn table_for(server: Server, spec: &Value) -> Option<Ctx> {
    if spec == "missing" {
        return Some(Ctx::with_table(server, &unique("missing"), false));
    }
    if !spec["ttl"].is_null() && !server.has_ttl_api() {
        return None;
    }
    let ctx = Ctx::with_table(server, &unique("cases"), false);
    let key = spec["key_attribute"].as_str().unwrap_or("key");
    let client = ctx.client();
    block_on(async {
        let keys = [(key, ScalarAttributeType::S, KeyType::Hash)];
        create_keyed_table(&client, &ctx.table, &keys).await;
        if let Some(attribute) = spec["ttl"].as_str() {
            let ttl = TimeToLiveSpecification::builder()
                .enabled(true)
                .attribute_name(attribute)
                .build()
                .unwrap();
            let req = client.update_time_to_live().table_name(&ctx.table);
            req.time_to_live_specification(ttl).send().await.unwrap();
        }
    });
    Some(ctx)
}

/// `ddblock --json ARGS` in `layout`, its clock `skew` off when given (`support/skew`).
fn ddblock(ctx: &Ctx, layout: &str, skew: Option<&str>, args: &[String]) -> (i32, Value) {
    let out = ctx
        .skewed(skew)
        .env("DDBLOCK_LAYOUT", layout)
        .arg("--json")
        .args(args)
        .output();
    json_of(
        &out.expect("run ddblock (faketime: compat-tests/setup.sh)"),
        &format!("{args:?}"),
    )
}

/// Where the doctor's answer on `ctx` in `layout` differs from the case's.
fn doctor_differs(ctx: &Ctx, layout: &str, case: &Value) -> Vec<String> {
    let o = &case["options"];
    let mut args = vec!["doctor".to_owned()];
    let flag = |on: bool, f: &str| on.then(|| f.to_owned());
    args.extend(flag(o["scan"] == false, "--no-scan"));
    args.extend(flag(o["all"] == true, "--all"));
    args.extend(flag(o["clock"] != true, "--no-clock"));
    if let Some(m) = o["min_remaining"].as_i64() {
        args.extend(["--min-remaining".to_owned(), m.to_string()]);
    }
    if let Some(m) = case["margin"].as_u64() {
        args.extend(["--clock-skew-margin".to_owned(), m.to_string()]);
    }
    let (code, r) = ddblock(ctx, layout, case["clock_skew"].as_str(), &args);
    let e = &case["expect"];
    let mut out = Vec::new();
    let ids: Vec<&str> = r["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    if ids != CHECK_IDS {
        return vec![format!("the checks {ids:?}: {r}")];
    }
    let vars = [
        ("{table}", ctx.table.as_str()),
        ("{endpoint}", ctx.endpoint.as_str()),
        ("{layout}", layout),
    ];
    for (id, expect) in e["checks"].as_object().unwrap() {
        let check = r["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == *id)
            .unwrap();
        out.extend(check_differs(expect, check, &vars));
    }
    if r["healthy"] != e["healthy"] || code != if e["healthy"] == true { 0 } else { 1 } {
        out.push(format!(
            "healthy {} (exit {code}), want {}",
            r["healthy"], e["healthy"]
        ));
    }
    if let Some(counts) = e.get("counts") {
        if r["counts"] != *counts {
            out.push(format!("counts {}, want {counts}", r["counts"]));
        }
    }
    if let Some(names) = e.get("default_ttl_locks") {
        let got: Vec<&Value> = r["default_ttl_locks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| &i["name"])
            .collect();
        if json!(got) != *names {
            out.push(format!("ttl-0 locks {got:?}, want {names}"));
        }
    }
    out
}

/// What a sweep found, by reason: the ids of the items (`removed` must be `removed`).
fn by_reason(r: &Value, ids: &HashMap<String, String>, removed: Value) -> Result<Value, String> {
    let mut out = json!({"expired": [], "stuck_lock": []});
    for i in r["items"]
        .as_array()
        .ok_or_else(|| format!("no items: {r}"))?
    {
        if i["removed"] != removed {
            return Err(format!("{i}: removed should be {removed}"));
        }
        let id = &ids[i["key"].as_str().unwrap()];
        out[i["reason"].as_str().unwrap()]
            .as_array_mut()
            .unwrap()
            .push(json!(id));
    }
    Ok(out)
}

/// Where a sweep run (a dry run, then the sweep) in `layout` differs from the case's.
fn sweep_differs(server: Server, layout: &str, case: &Value, run: &Value) -> Vec<String> {
    let ctx = table_for(server, &json!({})).unwrap();
    let keys = write(&ctx, layout, &case["items"]);
    let ids: HashMap<String, String> = keys.iter().map(|(id, k)| (k.clone(), id.clone())).collect();
    let o = &run["options"];
    let mut args = vec!["sweep".to_owned()];
    if let Some(g) = o["grace"].as_i64() {
        args.push(format!("--grace={g}"));
    }
    if let Some(d) = o["locks_older_than"].as_i64() {
        args.push(format!("--locks-older-than={d}"));
    }
    let mut want = run["removes"].clone();
    for list in want.as_object_mut().unwrap().values_mut() {
        list.as_array_mut().unwrap().sort_by_key(|v| v.to_string());
    }
    let sorted = |mut v: Value| {
        for list in v.as_object_mut().unwrap().values_mut() {
            list.as_array_mut().unwrap().sort_by_key(|v| v.to_string());
        }
        v
    };
    let mut out = Vec::new();
    let dry: Vec<String> = args
        .iter()
        .cloned()
        .chain(["--dry-run".to_owned()])
        .collect();
    for (what, args, removed) in [
        ("dry run", &dry, Value::Null),
        ("sweep", &args, json!(true)),
    ] {
        let (code, r) = ddblock(&ctx, layout, None, args);
        match by_reason(&r, &ids, removed).map(sorted) {
            Ok(got) if code == 0 && got == want => {}
            Ok(got) => out.push(format!("{what} {args:?}: exit {code}, {got}, want {want}")),
            Err(e) => out.push(format!("{what} {args:?}: {e}")),
        }
    }
    let gone: BTreeSet<&str> = want
        .as_object()
        .unwrap()
        .values()
        .flat_map(|l| l.as_array().unwrap())
        .map(|v| v.as_str().unwrap())
        .collect();
    for (id, key) in &keys {
        if ctx.raw_exists(key) == gone.contains(id.as_str()) {
            out.push(format!(
                "{id} ({key}) {} after the sweep",
                if gone.contains(id.as_str()) {
                    "still there"
                } else {
                    "gone"
                }
            ));
        }
    }
    out
}

/// Every doctor case (in its layouts; the faketime ones in one) and every sweep run on `server`.
fn every_case_on(server: Server) {
    let cases = cases();
    let mut failures = Vec::new();
    let mut ran = 0;
    for case in cases["doctor"].as_array().unwrap() {
        let layouts: Vec<&str> = match (&case["layouts"], &case["clock_skew"]) {
            (_, Value::String(_)) => vec!["laravel12"],
            (Value::Array(l), _) => l.iter().map(|l| l.as_str().unwrap()).collect(),
            _ => LAYOUTS.to_vec(),
        };
        for layout in layouts {
            let Some(ctx) = table_for(server, &case["table"]) else {
                continue;
            };
            write(&ctx, layout, &case["items"]);
            ran += 1;
            // A case with `proxy` runs through the fault proxy with those faults (a global table's
            // DescribeTable fields, a denied action): no local server has them.
            let (_rt, _proxy, ctx) = match case.get("proxy") {
                Some(faults) => {
                    let rt = tokio::runtime::Runtime::new().unwrap();
                    let faults: FaultConfig = serde_json::from_value(faults.clone()).unwrap();
                    let proxy = rt.block_on(faulty(&ctx.endpoint, faults));
                    let through = ctx.via(proxy.endpoint.clone());
                    (Some(rt), Some(proxy), through)
                }
                None => (None, None, ctx),
            };
            for d in doctor_differs(&ctx, layout, case) {
                failures.push(format!("{layout}: {}: {d}", case["case"]));
            }
        }
    }
    for case in cases["sweep"].as_array().unwrap() {
        for run in case["runs"].as_array().unwrap() {
            for layout in LAYOUTS {
                ran += 1;
                for d in sweep_differs(server, layout, case, run) {
                    failures.push(format!(
                        "{layout}: {}: {}: {d}",
                        case["case"], run["options"]
                    ));
                }
            }
        }
    }
    assert!(ran >= 40, "only {ran} cases ran");
    assert!(
        failures.is_empty(),
        "{} of {ran} differ from doctor-cases.json:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

on_servers!(sync every_case_on);
