//! Tables that span Regions (docs/semantics.md "Multi-Region"), through the fault proxy, which
//! gives `DescribeTable` a global table's fields, denies it, or answers a write with MRSC's
//! `ReplicatedWriteConflictException` (no local server has global tables): a global table with
//! eventual consistency (MREC) is refused with a `Config` error by every lock operation unless
//! allowed; one with strong consistency (MRSC) locks; the table is described once per process
//! and table, so a lock cycle stays two requests; a denied DescribeTable lets locks go on; a
//! replicated write conflict is retried like a throttle, a try-once acquire included.

mod common;

use common::{on_servers, FaultyTable, Server};
use ddblock::{AcquireOutcome, ErrorKind, ReleaseOutcome, Store, StoreConfigBuilder};
use ddblock_fault_proxy::{FaultConfig, ACCESS_DENIED, FORWARDED_OK, REPLICATED_CONFLICT};
use ddblock_test_support::faulty::global_table;
use serde_json::{Map, Value};

/// The fault proxy describing the table with `describe`, with `sequence` scripted.
fn faults(describe: Map<String, Value>, sequence: &[(&str, &[&str])]) -> FaultConfig {
    FaultConfig {
        describe_table: describe,
        sequence: sequence
            .iter()
            .map(|(op, f)| (op.to_string(), f.iter().map(|s| s.to_string()).collect()))
            .collect(),
        ..FaultConfig::default()
    }
}

fn store_of(b: StoreConfigBuilder) -> Store {
    Store::new(b.prefix("app_").build().unwrap())
}

fn acquired(o: AcquireOutcome) -> bool {
    matches!(o, AcquireOutcome::Acquired { .. })
}

/// MREC, `MultiRegionConsistency` absent or `EVENTUAL`: every lock operation is a `Config` error
/// saying what, why and how to fix it, and nothing is written; one DescribeTable for all of them.
/// `allow_eventual_global_table` lets locks go on.
async fn an_eventual_global_table_refuses_every_lock_operation(server: Server) {
    for consistency in [None, Some("EVENTUAL")] {
        let f = FaultyTable::new(server).await;
        f.proxy.set_faults(faults(global_table(consistency), &[]));
        let store = store_of(f.through());
        let lock = store.lock("mrec", 30).unwrap();
        let errors = [
            lock.acquire().await.map(|_| ()).unwrap_err(),
            lock.release().await.map(|_| ()).unwrap_err(),
            lock.refresh(None).await.map(|_| ()).unwrap_err(),
            lock.is_locked().await.map(|_| ()).unwrap_err(),
            lock.force_release().await.map(|_| ()).unwrap_err(),
        ];
        for e in &errors {
            assert_eq!(e.kind(), ErrorKind::Config, "{e}");
            let msg = e.to_string();
            for says in [
                &f.table,
                "multi-Region eventual consistency (MREC",
                "us-east-1, eu-west-1",
                "two Regions can hold the same lock",
                "multi-Region strong consistency (MRSC",
                "single-Region table",
                "DDBLOCK_ALLOW_EVENTUAL_GLOBAL_TABLE=true",
            ] {
                assert!(msg.contains(says), "says {says:?}: {msg}");
            }
        }
        let stats = f.proxy.stats();
        assert_eq!(stats.total("DescribeTable"), 1, "{stats:?}");
        assert_eq!(stats.grand_total(), 1, "nothing but the check: {stats:?}");
        assert!(f.raw("app_mrec").await.is_none());
        // Someone who pins every writer to one Region goes on.
        let allowed = store_of(f.through().allow_eventual_global_table(true));
        let lock = allowed.lock("mrec", 30).unwrap();
        assert!(acquired(lock.acquire().await.unwrap()));
        assert_eq!(lock.release().await.unwrap(), ReleaseOutcome::Released);
    }
}

/// MRSC (`STRONG`) and a single-Region table lock as before; the table is described once per
/// process and table (another store on it included), and each uncontended cycle after that is
/// its two requests.
async fn a_strong_or_single_region_table_locks_with_one_describe_per_process(server: Server) {
    for describe in [global_table(Some("STRONG")), Map::new()] {
        let f = FaultyTable::new(server).await;
        f.proxy.set_faults(faults(describe, &[]));
        let lock = store_of(f.through()).lock("one", 30).unwrap();
        assert!(acquired(lock.acquire().await.unwrap()));
        assert_eq!(lock.release().await.unwrap(), ReleaseOutcome::Released);
        assert_eq!(f.proxy.stats().total("DescribeTable"), 1);
        f.proxy.reset();
        let other = store_of(f.through());
        for i in 0..5 {
            let lock = other.lock(&format!("cycle{i}"), 30).unwrap();
            assert!(acquired(lock.acquire().await.unwrap()));
            assert_eq!(lock.release().await.unwrap(), ReleaseOutcome::Released);
        }
        let stats = f.proxy.stats();
        assert_eq!(stats.total("DescribeTable"), 0, "{stats:?}");
        assert_eq!(stats.grand_total(), 10, "two requests a cycle: {stats:?}");
    }
}

/// A policy without `dynamodb:DescribeTable`: the locks go on (the warning, once per process, is
/// tested through Python's logging), and the denied check is not asked again.
async fn a_denied_describe_table_lets_locks_go_on(server: Server) {
    let f = FaultyTable::new(server).await;
    f.proxy.set_faults(FaultConfig {
        deny_ops: vec!["DescribeTable".into()],
        ..FaultConfig::default()
    });
    let store = store_of(f.through());
    for i in 0..3 {
        let lock = store.lock(&format!("denied{i}"), 30).unwrap();
        assert!(acquired(lock.acquire().await.unwrap()));
        assert_eq!(lock.release().await.unwrap(), ReleaseOutcome::Released);
    }
    let stats = f.proxy.stats();
    assert_eq!(stats.count("DescribeTable", ACCESS_DENIED), 1, "{stats:?}");
    assert_eq!(stats.total("DescribeTable"), 1, "{stats:?}");
}

/// MRSC's `ReplicatedWriteConflictException` is a write refused before it landed: a try-once
/// acquire sends it again (up to its tries) and takes the lock; a release's DeleteItem is sent
/// again by the SDK. Conflicts on every try end in the service error, with no clean-up (nothing
/// landed) and no `OutcomeUnknown`.
async fn a_replicated_write_conflict_is_retried(server: Server) {
    let f = FaultyTable::new(server).await;
    let conflict = "replicated_conflict";
    f.proxy.set_faults(faults(
        global_table(Some("STRONG")),
        &[
            ("UpdateItem", &[conflict, conflict]),
            ("DeleteItem", &[conflict]),
        ],
    ));
    let store = store_of(f.through());
    let lock = store.lock("conflict", 30).unwrap();
    assert!(acquired(lock.acquire().await.unwrap()));
    assert_eq!(lock.release().await.unwrap(), ReleaseOutcome::Released);
    let stats = f.proxy.stats();
    assert_eq!(
        stats.count("UpdateItem", REPLICATED_CONFLICT),
        2,
        "{stats:?}"
    );
    assert_eq!(stats.count("UpdateItem", FORWARDED_OK), 1, "{stats:?}");
    assert_eq!(
        stats.count("DeleteItem", REPLICATED_CONFLICT),
        1,
        "{stats:?}"
    );
    assert_eq!(stats.count("DeleteItem", FORWARDED_OK), 1, "{stats:?}");
    f.proxy.set_faults(faults(
        global_table(Some("STRONG")),
        &[("UpdateItem", &[conflict, conflict, conflict])],
    ));
    let err = lock.acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Service, "{err}");
    assert_eq!(err.code(), Some("ReplicatedWriteConflictException"));
    assert!(err.to_string().contains("did not land"), "{err}");
    let stats = f.proxy.stats();
    assert_eq!(
        stats.count("UpdateItem", REPLICATED_CONFLICT),
        3,
        "{stats:?}"
    );
    assert_eq!(stats.grand_total(), 3, "no clean-up: {stats:?}");
}

on_servers!(
    an_eventual_global_table_refuses_every_lock_operation,
    a_strong_or_single_region_table_locks_with_one_describe_per_process,
    a_denied_describe_table_lets_locks_go_on,
    a_replicated_write_conflict_is_retried,
);
