//! Leases that never admit two holders and never strand a lock (issue 11), through the fault
//! proxy in front of moto and dynalite: own-write recovery only for this attempt, ambiguous
//! outcomes cleaned up, cancellation, per-attempt deadlines, heartbeats and lease loss, and the
//! requests a release and a scan send. Fences, expiry and the clock-skew margin:
//! fencing_and_expiry.rs.

mod common;

use std::time::{Duration, Instant};

use common::{on_servers, FaultyTable, Server};
use ddblock::{AcquireOutcome, ErrorKind, ReleaseOutcome, Store, StoreConfigBuilder};
use ddblock_fault_proxy::{FaultConfig, DROPPED};

/// A config through the proxy: 2 attempts per request, short attempt timeouts.
fn config(f: &FaultyTable) -> StoreConfigBuilder {
    f.through()
        .max_attempts(2)
        .attempt_timeout(Duration::from_millis(400))
}

/// A store through the proxy whose client ddblock builds (so the attempt timeout applies).
fn store(f: &FaultyTable) -> Store {
    Store::new(config(f).build().unwrap())
}

/// A store through the proxy whose locks refresh their lease every `interval`.
fn heartbeating(f: &FaultyTable, interval: Duration) -> Store {
    Store::new(config(f).heartbeat_interval(interval).build().unwrap())
}

/// A store of the same table, straight to the server.
fn direct(f: &FaultyTable) -> Store {
    Store::new(f.direct().build().unwrap())
}

fn on(op: &str) -> Vec<String> {
    vec![op.to_owned()]
}

/// The next requests of `op` get `faults`, in order (`drop`, `reset`, `throttle`, ...).
fn scripted(op: &str, faults: &[&str]) -> FaultConfig {
    let faults = faults.iter().map(|f| (*f).to_owned()).collect();
    FaultConfig {
        sequence: [(op.to_owned(), faults)].into(),
        ..FaultConfig::default()
    }
}

// ---- own-write recovery ----------------------------------------------------------------------

/// The SDK's retry of a write whose answer was lost finds this attempt's own item: recovered.
async fn a_lost_answer_is_recovered_as_this_attempts_write(server: Server) {
    let f = FaultyTable::new(server).await;
    let store = store(&f);
    // seed 6 with rate 0.5: the first UpdateItem's answer is dropped, the retry answered.
    f.proxy.set_faults(FaultConfig {
        seed: 6,
        drop_response_rate: 0.5,
        drop_ops: on("UpdateItem"),
        ..FaultConfig::default()
    });
    let lock = store.lock("orders", 30).unwrap();
    let out = lock.acquire().await.unwrap();
    assert_eq!(f.proxy.stats().count("UpdateItem", DROPPED), 1);
    match out {
        AcquireOutcome::Acquired {
            recovered: true,
            fence: Some(fence),
            ..
        } => assert_eq!(lock.fence(), Some(fence)),
        other => panic!("expected our own write recovered, got {other:?}"),
    }
    assert!(lock.remaining().unwrap() > Duration::from_secs(27));
    // A second handle with the same owner (Laravel's restoreLock, another process) is refused.
    let twin = store.lock_with_owner("orders", 30, lock.owner()).unwrap();
    f.proxy.set_faults(FaultConfig::default());
    assert!(!twin.acquire().await.unwrap().is_acquired());
}

/// A wait of zero is "try once": the same path as `acquire()`, so a lost answer is sent again and
/// the write recovered, as in every front (issue 22: Python's `timeout=0` and Node's `withLock`
/// default raised `OutcomeUnknown` where `acquire()` got the lock).
async fn a_zero_wait_is_try_once_and_resends_after_a_lost_answer(server: Server) {
    let f = FaultyTable::new(server).await;
    let store = store(&f);
    f.proxy.set_faults(scripted("UpdateItem", &["drop"]));
    let lock = store.lock("zero-wait", 30).unwrap();
    let out = lock.acquire_within(Some(Duration::ZERO)).await.unwrap();
    assert!(
        matches!(
            out,
            AcquireOutcome::Acquired {
                recovered: true,
                ..
            }
        ),
        "{out:?}"
    );
    assert_eq!(f.proxy.stats().count("UpdateItem", DROPPED), 1);
    assert!(lock.release().await.unwrap().is_released());
}

/// A write that landed unanswered and whose resends are then refused (throttled) is still this
/// attempt's: it is recovered or cleaned up, never left behind under a plain error. (The SDK's own
/// retries hid the reset from the core: the final throttling error read as "nothing written".)
async fn an_unanswered_write_followed_by_throttling_is_not_left_behind(server: Server) {
    let f = FaultyTable::new(server).await;
    let store = Store::new(config(&f).max_attempts(3).build().unwrap());
    f.proxy
        .set_faults(scripted("UpdateItem", &["reset", "throttle", "throttle"]));
    let lock = store.lock("orders", 30).unwrap();
    let key = lock.key().to_owned();
    match lock.acquire().await {
        Ok(AcquireOutcome::Acquired { recovered, .. }) => {
            assert!(recovered, "the first write landed: its resend recovers it");
            assert!(lock.release().await.unwrap().is_released());
        }
        Ok(AcquireOutcome::Held(h)) => panic!("held by {h:?}: our own write"),
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::OutcomeUnknown, "{e}");
            assert!(f.until_gone(&key).await, "the clean-up deleted it");
        }
    }
    assert!(f.raw(&key).await.is_none(), "no lock left behind");
}

// ---- ambiguous outcomes ----------------------------------------------------------------------

/// Every answer of the acquire's write is lost (dropped, reset, or later than the attempt
/// timeout): the acquire gives up with OutcomeUnknown and deletes its own write again.
async fn an_acquire_whose_outcome_stays_unknown_cleans_up(server: Server) {
    let faults = [
        (
            "dropped answers",
            FaultConfig {
                drop_response_rate: 1.0,
                drop_ops: on("UpdateItem"),
                ..FaultConfig::default()
            },
        ),
        (
            "reset connections",
            FaultConfig {
                reset_response_rate: 1.0,
                reset_ops: on("UpdateItem"),
                ..FaultConfig::default()
            },
        ),
        (
            "answers later than the attempt timeout",
            FaultConfig {
                delay_response_ms: 1_000,
                delay_response_ops: on("UpdateItem"),
                ..FaultConfig::default()
            },
        ),
    ];
    for (what, fault) in faults {
        let f = FaultyTable::new(server).await;
        f.proxy.set_faults(fault);
        let lock = store(&f).lock("orders", 3600).unwrap();
        let err = lock.acquire().await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{what}: {err}");
        let msg = err.to_string();
        assert!(
            msg.contains("landed and was deleted again") || msg.contains("did not land"),
            "{what}: says what the clean-up found: {msg}"
        );
        assert!(!msg.contains(lock.owner()), "no owner in messages: {msg}");
        assert!(
            f.until_gone("orders").await,
            "{what}: the lock is not stranded"
        );
    }
}

/// When the clean-up is lost too, the error says until when the lock can stay: the expiry of the
/// write that landed, not the time of the failure.
async fn a_failed_clean_up_names_the_expiry_of_the_write(server: Server) {
    let f = FaultyTable::new(server).await;
    f.proxy.set_faults(FaultConfig {
        drop_response_rate: 1.0,
        drop_ops: on("UpdateItem"),
        drop_request_rate: 1.0,
        drop_request_ops: on("DeleteItem"),
        ..FaultConfig::default()
    });
    let lock = store(&f).lock("orders", 3600).unwrap();
    let err = lock.acquire().await.unwrap_err();
    assert!(err.to_string().contains("failed too"), "{err}");
    assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{err}");
    let msg = err.to_string();
    let item = f.raw("orders").await.expect("the write landed and stays");
    let expires_at: i64 = item["expires_at"].as_n().unwrap().parse().unwrap();
    assert!(
        msg.contains(&ddblock::time::utc(expires_at))
            || msg.contains(&ddblock::time::utc(expires_at + 1)),
        "names the expiry {}: {msg}",
        ddblock::time::utc(expires_at)
    );
}

/// `block(timeout)` ends within one attempt timeout of its deadline, even when every request
/// hangs far longer.
async fn block_ends_within_one_attempt_timeout_of_its_deadline(server: Server) {
    let f = FaultyTable::new(server).await;
    let holder = direct(&f).lock("busy", 60).unwrap();
    assert!(holder.acquire().await.unwrap().is_acquired());
    f.proxy.set_faults(FaultConfig {
        latency_ms: 3_000,
        latency_ops: on("UpdateItem"),
        ..FaultConfig::default()
    });
    let lock = store(&f).lock("busy", 60).unwrap();
    let start = Instant::now();
    let err = lock.block(Duration::from_secs(1)).await.unwrap_err();
    let took = start.elapsed();
    assert!(
        matches!(
            err.kind(),
            ErrorKind::LockTimeout | ErrorKind::OutcomeUnknown
        ),
        "{err}"
    );
    // deadline 1 s + one attempt timeout 0.4 s (+ the clean-up request and scheduling slack)
    assert!(took < Duration::from_millis(1_900), "took {took:?}");
}

// ---- cancellation ----------------------------------------------------------------------------

/// Cancelling an acquire at any point (before the write is sent, while it is in flight, after it
/// landed but before its answer) never leaves a lock it took.
async fn a_cancelled_acquire_leaves_no_lock(server: Server) {
    for cancel_after_ms in [0u64, 20, 150, 300, 500] {
        let f = FaultyTable::new(server).await;
        f.proxy.set_faults(FaultConfig {
            delay_response_ms: 300,
            delay_response_ops: on("UpdateItem"),
            ..FaultConfig::default()
        });
        let lock = store(&f).lock("orders", 3600).unwrap();
        let l2 = lock.clone();
        let task = tokio::spawn(async move { l2.acquire().await });
        tokio::time::sleep(Duration::from_millis(cancel_after_ms)).await;
        task.abort();
        let finished = task.await;
        if let Ok(Ok(out)) = &finished {
            // It finished before the cancel: it holds the lock by design; release it.
            assert!(out.is_acquired(), "{out:?}");
            lock.release().await.unwrap();
        }
        assert!(
            f.until_gone("orders").await,
            "cancelled after {cancel_after_ms} ms: the lock must not stay"
        );
    }
}

/// Cancelling `with_lock` during the work releases the lock (the guard's drop).
async fn a_cancelled_with_lock_releases(server: Server) {
    let f = FaultyTable::new(server).await;
    let lock = store(&f).lock("job", 3600).unwrap();
    let (started_tx, started_rx) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(lock.with_lock(Duration::from_secs(5), |_lease| async move {
        let _ = started_tx.send(());
        tokio::time::sleep(Duration::from_secs(30)).await;
    }));
    started_rx.await.unwrap();
    assert!(f.raw("job").await.is_some(), "held during the work");
    task.abort();
    let _ = task.await;
    assert!(f.until_gone("job").await, "released after the cancel");
}

// ---- leases: heartbeat, lease loss, with_lock ------------------------------------------------

/// A heartbeat keeps a lease past its ttl; `with_lock` returns the work's value.
async fn a_heartbeat_keeps_the_lease_past_its_ttl(server: Server) {
    let f = FaultyTable::new(server).await;
    let store = heartbeating(&f, Duration::from_millis(400));
    let lock = store.lock("long", 2).unwrap();
    let value = lock
        .with_lock(Duration::from_secs(5), |lease| async move {
            tokio::time::sleep(Duration::from_millis(3_500)).await;
            assert!(!lease.is_lost());
            assert!(
                lease.lock().is_owned().await.unwrap(),
                "still ours past the ttl"
            );
            assert!(lease.remaining() > Duration::ZERO);
            7
        })
        .await
        .unwrap();
    assert_eq!(value, 7);
    assert!(f.raw("long").await.is_none(), "released");
}

/// Someone else takes the lock during the work: `with_lock` says LeaseLost (never silently) and
/// keeps the work's value; the work could see it coming on `lease.lost()`.
async fn with_lock_reports_a_lost_lease_and_keeps_the_value(server: Server) {
    let f = FaultyTable::new(server).await;
    let store = heartbeating(&f, Duration::from_millis(200));
    let direct = direct(&f);
    let err = store
        .lock("job", 30)
        .unwrap()
        .with_lock(Duration::from_secs(5), |lease| async move {
            direct
                .lock("job", 30)
                .unwrap()
                .force_release()
                .await
                .unwrap();
            let reason = tokio::time::timeout(Duration::from_secs(3), lease.lost())
                .await
                .expect("the heartbeat reports the loss");
            assert!(reason.contains("no longer ours"), "{reason}");
            "the work's value"
        })
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LeaseLost, "{err}");
    assert_eq!(err.value, Some("the work's value"));
}

/// A release is a release: the release's first DeleteItem lands and its answer is lost, the
/// SDK's resend finds the lock gone. After work that ended within its lease nothing of ours is
/// left, so `with_lock` succeeds (issue 22: every front reported a lease lost here).
async fn a_release_whose_first_answer_is_lost_is_a_release(server: Server) {
    let f = FaultyTable::new(server).await;
    let store = store(&f);
    f.proxy.set_faults(scripted("DeleteItem", &["drop"]));
    let value = store
        .lock("release-lost", 30)
        .unwrap()
        .with_lock(Duration::from_secs(5), |_lease| async { "done" })
        .await
        .unwrap_or_else(|e| panic!("{}", e.error));
    assert_eq!(value, "done");
    assert_eq!(
        f.proxy.stats().count("DeleteItem", DROPPED),
        1,
        "the first answer was lost"
    );
    assert!(f.raw("release-lost").await.is_none(), "released");
}

/// A release that fails is an error, not dropped, and the work's value is kept.
async fn with_lock_keeps_the_value_when_the_release_fails(server: Server) {
    let f = FaultyTable::new(server).await;
    let store = store(&f);
    let proxy = &f.proxy;
    let err = store
        .lock("job", 30)
        .unwrap()
        .with_lock(Duration::from_secs(5), |_lease| async move {
            proxy
                .set_config(FaultConfig {
                    throttle_rate: 1.0,
                    throttle_ops: on("DeleteItem"),
                    ..FaultConfig::default()
                })
                .unwrap();
            42
        })
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Throttled, "{err}");
    assert_eq!(err.into_value(), Some(42));
}

/// Refreshes that keep failing past the local lease deadline are lease loss (a paused process,
/// a network that stays down).
async fn failing_refreshes_past_the_deadline_are_a_lost_lease(server: Server) {
    let f = FaultyTable::new(server).await;
    let store = heartbeating(&f, Duration::from_millis(300));
    let lock = store.lock("job", 2).unwrap();
    assert!(lock.acquire().await.unwrap().is_acquired());
    let remaining = lock.remaining().unwrap();
    assert!(
        remaining <= Duration::from_secs(1),
        "ttl 2 s less the whole-second rounding: {remaining:?}"
    );
    let hb = lock.heartbeat();
    f.proxy.set_faults(FaultConfig {
        throttle_rate: 1.0,
        throttle_ops: on("UpdateItem"),
        ..FaultConfig::default()
    });
    let reason = tokio::time::timeout(Duration::from_secs(4), hb.lost())
        .await
        .expect("lost once the local deadline passed");
    assert!(reason.contains("deadline"), "{reason}");
    assert_eq!(lock.remaining(), Some(Duration::ZERO));
}

// ---- requests a release and a scan send ------------------------------------------------------

/// The consistent read after a failed condition is paid only where the server ignores ALL_OLD.
async fn no_read_after_a_failed_condition_where_all_old_comes_back(server: Server) {
    let f = FaultyTable::new(server).await;
    let store = store(&f);
    let a = store.lock("r", 30).unwrap();
    let b = store.lock("r", 30).unwrap();
    assert!(a.acquire().await.unwrap().is_acquired());
    assert!(!b.acquire().await.unwrap().is_acquired()); // teaches the store what the server does
    assert!(a.release().await.unwrap().is_released());
    f.proxy.reset();
    assert_eq!(b.release().await.unwrap(), ReleaseOutcome::NotHeld);
    let reads = f
        .proxy
        .stats()
        .count("GetItem", ddblock_fault_proxy::FORWARDED_OK);
    if server.returns_all_old() {
        assert_eq!(reads, 0, "{server} returns ALL_OLD: no read");
    } else {
        assert_eq!(reads, 1, "{server} ignores ALL_OLD: one read");
    }
}

on_servers!(
    a_lost_answer_is_recovered_as_this_attempts_write,
    a_zero_wait_is_try_once_and_resends_after_a_lost_answer,
    a_release_whose_first_answer_is_lost_is_a_release,
    an_unanswered_write_followed_by_throttling_is_not_left_behind,
    a_failed_clean_up_names_the_expiry_of_the_write,
    an_acquire_whose_outcome_stays_unknown_cleans_up,
    block_ends_within_one_attempt_timeout_of_its_deadline,
    a_cancelled_acquire_leaves_no_lock,
    a_cancelled_with_lock_releases,
    a_heartbeat_keeps_the_lease_past_its_ttl,
    with_lock_reports_a_lost_lease_and_keeps_the_value,
    with_lock_keeps_the_value_when_the_release_fails,
    failing_refreshes_past_the_deadline_are_a_lost_lease,
    no_read_after_a_failed_condition_where_all_old_comes_back,
);
