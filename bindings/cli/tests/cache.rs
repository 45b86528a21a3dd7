//! The cache commands against the local servers (moto and dynalite): `get` and `put` (strings,
//! numbers, JSON, serialized PHP, missing and expired values) and their compare-and-set forms,
//! `get --with-version` and `put --if-version`.

mod common;

use common::{assert_fields, on_servers, Ctx, Server};
use serde_json::json;

fn get_and_put_values(server: Server) {
    let ctx = Ctx::new(server);
    let ok = |args: &[&str]| {
        let (code, v) = ctx.json(args);
        assert_eq!(code, 0, "{args:?}: {v}");
        v
    };
    let v = ok(&["put", "s", "hello", "--ttl", "60"]);
    assert_fields(&v, "key table_key stored ttl forever");
    assert_eq!(
        (v["table_key"].clone(), v["stored"].clone()),
        (json!("app_s"), json!(true))
    );
    let g = ok(&["get", "s"]);
    assert_fields(&g, "key table_key found value");
    assert_eq!(
        g,
        json!({"key": "s", "table_key": "app_s", "found": true, "value": "hello"})
    );
    let (_, out, _) = ctx.text(&["get", "s"]);
    assert_eq!(out, "hello\n");
    // Numeric strings become numbers, as in Laravel.
    ok(&["put", "n", "12345", "--ttl", "60"]);
    assert_eq!(ok(&["get", "n", "--consistent"])["value"], json!(12345));
    ok(&[
        "put",
        "j",
        r#"{"a":[1,2.5,null,true],"b":"x"}"#,
        "--ttl",
        "60",
        "--as",
        "json",
    ]);
    assert_eq!(
        ok(&["get", "j"])["value"],
        json!({"a": [1, 2.5, null, true], "b": "x"})
    );
    ok(&[
        "put",
        "p",
        r#"O:8:"stdClass":1:{s:1:"a";i:1;}"#,
        "--as",
        "serialized",
        "--forever",
    ]);
    assert_eq!(
        ok(&["get", "p"])["value"],
        json!({"__class": "stdClass", "a": 1})
    );
    let (_, out, _) = ctx.text(&["get", "j"]);
    assert_eq!(out, "{\"a\":[1,2.5,null,true],\"b\":\"x\"}\n");
    // Missing and expired: exit 1.
    let (code, v) = ctx.json(&["get", "nope"]);
    assert_eq!(
        (code, v["found"].clone(), v["value"].clone()),
        (1, json!(false), json!(null))
    );
    ok(&["put", "gone", "x", "--ttl", "0"]);
    let (code, _, err) = ctx.text(&["get", "gone"]);
    assert_eq!(code, 1);
    assert!(err.contains("not in the cache"), "{err}");
    // Bad input.
    let (code, _, err) = ctx.text(&["put", "bad", "{", "--ttl", "60", "--as", "json"]);
    assert_eq!(code, 1);
    assert!(err.contains("not JSON"), "{err}");
    let (code, _, err) = ctx.text(&["put", "bad", "x"]);
    assert_eq!(code, 2, "--ttl or --forever is required");
    assert!(err.contains("--forever"), "{err}");
}

fn compare_and_set(server: Server) {
    let ctx = Ctx::new(server);
    let (code, out, err) = ctx.text(&["get", "stock", "--with-version"]);
    assert_eq!((code, out.as_str()), (1, "0\n"), "{err}");
    let (code, v) = ctx.json(&["put", "stock", "10", "--ttl", "60", "--if-version", "0"]);
    assert_eq!(code, 0, "{v}");
    let v1 = v["version"].as_u64().unwrap();
    let (at_v1, at_v2) = (v1.to_string(), (v1 + 1).to_string());
    assert_eq!(v["stored"], true);
    let (code, v) = ctx.json(&["get", "stock", "--with-version"]);
    assert_eq!(code, 0);
    assert_eq!(
        (v["value"].clone(), v["version"].as_u64()),
        (10.into(), Some(v1))
    );
    let (code, out, _) = ctx.text(&["get", "stock", "--with-version"]);
    assert_eq!((code, out), (0, format!("{v1}\n10\n")));
    let (code, out, _) = ctx.text(&["put", "stock", "9", "--ttl", "60", "--if-version", &at_v1]);
    assert_eq!(code, 0);
    assert!(out.contains(&format!("version {}", v1 + 1)), "{out}");
    // A stale version: exit 3, nothing stored.
    let (code, v) = ctx.json(&["put", "stock", "8", "--ttl", "60", "--if-version", &at_v1]);
    assert_eq!(code, 3, "{v}");
    assert_eq!(
        (v["stored"].clone(), v["version"].clone()),
        (false.into(), serde_json::Value::Null)
    );
    let (code, _, err) = ctx.text(&["put", "stock", "8", "--ttl", "60", "--if-version", &at_v1]);
    assert_eq!(code, 3);
    assert!(err.contains("no longer at version"), "{err}");
    // A plain put (Laravel's) drops the version: the next compare-and-set fails.
    ctx.cmd()
        .args(["put", "stock", "100", "--ttl", "60"])
        .assert()
        .success();
    let (code, _) = ctx.json(&["put", "stock", "7", "--ttl", "60", "--if-version", &at_v2]);
    assert_eq!(code, 3);
    assert_eq!(
        ctx.json(&["get", "stock", "--with-version"]).1["version"],
        0
    );
    // Bad versions and combinations.
    let (code, v) = ctx.json(&["put", "stock", "7", "--ttl", "60", "--if-version", "v1"]);
    assert_eq!((code, v["error"]["kind"].clone()), (1, "config".into()));
    let (code, _, _) = ctx.text(&["put", "stock", "7", "--forever", "--if-version", "0"]);
    assert_eq!(code, 2);
}

on_servers!(
    sync
    get_and_put_values,
    compare_and_set,
);
