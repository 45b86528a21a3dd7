//! Table administration against real local servers: scans (kinds, names, expiry, segments, pages),
//! doctor checks and heuristics, idempotent table creation (sweeps: sweep.rs).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::{KeyType, ScalarAttributeType};
use ddblock::{ErrorKind, KeyLayout, PhpValue, Store, StoreConfig};
use ddblock_admin::{
    looks_like_generated_owner, Admin, CheckId, CheckStatus, CreateTableOptions, DoctorOptions,
    ItemKind, ScanOptions, Scope, TtlState,
};
use ddblock_fault_proxy::FaultConfig;
use ddblock_test_support::env::{Env, FaultyTable};
use ddblock_test_support::{laravel_item, on_servers, s, Server};

fn text(v: &str) -> PhpValue {
    PhpValue::String(v.as_bytes().to_vec())
}

/// A table key, its kind and name, from a scan.
fn shape(items: &[ddblock_admin::ScanItem]) -> Vec<(String, ItemKind, Option<String>)> {
    items
        .iter()
        .map(|i| (i.key.clone(), i.kind, i.name.clone()))
        .collect()
}

async fn scan_reports_kinds_names_owners_and_expiry(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel8);
    let t = env.now();
    let lock = store.lock("orders", 30).unwrap();
    assert!(lock.acquire().await.unwrap().is_acquired());
    store.put("k", &text("hello"), 60).await.unwrap();
    store.put("old", &text("x"), 10).await.unwrap();
    env.put_raw(laravel_item("elsewhere", s("N;"), t + 60))
        .await;
    env.put_raw(std::collections::HashMap::from([
        ("key".to_owned(), s("app_:noexpiry")),
        ("value".to_owned(), s("b:1;")),
    ]))
    .await;
    env.put_raw(std::collections::HashMap::from([
        ("key".to_owned(), s("app_:badexpiry")),
        ("value".to_owned(), s("b:1;")),
        ("expires_at".to_owned(), s("tomorrow")),
    ]))
    .await;
    env.clock.advance(20); // `old` (expires t+10) is now expired but still present

    let progress_calls = AtomicU64::new(0);
    let r = Admin::new(&store)
        .scan_items(&ScanOptions::new(), |_| {
            progress_calls.fetch_add(1, Ordering::SeqCst);
        })
        .await
        .unwrap();
    assert!(
        progress_calls.load(Ordering::SeqCst) >= 4,
        "one call per page and segment"
    );
    assert_eq!(r.now, t + 20);
    assert_eq!(r.skipped, 0);
    assert_eq!(
        shape(&r.items),
        vec![
            (
                "app_:app_:orders".into(),
                ItemKind::Lock,
                Some("orders".into())
            ),
            (
                "app_:badexpiry".into(),
                ItemKind::Cache,
                Some("badexpiry".into())
            ),
            ("app_:k".into(), ItemKind::Cache, Some("k".into())),
            (
                "app_:noexpiry".into(),
                ItemKind::Cache,
                Some("noexpiry".into())
            ),
            ("app_:old".into(), ItemKind::Cache, Some("old".into())),
        ]
    );
    let by_key = |k: &str| r.items.iter().find(|i| i.key == k).unwrap();
    let l = by_key("app_:app_:orders");
    assert_eq!(l.owner.as_deref(), Some(lock.owner()));
    assert_eq!(l.expires_at, Some(t + 30));
    assert_eq!(l.expires_in, Some(10));
    assert!(!l.expired_but_present);
    assert_eq!(l.holder().owner.as_deref(), Some(lock.owner()));
    let old = by_key("app_:old");
    assert!(old.expired_but_present);
    assert_eq!(old.expires_in, Some(-10));
    assert_eq!(old.owner, None, "cache items have no owner");
    let never = by_key("app_:noexpiry");
    assert_eq!((never.expires_at, never.expired_but_present), (None, false));
    let bad = by_key("app_:badexpiry");
    assert!(bad.invalid_expiry && bad.expires_at.is_none());
    // Debug never shows the owner in full.
    assert!(!format!("{l:?}").contains(lock.owner()));

    // Scope::All adds the foreign item; one segment and one-item pages find the same.
    let all = Admin::new(&store)
        .scan_items(
            &ScanOptions::new()
                .scope(Scope::All)
                .segments(1)
                .page_size(Some(1)),
            |_| {},
        )
        .await
        .unwrap();
    assert_eq!(all.items.len(), 6);
    let other = all.items.iter().find(|i| i.key == "elsewhere").unwrap();
    assert_eq!((other.kind, other.name.clone()), (ItemKind::Other, None));
    let many = Admin::new(&store)
        .scan_items(&ScanOptions::new().scope(Scope::All).segments(7), |_| {})
        .await
        .unwrap();
    assert_eq!(shape(&many.items), shape(&all.items));
    assert!(many.scanned >= 6);
}

async fn classify_follows_the_layout(server: Server) {
    let env = Env::new(server).await;
    let owner = s(r#"s:16:"y5lgfdhGNbGy3sTY";"#);
    let stored = |v: &aws_sdk_dynamodb::types::AttributeValue| match v {
        aws_sdk_dynamodb::types::AttributeValue::S(t) => ddblock::StoredValue::String(t.clone()),
        _ => unreachable!(),
    };
    let l12 = env.store(KeyLayout::Laravel12);
    assert_eq!(
        Admin::new(&l12).classify("app_orders", Some(&stored(&owner))),
        (ItemKind::Lock, Some("orders".into()))
    );
    assert_eq!(
        Admin::new(&l12).classify("app_orders", Some(&stored(&s(r#"s:6:"custom";"#)))),
        (ItemKind::Cache, Some("orders".into())),
        "a custom owner cannot be told from a cache string under laravel12"
    );
    assert_eq!(
        Admin::new(&l12).classify("zzz", None),
        (ItemKind::Other, None)
    );
    let l11 = env.store(KeyLayout::Laravel11);
    assert_eq!(
        Admin::new(&l11).classify("app_app_orders", Some(&stored(&s(r#"s:6:"custom";"#)))),
        (ItemKind::Lock, Some("orders".into()))
    );
    assert_eq!(
        Admin::new(&l11).classify("app_orders", Some(&stored(&owner))),
        (ItemKind::Cache, Some("orders".into())),
        "laravel11 locks are always double-prefixed"
    );
    let empty = env.store_with(env.config().layout(KeyLayout::Laravel8));
    assert_eq!(
        Admin::new(&empty).classify("orders", Some(&stored(&owner))),
        (ItemKind::Lock, Some("orders".into()))
    );
    assert!(looks_like_generated_owner(&stored(&owner)));
}

/// A layout that does not match the keys in the table is a warning that names the right one.
async fn doctor_warns_when_the_layout_does_not_match_the_keys(server: Server) {
    let env = Env::new(server).await;
    let t = env.now();
    // What Laravel 8-10 writes for Cache::lock('orders') with prefix app_.
    env.put_raw(laravel_item("app_:app_:orders", s("s:3:\"php\";"), t + 600))
        .await;
    let check = |layout| {
        let store = env.store(layout);
        async move {
            let report = Admin::new(&store)
                .doctor(&no_clock(), |_| {})
                .await
                .unwrap();
            report.check(CheckId::Layout).unwrap().clone()
        }
    };
    let wrong = check(KeyLayout::Laravel12).await;
    assert_eq!(wrong.status, CheckStatus::Warn, "{wrong:?}");
    assert!(
        wrong.detail.contains("DDBLOCK_LAYOUT=laravel8"),
        "{}",
        wrong.detail
    );
    assert!(
        wrong.detail.contains("app_:app_:orders"),
        "{}",
        wrong.detail
    );
    let right = check(KeyLayout::Laravel8).await;
    assert_eq!(right.status, CheckStatus::Ok, "{right:?}");
}

async fn doctor_warns_when_no_item_carries_the_prefix_derived_from_app_name(server: Server) {
    let env = Env::new(server).await;
    let t = env.now();
    // A Laravel 12 app created before July 2025: `config/cache.php` says `_cache_`.
    env.put_raw(laravel_item(
        "shop_cache_orders",
        s("s:3:\"php\";"),
        t + 600,
    ))
    .await;
    let derived = |app_name: &'static str, cache_prefix: Option<&'static str>| {
        let b = StoreConfig::from_vars(move |k| match k {
            "APP_NAME" => Some(app_name.to_owned()),
            "CACHE_PREFIX" => cache_prefix.map(str::to_owned),
            _ => None,
        })
        .unwrap()
        .table(&env.table)
        .endpoint(env.server.endpoint())
        .clock(env.clock.clone())
        .layout(KeyLayout::Laravel12);
        env.store_with(b)
    };
    let guessed = derived("Shop", None);
    assert_eq!(guessed.config().prefix(), "shop-cache-");
    assert_eq!(guessed.config().prefix_from_app_name(), Some("Shop"));
    let report = Admin::new(&guessed)
        .doctor(&no_clock(), |_| {})
        .await
        .unwrap();
    let check = report.check(CheckId::Layout).unwrap();
    assert_eq!(check.status, CheckStatus::Warn, "{check:?}");
    assert!(check.detail.contains("`shop-cache-`"), "{}", check.detail);
    assert!(check.detail.contains("CACHE_PREFIX"), "{}", check.detail);

    let set = derived("Shop", Some("shop_cache_"));
    assert_eq!(set.config().prefix_from_app_name(), None);
    let report = Admin::new(&set).doctor(&no_clock(), |_| {}).await.unwrap();
    let check = report.check(CheckId::Layout).unwrap();
    assert_eq!(check.status, CheckStatus::Ok, "{check:?}");
}

async fn doctor_counts_and_flags_ttl0_locks(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let t = env.now();
    let zero = store.lock("nightly", 0).unwrap(); // 86400 s: Laravel's default
    assert!(zero.acquire().await.unwrap().is_acquired());
    let short = store.lock("short", 60).unwrap();
    assert!(short.acquire().await.unwrap().is_acquired());
    let owner = s(r#"s:16:"AAAAbbbbCCCCdddd";"#);
    env.put_raw(laravel_item("app_twohours", owner.clone(), t + 7200))
        .await;
    env.put_raw(laravel_item("app_twodays", owner.clone(), t + 2 * 86_400))
        .await;
    env.put_raw(laravel_item("app_lastmin", owner.clone(), t + 1800))
        .await;
    env.put_raw(laravel_item("app_expired", owner.clone(), t - 5))
        .await;
    env.put_raw(laravel_item("app_cache", s("s:1:\"x\";"), t - 5))
        .await;
    env.put_raw(std::collections::HashMap::from([
        ("key".to_owned(), s("app_bad")),
        ("expires_at".to_owned(), s("soon")),
    ]))
    .await;

    let r = Admin::new(&store)
        .doctor(&no_clock(), |_| {})
        .await
        .unwrap();
    assert!(r.healthy(), "{:?}", r.checks);
    assert_eq!(r.table_status.as_deref(), Some("ACTIVE"));
    assert_eq!(r.check(CheckId::Table).unwrap().status, CheckStatus::Ok);
    assert_eq!(r.check(CheckId::KeySchema).unwrap().status, CheckStatus::Ok);
    // Neither server has TTL on for a fresh table (dynalite always says DISABLED).
    assert_eq!(r.ttl, Some(TtlState::Disabled));
    assert_eq!(r.check(CheckId::Ttl).unwrap().status, CheckStatus::Warn);
    let c = r.counts.unwrap();
    assert_eq!(c.items, 8);
    assert_eq!(c.locks, 6); // nightly, short, twohours, twodays, lastmin, expired
    assert_eq!(c.expired_but_present, 2);
    assert_eq!(c.invalid_expiry, 1);
    assert_eq!(
        c.default_ttl_locks, 2,
        "nightly (86400 s left) and twohours"
    );
    let names: Vec<_> = r
        .default_ttl_examples
        .iter()
        .map(|i| i.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["nightly", "twohours"], "longest remaining first");
    assert_eq!(
        r.check(CheckId::DefaultTtlLocks).unwrap().status,
        CheckStatus::Warn
    );
    assert_eq!(
        r.check(CheckId::ExpiredItems).unwrap().status,
        CheckStatus::Warn
    );
    assert_eq!(
        r.check(CheckId::InvalidItems).unwrap().status,
        CheckStatus::Warn
    );

    // A lower threshold also catches the lock with half an hour left; examples are capped.
    let r = Admin::new(&store)
        .doctor(
            &DoctorOptions::new().min_remaining_secs(60).examples(1),
            |_| {},
        )
        .await
        .unwrap();
    assert_eq!(r.counts.unwrap().default_ttl_locks, 3);
    assert_eq!(r.default_ttl_examples.len(), 1);

    // Without the scan: no Scan request, item checks skipped.
    let r = Admin::new(&store)
        .doctor(&no_clock().scan(None), |_| panic!("no scan"))
        .await
        .unwrap();
    assert!(r.counts.is_none());
    assert_eq!(
        r.check(CheckId::ExpiredItems).unwrap().status,
        CheckStatus::Skipped
    );
}

async fn doctor_fails_on_missing_table_and_wrong_schema(server: Server) {
    let env = Env::new(server).await;
    let missing = env.store_with(env.config().table("does-not-exist-at-all"));
    let r = Admin::new(&missing)
        .doctor(&no_clock(), |_| {})
        .await
        .unwrap();
    assert!(!r.healthy());
    assert_eq!(r.check(CheckId::Table).unwrap().status, CheckStatus::Fail);
    assert_eq!(r.check(CheckId::Ttl).unwrap().status, CheckStatus::Skipped);
    assert!(r.ttl.is_none());
    // DescribeTimeToLive of a missing table is TableNotFound too, which moto answers with the
    // code `ResourceNotFound` (dynalite has no TTL API: it says DISABLED of any table).
    if server.has_ttl_api() {
        let err = Admin::new(&missing).describe_ttl().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::TableNotFound, "{err}");
    }

    // A table keyed by a number `id` plus a sort key.
    let name = format!("wrong_{}", ddblock::lock::random_owner().to_lowercase());
    let keys = [
        ("id", ScalarAttributeType::N, KeyType::Hash),
        ("sk", ScalarAttributeType::S, KeyType::Range),
    ];
    ddblock_test_support::create_keyed_table(&env.client, &name, &keys).await;
    let wrong = env.store_with(env.config().table(&name));
    let r = Admin::new(&wrong)
        .doctor(&no_clock().scan(None), |_| {})
        .await
        .unwrap();
    let k = r.check(CheckId::KeySchema).unwrap();
    assert_eq!(k.status, CheckStatus::Fail);
    assert!(
        k.detail.contains("`id` (HASH, N) + `sk` (RANGE, S)"),
        "{}",
        k.detail
    );
    assert!(!r.healthy());
    // create_table on it: exists, not usable.
    let c = Admin::new(&wrong)
        .create_table(&CreateTableOptions::new())
        .await
        .unwrap();
    assert!(!c.created && !c.ready() && c.key_schema_problem.is_some());
    assert_eq!(c.ttl, None, "TTL is not touched on an unusable table");
}

async fn create_table_is_idempotent_and_enables_ttl(server: Server) {
    let env = Env::new(server).await;
    let name = format!("fresh_{}", ddblock::lock::random_owner().to_lowercase());
    let store = env.store_with(
        env.config()
            .table(&name)
            .key_attribute("k")
            .expiration_attribute("exp"),
    );
    let r = Admin::new(&store)
        .create_table(&CreateTableOptions::new())
        .await
        .unwrap();
    assert!(r.created && r.ready(), "{r:?}");
    if server.has_ttl_api() {
        assert!(r.ttl_changed);
        assert_eq!(
            r.ttl,
            Some(TtlState::Enabled {
                attribute: "exp".into()
            })
        );
    } else {
        // dynalite has no UpdateTimeToLive.
        assert!(matches!(r.ttl, Some(TtlState::Unknown { .. })), "{r:?}");
    }
    let again = Admin::new(&store)
        .create_table(&CreateTableOptions::new())
        .await
        .unwrap();
    assert!(!again.created && again.ready() && !again.ttl_changed);
    if server.has_ttl_api() {
        assert!(again.ttl.as_ref().unwrap().covers("exp"));
        let d = Admin::new(&store)
            .doctor(&no_clock(), |_| {})
            .await
            .unwrap();
        assert_eq!(d.check(CheckId::Ttl).unwrap().status, CheckStatus::Ok);
    }
    // The table works with the configured attribute names.
    store.put("a", &PhpValue::Int(1), 60).await.unwrap();
    assert_eq!(store.get("a").await.unwrap(), Some(PhpValue::Int(1)));
    // Without TTL.
    let other = env.store_with(env.config().table(format!(
        "nottl_{}",
        ddblock::lock::random_owner().to_lowercase()
    )));
    let r = Admin::new(&other)
        .create_table(&CreateTableOptions::new().ttl(false))
        .await
        .unwrap();
    assert!(r.created && r.ttl.is_none());
}

async fn scans_of_a_missing_table_and_bad_options_are_errors(server: Server) {
    let env = Env::new(server).await;
    let missing = env.store_with(env.config().table("does-not-exist-at-all"));
    let e = Admin::new(&missing)
        .scan_items(&ScanOptions::new(), |_| {})
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TableNotFound);
    let store = env.store(KeyLayout::Laravel12);
    // 1,000,001 segments: DynamoDB (and DynamoDB Local) refuse TotalSegments over 1,000,000,
    // moto and dynalite accept it; ddblock refuses it before sending, on every server
    // (docs/compatibility.md, "Servers").
    for bad in [
        ScanOptions::new().segments(0),
        ScanOptions::new().segments(1_000_001),
        ScanOptions::new().page_size(Some(0)),
    ] {
        let e = Admin::new(&store)
            .scan_items(&bad, |_| {})
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Config);
    }
    let unreachable = ddblock::Store::with_client(
        ddblock_test_support::client_for("http://127.0.0.1:1"),
        StoreConfig::builder()
            .table(&env.table)
            .endpoint("http://127.0.0.1:1")
            .build()
            .unwrap(),
    );
    let e = Admin::new(&unreachable)
        .doctor(&no_clock(), |_| {})
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Transport);
    assert!(e.to_string().contains("http://127.0.0.1:1"));
}

/// A scan sees a lock released in keep-fence mode as a released lock (its fence kept), not as an
/// expired one held by somebody.
async fn a_scan_sees_a_keep_fence_release_as_released(server: Server) {
    let env = Env::new(server).await;
    let store = env.store_with(
        env.config()
            .prefix("app_")
            .release_mode(ddblock::ReleaseMode::KeepFence),
    );
    let lock = store.lock("kf", 30).unwrap();
    assert!(lock.acquire().await.unwrap().is_acquired());
    lock.release().await.unwrap();
    let report = Admin::new(&store)
        .scan_items(&ScanOptions::new(), |_| {})
        .await
        .unwrap();
    let kept = report.items.iter().find(|i| i.key == "app_kf").unwrap();
    assert!(
        kept.released_fence_kept && kept.expired_but_present,
        "{kept:?}"
    );
    assert_eq!((kept.kind, kept.owner.as_deref()), (ItemKind::Lock, None));
}

/// Scans run a bounded number of segments at once.
async fn scans_run_a_bounded_number_of_segments_at_once(server: Server) {
    let f = FaultyTable::new(server).await;
    f.proxy.set_faults(FaultConfig {
        latency_ms: 200,
        latency_ops: vec!["Scan".to_owned()],
        ..FaultConfig::default()
    });
    let store = Store::new(f.through().build().unwrap());
    let start = Instant::now();
    let report = Admin::new(&store)
        .scan_items(&ScanOptions::new().segments(64), |_| {})
        .await
        .unwrap();
    assert_eq!(report.items.len(), 0);
    let took = start.elapsed();
    // 64 segments of one 200 ms page each, at most 16 at once: at least 4 rounds.
    assert!(
        took >= Duration::from_millis(780),
        "all at once? took {took:?}"
    );
}

on_servers!(
    doctor_warns_when_the_layout_does_not_match_the_keys,
    doctor_warns_when_no_item_carries_the_prefix_derived_from_app_name,
    scan_reports_kinds_names_owners_and_expiry,
    classify_follows_the_layout,
    doctor_counts_and_flags_ttl0_locks,
    doctor_fails_on_missing_table_and_wrong_schema,
    create_table_is_idempotent_and_enables_ttl,
    scans_of_a_missing_table_and_bad_options_are_errors,
    scans_run_a_bounded_number_of_segments_at_once,
    a_scan_sees_a_keep_fence_release_as_released,
);

/// Doctor's options for these tests, whose stores run on a manual clock (`Env`): the clock check
/// would measure how long the test has run since that clock was set (1.5 s on a loaded machine
/// failed `doctor_counts_and_flags_ttl0_locks`), not a host's offset; the CLI's tests measure
/// real clocks (`doctor_measures_a_clock_past_the_margin`).
fn no_clock() -> DoctorOptions {
    DoctorOptions::new().clock_answers(0)
}
