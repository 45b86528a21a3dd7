//! Versioned compare-and-set against real local servers: versions in Laravel's items, conflicts,
//! Laravel writes in between, expiry, the update helper under contention, and bad input.

mod common;

use std::sync::Arc;

use common::{n, on_servers, Env, Server};
use ddblock::cas::DEFAULT_CAS_ATTEMPTS;
use ddblock::{Backoff, CasOptions, CasOutcome, ErrorKind, KeyLayout, PhpValue, Store, Versioned};

fn int(v: Option<&PhpValue>) -> i64 {
    match v {
        None => 0,
        Some(PhpValue::Int(i)) => *i,
        Some(other) => panic!("not an int: {other:?}"),
    }
}

/// `put_if_version` of `value` where `version` is expected.
async fn if_version(
    store: &Store,
    key: &str,
    value: PhpValue,
    ttl: i64,
    version: u64,
) -> CasOutcome {
    store
        .put_if_version(key, &value, ttl, version)
        .await
        .unwrap()
}

/// Writes `key` where no version is expected (version 0) and returns the version written.
async fn create(store: &Store, key: &str, value: PhpValue, ttl: i64) -> u64 {
    if_version(store, key, value, ttl, 0)
        .await
        .version()
        .unwrap()
}

/// `put_if_unchanged` of `value` over what `seen` read.
async fn unchanged(
    store: &Store,
    key: &str,
    seen: &Versioned,
    value: PhpValue,
    ttl: i64,
) -> CasOutcome {
    store
        .put_if_unchanged(key, seen, &value, ttl)
        .await
        .unwrap()
}

fn fast() -> CasOptions {
    CasOptions::new().backoff(Backoff {
        initial: std::time::Duration::from_millis(2),
        max: std::time::Duration::from_millis(20),
        multiplier: 2.0,
        jitter: 0.5,
    })
}

async fn versions_live_beside_laravels_attributes(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let t = env.now();
    let missing = store.get_versioned("stock").await.unwrap();
    assert_eq!((missing.value, missing.version), (None, 0));
    let v1 = match if_version(&store, "stock", PhpValue::Int(10), 60, 0).await {
        CasOutcome::Written { version } => version,
        CasOutcome::Conflict => panic!("conflict on a new item"),
    };
    assert!(
        v1 > 1_700_000_000_000_000,
        "a first version is the time in µs: {v1}"
    );
    let item = env.raw("app_stock").await.unwrap();
    assert_eq!(item["value"], n(10));
    assert_eq!(item["expires_at"], n(t + 60));
    assert_eq!(item["ddblock_version"], n(v1));
    let writes = item["ddblock_writes"].as_m().unwrap();
    assert_eq!(writes.len(), 1);
    assert_eq!(writes[&(v1 % 8).to_string()].as_s().unwrap().len(), 12);
    // Laravel's get reads it as any entry.
    assert_eq!(store.get("stock").await.unwrap(), Some(PhpValue::Int(10)));

    let read = store.get_versioned("stock").await.unwrap();
    assert_eq!(
        (read.value.clone(), read.version),
        (Some(PhpValue::Int(10)), v1)
    );
    let out = if_version(&store, "stock", PhpValue::Int(9), 60, v1).await;
    assert_eq!(out, CasOutcome::Written { version: v1 + 1 });
    assert_eq!(
        if_version(&store, "stock", PhpValue::Int(8), 60, v1).await,
        CasOutcome::Conflict,
        "a stale version"
    );
    assert_eq!(
        unchanged(&store, "stock", &read, PhpValue::Int(8), 60).await,
        CasOutcome::Conflict,
        "a stale read"
    );
    let item = env.raw("app_stock").await.unwrap();
    assert_eq!(item["value"], n(9));
    assert_eq!(item["ddblock_writes"].as_m().unwrap().len(), 2);
}

async fn a_laravel_put_in_between_fails_the_next_write(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel8);
    let v = create(&store, "cfg", PhpValue::from("a"), 60).await;
    let read = store.get_versioned("cfg").await.unwrap();
    // Laravel's put: a whole new item without the version.
    store
        .put("cfg", &PhpValue::from("laravel"), 60)
        .await
        .unwrap();
    assert!(!env
        .raw("app_:cfg")
        .await
        .unwrap()
        .contains_key("ddblock_version"));
    for out in [
        if_version(&store, "cfg", PhpValue::from("b"), 60, v).await,
        unchanged(&store, "cfg", &read, PhpValue::from("b"), 60).await,
    ] {
        assert_eq!(out, CasOutcome::Conflict);
    }
    assert_eq!(
        store.get("cfg").await.unwrap(),
        Some(PhpValue::from("laravel"))
    );
    // Read again: version 0 (an item Laravel wrote), its value; writing on it works.
    let again = store.get_versioned("cfg").await.unwrap();
    assert_eq!(
        (again.value.clone(), again.version),
        (Some(PhpValue::from("laravel")), 0)
    );
    // ... unless Laravel puts once more in between: the read value no longer matches.
    store
        .put("cfg", &PhpValue::from("laravel 2"), 60)
        .await
        .unwrap();
    assert_eq!(
        unchanged(&store, "cfg", &again, PhpValue::from("c"), 60).await,
        CasOutcome::Conflict
    );
    // A bare version 0 only asks for "no version": it replaces the item Laravel wrote.
    let w = create(&store, "cfg", PhpValue::from("c"), 60).await;
    assert!(w > v, "versions never repeat: {w} after {v}");
}

async fn in_place_changes_keep_the_version_but_fail_unchanged(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let v = create(&store, "n", PhpValue::Int(5), 60).await;
    let read = store.get_versioned("n").await.unwrap();
    // Laravel's increment is an UpdateItem of the value: the version stays.
    assert_eq!(store.increment("n", 1).await.unwrap(), Some(6));
    assert_eq!(store.get_versioned("n").await.unwrap().version, v);
    assert_eq!(
        unchanged(&store, "n", &read, PhpValue::Int(50), 60).await,
        CasOutcome::Conflict,
        "the value changed"
    );
    // put_if_version checks the version only (documented): it overwrites the increment.
    assert!(matches!(
        if_version(&store, "n", PhpValue::Int(50), 60, v).await,
        CasOutcome::Written { .. }
    ));
}

async fn expired_entries_read_as_missing_and_keep_their_version(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let v = create(&store, "e", PhpValue::Int(1), 10).await;
    env.clock.advance(10);
    let read = store.get_versioned("e").await.unwrap();
    assert_eq!(
        (read.value.clone(), read.version),
        (None, v),
        "expired at now >= expires_at"
    );
    assert_eq!(
        unchanged(&store, "e", &read, PhpValue::Int(2), 10).await,
        CasOutcome::Written { version: v + 1 }
    );
    // A read of a missing key expects it missing.
    let none = store.get_versioned("fresh").await.unwrap();
    store.put("fresh", &PhpValue::Int(1), 60).await.unwrap();
    assert_eq!(
        unchanged(&store, "fresh", &none, PhpValue::Int(2), 60).await,
        CasOutcome::Conflict
    );
}

async fn concurrent_updates_lose_nothing(server: Server) {
    let env = Env::new(server).await;
    let store = Arc::new(env.store(KeyLayout::Laravel12));
    let (tasks_n, each) = (8, 10);
    let opts = fast().attempts(1000);
    let mut tasks = Vec::new();
    for _ in 0..tasks_n {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..each {
                store
                    .update_with("counter", 60, &opts, |v| PhpValue::Int(int(v) + 1))
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let end = store.get_versioned("counter").await.unwrap();
    assert_eq!(int(end.value.as_ref()), tasks_n * each);
}

async fn update_gives_up_with_a_conflict(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let other = store.clone();
    // Each round, a Laravel put lands between our read and our write.
    let mut rounds = 0;
    let err = store
        .update_with("k", 60, &fast().attempts(3), |v| {
            rounds += 1;
            let o = other.clone();
            tokio::task::block_in_place(|| {
                tokio::runtime::Handle::current()
                    .block_on(o.put("k", &PhpValue::Int(rounds), 60))
                    .unwrap()
            });
            PhpValue::Int(int(v) + 100)
        })
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    assert_eq!(rounds, 3);
    assert!(err.to_string().contains("each of 3 attempts"), "{err}");
    assert_eq!(
        store.get("k").await.unwrap(),
        Some(PhpValue::Int(3)),
        "only Laravel's writes"
    );
    // With room to retry, the update lands on top of the last Laravel write.
    let up = store
        .update_with("k", 60, &fast(), |v| PhpValue::Int(int(v) + 100))
        .await
        .unwrap();
    assert_eq!(up.value, Some(PhpValue::Int(103)));
    assert_eq!(store.get_versioned("k").await.unwrap().version, up.version);
}

async fn bad_input(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let e = store.get_versioned("").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidKey);
    let e = store
        .update_with("k", 60, &CasOptions::new().attempts(0), |_| PhpValue::Null)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config);
    let e = store
        .update("k", i64::MAX, |_| PhpValue::Null)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidTtl);
    assert_eq!(DEFAULT_CAS_ATTEMPTS, 10);
    // A value PHP cannot hold is refused before any request.
    let e = store
        .put_if_version("k", &PhpValue::Float(f64::NAN), 60, 0)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Codec);
    assert!(env.raw("app_k").await.is_none(), "nothing was written");
}

on_servers!(
    versions_live_beside_laravels_attributes,
    a_laravel_put_in_between_fails_the_next_write,
    in_place_changes_keep_the_version_but_fail_unchanged,
    expired_entries_read_as_missing_and_keep_their_version,
    concurrent_updates_lose_nothing,
    update_gives_up_with_a_conflict,
    bad_input,
);
