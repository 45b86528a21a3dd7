//! The `ddblock` binary next to real Laravel: locks taken by Laravel 8.83's unmodified
//! `DynamoDbLock` (driven through compat-tests/laravel/harness.php) show up in `status`, `list` and
//! `doctor`, block `run`, and are released by `release --owner`; and the other way round.

mod common;

use common::laravel::Php;
use common::{on_servers, Ctx, Server};
use serde_json::json;

fn laravel8_lock_is_seen_and_released_by_owner(server: Server) {
    let ctx = Ctx::new(server);
    let mut php = Php::start(&ctx, "laravel8", "app_");
    let (ok, owner) = php.acquire("report", 60, None);
    assert!(ok);
    let owner = owner.as_str().unwrap().to_owned();
    let l8 = ["--layout", "laravel8"];

    let (_, s) = ctx.json(&[&l8[..], &["status", "report"]].concat());
    assert_eq!(
        (s["held"].clone(), s["owner"].clone(), s["key"].clone()),
        (json!(true), json!(owner), json!("app_:app_:report"))
    );
    let (_, l) = ctx.json(&[&l8[..], &["list", "--locks"]].concat());
    assert_eq!(l["count"], 1);
    assert_eq!(
        (
            l["items"][0]["name"].clone(),
            l["items"][0]["owner"].clone()
        ),
        (json!("report"), json!(owner))
    );

    // run and acquire see Laravel's lock.
    let (code, _, err) =
        ctx.text(&[&l8[..], &["run", "report", "--ttl", "60", "--", "true"]].concat());
    assert_eq!(code, 75);
    assert!(
        err.contains(&format!("held by owner \"{}…\"", &owner[..4])),
        "{err}"
    );

    // Released with Laravel's owner: one conditional delete.
    let (code, r) = ctx.json(&[&l8[..], &["release", "report", "--owner", &owner]].concat());
    assert_eq!((code, r["outcome"].clone()), (0, json!("released")), "{r}");
    let (ok, _) = php.acquire("report", 60, None);
    assert!(ok, "Laravel can take the lock again");

    // The other way round: ddblock's lock blocks Laravel; Laravel releases it by its owner.
    let (code, a) = ctx.json(&[&l8[..], &["acquire", "deploy", "--ttl", "60"]].concat());
    assert_eq!(code, 0);
    let ours = a["owner"].as_str().unwrap();
    assert!(!php.acquire("deploy", 60, None).0);
    let v = php.call(json!({"op": "lock.release", "name": "deploy", "owner": ours}));
    assert_eq!(v["released"], true);
    assert_eq!(
        ctx.json(&[&l8[..], &["status", "deploy"]].concat()).1["held"],
        false
    );

    // A ttl-0 lock from Laravel is what doctor flags.
    assert!(php.acquire("forever-job", 0, None).0);
    let (code, d) = ctx.json(&[&l8[..], &["doctor"]].concat());
    assert_eq!(code, 0);
    assert_eq!(d["counts"]["default_ttl_locks"], 1, "{d}");
    assert_eq!(d["default_ttl_locks"][0]["name"], "forever-job");
}

fn laravel12_numeric_owner_is_released(server: Server) {
    let ctx = Ctx::new(server);
    let mut php = Php::start(&ctx, "laravel12", "app_");
    let (ok, owner) = php.acquire("nightly", 60, Some("12345"));
    assert!(ok);
    assert_eq!(owner, json!("12345"));
    let (_, s) = ctx.json(&["status", "nightly"]);
    assert_eq!(
        (s["owner"].clone(), s["key"].clone()),
        (json!(12345), json!("app_nightly")),
        "stored as N"
    );
    let (code, r) = ctx.json(&["release", "nightly", "--owner", "12345"]);
    assert_eq!((code, r["outcome"].clone()), (0, json!("released")));
    assert!(php.acquire("nightly", 60, None).0);
}

fn cache_values_cross_both_ways(server: Server) {
    let ctx = Ctx::new(server);
    let mut php = Php::start(&ctx, "laravel12", "app_");
    php.put("greeting", "s:5:\"hello\";", 60);
    php.put("cfg", "a:2:{s:1:\"a\";i:1;s:1:\"b\";a:1:{i:0;b:1;}}", 60);
    assert_eq!(ctx.json(&["get", "greeting"]).1["value"], "hello");
    assert_eq!(
        ctx.json(&["get", "cfg"]).1["value"],
        json!({"a": 1, "b": [true]})
    );
    ctx.cmd()
        .args(["put", "n", "42", "--ttl", "60"])
        .assert()
        .success();
    ctx.cmd()
        .args([
            "put",
            "j",
            r#"{"a":1,"b":"x"}"#,
            "--as",
            "json",
            "--ttl",
            "60",
        ])
        .assert()
        .success();
    ctx.cmd()
        .args(["put", "f", "on", "--forever"])
        .assert()
        .success();
    assert_eq!(php.get("n"), "i:42;");
    assert_eq!(php.get("j"), "a:2:{s:1:\"a\";i:1;s:1:\"b\";s:1:\"x\";}");
    assert_eq!(php.get("f"), "s:2:\"on\";");
}

on_servers!(
    sync
    laravel8_lock_is_seen_and_released_by_owner,
    laravel12_numeric_owner_is_released,
    cache_values_cross_both_ways,
);
