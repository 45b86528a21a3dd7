//! `--backend s3 --bucket NAME` (and DDBLOCK_BACKEND / DDBLOCK_S3_BUCKET): the lock commands on
//! moto's S3, with no DynamoDB table at all, and `doctor`'s probe of the bucket (through the fault
//! proxy too, acting as a store that ignores `If-Match` on DeleteObject). dynalite has no S3:
//! these run on moto only.

mod common;

use std::fs;

use common::{block_on, scratch, unique, Ctx, Server};
use ddblock_test_support::faulty::{s3_ignoring, Ignored};
use ddblock_test_support::{new_bucket, s3_client_for};
use serde_json::Value;
use tokio::runtime::Runtime;

/// moto, a table name that does not exist (the lock commands never touch it) and a fresh bucket.
fn s3_ctx() -> (Ctx, String) {
    let ctx = Ctx::with_table(Server::Moto, &unique("no-table"), false);
    let bucket = block_on(new_bucket(&ctx.endpoint));
    (ctx, bucket)
}

/// The lock object `key` in `bucket`, or None.
fn object(ctx: &Ctx, bucket: &str, key: &str) -> Option<Value> {
    let client = s3_client_for(&ctx.endpoint);
    block_on(async move {
        let o = client
            .get_object()
            .bucket(bucket)
            .key(key)
            .send()
            .await
            .ok()?;
        Some(serde_json::from_slice(&o.body.collect().await.unwrap().into_bytes()).unwrap())
    })
}

#[test]
fn the_lock_commands_on_a_bucket() {
    let (ctx, bucket) = s3_ctx();
    let s3 = ["--backend", "s3", "--bucket", bucket.as_str()];
    let with =
        |args: &[&str]| -> Vec<String> { s3.iter().chain(args).map(|s| s.to_string()).collect() };
    let json = |args: &[&str]| {
        let a = with(args);
        ctx.json(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let text = |args: &[&str]| {
        let a = with(args);
        ctx.text(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };

    let (code, a) = json(&["acquire", "orders", "--ttl", "30"]);
    assert_eq!(code, 0, "{a}");
    assert_eq!(a["acquired"], true);
    let owner = a["owner"].as_str().unwrap().to_owned();
    let fence = a["fence"].as_u64().expect("s3 locks carry a fence");
    // The object: the owner as Laravel stores it, the expiry, the fence.
    let obj = object(&ctx, &bucket, "app_orders").expect("the lock object");
    assert_eq!(obj["owner"]["S"], format!("s:16:\"{owner}\";"));
    assert_eq!(obj["expires_at"], a["expires_at"]);
    assert_eq!(obj["fence"], fence);

    let (code, held) = json(&["acquire", "orders", "--ttl", "30"]);
    assert_eq!(code, 75, "{held}");
    let st = ctx
        .json(
            &with(&["status", "orders"])
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        )
        .1;
    assert_eq!(
        (st["held"].clone(), st["owner"].clone()),
        (true.into(), owner.clone().into())
    );
    assert_eq!(st["fence"], fence);

    // Only the owner refreshes or releases.
    let (code, _, _) = text(&[
        "refresh",
        "orders",
        "--owner",
        "someone-else",
        "--ttl",
        "60",
    ]);
    assert_eq!(code, 1);
    let (code, _, _) = text(&["refresh", "orders", "--owner", &owner, "--ttl", "60"]);
    assert_eq!(code, 0);
    let refreshed = object(&ctx, &bucket, "app_orders").unwrap()["expires_at"]
        .as_i64()
        .unwrap();
    assert!(
        refreshed >= a["expires_at"].as_i64().unwrap() + 29,
        "now + 60: {refreshed}"
    );
    let (code, _, _) = text(&["release", "orders", "--owner", "someone-else"]);
    assert_eq!(code, 1);
    assert!(
        object(&ctx, &bucket, "app_orders").is_some(),
        "not released by another owner"
    );
    let (code, _, err) = text(&["release", "orders", "--owner", &owner]);
    assert_eq!(code, 0, "{err}");
    assert!(
        object(&ctx, &bucket, "app_orders").is_none(),
        "released: deleted"
    );

    // run: CMD under the lock, its status passed through; the fence grows.
    let dir = scratch();
    let seen = dir.join("seen");
    let script = format!(
        "cat {} > /dev/null 2>&1; echo ran > {}; exit 7",
        seen.display(),
        seen.display()
    );
    let (code, _, err) = text(&["run", "job", "--ttl", "30", "--", "sh", "-c", &script]);
    assert_eq!(code, 7, "{err}");
    assert_eq!(fs::read_to_string(&seen).unwrap(), "ran\n");
    assert!(
        object(&ctx, &bucket, "app_job").is_none(),
        "run released it"
    );
    let (_, b) = json(&["acquire", "orders", "--ttl", "30"]);
    assert!(b["fence"].as_u64().unwrap() > fence, "{b}");
    let (code, _, _) = text(&["run", "orders", "--ttl", "30", "--", "true"]);
    assert_eq!(code, 75, "held: run does not start CMD");
    let (code, _, _) = text(&["force-release", "orders"]);
    assert_eq!(code, 0);
    assert!(object(&ctx, &bucket, "app_orders").is_none());
    // Nothing to release: the object read first says so.
    let (code, v) = json(&["force-release", "orders"]);
    assert_eq!(
        (code, v["reason"].clone(), v["bucket"].clone()),
        (1, serde_json::json!("not_found"), serde_json::json!(bucket)),
        "{v}"
    );
    let (code, _, err) = text(&["force-release", "orders"]);
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!(
            "no lock named 'orders' in bucket `{bucket}` (key app_orders)"
        )),
        "{err}"
    );
}

#[test]
fn the_environment_selects_the_backend_and_flags_win() {
    let (ctx, bucket) = s3_ctx();
    let env_cmd = |args: &[&str]| {
        let out = ctx
            .cmd()
            .env("DDBLOCK_BACKEND", "s3")
            .env("DDBLOCK_S3_BUCKET", &bucket)
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code().unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (code, err) = env_cmd(&["acquire", "env-lock", "--ttl", "30"]);
    assert_eq!(code, 0, "{err}");
    assert!(object(&ctx, &bucket, "app_env-lock").is_some());
    // --backend dynamodb beats the environment: the (missing) table is used.
    let (code, err) = env_cmd(&["--backend", "dynamodb", "status", "env-lock"]);
    assert_eq!(code, 1);
    assert!(err.contains("table"), "{err}");
    // --bucket beats DDBLOCK_S3_BUCKET.
    let other = block_on(new_bucket(&ctx.endpoint));
    let (code, err) = env_cmd(&["--bucket", &other, "acquire", "env-lock", "--ttl", "30"]);
    assert_eq!(code, 0, "{err}");
    assert!(object(&ctx, &other, "app_env-lock").is_some());
}

#[test]
fn configuration_errors() {
    let (ctx, _) = s3_ctx();
    let (code, v) = ctx.json(&["--backend", "s3", "acquire", "x", "--ttl", "5"]);
    assert_eq!(
        (code, v["error"]["kind"].clone()),
        (1, "config".into()),
        "{v}"
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("needs a bucket"),
        "{v}"
    );
    let (code, v) = ctx.json(&[
        "--backend",
        "s3",
        "--bucket",
        "no-such-bucket-here",
        "status",
        "x",
    ]);
    assert_eq!(code, 1, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("does not exist"),
        "{v}"
    );
    let (code, v) = ctx.json(&["--backend", "s4", "status", "x"]);
    assert_eq!(
        (code, v["error"]["kind"].clone()),
        (1, "config".into()),
        "{v}"
    );
}

#[test]
fn concurrent_runs_never_overlap() {
    let (ctx, bucket) = s3_ctx();
    let dir = scratch();
    let counter = dir.join("counter");
    fs::write(&counter, "0").unwrap();
    // A read-modify-write with a pause in the middle: any overlap loses an increment.
    let script = format!(
        "n=$(cat {c}); sleep 0.05; echo $((n + 1)) > {c}",
        c = counter.display()
    );
    let (procs, rounds) = (10, 3);
    let mut children: Vec<_> = (0..procs)
        .map(|_| {
            let loop_script = format!(
                "for i in $(seq {rounds}); do {bin} --backend s3 --bucket {bucket} run shared \
                 --ttl 30 --wait 60 -- sh -c '{script}' || exit 9; done",
                bin = common::bin().display(),
            );
            let mut c = std::process::Command::new("sh");
            ctx.env(&mut c);
            c.args(["-c", &loop_script]).spawn().unwrap()
        })
        .collect();
    for c in &mut children {
        assert!(c.wait().unwrap().success());
    }
    assert_eq!(
        fs::read_to_string(&counter).unwrap().trim(),
        (procs * rounds).to_string(),
        "every increment under the lock survived"
    );
}

const S3_CHECKS: [&str; 6] = [
    "s3_create_if_absent",
    "s3_etag_changes",
    "s3_if_match_put",
    "s3_if_match_delete",
    "s3_versioning",
    "s3_cleanup",
];

fn strs(a: &[String]) -> Vec<&str> {
    a.iter().map(String::as_str).collect()
}

/// The check `id` of a `doctor --json` report.
fn check<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no {id} check: {report}"))
}

/// `ddblock --backend s3 --bucket B --endpoint URL doctor` passes on moto, each probe result
/// reported, and fails (exit 1, the check and what to do) through a proxy that drops `If-Match`
/// from DELETE requests, the way Hetzner's store ignores it.
#[test]
fn doctor_probes_the_bucket() {
    let (ctx, bucket) = s3_ctx();
    let doctor = |endpoint: &str| {
        [
            "--backend",
            "s3",
            "--bucket",
            bucket.as_str(),
            "--endpoint",
            endpoint,
            "doctor",
            "--no-scan",
        ]
        .map(str::to_owned)
    };

    let moto = doctor(&ctx.endpoint);
    let (code, v) = ctx.json(&strs(&moto));
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["healthy"], true);
    let ids: Vec<&str> = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids[ids.len() - 6..], S3_CHECKS, "{v}");
    for id in S3_CHECKS {
        let c = check(&v, id);
        assert_eq!(
            (c["status"].as_str(), &c["fix"]),
            (Some("ok"), &Value::Null),
            "{c}"
        );
    }
    // No table: a warning, which says the locks do not need it.
    let table = check(&v, "table");
    assert_eq!(table["status"], "warn", "{table}");
    assert!(table["fix"]
        .as_str()
        .unwrap()
        .contains("nothing to do for locks"));
    assert_eq!(v["s3"]["bucket"], bucket.as_str());
    assert_eq!(v["s3"]["cleaned_up"], true);
    let scratch_key = v["s3"]["scratch_key"].as_str().unwrap();
    assert!(scratch_key.starts_with("app_ddblock-doctor-probe-"), "{v}");
    assert!(object(&ctx, &bucket, scratch_key).is_none(), "removed");
    let (code, out, _) = ctx.text(&strs(&moto));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(&format!(
        "bucket `{bucket}` (probed with the scratch object"
    )));
    assert!(
        out.contains("  ok      s3_if_match_delete  DeleteObject with `If-Match` refused"),
        "{out}"
    );
    assert!(out.contains("no failures"), "{out}");

    let rt = Runtime::new().unwrap();
    let proxy = rt.block_on(s3_ignoring(&ctx.endpoint, &[Ignored::IfMatchOnDelete]));
    let through = doctor(&proxy.endpoint);
    let (code, v) = ctx.json(&strs(&through));
    assert_eq!(code, 1, "a failed check fails doctor: {v}");
    assert_eq!(v["healthy"], false);
    let c = check(&v, "s3_if_match_delete");
    assert_eq!(c["status"], "fail", "{c}");
    assert!(
        c["detail"]
            .as_str()
            .unwrap()
            .contains("was accepted and deleted the object"),
        "{c}"
    );
    assert!(
        c["fix"]
            .as_str()
            .unwrap()
            .contains("DDBLOCK_S3_RELEASE=overwrite"),
        "{c}"
    );
    let (code, out, _) = ctx.text(&strs(&through));
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(
            "  fail    s3_if_match_delete  a DeleteObject whose `If-Match` named the replaced ETag"
        ),
        "{out}"
    );
    assert!(out.contains("FAILED"), "{out}");
    // Releasing by overwrite, the store never sends a conditional delete: a warning.
    let out = ctx
        .cmd()
        .env("DDBLOCK_S3_RELEASE", "overwrite")
        .arg("--json")
        .args(strs(&through))
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(check(&v, "s3_if_match_delete")["status"], "warn");
    assert!(proxy.stats().count("DELETE", ddblock_fault_proxy::STRIPPED) >= 2);
}
