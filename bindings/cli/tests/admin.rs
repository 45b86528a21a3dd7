//! The table commands against the local servers (moto and dynalite): `create-table`, `list`,
//! `sweep` and `doctor`, their JSON fields, text and exit statuses.

mod common;

use common::{assert_fields, now, on_servers, pick, Ctx, Server};
use ddblock::aws_sdk_dynamodb::types::AttributeValue;
use serde_json::json;

const DOCTOR_FIELDS: &str = "table endpoint healthy table_status billing_mode ttl checks counts \
    default_ttl_locks clock";
const SWEEP_FIELDS: &str =
    "table dry_run scanned expired stuck_locks deleted skipped cutoff locks_older_than items";
const ITEM_FIELDS: &str =
    "key kind name owner expires_at expires_in expired_but_present released_fence_kept";

fn create_table_is_idempotent(server: Server) {
    let ctx = Ctx::with_table(server, &common::unique("ct"), false);
    let (code, v) = ctx.json(&["create-table"]);
    assert_eq!(code, 0, "{v}");
    assert_fields(
        &v,
        "table created status ready key_schema_problem ttl ttl_changed",
    );
    assert_eq!(
        pick(&v, &["created", "ready", "status"]),
        json!([true, true, "ACTIVE"])
    );
    if server.has_ttl_api() {
        assert_eq!(
            v["ttl"],
            json!({"status": "enabled", "attribute": "expires_at"})
        );
    } else {
        assert_eq!(v["ttl"]["status"], "unknown");
    }
    let (code, v) = ctx.json(&["create-table"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        (v["created"].clone(), v["ttl_changed"].clone()),
        (json!(false), json!(false))
    );
    let (code, out, _) = ctx.text(&["create-table"]);
    assert_eq!(code, 0);
    assert!(out.contains("already exists"), "{out}");
    // Another TTL attribute on a new table; --no-ttl leaves TTL alone.
    let other = Ctx::with_table(server, &common::unique("ct"), false);
    let (code, v) = other.json(&["create-table", "--no-ttl"]);
    assert_eq!((code, v["ttl"].clone()), (0, json!(null)));
}

fn list_shows_items_and_expired_ones(server: Server) {
    let ctx = Ctx::new(server);
    let t = now();
    let owner = ctx.acquire("orders", 30);
    ctx.cmd()
        .args(["put", "greeting", "hello", "--ttl", "60"])
        .assert()
        .success();
    ctx.put_raw(
        "app_old",
        Some(AttributeValue::S("s:16:\"AAAAbbbbCCCCdddd\";".into())),
        Some(t - 500),
    );
    ctx.put_raw(
        "elsewhere",
        Some(AttributeValue::N("1".into())),
        Some(t + 60),
    );

    let (code, v) = ctx.json(&["list"]);
    assert_eq!(code, 0, "{v}");
    assert_fields(&v, "table scanned count locks expired_but_present items");
    assert_eq!(
        pick(&v, &["count", "locks", "expired_but_present"]),
        json!([3, 2, 1])
    );
    let items = v["items"].as_array().unwrap();
    for i in items {
        assert_fields(i, ITEM_FIELDS);
    }
    assert_eq!(items[0]["key"], "app_greeting");
    assert_eq!(
        pick(&items[0], &["kind", "name", "owner"]),
        json!(["cache", "greeting", null])
    );
    assert_eq!(items[1]["key"], "app_old");
    assert_eq!(
        pick(&items[1], &["kind", "expired_but_present"]),
        json!(["lock", true])
    );
    assert!(items[1]["expires_in"].as_i64().unwrap() <= -500);
    assert_eq!(
        items[2],
        json!({
            "key": "app_orders", "kind": "lock", "name": "orders", "owner": owner,
            "expires_at": items[2]["expires_at"], "expires_in": items[2]["expires_in"], "expired_but_present": false,
            "released_fence_kept": false,
        })
    );
    let (_, v) = ctx.json(&["list", "--locks"]);
    assert_eq!(v["count"], 2);
    let (_, v) = ctx.json(&["list", "--expired"]);
    assert_eq!(
        (v["count"].clone(), v["items"][0]["key"].clone()),
        (json!(1), json!("app_old"))
    );
    let (_, v) = ctx.json(&["list", "--all", "--segments", "3"]);
    assert_eq!(v["count"], 4);
    assert_eq!(
        v["items"][3],
        json!({"key": "elsewhere", "kind": "other", "name": null, "owner": null,
        "expires_at": t + 60, "expires_in": v["items"][3]["expires_in"], "expired_but_present": false,
        "released_fence_kept": false})
    );

    let (code, out, err) = ctx.text(&["list", "--progress", "always"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("KEY "), "{out}");
    assert!(
        out.contains("expired") && out.contains("(still present)"),
        "{out}"
    );
    assert!(out.contains(&owner));
    assert!(
        out.contains("3 items (2 locks, 1 expired but still present)"),
        "{out}"
    );
    assert!(
        err.contains("list: ") && err.contains("items scanned"),
        "progress: {err}"
    );
    let (_, _, err) = ctx.text(&["list"]);
    assert_eq!(err, "", "no progress when stderr is not a terminal");
}

fn sweep_deletes_only_expired_items(server: Server) {
    let ctx = Ctx::new(server);
    let t = now();
    let owner = ctx.acquire("live", 60);
    for k in ["app_a", "app_b", "app_c"] {
        ctx.put_raw(k, Some(AttributeValue::S("b:1;".into())), Some(t - 1000));
    }
    ctx.put_raw(
        "app_recent",
        Some(AttributeValue::S("b:1;".into())),
        Some(t - 10),
    );
    ctx.put_raw("app_forever", Some(AttributeValue::S("b:1;".into())), None);
    ctx.put_raw(
        "other_old",
        Some(AttributeValue::S("b:1;".into())),
        Some(t - 1000),
    );

    let (code, v) = ctx.json(&["sweep", "--dry-run"]);
    assert_eq!(code, 0, "{v}");
    assert_fields(&v, SWEEP_FIELDS);
    assert_eq!(
        pick(&v, &["dry_run", "expired", "deleted"]),
        json!([true, 3, 0])
    );
    assert!(ctx.raw_exists("app_a"));
    let (code, v) = ctx.json(&["sweep"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        pick(&v, &["expired", "deleted", "skipped"]),
        json!([3, 3, 0])
    );
    assert!(!ctx.raw_exists("app_a") && !ctx.raw_exists("app_c"));
    assert!(ctx.raw_exists("app_recent"), "inside the 60 s grace");
    assert!(ctx.raw_exists("other_old"), "outside the prefix");
    let (code, out, _) = ctx.text(&["sweep", "--grace", "0", "--all"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("deleted 2 of 2 items: 2 expired (before "),
        "{out}"
    );
    assert!(!ctx.raw_exists("app_recent") && !ctx.raw_exists("other_old"));
    assert!(ctx.raw_exists("app_forever") && ctx.raw_exists("app_live"));
    assert_eq!(
        ctx.status("live")["owner"],
        json!(owner),
        "the live lock is untouched"
    );
    let (code, out, _) = ctx.text(&["sweep", "--dry-run"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("dry run: would delete 0 items: 0 expired (before "),
        "{out}"
    );
}

fn doctor_checks_and_fixes(server: Server) {
    let ctx = Ctx::with_table(server, &common::unique("doc"), false);
    ctx.cmd()
        .args(["create-table", "--no-ttl"])
        .assert()
        .success();
    let t = now();
    ctx.acquire("nightly", 0); // the 86400 s default: what a stuck Laravel lock looks like
    ctx.acquire("short", 30);
    ctx.put_raw(
        "app_old",
        Some(AttributeValue::N("1".into())),
        Some(t - 100),
    );
    let (code, v) = ctx.json(&["doctor"]);
    assert_eq!(code, 0, "warnings only: {v}");
    assert_fields(&v, DOCTOR_FIELDS);
    assert_eq!(
        (v["healthy"].clone(), v["table_status"].clone()),
        (json!(true), json!("ACTIVE"))
    );
    assert_eq!(v["ttl"], json!({"status": "disabled", "attribute": null}));
    let checks = v["checks"].as_array().unwrap();
    let ids: Vec<&str> = checks.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, common::CHECK_IDS);
    for c in checks {
        assert_fields(c, "id status detail fix");
    }
    for (id, status, fix) in [
        ("table", "ok", None),
        ("ttl", "warn", Some("ddblock create-table")),
        ("expired_items", "warn", None),
        ("default_ttl_locks", "warn", Some("force-release")),
        ("invalid_items", "ok", None),
        ("layout", "ok", None),
    ] {
        let c = checks.iter().find(|c| c["id"] == id).unwrap();
        assert_eq!(c["status"], status, "{c}");
        if let Some(fix) = fix {
            assert!(c["fix"].as_str().unwrap().contains(fix), "{c}");
        }
    }
    assert_eq!(v["counts"]["default_ttl_locks"], 1);
    assert_eq!(v["counts"]["expired_but_present"], 1);
    assert_eq!(v["counts"]["locks"], 2);
    assert_eq!(v["default_ttl_locks"][0]["name"], "nightly");

    let (code, out, _) = ctx.text(&["doctor"]);
    assert_eq!(code, 0);
    assert!(out.contains("warn    default_ttl_locks"), "{out}");
    assert!(
        out.contains("ttl-0 lock nightly (key app_nightly)"),
        "{out}"
    );
    assert!(out.contains("fix: "), "{out}");

    // create-table turns TTL on where the server can.
    ctx.cmd().args(["create-table"]).assert().success();
    let (_, v) = ctx.json(&["doctor", "--no-scan"]);
    assert_eq!(v["counts"], json!(null));
    if server.has_ttl_api() {
        assert_eq!(
            v["ttl"],
            json!({"status": "enabled", "attribute": "expires_at"})
        );
    }

    // A missing table: failure, exit 1, says to run create-table.
    let missing = Ctx::with_table(server, "no-such-table-here", false);
    let (code, v) = missing.json(&["doctor"]);
    assert_eq!(code, 1);
    assert_eq!(v["healthy"], false);
    assert_eq!(v["checks"][0]["status"], "fail");
    assert!(v["checks"][0]["fix"]
        .as_str()
        .unwrap()
        .contains("ddblock create-table"));
    let (code, out, _) = missing.text(&["doctor"]);
    assert_eq!(code, 1);
    assert!(out.contains("FAILED"), "{out}");
}

on_servers!(
    sync
    create_table_is_idempotent,
    list_shows_items_and_expired_ones,
    sweep_deletes_only_expired_items,
    doctor_checks_and_fixes,
);
