//! Sweeps against real local servers: only expired items, and on request the locks that look
//! stuck since taken with ttl 0, never one taken or changed after the scan (the fault proxy holds
//! the deletes while the test changes them).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ddblock::{ErrorKind, KeyLayout, Store};
use ddblock_admin::{Admin, ScanOptions, Scope, SweepOptions, SweepReason, SweepReport};
use ddblock_fault_proxy::FaultConfig;
use ddblock_test_support::env::{Env, FaultyTable};
use ddblock_test_support::{laravel_item, n, on_servers, s, Server};

async fn sweep_deletes_only_expired_items(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let t = env.now();
    let owner = s(r#"s:16:"y5lgfdhGNbGy3sTY";"#);
    env.put_raw(laravel_item("app_live", owner.clone(), t + 100))
        .await;
    env.put_raw(laravel_item("app_boundary", owner.clone(), t))
        .await; // reads expired, not yet `<`
    env.put_raw(laravel_item("app_recent", s("i:1;"), t - 30))
        .await;
    env.put_raw(laravel_item("app_old_lock", owner.clone(), t - 1000))
        .await;
    env.put_raw(laravel_item("app_old_cache", n(5), t - 1000))
        .await;
    env.put_raw(laravel_item("other_old", n(5), t - 1000)).await;
    env.put_raw(std::collections::HashMap::from([
        ("key".to_owned(), s("app_forever")),
        ("value".to_owned(), s("b:1;")),
    ]))
    .await;

    // Dry run with the default 60 s grace: the two old items in scope, nothing deleted.
    let dry = Admin::new(&store)
        .sweep_expired(&SweepOptions::new().dry_run(true), |_| {})
        .await
        .unwrap();
    assert_eq!((dry.expired, dry.deleted, dry.skipped), (2, 0, 0));
    assert!(dry.dry_run);
    assert_eq!(dry.cutoff, t - 60);
    assert!(env.raw("app_old_lock").await.is_some());

    let last = AtomicU64::new(0);
    let r = Admin::new(&store)
        .sweep_expired(&SweepOptions::new(), |p| {
            last.store(p.deleted, Ordering::SeqCst)
        })
        .await
        .unwrap();
    assert_eq!((r.expired, r.deleted, r.skipped), (2, 2, 0));
    assert_eq!(last.load(Ordering::SeqCst), 2, "progress saw the deletes");
    assert!(env.raw("app_old_lock").await.is_none());
    assert!(env.raw("app_old_cache").await.is_none());
    assert!(env.raw("other_old").await.is_some(), "outside the prefix");
    assert!(env.raw("app_recent").await.is_some(), "within the grace");

    // Grace 0 and every item: what is strictly expired goes, the rest stays.
    let r = Admin::new(&store)
        .sweep_expired(
            &SweepOptions::new()
                .grace_secs(0)
                .scan(ScanOptions::new().scope(Scope::All).segments(3)),
            |_| {},
        )
        .await
        .unwrap();
    assert_eq!((r.expired, r.deleted), (2, 2));
    assert!(env.raw("app_recent").await.is_none());
    assert!(env.raw("other_old").await.is_none());
    for kept in ["app_live", "app_boundary", "app_forever"] {
        assert!(env.raw(kept).await.is_some(), "{kept} must stay");
    }
    // A lock still held by its owner is released normally afterwards.
    let lock = store.restore_lock("live", "y5lgfdhGNbGy3sTY").unwrap();
    assert!(lock.release().await.unwrap().is_released());

    let err = Admin::new(&store)
        .sweep_expired(&SweepOptions::new().grace_secs(-1), |_| {})
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
}

/// With `locks_older_than`, a sweep removes the live lock items that look taken with ttl 0 longer
/// ago (`3600 < expires_at - now < 86400 - D`), never a cache item or a younger lock; the report
/// lists each with its reason.
async fn sweep_removes_stuck_looking_locks_on_request(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let t = env.now();
    let owner = s(r#"s:16:"y5lgfdhGNbGy3sTY";"#);
    for (key, value, left) in [
        ("app_stuck", owner.clone(), 80_000),        // taken 6400 s ago
        ("app_young", owner.clone(), 85_000),        // 1400 s ago
        ("app_short", owner.clone(), 60),            // a short ttl, or its last minute
        ("app_cached", s("s:5:\"hello\";"), 80_000), // a cache item
        ("app_old", s("i:1;"), -1000),               // expired
    ] {
        env.put_raw(laravel_item(key, value, t + left)).await;
    }
    let sweep = |d: Option<i64>, dry_run: bool| {
        let opts = SweepOptions::new().locks_older_than(d).dry_run(dry_run);
        let admin = Admin::new(&store);
        async move { admin.sweep_expired(&opts, |_| {}).await }
    };
    let reasons = |r: &SweepReport| -> Vec<(String, &'static str, Option<bool>)> {
        let items = r.items.iter();
        items
            .map(|i| (i.item.key.clone(), i.reason.as_str(), i.removed))
            .collect()
    };
    // Without the rule only the expired item; 7200: not the lock taken 6400 s ago.
    assert_eq!(
        reasons(&sweep(None, true).await.unwrap()),
        [("app_old".into(), "expired", None)]
    );
    let r = sweep(Some(7200), true).await.unwrap();
    assert_eq!(
        (r.expired, r.stuck_locks, r.locks_older_than),
        (1, 0, Some(7200))
    );
    let r = sweep(Some(3600), false).await.unwrap();
    assert_eq!(
        reasons(&r),
        [
            ("app_old".into(), "expired", Some(true)),
            ("app_stuck".into(), "stuck_lock", Some(true))
        ]
    );
    assert_eq!(
        (r.expired, r.stuck_locks, r.deleted, r.skipped),
        (1, 1, 2, 0)
    );
    for (key, there) in [
        ("app_stuck", false),
        ("app_young", true),
        ("app_short", true),
        ("app_cached", true),
    ] {
        assert_eq!(env.raw(key).await.is_some(), there, "{key}");
    }
    let err = sweep(Some(-1), true).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Config);
    assert!(err.to_string().contains("0 or more seconds"), "{err}");
}

/// A sweep's lock rule removes a stuck-looking lock only while it is as the scan read it: one
/// taken over, refreshed or released between the scan and the delete stays, and so does one
/// taken during the sweep; the unchanged one goes. The fault proxy holds every DeleteItem of the
/// sweep for a second; the changes are made (straight to the server) once the Scan is answered.
async fn a_sweep_never_removes_a_lock_taken_or_changed_after_its_scan(server: Server) {
    let f = FaultyTable::new(server).await;
    let cfg = |b: ddblock::StoreConfigBuilder| {
        Store::new(
            b.prefix("app_")
                .layout(KeyLayout::Laravel12)
                .build()
                .unwrap(),
        )
    };
    let (through, direct) = (cfg(f.through()), cfg(f.direct()));
    let upstream = ddblock_test_support::client_for(&f.proxy.upstream);
    let t = through.now();
    // Four locks taken with ttl 0 some 6400 s ago: three by stock Laravel, one by ddblock (its
    // attempt id and fence are part of what must be unchanged).
    for name in ["kept", "retaken", "released"] {
        let owner = s(r#"s:16:"AAAAbbbbCCCCdddd";"#);
        let item = laravel_item(&format!("app_{name}"), owner, t + 80_000);
        ddblock_test_support::put_raw_item(&upstream, &f.table, item).await;
    }
    let mut item = laravel_item(
        "app_refreshed",
        s(r#"s:16:"EEEEffffGGGGhhhh";"#),
        t + 80_000,
    );
    item.insert("ddblock_attempt".into(), s("h7GpX2nRc5YtK0sE"));
    item.insert("ddblock_fence".into(), n(6));
    ddblock_test_support::put_raw_item(&upstream, &f.table, item).await;

    f.proxy.set_faults(FaultConfig {
        latency_ms: 1000,
        latency_ops: vec!["DeleteItem".to_owned()],
        ..FaultConfig::default()
    });
    let opts = SweepOptions::new()
        .locks_older_than(Some(0))
        .scan(ScanOptions::new().segments(1));
    let admin = Admin::new(&through);
    let sweep = tokio::spawn(async move { admin.sweep_expired(&opts, |_| {}).await });
    let start = Instant::now();
    while f
        .proxy
        .stats()
        .count("Scan", ddblock_fault_proxy::FORWARDED_OK)
        == 0
    {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the sweep never scanned"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // While the first DeleteItem is held: taken over (with a ttl that keeps it in the rule's
    // window), refreshed (likewise), released, and a new lock taken.
    assert!(direct
        .lock("retaken", 0)
        .unwrap()
        .force_release()
        .await
        .unwrap());
    let retaken = direct.lock("retaken", 80_000).unwrap();
    assert!(retaken.acquire().await.unwrap().is_acquired());
    let refreshed = direct
        .restore_lock("refreshed", "EEEEffffGGGGhhhh")
        .unwrap();
    assert!(refreshed.refresh(Some(81_000)).await.unwrap());
    assert!(direct
        .lock("released", 0)
        .unwrap()
        .force_release()
        .await
        .unwrap());
    let fresh = direct.lock("fresh", 0).unwrap();
    assert!(fresh.acquire().await.unwrap().is_acquired());
    assert_eq!(
        f.proxy.stats().total("DeleteItem"),
        0,
        "no delete of the sweep reached the server before the changes"
    );

    let r = sweep.await.unwrap().unwrap();
    let got: Vec<(&str, Option<bool>)> = r
        .items
        .iter()
        .map(|i| (i.item.key.as_str(), i.removed))
        .collect();
    assert_eq!(
        got,
        [
            ("app_kept", Some(true)),
            ("app_refreshed", Some(false)),
            ("app_released", Some(false)),
            ("app_retaken", Some(false)),
        ]
    );
    assert_eq!((r.stuck_locks, r.deleted, r.skipped), (4, 1, 3));
    assert!(r.items.iter().all(|i| i.reason == SweepReason::StuckLock));
    assert!(f.raw("app_kept").await.is_none());
    assert!(retaken.is_owned().await.unwrap(), "the new holder keeps it");
    assert!(
        refreshed.is_owned().await.unwrap(),
        "the refreshed holder keeps it"
    );
    assert!(f.raw("app_released").await.is_none());
    assert!(
        fresh.is_owned().await.unwrap(),
        "a lock taken during the sweep stays"
    );
}

on_servers!(
    sweep_deletes_only_expired_items,
    sweep_removes_stuck_looking_locks_on_request,
    a_sweep_never_removes_a_lock_taken_or_changed_after_its_scan,
);
