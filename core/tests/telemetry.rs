//! ddblock's metrics as an application with the OpenTelemetry SDK sees them (the SDK's in-memory
//! exporter), through the fault proxy in front of each server: every acquire, release, lost lease
//! and unknown outcome counted under its name and outcome (docs/observability.md).

mod common;

use std::time::Duration;

use common::{FaultyTable, Server};
use ddblock::{ErrorKind, Store, Wait};
use ddblock_fault_proxy::FaultConfig;
use ddblock_test_support::metrics::{count, install, Counts};

/// What this test's table recorded (every test of this binary shares the process's one meter
/// provider: each reads only its own table's points), after checking that a
/// [`ddblock::telemetry::Listener`] (what the Python and Node fronts forward) heard the same.
fn points(table: &str) -> Counts {
    let m = install();
    let sdk = m.counts(Some(table));
    assert_eq!(m.heard(table), sdk, "the listener and the SDK disagree");
    sdk
}

/// Acquired, held, timed out, cancelled; released, not held, held by another; the waits and holds.
async fn acquisitions_and_releases_are_counted_by_outcome(server: Server) {
    install();
    let f = FaultyTable::new(server).await;
    let store = Store::new(f.through().build().unwrap());
    let a = store.lock("counted", 60).unwrap();
    let b = store.lock("counted", 60).unwrap();
    assert!(a.acquire().await.unwrap().is_acquired());
    assert!(!b.acquire().await.unwrap().is_acquired());
    assert!(!b
        .acquire_within(Duration::from_millis(300))
        .await
        .unwrap()
        .is_acquired());
    // A wait its caller gives up on (an aborted request, a dropped future).
    let gave_up =
        tokio::time::timeout(Duration::from_millis(200), b.acquire_within(Wait::Forever)).await;
    assert!(gave_up.is_err(), "the wait was cut short");
    assert!(a.release().await.unwrap().is_released());
    assert!(!a.release().await.unwrap().is_released());
    assert!(b.acquire().await.unwrap().is_acquired());
    assert!(!a.release().await.unwrap().is_released());

    let p = points(&f.table);
    let acq = "ddblock.lock.acquisitions";
    assert_eq!(count(&p, acq, "acquired"), 2, "{p:?}");
    assert_eq!(count(&p, acq, "held"), 1, "{p:?}");
    assert_eq!(count(&p, acq, "timed_out"), 1, "{p:?}");
    assert_eq!(count(&p, acq, "cancelled"), 1, "{p:?}");
    // Every acquire write and its answer: the two that took it and the one refused to the acquire
    // that tried once (the waits beside a holder in this process mostly write nothing: they wait
    // for its release here).
    let writes = "ddblock.lock.acquire_writes";
    assert_eq!(count(&p, writes, "written"), 2, "{p:?}");
    assert!(count(&p, writes, "refused") >= 1, "{p:?}");
    let rel = "ddblock.lock.releases";
    assert_eq!(count(&p, rel, "released"), 1, "{p:?}");
    assert_eq!(count(&p, rel, "not_held"), 1, "{p:?}");
    assert_eq!(count(&p, rel, "other_owner"), 1, "{p:?}");
    // Two waits (timed out, cancelled); one hold (the release that released).
    let waits: u64 = ["timed_out", "cancelled"]
        .iter()
        .map(|o| count(&p, "ddblock.lock.wait.duration", o))
        .sum();
    assert_eq!(waits, 2, "{p:?}");
    assert_eq!(
        count(&p, "ddblock.lock.hold.duration", "released"),
        1,
        "{p:?}"
    );
    // Buckets for seconds, as the table advises (the SDK's default ones are made for ms).
    let bounds = install().bounds("ddblock.lock.hold.duration");
    assert_eq!(
        bounds,
        ddblock::telemetry::DURATION_BOUNDARIES,
        "{bounds:?}"
    );
}

/// A heartbeat whose lock was taken from it counts a lost lease, and so does a release whose first
/// send finds the lock removed, once per loss; an acquire whose every answer is lost counts an
/// unknown outcome whose clean-up left nothing.
async fn lost_leases_and_unknown_outcomes_are_counted(server: Server) {
    install();
    let f = FaultyTable::new(server).await;
    let cfg = f
        .through()
        .max_attempts(2)
        .attempt_timeout(Duration::from_millis(400));
    let store = Store::new(
        cfg.heartbeat_interval(Duration::from_millis(100))
            .build()
            .unwrap(),
    );
    let lock = store.lock("leased", 60).unwrap();
    assert!(lock.acquire().await.unwrap().is_acquired());
    let beat = lock.heartbeat();
    let other = Store::new(f.direct().build().unwrap());
    assert!(other
        .lock("leased", 60)
        .unwrap()
        .force_release()
        .await
        .unwrap());
    tokio::time::timeout(Duration::from_secs(10), beat.lost())
        .await
        .expect("the lease was lost");
    // A body whose heartbeat saw the loss: its release finds the lock gone too, and the loss is
    // counted once, by the heartbeat.
    let held = store
        .lock("held", 60)
        .unwrap()
        .enter(Duration::ZERO)
        .await
        .unwrap();
    other
        .lock("held", 60)
        .unwrap()
        .force_release()
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), held.lease().lost())
        .await
        .expect("the heartbeat saw it");
    assert_eq!(
        held.finish().await.unwrap_err().kind(),
        ErrorKind::LeaseLost
    );
    // A plain release whose first send finds the lock removed under it counts one.
    let removed = store.lock("removed", 60).unwrap();
    assert!(removed.acquire().await.unwrap().is_acquired());
    other
        .lock("removed", 60)
        .unwrap()
        .force_release()
        .await
        .unwrap();
    let err = removed.release().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LeaseLost, "{err}");

    f.proxy.set_faults(FaultConfig {
        drop_response_rate: 1.0,
        drop_ops: vec!["UpdateItem".to_owned()],
        ..FaultConfig::default()
    });
    let err = store
        .lock("unknown", 60)
        .unwrap()
        .acquire()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{err}");

    let p = points(&f.table);
    // The heartbeat, the body's heartbeat (not its release again), the plain release.
    assert_eq!(count(&p, "ddblock.lock.lease_lost", ""), 3, "{p:?}");
    // The lost answers: the first write and its resend.
    let writes = "ddblock.lock.acquire_writes";
    assert_eq!(count(&p, writes, "unknown"), 2, "{p:?}");
    assert_eq!(
        count(&p, "ddblock.lock.unknown_outcomes", "clean"),
        1,
        "{p:?}"
    );
    assert_eq!(
        count(&p, "ddblock.lock.acquisitions", "unknown"),
        1,
        "{p:?}"
    );
}

/// A release whose first answer is lost: its resend finds its own delete done, so it counts as
/// `not_held` (the meaning says so), once, and nothing fails.
async fn a_release_whose_answer_was_lost_counts_once(server: Server) {
    install();
    let f = FaultyTable::new(server).await;
    let store = Store::new(f.through().build().unwrap());
    let lock = store.lock("lost-answer", 60).unwrap();
    assert!(lock.acquire().await.unwrap().is_acquired());
    f.proxy.set_faults(FaultConfig {
        sequence: [("DeleteItem".to_owned(), vec!["drop".to_owned()])].into(),
        ..FaultConfig::default()
    });
    let out = lock.release().await.unwrap();
    assert!(
        !out.is_released(),
        "the resend found the delete done: {out:?}"
    );
    let p = points(&f.table);
    assert_eq!(count(&p, "ddblock.lock.releases", "not_held"), 1, "{p:?}");
    assert_eq!(count(&p, "ddblock.lock.releases", "released"), 0, "{p:?}");
    assert_eq!(
        count(&p, "ddblock.lock.hold.duration", "not_held"),
        1,
        "{p:?}"
    );
}

/// Once-only claims by outcome: the winner, a duplicate while it runs, one after it is done.
async fn once_claims_are_counted_by_outcome(server: Server) {
    install();
    let f = FaultyTable::new(server).await;
    let store = Store::new(f.through().build().unwrap());
    let once = store.once("order-42", 60).unwrap();
    let won = once.claim().await.unwrap();
    assert!(won.is_claimed());
    assert!(!once.claim().await.unwrap().is_claimed(), "in progress");
    won.claim().unwrap().done().await.unwrap();
    assert!(!once.claim().await.unwrap().is_claimed(), "done");

    let p = points(&f.table);
    let claims = "ddblock.once.claims";
    assert_eq!(count(&p, claims, "claimed"), 1, "{p:?}");
    assert_eq!(count(&p, claims, "in_progress"), 1, "{p:?}");
    assert_eq!(count(&p, claims, "done"), 1, "{p:?}");
}

common::on_servers!(
    once_claims_are_counted_by_outcome,
    acquisitions_and_releases_are_counted_by_outcome,
    lost_leases_and_unknown_outcomes_are_counted,
    a_release_whose_answer_was_lost_counts_once,
);
