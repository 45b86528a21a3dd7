//! ddblock's codec against PHP's `serialize()` on one table: values neither side can store are
//! refused by both, Rust structs cross as PHP arrays, and random values are written and read alike
//! (laravel12 only: the codec does not depend on the layout).
//! Tests: `<server>::<layout>::<scenario>`, each with its own table and harness.

use ddblock::{ErrorKind, PhpKey, PhpValue};
use ddblock_compat::{interop_tests, php_str, HarnessError, Interop, Server};

/// 8c. Non-UTF-8 binary strings cannot be stored by either side (DynamoDB `S` is UTF-8); nothing
/// is written. Likewise the numbers DynamoDB refuses (`is_numeric` but not a DynamoDB number).
async fn unstorable_values_refused_by_both(t: &Interop) {
    let bin = PhpValue::String(vec![b'a', 0xff, 0xfe, 0x00]);
    let nested = PhpValue::list([php_str("ok"), bin.clone()]);
    for (what, err) in [
        ("put", t.store.put("bin", &bin, 60).await.unwrap_err()),
        (
            "put nested",
            t.store.put("bin", &nested, 60).await.unwrap_err(),
        ),
        ("add", t.store.add("bin", &bin, 60).await.unwrap_err()),
        ("forever", t.store.forever("bin", &bin).await.unwrap_err()),
        (
            "put_many",
            t.store
                .put_many(&[("fine", php_str("fine")), ("bin", bin.clone())], 60)
                .await
                .unwrap_err(),
        ),
    ] {
        assert_eq!(err.kind(), ErrorKind::Codec, "Rust {what}: {err}");
    }
    for (what, res) in [
        ("put", t.php.try_put("bin", &bin, 60).await),
        ("put nested", t.php.try_put("bin", &nested, 60).await),
        (
            "putMany",
            t.php
                .try_put_many(&[("fine", php_str("fine")), ("bin", bin.clone())], 60)
                .await,
        ),
    ] {
        assert!(
            matches!(res, Err(HarnessError::Php(_))),
            "PHP {what} of a binary string: {res:?}"
        );
    }
    assert_eq!(
        t.keys().await,
        Vec::<String>::new(),
        "something was written"
    );

    // is_numeric() but not a DynamoDB number: ddblock refuses before sending (Codec), Laravel
    // sends an N that the server rejects (ok:false).
    let numbers = [
        ("lead_space", php_str(" 12")),
        ("trail_space", php_str("12 ")),
        ("inf", PhpValue::Float(f64::INFINITY)),
        ("nan", PhpValue::Float(f64::NAN)),
        ("huge", PhpValue::Float(1e200)),
        ("huge_string", php_str("1e200")),
        ("tiny", PhpValue::Float(1e-140)),
        (
            "digits39",
            php_str("123456789012345678901234567890123456789"),
        ),
    ];
    for (name, v) in &numbers {
        let err = t.store.put(name, v, 60).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Codec, "Rust put {name}: {err}");
        let res = t.php.try_put(name, v, 60).await;
        if *name == "digits39" && !t.server.normalises_numbers() {
            // moto does not check DynamoDB's 38-digit limit; real DynamoDB and dynalite do.
            assert_eq!(res, Ok(true), "moto accepted more than 38 digits before");
            t.php.forget(name).await;
        } else {
            assert!(
                matches!(res, Err(HarnessError::Php(ref e)) if e.contains("ValidationException")),
                "PHP put {name}: {res:?}"
            );
        }
    }
    // '+5' is numeric for PHP; dynalite (big.js) rejects the '+', moto keeps it, DynamoDB Local
    // (Java's BigDecimal, like DynamoDB) stores it as 5.
    let plus = php_str("+5");
    let rust = t.store.put("plus", &plus, 60).await;
    let php = t.php.try_put("plus", &plus, 60).await;
    let refused = match t.server {
        Server::Dynalite => true,
        Server::Moto | Server::DdbLocal => false,
    };
    if refused {
        assert!(
            rust.is_err() && php.is_err(),
            "'+5': Rust {rust:?}, PHP {php:?}"
        );
        assert_eq!(
            t.keys().await,
            Vec::<String>::new(),
            "something was written"
        );
    } else {
        assert!(
            rust.is_ok() && php == Ok(true),
            "'+5': Rust {rust:?}, PHP {php:?}"
        );
        assert_eq!(t.store.get("plus").await.unwrap(), Some(PhpValue::Int(5)));
        assert_eq!(t.php.get("plus").await, PhpValue::Int(5));
    }
}

/// Rust structs through serde (`to_php`/`from_php`) are PHP arrays, and come back from PHP intact.
async fn serde_structs_across(t: &Interop) {
    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Order {
        id: u64,
        customer: String,
        total: f64,
        paid: bool,
        note: Option<String>,
        lines: Vec<Line>,
        by_warehouse: std::collections::BTreeMap<String, u32>,
    }
    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Line {
        sku: String,
        qty: u32,
    }
    let order = Order {
        id: 42,
        customer: "Zoë 🦀".into(),
        total: 19.99,
        paid: false,
        note: None,
        lines: vec![
            Line {
                sku: "A-1".into(),
                qty: 2,
            },
            Line {
                sku: "B-2".into(),
                qty: 1,
            },
        ],
        // "5" is an int key in a PHP array; serde writes it as one.
        by_warehouse: [("5".to_owned(), 3), ("north".to_owned(), 1)].into(),
    };
    let value = ddblock::codec::to_php(&order).unwrap();
    t.store.put("order", &value, 60).await.unwrap();
    let seen_by_php = t.php.get("order").await;
    assert_eq!(
        seen_by_php, value,
        "PHP reads another array than Rust wrote"
    );
    assert_eq!(seen_by_php.get("customer"), Some(&php_str("Zoë 🦀")));
    // PHP writes what it read back; Rust decodes it into the struct again.
    assert!(t.php.put("order-from-php", &seen_by_php, 60).await);
    let back = t
        .store
        .get("order-from-php")
        .await
        .unwrap()
        .expect("written");
    let order_back: Order = ddblock::codec::from_php(&back).unwrap();
    assert_eq!(order_back, order);
    assert_eq!(
        t.raw_some(&t.cache_key("order-from-php"))
            .await
            .get("value"),
        t.raw_some(&t.cache_key("order")).await.get("value"),
        "PHP's serialize() of the array differs from ddblock's"
    );
}

/// Differential check of the codec against real PHP with random values: for each value PHP's
/// item and Rust's item carry the same attribute, and both sides read both items alike.
/// A fixed seed keeps the suite deterministic; set DDBLOCK_COMPAT_SEED to explore others (the seed
/// is printed) and DDBLOCK_COMPAT_RANDOM_VALUES for more values than the default 120.
async fn random_values_written_alike(t: &Interop) {
    use rand::{Rng, SeedableRng};
    let seed = std::env::var("DDBLOCK_COMPAT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_261_122);
    println!("random_values_written_alike seed {seed} (DDBLOCK_COMPAT_SEED={seed} to replay)");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);

    fn float(rng: &mut rand::rngs::StdRng, dynamodb_range: bool) -> f64 {
        loop {
            let f = match rng.random_range(0..3) {
                0 => f64::from_bits(rng.random::<u64>()),
                1 => rng.random_range(-1e6..1e6),
                _ => rng.random_range(-1e6_f64..1e6).round() / 100.0,
            };
            let fits = f == 0.0 || (1e-129..1e125).contains(&f.abs());
            if f.is_finite() && (!dynamodb_range || fits) {
                return f;
            }
        }
    }
    fn text(rng: &mut rand::rngs::StdRng) -> String {
        let pool = [
            'a', 'Z', '0', '9', ' ', '"', ';', ':', '{', '\\', '\0', '\u{1}', '\n', 'é', 'ß', '日',
            '🦀', '\u{200d}', '.', 'e', '-',
        ];
        (0..rng.random_range(0..12))
            .map(|_| pool[rng.random_range(0..pool.len())])
            .collect()
    }
    fn numeric_text(rng: &mut rand::rngs::StdRng) -> String {
        let digits = |rng: &mut rand::rngs::StdRng, n: usize| -> String {
            (0..n)
                .map(|_| char::from(b'0' + rng.random_range(0..10u8)))
                .collect()
        };
        let mut s = String::new();
        if rng.random_bool(0.3) {
            s.push('-');
        }
        let n = rng.random_range(1..15);
        s += &digits(rng, n);
        if rng.random_bool(0.4) {
            s.push('.');
            let n = rng.random_range(1..10);
            s += &digits(rng, n);
        }
        if rng.random_bool(0.2) {
            s.push(if rng.random_bool(0.5) { 'e' } else { 'E' });
            s += &rng.random_range(-20..20).to_string();
        }
        s
    }
    fn value(rng: &mut rand::rngs::StdRng, depth: u32) -> PhpValue {
        match rng.random_range(0..if depth == 0 { 9 } else { 7 }) {
            0 => PhpValue::Int(rng.random()),
            1 => PhpValue::Float(float(rng, depth == 0)),
            2 => php_str(&text(rng)),
            3 => php_str(&numeric_text(rng)),
            4 => PhpValue::Bool(rng.random()),
            5 => PhpValue::Null,
            6 => PhpValue::Float(float(rng, false)),
            _ => {
                let n = rng.random_range(0..5);
                if rng.random_bool(0.5) {
                    PhpValue::list((0..n).map(|_| value(rng, depth + 1)))
                } else {
                    PhpValue::Array(
                        (0..n)
                            .map(|i| {
                                let k = if rng.random_bool(0.5) {
                                    PhpKey::Int(rng.random_range(-5..1000) * 10 + i)
                                } else {
                                    PhpKey::from(format!("k{i}{}", text(rng)))
                                };
                                (k, value(rng, depth + 1))
                            })
                            .collect(),
                    )
                }
            }
        }
    }

    let mut failures = Vec::new();
    let mut refused = 0;
    let count: usize = std::env::var("DDBLOCK_COMPAT_RANDOM_VALUES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(120);
    for i in 0..count {
        let v = value(&mut rng, 0);
        let (pk, rk) = (format!("p{i}"), format!("r{i}"));
        let php_put = t.php.try_put(&pk, &v, 60).await;
        let rust_put = t.store.put(&rk, &v, 60).await;
        match (&php_put, &rust_put) {
            (Ok(true), Ok(())) => {}
            // Both refuse (a number outside DynamoDB's range): DynamoDB rejects PHP's N.
            (Err(HarnessError::Php(e)), Err(r))
                if r.kind() == ErrorKind::Codec && e.contains("ValidationException") =>
            {
                refused += 1;
                continue;
            }
            _ => {
                failures.push(format!("{v:?}: PHP put {php_put:?}, Rust put {rust_put:?}"));
                continue;
            }
        }
        let from_php = t.raw_some(&t.cache_key(&pk)).await;
        let from_rust = t.raw_some(&t.cache_key(&rk)).await;
        if from_php.get("value") != from_rust.get("value") {
            failures.push(format!(
                "{v:?}: PHP wrote {:?}, Rust wrote {:?}",
                from_php.get("value"),
                from_rust.get("value")
            ));
            continue;
        }
        let reads = [
            t.store.get(&pk).await.unwrap().unwrap_or(PhpValue::Null),
            t.php.get(&pk).await,
            t.store.get(&rk).await.unwrap().unwrap_or(PhpValue::Null),
            t.php.get(&rk).await,
        ];
        if reads.iter().any(|r| r != &reads[0]) {
            failures.push(format!(
                "{v:?} stored as {:?}: Rust/PHP read PHP's item as {:?} / {:?}, Rust's as {:?} / {:?}",
                from_php.get("value"),
                reads[0],
                reads[1],
                reads[2],
                reads[3]
            ));
        }
    }
    println!("{refused} of {count} values refused by both sides");
    assert!(
        failures.is_empty(),
        "seed {seed}: {} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

interop_tests!(
    every_layout [unstorable_values_refused_by_both, serde_structs_across]
        + laravel12 [random_values_written_alike]
);
