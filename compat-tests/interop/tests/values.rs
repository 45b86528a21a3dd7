//! Cache values across languages: every kind of PHP value put by one side reads the same on the
//! other (as Laravel's `get()` returns it on each server), and the same call writes the same item.
//! Tests: `<server>::<layout>::<scenario>`, each with its own table and harness.

use aws_sdk_dynamodb::types::AttributeValue as Av;
use ddblock::codec::ObjectKind;
use ddblock::{PhpKey, PhpObject, PhpValue};
use ddblock_compat::{
    interop_tests, laravel_cache_key, laravel_lock_key, laravel_view, now, php_str, value_attr,
    Interop, Server,
};

// ---- 8: values ---------------------------------------------------------------------------------

/// A value written by one side and what Laravel's `get()` returns for it (on `server`).
struct ValueCase {
    name: &'static str,
    value: PhpValue,
    back: PhpValue,
}

fn case(name: &'static str, value: impl Into<PhpValue>) -> ValueCase {
    let value = value.into();
    ValueCase {
        name,
        back: value.clone(),
        value,
    }
}

fn case_back(name: &'static str, value: impl Into<PhpValue>, back: PhpValue) -> ValueCase {
    ValueCase {
        name,
        value: value.into(),
        back,
    }
}

fn object(class: &str, props: Vec<(&str, PhpValue)>) -> PhpValue {
    PhpValue::Object(PhpObject {
        class: class.to_owned(),
        kind: ObjectKind::Object,
        properties: props.into_iter().map(|(k, v)| (k.into(), v)).collect(),
    })
}

fn value_cases(server: Server) -> Vec<ValueCase> {
    use PhpValue::{Bool, Float, Int, Null};
    let dyn_ = server.normalises_numbers();
    vec![
        case("utf8", "héllo wörld — 日本語 ✓ 🎉🦀"),
        case("emoji_zwj", "👩‍👩‍👧‍👦 🏳️‍🌈"),
        case("control_bytes", "\x00\x01\x1f\x7f end"),
        case("empty_string", ""),
        case("quotes", "a \"quoted\" ;s:1:\"x\"; {}"),
        case("int", 42),
        case("int_negative", -17),
        case("int_zero", 0),
        case("int_max", i64::MAX),
        case("int_min", i64::MIN),
        case("float", 1.5),
        case("float_tenth", 0.1),
        case("float_negative", -2.25),
        case("float_big", 1e25),
        case_back("float_integral", 100.0, Int(100)),
        case_back("numeric_string", "12345", Int(12345)),
        // Laravel reads N '007' back as float 7; dynalite (like real DynamoDB) stores 7 → int 7.
        case_back(
            "numeric_string_zeros",
            "007",
            if dyn_ { Int(7) } else { Float(7.0) },
        ),
        case_back(
            "numeric_string_exp",
            "1e5",
            if dyn_ { Int(100_000) } else { Float(1e5) },
        ),
        case("non_numeric_string", "12345abc"),
        case("hex_string", "0x1A"),
        // PHP's (string) of a float has 14 significant digits, on both sides.
        case_back("float_sum", 0.1 + 0.2, Float(0.3)),
        case_back("float_third", 1.0 / 3.0, Float(0.33333333333333)),
        case_back("float_neg_zero", -0.0, Int(0)),
        // N '1.0E+15' reads as a float; normalised to '1000000000000000' it reads as an int.
        case_back(
            "float_1e15",
            1e15,
            if dyn_ {
                Int(1_000_000_000_000_000)
            } else {
                Float(1e15)
            },
        ),
        case_back("numeric_string_neg", "-42", Int(-42)),
        case_back("numeric_string_neg_zero", "-0", Int(0)),
        case_back(
            "numeric_string_dot",
            "5.",
            if dyn_ { Int(5) } else { Float(5.0) },
        ),
        case_back("numeric_string_small", "1E-5", Float(1e-5)),
        case_back(
            "numeric_string_over_int",
            "9223372036854775808",
            Float(9_223_372_036_854_775_808.0),
        ),
        case(
            "list",
            PhpValue::list([
                Int(1),
                php_str("two"),
                PhpValue::list([Float(3.5), Bool(true)]),
                Null,
            ]),
        ),
        case(
            "assoc",
            PhpValue::Array(vec![
                (PhpKey::from("a"), Int(1)),
                (PhpKey::Int(5), php_str("five")),
                (PhpKey::Int(-1), Float(-0.5)),
                (
                    PhpKey::from("nested"),
                    PhpValue::assoc([("x", Null), ("y", PhpValue::list([Bool(false)]))]),
                ),
                (PhpKey::from("ünï"), php_str("ök")),
            ]),
        ),
        case("empty_array", PhpValue::list([])),
        // Inside S text floats are serialize()d (17 digits), not (string)-cast.
        case(
            "floats_in_array",
            PhpValue::list([
                Float(0.1),
                Float(0.1 + 0.2),
                Float(1e25),
                Float(-0.0),
                Float(1.5e-7),
                Float(1.0 / 3.0),
                Float(100.0),
                Float(f64::INFINITY),
                Float(f64::NEG_INFINITY),
            ]),
        ),
        case("true", true),
        case("false", false),
        case("null", Null),
        // Real PHP classes: PHP instantiates them and writes them back.
        case(
            "array_object",
            PhpValue::Object(PhpObject {
                class: "ArrayObject".into(),
                kind: ObjectKind::Object,
                // __serialize(): [flags, storage, members, iteratorClass]
                properties: vec![
                    (PhpKey::Int(0), Int(0)),
                    (PhpKey::Int(1), PhpValue::assoc([("a", Int(1))])),
                    (PhpKey::Int(2), PhpValue::list([])),
                    (PhpKey::Int(3), Null),
                ],
            }),
        ),
        case(
            "datetime",
            object(
                "DateTimeImmutable",
                vec![
                    ("date", php_str("2024-01-02 03:04:05.000000")),
                    ("timezone_type", Int(3)),
                    ("timezone", php_str("UTC")),
                ],
            ),
        ),
        case(
            "stdclass",
            object("stdClass", vec![("name", php_str("Zoë")), ("n", Int(1))]),
        ),
        // Not a class PHP knows: it unserializes as __PHP_Incomplete_Class and writes it back as is.
        case(
            "app_class",
            object(
                "App\\Models\\User",
                vec![
                    ("\0*\0attributes", PhpValue::assoc([("id", Int(7))])),
                    ("\0App\\Models\\User\0secret", php_str("s3")),
                    ("exists", Bool(true)),
                ],
            ),
        ),
    ]
}

/// 8a. Values put by PHP read by Rust (and by PHP, the same).
async fn values_php_to_rust(t: &Interop) {
    let cases = value_cases(t.server);
    for c in &cases {
        assert!(t.php.put(c.name, &c.value, 60).await, "PHP put {}", c.name);
    }
    let mut failures = Vec::new();
    for c in &cases {
        let rust = t.store.get(c.name).await.unwrap();
        let php = t.php.get(c.name).await;
        if rust.as_ref() != Some(&c.back) || php != c.back {
            failures.push(format!(
                "{}: PHP wrote {}; Rust read {rust:?}, PHP read {php}, expected {}",
                c.name, c.value, c.back
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // null is stored (S 'N;'), it only reads like a missing key.
    assert_eq!(
        value_attr(&t.raw_some(&t.cache_key("null")).await),
        &Av::S("N;".into())
    );
    let objects = t.store.get("app_class").await.unwrap();
    assert!(
        matches!(&objects, Some(PhpValue::Object(o)) if o.class == "App\\Models\\User"),
        "{objects:?}"
    );
}

/// 8b. Values put by Rust read by PHP (and by Rust, the same).
async fn values_rust_to_php(t: &Interop) {
    let cases = value_cases(t.server);
    for c in &cases {
        t.store
            .put(c.name, &c.value, 60)
            .await
            .unwrap_or_else(|e| panic!("Rust put {}: {e}", c.name));
    }
    let mut failures = Vec::new();
    for c in &cases {
        let php = t.php.get(c.name).await;
        let rust = t.store.get(c.name).await.unwrap();
        if rust.as_ref() != Some(&c.back) || php != c.back {
            failures.push(format!(
                "{}: Rust wrote {}; PHP read {php}, Rust read {rust:?}, expected {}",
                c.name, c.value, c.back
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let mut expected: Vec<String> = cases.iter().map(|c| laravel_cache_key(t, c.name)).collect();
    expected.sort();
    assert_eq!(t.keys().await, expected, "table keys Rust wrote");
}

/// Same call, same second, same item: PHP's write and Rust's write of one key are identical.
async fn same_items_for_same_calls(t: &Interop) {
    for c in &value_cases(t.server) {
        let key = t.cache_key(c.name);
        assert_eq!(key, laravel_cache_key(t, c.name));
        let mut compared = false;
        for _ in 0..3 {
            let s0 = now();
            assert!(t.php.put(c.name, &c.value, 60).await);
            let from_php = t.raw_some(&key).await;
            t.store.put(c.name, &c.value, 60).await.unwrap();
            let from_rust = t.raw_some(&key).await;
            if now() != s0 {
                continue; // crossed a second: expires_at may differ, try again
            }
            assert_eq!(from_rust, from_php, "items for put({})", c.name);
            compared = true;
            break;
        }
        assert!(compared, "never managed to write both in one second");
    }

    // Locks with a given owner (string and numeric), and a ttl of 0.
    for (name, owner, ttl) in [
        ("lock-a", "fixedOwner123456", 60),
        ("lock-n", "12345", 60),
        ("lock-0", "zeroTtlOwner", 0),
    ] {
        let key = laravel_lock_key(t, name);
        let lock = t.store.lock_with_owner(name, ttl, owner).unwrap();
        let mut compared = false;
        for _ in 0..3 {
            let s0 = now();
            assert!(t.php.acquire(name, ttl, Some(owner)).await.acquired);
            let from_php = t.raw_some(&key).await;
            t.php.force_release(name).await;
            assert!(lock.acquire().await.unwrap().is_acquired());
            let from_rust = laravel_view(t.raw_some(&key).await);
            lock.force_release().await.unwrap();
            if now() != s0 {
                continue;
            }
            assert_eq!(from_rust, from_php, "lock items for {name} owner {owner}");
            compared = true;
            break;
        }
        assert!(compared, "never managed to write both in one second");
    }
}

interop_tests!(every_layout [values_php_to_rust, values_rust_to_php, same_items_for_same_calls]);
