//! Cache store behaviour against real local servers: items byte-identical to Laravel's, expiry
//! boundaries, batches, and bad input.

mod common;

use common::{laravel_item, n, on_servers, s, Env, Server};
use ddblock::aws_sdk_dynamodb::types::AttributeValue;
use ddblock::{ErrorKind, KeyLayout, PhpKey, PhpValue, StoreConfig};

fn str_val(v: &str) -> PhpValue {
    PhpValue::String(v.as_bytes().to_vec())
}

fn assoc(pairs: &[(&str, PhpValue)]) -> PhpValue {
    PhpValue::Array(
        pairs
            .iter()
            .map(|(k, v)| (PhpKey::Str(k.as_bytes().to_vec()), v.clone()))
            .collect(),
    )
}

async fn items_match_laravel_per_layout(server: Server) {
    let env = Env::new(server).await;
    let now = env.now();
    for (layout, cache_key, lock_key) in [
        (KeyLayout::Laravel8, "app_:k", "app_:app_:orders"),
        (KeyLayout::Laravel11, "app_k", "app_app_orders"),
        (KeyLayout::Laravel12, "app_k", "app_orders"),
    ] {
        let store = env.store(layout);
        store
            .put("k", &assoc(&[("a", PhpValue::Int(1))]), 60)
            .await
            .unwrap();
        let item = env
            .raw(cache_key)
            .await
            .expect("cache item at the layout's key");
        assert_eq!(
            item,
            laravel_item(cache_key, s(r#"a:1:{s:1:"a";i:1;}"#), now + 60),
            "{layout}"
        );

        let lock = store.lock("orders", 10).unwrap();
        assert_eq!(lock.key(), lock_key);
        assert!(lock.acquire().await.unwrap().is_acquired());
        let item = env
            .raw(lock_key)
            .await
            .expect("lock item at the layout's key");
        let expected = format!("s:16:\"{}\";", lock.owner());
        // Laravel's three attributes, exactly, plus ddblock's fencing token and attempt id
        // (which Laravel never reads, and its own add() replaces).
        let mut laravel = item.clone();
        let fence = laravel.remove("ddblock_fence").expect("a fencing token");
        assert_eq!(fence, n(lock.fence().unwrap()), "{layout}");
        let attempt = laravel.remove("ddblock_attempt").expect("an attempt id");
        assert_eq!(attempt.as_s().map(String::len), Ok(16), "{layout}");
        assert_eq!(
            laravel,
            laravel_item(lock_key, s(&expected), now + 10),
            "{layout}"
        );
        lock.force_release().await.unwrap();
        store.forget("k").await.unwrap();
    }
}

async fn values_round_trip_with_laravel_types(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let cases: Vec<(&str, PhpValue, AttributeValue, PhpValue)> = vec![
        (
            "s",
            str_val("hello"),
            s(r#"s:5:"hello";"#),
            str_val("hello"),
        ),
        (
            "mb",
            str_val("日本語🔒"),
            s("s:13:\"日本語🔒\";"),
            str_val("日本語🔒"),
        ),
        ("i", PhpValue::Int(42), n(42), PhpValue::Int(42)),
        ("neg", PhpValue::Int(-7), n(-7), PhpValue::Int(-7)),
        ("f", PhpValue::Float(1.5), n("1.5"), PhpValue::Float(1.5)),
        ("num", str_val("12345"), n("12345"), PhpValue::Int(12345)),
        ("t", PhpValue::Bool(true), s("b:1;"), PhpValue::Bool(true)),
        (
            "fa",
            PhpValue::Bool(false),
            s("b:0;"),
            PhpValue::Bool(false),
        ),
        ("nul", PhpValue::Null, s("N;"), PhpValue::Null),
        (
            "nested",
            assoc(&[(
                "a",
                PhpValue::Array(vec![
                    (PhpKey::Int(0), PhpValue::Int(1)),
                    (PhpKey::Int(1), str_val("x")),
                ]),
            )]),
            s(r#"a:1:{s:1:"a";a:2:{i:0;i:1;i:1;s:1:"x";}}"#),
            assoc(&[(
                "a",
                PhpValue::Array(vec![
                    (PhpKey::Int(0), PhpValue::Int(1)),
                    (PhpKey::Int(1), str_val("x")),
                ]),
            )]),
        ),
    ];
    for (key, value, raw, back) in cases {
        store.put(key, &value, 60).await.unwrap();
        let item = env.raw(&format!("app_{key}")).await.unwrap();
        assert_eq!(item["value"], raw, "stored form of {key}");
        assert_eq!(
            store.get(key).await.unwrap(),
            Some(back.clone()),
            "eventual read of {key}"
        );
        assert_eq!(
            store
                .get_with(key, ddblock::Consistency::Strong)
                .await
                .unwrap(),
            Some(back),
            "consistent read of {key}"
        );
    }
    assert_eq!(store.get("missing").await.unwrap(), None);

    // The numeric string '007' is written as N "007". moto keeps the text, and Laravel reads it back
    // through is_numeric as float 7.0; dynalite and DynamoDB Local (like real DynamoDB) normalise it
    // to 7, read as int 7.
    store.put("ns", &str_val("007"), 60).await.unwrap();
    let (raw, back) = if server.normalises_numbers() {
        (n("7"), PhpValue::Int(7))
    } else {
        (n("007"), PhpValue::Float(7.0))
    };
    assert_eq!(env.raw("app_ns").await.unwrap()["value"], raw);
    assert_eq!(store.get("ns").await.unwrap(), Some(back));
}

async fn get_treats_now_equal_expiry_as_expired(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let t = env.now();
    store.put("k", &str_val("v"), 10).await.unwrap();
    env.clock.set(t + 9);
    assert_eq!(store.get("k").await.unwrap(), Some(str_val("v")));
    env.clock.set(t + 10);
    assert_eq!(
        store.get("k").await.unwrap(),
        None,
        "now >= expires_at is expired"
    );
    // ttl <= 0 writes an item that is already expired, like Laravel's toTimestamp().
    env.clock.set(t);
    store.put("z", &str_val("v"), 0).await.unwrap();
    assert_eq!(env.raw("app_z").await.unwrap()["expires_at"], n(t));
    assert_eq!(store.get("z").await.unwrap(), None);
}

async fn add_takes_over_only_after_expiry(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let t = env.now();
    assert!(store.add("k", &str_val("first"), 10).await.unwrap());
    assert!(!store.add("k", &str_val("second"), 10).await.unwrap());
    env.clock.set(t + 10);
    assert!(
        !store.add("k", &str_val("second"), 10).await.unwrap(),
        "expires_at == now is not yet free"
    );
    env.clock.set(t + 11);
    assert!(store.add("k", &str_val("second"), 10).await.unwrap());
    assert_eq!(store.get("k").await.unwrap(), Some(str_val("second")));
}

async fn increment_and_decrement_follow_laravel(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel8);
    let t = env.now();
    assert_eq!(store.increment("n", 1).await.unwrap(), None, "missing key");
    store.put("n", &PhpValue::Int(5), 10).await.unwrap();
    assert_eq!(store.increment("n", 3).await.unwrap(), Some(8));
    assert_eq!(store.decrement("n", 10).await.unwrap(), Some(-2));
    assert_eq!(store.get("n").await.unwrap(), Some(PhpValue::Int(-2)));
    assert_eq!(env.raw("app_:n").await.unwrap()["value"], n(-2));
    env.clock.set(t + 10);
    assert_eq!(
        store.increment("n", 1).await.unwrap(),
        None,
        "needs expires_at > now"
    );
    env.clock.set(t + 9);
    assert_eq!(store.increment("n", 1).await.unwrap(), Some(-1));
    // A non-numeric value cannot be incremented: DynamoDB refuses, as it does for Laravel.
    store.put("s", &str_val("abc"), 10).await.unwrap();
    let err = store.increment("s", 1).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Service, "{err}");
}

/// Laravel sends a fractional amount as it is and casts the new value to int.
async fn increments_by_fractions_as_laravel(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    store.put("n", &PhpValue::Int(1), 60).await.unwrap();
    // Laravel sends (string) 1.5 as N and casts the result to int.
    assert_eq!(store.increment("n", 1.5f64).await.unwrap(), Some(2));
    assert_eq!(env.raw("app_n").await.unwrap()["value"], n("2.5"));
    assert_eq!(store.decrement("n", 2).await.unwrap(), Some(0));
    assert_eq!(
        store.increment("n", f64::NAN).await.unwrap_err().kind(),
        ErrorKind::Config
    );
}

async fn forever_items_read_live(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let now = env.now();
    store.forever("f", &str_val("x")).await.unwrap();
    let exp: i64 = env.raw("app_f").await.unwrap()["expires_at"]
        .as_n()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (now + 5 * 365 * 86_400..=now + 5 * 366 * 86_400).contains(&exp),
        "about 5 years: {exp}"
    );
    // What Laravel itself writes for forever(): now + (now + 5 years), about the year 2088.
    env.put_raw(laravel_item("app_lf", s(r#"s:1:"y";"#), now + exp))
        .await;
    assert_eq!(store.get("lf").await.unwrap(), Some(str_val("y")));
    env.clock.set(exp - 1);
    assert_eq!(store.get("f").await.unwrap(), Some(str_val("x")));
}

async fn forget_touch_and_flush(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let t = env.now();
    store.put("k", &str_val("v"), 10).await.unwrap();
    assert!(store.touch("k", 100).await.unwrap());
    assert_eq!(env.raw("app_k").await.unwrap()["expires_at"], n(t + 100));
    assert!(!store.touch("missing", 100).await.unwrap());
    env.clock.set(t + 100);
    assert!(
        !store.touch("k", 100).await.unwrap(),
        "expired items are not touched"
    );
    env.clock.set(t);
    store.forget("k").await.unwrap();
    assert!(env.raw("app_k").await.is_none());
    store.forget("k").await.unwrap(); // forgetting a missing key is fine
    let err = store.flush().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported);
}

async fn many_and_put_many_chunk_and_keep_order(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel8);
    let t = env.now();
    let names: Vec<String> = (0..260).map(|i| format!("k{i}")).collect();
    let mut values: Vec<(&str, PhpValue)> =
        names.iter().map(|k| (k.as_str(), str_val(k))).collect();
    values.push(("k0", str_val("last wins")));
    store.put_many(&values, 30).await.unwrap();
    assert_eq!(env.raw("app_:k259").await.unwrap()["expires_at"], n(t + 30));
    store.put("old", &str_val("v"), 5).await.unwrap();
    env.clock.set(t + 5);
    let mut wanted: Vec<&str> = names.iter().rev().map(String::as_str).collect();
    wanted.insert(3, "missing");
    wanted.insert(5, "old");
    wanted.push("k7"); // a repeated key
    let got = store.many(&wanted).await.unwrap();
    assert_eq!(got.len(), wanted.len());
    for ((k, v), w) in got.iter().zip(&wanted) {
        assert_eq!(k, w, "input order");
        let v = v.as_ref().unwrap();
        match *w {
            "missing" | "old" => assert_eq!(v, &None, "{w}"),
            "k0" => assert_eq!(v, &Some(str_val("last wins"))),
            _ => assert_eq!(v, &Some(str_val(w))),
        }
    }
}

async fn empty_batches_send_nothing(server: Server) {
    let env = Env::new(server).await;
    // A table that does not exist: any request would fail with TableNotFound.
    let store = env.store_with(env.config().table("no_such_table"));
    assert!(store.many(&[]).await.unwrap().is_empty());
    store.put_many(&[], 10).await.unwrap();
    assert_eq!(
        store.get("x").await.unwrap_err().kind(),
        ErrorKind::TableNotFound
    );
}

/// An item over DynamoDB's 400 KB (409,600 bytes) is not measured before sending: every server
/// refuses it (moto already from about 405,000 bytes: docs/compatibility.md, "Servers"), and
/// ddblock reports the ValidationException as a service error. Nothing is written.
async fn an_item_over_400_kb_is_the_servers_refusal(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let err = store
        .put("big", &str_val(&"x".repeat(409_600)), 60)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Service, "{server}: {err}");
    assert!(
        err.to_string().contains("ValidationException"),
        "{server}: {err}"
    );
    assert!(env.raw("app_big").await.is_none(), "{server}");
}

async fn custom_attribute_names(server: Server) {
    let env = Env::new(server).await;
    let client = env.client.clone();
    let table = common::new_table(&client, "pk").await;
    let store = env.store_with(
        env.config()
            .table(&table)
            .key_attribute("pk")
            .value_attribute("val")
            .expiration_attribute("ttl"),
    );
    store.put("k", &PhpValue::Int(3), 10).await.unwrap();
    assert_eq!(store.increment("k", 2).await.unwrap(), Some(5));
    let lock = store.lock("l", 10).unwrap();
    assert!(lock.acquire().await.unwrap().is_acquired());
    assert!(lock.release().await.unwrap().is_released());
    let item = client
        .get_item()
        .table_name(&table)
        .key("pk", s("k"))
        .send()
        .await
        .unwrap()
        .item
        .unwrap();
    assert_eq!(item["val"], n(5));
    assert!(item.contains_key("ttl"));
}

async fn bad_keys_are_refused_before_any_request(server: Server) {
    let env = Env::new(server).await;
    // Pointed at a table that does not exist: a request would answer TableNotFound, not InvalidKey.
    let store = env.store_with(env.config().table("no_such_table").prefix("app_"));
    let long = "x".repeat(3 * 1024);
    for key in ["", long.as_str()] {
        let err = store.get(key).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidKey, "{err}");
        assert_eq!(
            store.put(key, &PhpValue::Null, 1).await.unwrap_err().kind(),
            ErrorKind::InvalidKey
        );
        assert_eq!(
            store.lock(key, 10).unwrap_err().kind(),
            ErrorKind::InvalidKey
        );
    }
    let err = store.get(&long).await.unwrap_err().to_string();
    assert!(err.contains("2048") && err.contains("3076 bytes"), "{err}");
    // The limit counts the prefix: 2044 + "app_" = 2048 is fine, 2045 is not.
    let real = env.store(KeyLayout::Laravel12);
    real.put(&"y".repeat(2044), &PhpValue::Int(1), 10)
        .await
        .unwrap();
    assert_eq!(
        real.get(&"y".repeat(2044)).await.unwrap(),
        Some(PhpValue::Int(1))
    );
    assert_eq!(
        real.get(&"y".repeat(2045)).await.unwrap_err().kind(),
        ErrorKind::InvalidKey
    );
    // Laravel 8's lock key carries the prefix twice.
    let l8 = env.store(KeyLayout::Laravel8);
    assert_eq!(
        l8.lock(&"z".repeat(2040), 10).unwrap_err().kind(),
        ErrorKind::InvalidKey
    );
}

async fn missing_table_is_a_clear_error(server: Server) {
    let env = Env::new(server).await;
    let store = env.store_with(env.config().table("no_such_table"));
    let err = store.put("k", &PhpValue::Int(1), 10).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TableNotFound);
    let msg = err.to_string();
    assert!(
        msg.contains("no_such_table") && msg.contains("create it"),
        "{msg}"
    );
    let lock = store.lock("l", 10).unwrap();
    assert_eq!(
        lock.acquire().await.unwrap_err().kind(),
        ErrorKind::TableNotFound
    );
    assert_eq!(
        lock.release().await.unwrap_err().kind(),
        ErrorKind::TableNotFound
    );
    assert_eq!(
        store.many(&["a"]).await.unwrap_err().kind(),
        ErrorKind::TableNotFound
    );
}

async fn unparseable_values_are_errors_and_stay_stored(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let raw = laravel_item("app_bad", s("a:2:{i:0;i:1;"), env.now() + 60);
    env.put_raw(raw.clone()).await;
    let err = store.get("bad").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Codec, "{err}");
    assert!(err.to_string().contains("bad"), "names the key: {err}");
    assert_eq!(env.raw("app_bad").await, Some(raw), "nothing lost");
    // Binary strings are not valid UTF-8, so DynamoDB's S type cannot hold them (nor can Laravel's).
    let err = store
        .put("bin", &PhpValue::String(vec![0xff, 0x00]), 10)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Codec, "{err}");
    assert!(env.raw("app_bin").await.is_none());
}

async fn serde_types_round_trip_through_php_format(server: Server) {
    #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
    struct Order {
        id: i64,
        items: Vec<String>,
        total: f64,
        note: Option<String>,
    }
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let order = Order {
        id: 7,
        items: vec!["a".into(), "b".into()],
        total: 12.5,
        note: None,
    };
    store.put_as("order", &order, 60).await.unwrap();
    assert_eq!(
        env.raw("app_order").await.unwrap()["value"],
        s(
            r#"a:4:{s:2:"id";i:7;s:5:"items";a:2:{i:0;s:1:"a";i:1;s:1:"b";}s:5:"total";d:12.5;s:4:"note";N;}"#
        )
    );
    assert_eq!(store.get_as::<Order>("order").await.unwrap(), Some(order));
    assert_eq!(store.get_as::<Order>("none").await.unwrap(), None);
    store.put("n", &PhpValue::Int(3), 60).await.unwrap();
    let err = store.get_as::<Order>("n").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Codec, "{err}");
}

on_servers!(
    serde_types_round_trip_through_php_format,
    items_match_laravel_per_layout,
    values_round_trip_with_laravel_types,
    get_treats_now_equal_expiry_as_expired,
    add_takes_over_only_after_expiry,
    increment_and_decrement_follow_laravel,
    increments_by_fractions_as_laravel,
    forever_items_read_live,
    forget_touch_and_flush,
    many_and_put_many_chunk_and_keep_order,
    empty_batches_send_nothing,
    an_item_over_400_kb_is_the_servers_refusal,
    custom_attribute_names,
    bad_keys_are_refused_before_any_request,
    missing_table_is_a_clear_error,
    unparseable_values_are_errors_and_stay_stored,
);

#[test]
fn config_from_laravel_env_names() {
    let vars = std::collections::HashMap::from([
        ("DYNAMODB_CACHE_TABLE", "locks"),
        ("DYNAMODB_ENDPOINT", "http://127.0.0.1:8000"),
        ("AWS_DEFAULT_REGION", "eu-west-1"),
        ("CACHE_PREFIX", "app_"),
        ("DDBLOCK_LAYOUT", "laravel8"),
    ]);
    let cfg = StoreConfig::from_vars(|k| vars.get(k).map(|v| v.to_string()))
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(cfg.table(), "locks");
    assert_eq!(cfg.endpoint(), Some("http://127.0.0.1:8000"));
    assert_eq!(cfg.region(), Some("eu-west-1"));
    assert_eq!(cfg.layout(), KeyLayout::Laravel8);
    assert_eq!(
        cfg.layout().lock_key(cfg.prefix(), "orders"),
        "app_:app_:orders"
    );
    let defaults = StoreConfig::from_vars(|_| None).unwrap().build().unwrap();
    assert_eq!(defaults.table(), "cache");
    assert_eq!(defaults.layout(), KeyLayout::Laravel12);
    assert_eq!(defaults.key_attribute(), "key");
    let bad = StoreConfig::from_vars(|k| (k == "DDBLOCK_LAYOUT").then(|| "laravel7".to_string()));
    assert_eq!(bad.unwrap_err().kind(), ErrorKind::Config);
}

/// The configuration rule (docs/configuration.md): an explicit setting, then a Laravel variable,
/// then Laravel's default.
#[test]
fn explicit_settings_win_over_laravel_variables() {
    let vars = |k: &str| match k {
        "DYNAMODB_CACHE_TABLE" => Some("from_env".to_owned()),
        "DYNAMODB_ENDPOINT" => Some("http://127.0.0.1:1".to_owned()),
        "CACHE_PREFIX" => Some("env_".to_owned()),
        _ => None,
    };
    let c = StoreConfig::from_vars(vars)
        .unwrap()
        .table("explicit")
        .build()
        .unwrap();
    assert_eq!(c.table(), "explicit", "an explicit setting wins");
    assert_eq!(
        c.endpoint(),
        Some("http://127.0.0.1:1"),
        "the variable fills the rest"
    );
    assert_eq!(c.prefix(), "env_");
    let d = StoreConfig::from_vars(|_| None).unwrap().build().unwrap();
    assert_eq!(
        (d.table(), d.endpoint()),
        ("cache", None),
        "Laravel's defaults last"
    );
}

#[test]
fn config_rejects_bad_values() {
    for b in [
        StoreConfig::builder().table(""),
        StoreConfig::builder().table("a b"),
        StoreConfig::builder().value_attribute("key"),
        StoreConfig::builder().endpoint("localhost:8000"),
        StoreConfig::builder().max_attempts(0),
        StoreConfig::builder().backoff(ddblock::Backoff {
            jitter: f64::NAN,
            ..ddblock::Backoff::default()
        }),
        StoreConfig::builder().backoff(ddblock::Backoff {
            jitter: 1.5,
            ..ddblock::Backoff::default()
        }),
    ] {
        let err = b.build().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config, "{err}");
    }
    assert_eq!("12".parse::<KeyLayout>().unwrap(), KeyLayout::Laravel12);
    assert_eq!(
        "Laravel10".parse::<KeyLayout>().unwrap(),
        KeyLayout::Laravel8
    );
    assert_eq!("11.x".parse::<KeyLayout>().unwrap(), KeyLayout::Laravel11);
    // A backoff that slipped past build() (Lock::with_backoff) still never panics.
    let wild = ddblock::Backoff {
        jitter: f64::NAN,
        multiplier: f64::INFINITY,
        ..ddblock::Backoff::default()
    };
    assert!(wild.delay(3, f64::NAN) <= wild.max);
    assert!(ddblock::Backoff::default().delay(1000, 0.5) <= ddblock::Backoff::default().max);
    // Keys are checked by the config alone, without a client.
    let cfg = StoreConfig::builder().prefix("app_").build().unwrap();
    assert_eq!(cfg.lock_key("orders").unwrap(), "app_orders");
    assert_eq!(cfg.cache_key("").unwrap_err().kind(), ErrorKind::InvalidKey);
    // No prefix: no separator even in Laravel 8.
    assert_eq!(KeyLayout::Laravel8.cache_key("", "k"), "k");
    assert_eq!(KeyLayout::Laravel8.lock_key("", "orders"), "orders");
}
