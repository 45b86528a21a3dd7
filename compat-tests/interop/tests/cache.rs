//! Cache operations across languages: counters, `forever`, batches, expiry and key limits, each
//! done by one side and read by the other, for every key layout on moto and dynalite.
//! Tests: `<server>::<layout>::<scenario>`, each with its own table and harness.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::AttributeValue as Av;
use ddblock::{AcquireOutcome, ErrorKind, PhpValue, ReleaseOutcome};
use ddblock_compat::{
    expires_at, in_range, interop_tests, laravel_cache_key, laravel_item, now, php_str,
    serialized_owner, value_attr, HarnessError, Interop, Server,
};

/// Five years in days, either side of a leap day.
const FIVE_YEARS_MIN: i64 = 1826 * 86_400;
const FIVE_YEARS_MAX: i64 = 1827 * 86_400;

// ---- 9-11 --------------------------------------------------------------------------------------

/// 9. increment/decrement from both sides on one key; both read the same final value.
async fn increment_decrement_interleaved(t: &Interop) {
    assert_eq!(t.store.increment("missing", 1).await.unwrap(), None);
    assert_eq!(t.php.increment("missing", 1).await, None);
    assert_eq!(t.php.decrement("missing", 1).await, None);
    assert!(t.raw(&t.cache_key("missing")).await.is_none());

    assert!(t.php.put("counter", &PhpValue::Int(10), 60).await);
    assert_eq!(t.store.increment("counter", 5).await.unwrap(), Some(15));
    assert_eq!(t.php.increment("counter", 3).await, Some(18));
    assert_eq!(t.store.decrement("counter", 20).await.unwrap(), Some(-2));
    assert_eq!(t.php.decrement("counter", 1).await, Some(-3));
    assert_eq!(t.store.increment("counter", 1).await.unwrap(), Some(-2));
    assert_eq!(
        t.store.get("counter").await.unwrap(),
        Some(PhpValue::Int(-2))
    );
    assert_eq!(t.php.get("counter").await, PhpValue::Int(-2));

    // Both sides at once: no increment is lost.
    let php = t.php.clone();
    let task = tokio::spawn(async move {
        for _ in 0..20 {
            php.increment("counter", 1).await.expect("PHP increment");
        }
    });
    for _ in 0..20 {
        t.store
            .increment("counter", 1)
            .await
            .unwrap()
            .expect("Rust increment");
    }
    task.await.unwrap();
    assert_eq!(
        t.store.get("counter").await.unwrap(),
        Some(PhpValue::Int(38))
    );
    assert_eq!(t.php.get("counter").await, PhpValue::Int(38));
    assert_eq!(
        value_attr(&t.raw_some(&t.cache_key("counter")).await),
        &Av::N("38".into())
    );

    // A float counter: the new value comes back (int)-cast by both, the item keeps the float.
    assert!(t.php.put("fl", &PhpValue::Float(1.5), 60).await);
    assert_eq!(t.store.increment("fl", 1).await.unwrap(), Some(2));
    assert_eq!(t.php.get("fl").await, PhpValue::Float(2.5));
    assert_eq!(t.php.increment("fl", 1).await, Some(3));
    assert_eq!(t.store.get("fl").await.unwrap(), Some(PhpValue::Float(3.5)));

    // Expired counters (ttl 0 writes expires_at = now) are not incremented by either side.
    assert!(t.php.put("gone", &PhpValue::Int(1), 0).await);
    assert_eq!(t.store.increment("gone", 1).await.unwrap(), None);
    t.store.put("gone2", &PhpValue::Int(1), 0).await.unwrap();
    assert_eq!(t.php.increment("gone2", 1).await, None);

    // A counter Rust started.
    t.store.put("c2", &PhpValue::Int(0), 60).await.unwrap();
    assert_eq!(t.php.increment("c2", 7).await, Some(7));
    assert_eq!(t.store.decrement("c2", 2).await.unwrap(), Some(5));
    assert_eq!(t.php.get("c2").await, PhpValue::Int(5));
}

/// 10. `forever` items from either side read as live by the other.
async fn forever_items_live_both_ways(t: &Interop) {
    let t0 = now();
    assert!(t.php.forever("php-forever", &php_str("x")).await);
    let t1 = now();
    let exp = expires_at(&t.raw_some(&t.cache_key("php-forever")).await);
    // Laravel passes a timestamp as seconds: now + (now + 5 years).
    in_range(
        "Laravel's forever expires_at",
        exp,
        2 * t0 + FIVE_YEARS_MIN,
        2 * t1 + FIVE_YEARS_MAX,
    );
    assert_eq!(
        t.store.get("php-forever").await.unwrap(),
        Some(php_str("x"))
    );

    let t0 = now();
    t.store
        .forever("rust-forever", &php_str("y"))
        .await
        .unwrap();
    let t1 = now();
    let exp = expires_at(&t.raw_some(&t.cache_key("rust-forever")).await);
    in_range(
        "ddblock's forever expires_at",
        exp,
        t0 + FIVE_YEARS_MIN,
        t1 + FIVE_YEARS_MAX,
    );
    assert_eq!(t.php.get("rust-forever").await, php_str("y"));

    // Forever counters count on both sides.
    assert!(t.php.forever("php-count", &PhpValue::Int(1)).await);
    assert_eq!(t.store.increment("php-count", 1).await.unwrap(), Some(2));
    t.store
        .forever("rust-count", &PhpValue::Int(1))
        .await
        .unwrap();
    assert_eq!(t.php.increment("rust-count", 1).await, Some(2));
}

/// 11. PHP putMany → Rust many, and Rust put_many → PHP many.
async fn many_and_put_many_across(t: &Interop) {
    use PhpValue::{Float, Int, Null};
    let assoc = PhpValue::assoc([("k", php_str("v")), ("n", Int(2))]);
    assert!(
        t.php
            .put_many(
                &[
                    ("a", Int(1)),
                    ("b", php_str("two")),
                    ("c", PhpValue::list([Int(1), Int(2)])),
                    ("d", php_str("12345")),
                    ("e", Null),
                ],
                60,
            )
            .await
    );
    let got = t
        .store
        .many(&["a", "b", "c", "d", "e", "missing", "a"])
        .await
        .unwrap();
    let expected: Vec<(String, Option<PhpValue>)> = vec![
        ("a".into(), Some(Int(1))),
        ("b".into(), Some(php_str("two"))),
        ("c".into(), Some(PhpValue::list([Int(1), Int(2)]))),
        ("d".into(), Some(Int(12345))),
        ("e".into(), Some(Null)),
        ("missing".into(), None),
        ("a".into(), Some(Int(1))),
    ];
    let got: Vec<(String, Option<PhpValue>)> =
        got.into_iter().map(|(k, v)| (k, v.unwrap())).collect();
    assert_eq!(got, expected, "Rust many() of PHP putMany()");

    t.store
        .put_many(
            &[
                ("f", Float(1.5)),
                ("g", php_str("ünï 🦀")),
                ("h", assoc.clone()),
                ("i", php_str("007")),
            ],
            60,
        )
        .await
        .unwrap();
    let got = t.php.many(&["f", "g", "h", "i", "missing"]).await;
    let zeros = if t.server.normalises_numbers() {
        Int(7)
    } else {
        Float(7.0)
    };
    let expected: BTreeMap<String, PhpValue> = [
        ("f", Float(1.5)),
        ("g", php_str("ünï 🦀")),
        ("h", assoc),
        ("i", zeros),
        ("missing", Null),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(got, expected, "PHP many() of Rust put_many()");

    let mut keys: Vec<String> = ["a", "b", "c", "d", "e", "f", "g", "h", "i"]
        .iter()
        .map(|k| laravel_cache_key(t, k))
        .collect();
    keys.sort();
    assert_eq!(t.keys().await, keys);
}

/// Expired and never-expiring items read alike on both sides.
async fn expiry_read_alike(t: &Interop) {
    // ttl 0 writes an already expired item (expires_at = now): missing for both.
    assert!(t.php.put("php-expired", &php_str("x"), 0).await);
    t.store.put("rust-expired", &php_str("y"), 0).await.unwrap();
    for key in ["php-expired", "rust-expired"] {
        assert!(
            t.raw(&t.cache_key(key)).await.is_some(),
            "{key} not written"
        );
        assert_eq!(t.store.get(key).await.unwrap(), None, "Rust reads {key}");
        assert_eq!(t.php.get(key).await, PhpValue::Null, "PHP reads {key}");
    }
    let many = t
        .store
        .many(&["php-expired", "rust-expired"])
        .await
        .unwrap();
    assert!(many.iter().all(|(_, v)| matches!(v, Ok(None))), "{many:?}");

    // No expires_at attribute: never expires, for both.
    let mut item = laravel_item(&t.cache_key("no-expiry"), Av::S("s:1:\"x\";".into()), 0);
    item.remove("expires_at");
    t.put_raw(item).await;
    assert_eq!(t.store.get("no-expiry").await.unwrap(), Some(php_str("x")));
    assert_eq!(t.php.get("no-expiry").await, php_str("x"));

    // A lock item without expires_at is held forever, for both.
    let mut item = laravel_item(&t.lock_key("stuck"), Av::S(serialized_owner("o")), 0);
    item.remove("expires_at");
    t.put_raw(item).await;
    assert!(!t.php.acquire("stuck", 10, None).await.acquired);
    match t.store.lock("stuck", 10).unwrap().acquire().await.unwrap() {
        AcquireOutcome::Held(h) => {
            assert_eq!(h.owner.as_deref(), Some("o"));
            assert_eq!(h.expires_at, None);
        }
        other => panic!("Rust took a lock without expiry: {other:?}"),
    }
}

/// Unicode keys and lock names, and the 2048-byte key limit (counted in bytes, prefix included).
async fn unicode_keys_and_key_limit(t: &Interop) {
    assert!(t.php.put("ключ🔑", &php_str("php"), 60).await);
    assert_eq!(t.store.get("ключ🔑").await.unwrap(), Some(php_str("php")));
    t.store.put("clé✓", &php_str("rust"), 60).await.unwrap();
    assert_eq!(t.php.get("clé✓").await, php_str("rust"));
    let php = t.php.acquire("заказ:42", 30, None).await;
    assert!(php.acquired);
    assert_eq!(
        t.store
            .restore_lock("заказ:42", &php.owner)
            .unwrap()
            .release()
            .await
            .unwrap(),
        ReleaseOutcome::Released
    );
    let mut keys = t.keys().await;
    keys.sort();
    let mut expected = vec![laravel_cache_key(t, "ключ🔑"), laravel_cache_key(t, "clé✓")];
    expected.sort();
    assert_eq!(keys, expected);

    // Keys of exactly 2048 and 2049 bytes once prefixed, from a 2-byte character (plus ASCII).
    let key_of = |fill: char, prefix_len: usize, total: usize| {
        let n = total - prefix_len;
        let mut k = fill.to_string().repeat(n / fill.len_utf8());
        k.push_str(&"k".repeat(n % fill.len_utf8()));
        k
    };
    let cache_prefix = t.cache_key("x").len() - 1;
    let lock_prefix = t.lock_key("x").len() - 1;
    let fits = key_of('é', cache_prefix, 2048);
    assert!(t.php.put(&fits, &PhpValue::Int(1), 60).await);
    assert_eq!(t.store.get(&fits).await.unwrap(), Some(PhpValue::Int(1)));
    for fill in ['k', 'é'] {
        let too_long = key_of(fill, cache_prefix, 2049);
        let err = t
            .store
            .put(&too_long, &PhpValue::Int(1), 60)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidKey, "{err}");
        let res = t.php.try_put(&too_long, &PhpValue::Int(1), 60).await;
        if fill != 'k' && t.server == Server::Dynalite {
            // dynalite measures S keys in UTF-16 code units, not bytes as DynamoDB does.
            assert_eq!(res, Ok(true), "dynalite refused a 1023-character key");
        } else {
            assert!(
                matches!(res, Err(HarnessError::Php(ref e)) if e.contains("ValidationException")),
                "PHP put of a 2049-byte key of {fill:?}: {res:?}"
            );
        }
    }
    let fits = key_of('ü', lock_prefix, 2048);
    let lock = t.store.lock(&fits, 30).unwrap();
    assert!(lock.acquire().await.unwrap().is_acquired());
    assert!(t.php.release(&fits, lock.owner()).await);
    let too_long = key_of('k', lock_prefix, 2049);
    let err = t.store.lock(&too_long, 30).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidKey, "{err}");
    let res = t
        .php
        .call(serde_json::json!({"op": "lock.acquire", "name": too_long, "ttl": 30}))
        .await;
    assert!(
        matches!(res, Err(HarnessError::Php(ref e)) if e.contains("ValidationException")),
        "PHP acquire of a 2049-byte lock key: {res:?}"
    );
}

interop_tests!(
    every_layout [
        increment_decrement_interleaved,
        forever_items_live_both_ways,
        many_and_put_many_across,
        expiry_read_alike,
        unicode_keys_and_key_limit,
    ]
);
