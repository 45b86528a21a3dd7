//! Leases that never admit two holders and never strand a lock (issue 11), through the fault
//! proxy in front of moto and dynalite: own-write recovery only for this attempt, ambiguous
//! outcomes cleaned up, cancellation, per-attempt deadlines, heartbeats and lease loss, fencing
//! tokens, the clock-skew margin, and the smaller defects of the same review.

mod common;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{client_for, laravel_item, n, new_table, on_servers, s, Env, Server};
use ddblock::aws_sdk_dynamodb::types::AttributeValue;
use ddblock::{
    AcquireOutcome, Clock, ErrorKind, KeyLayout, ReleaseOutcome, Store, StoreConfig,
    StoreConfigBuilder,
};
use ddblock_fault_proxy::{FaultConfig, ProxyConfig, ProxyHandle, DROPPED};

/// A proxy in front of `server`, and a table.
struct Faulty {
    proxy: ProxyHandle,
    table: String,
    server: Server,
}

impl Faulty {
    async fn new(server: Server) -> Faulty {
        let table = new_table(&client_for(&server.endpoint()), "key").await;
        let proxy = ddblock_fault_proxy::start(ProxyConfig {
            upstream: server.endpoint(),
            listen: "127.0.0.1:0".into(),
            faults: FaultConfig::default(),
        })
        .await
        .expect("proxy");
        Faulty {
            proxy,
            table,
            server,
        }
    }

    /// A config through the proxy: 2 attempts per request, short attempt timeouts.
    fn config(&self) -> StoreConfigBuilder {
        StoreConfig::builder()
            .table(&self.table)
            .endpoint(self.proxy.url())
            .region("us-east-1")
            .max_attempts(2)
            .attempt_timeout(Duration::from_millis(400))
    }

    /// A store whose client ddblock builds (so the attempt timeout applies).
    fn store(&self) -> Store {
        Store::new(self.config().build().unwrap())
    }

    /// The same table, straight to the server.
    fn direct(&self) -> Store {
        Store::with_client(
            client_for(&self.server.endpoint()),
            StoreConfig::builder().table(&self.table).build().unwrap(),
        )
    }

    fn faults(&self, f: FaultConfig) {
        self.proxy.set_config(f).unwrap();
        self.proxy.reset();
    }

    /// The raw lock item, straight from the server.
    async fn raw(&self, key: &str) -> Option<std::collections::HashMap<String, AttributeValue>> {
        client_for(&self.server.endpoint())
            .get_item()
            .table_name(&self.table)
            .key("key", s(key))
            .consistent_read(true)
            .send()
            .await
            .unwrap()
            .item
    }

    /// Waits (up to 5 s) until the item under `key` is gone.
    async fn until_gone(&self, key: &str) -> bool {
        let end = Instant::now() + Duration::from_secs(5);
        while Instant::now() < end {
            if self.raw(key).await.is_none() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        false
    }
}

fn on(op: &str) -> Vec<String> {
    vec![op.to_owned()]
}

// ---- own-write recovery ----------------------------------------------------------------------

/// The SDK's retry of a write whose answer was lost finds this attempt's own item: recovered.
async fn a_lost_answer_is_recovered_as_this_attempts_write(server: Server) {
    let f = Faulty::new(server).await;
    let store = f.store();
    // seed 6 with rate 0.5: the first UpdateItem's answer is dropped, the retry answered.
    f.faults(FaultConfig {
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
    f.faults(FaultConfig::default());
    assert!(!twin.acquire().await.unwrap().is_acquired());
}

/// A wait of zero is "try once": the same path as `acquire()`, so a lost answer is sent again and
/// the write recovered, as in every front (issue 22: Python's `timeout=0` and Node's `withLock`
/// default raised `OutcomeUnknown` where `acquire()` got the lock).
async fn a_zero_wait_is_try_once_and_resends_after_a_lost_answer(server: Server) {
    let f = Faulty::new(server).await;
    let store = f.store();
    let mut sequence = std::collections::BTreeMap::new();
    sequence.insert("UpdateItem".to_owned(), vec!["drop".to_owned()]);
    f.faults(FaultConfig {
        sequence,
        ..FaultConfig::default()
    });
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
    let f = Faulty::new(server).await;
    let store = Store::new(f.config().max_attempts(3).build().unwrap());
    let mut sequence = std::collections::BTreeMap::new();
    sequence.insert(
        "UpdateItem".to_owned(),
        vec![
            "reset".to_owned(),
            "throttle".to_owned(),
            "throttle".to_owned(),
        ],
    );
    f.faults(FaultConfig {
        sequence,
        ..FaultConfig::default()
    });
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
        let f = Faulty::new(server).await;
        f.faults(fault);
        let lock = f.store().lock("orders", 3600).unwrap();
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
    let f = Faulty::new(server).await;
    f.faults(FaultConfig {
        drop_response_rate: 1.0,
        drop_ops: on("UpdateItem"),
        drop_request_rate: 1.0,
        drop_request_ops: on("DeleteItem"),
        ..FaultConfig::default()
    });
    let lock = f.store().lock("orders", 3600).unwrap();
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
    let f = Faulty::new(server).await;
    let holder = f.direct().lock("busy", 60).unwrap();
    assert!(holder.acquire().await.unwrap().is_acquired());
    f.faults(FaultConfig {
        latency_ms: 3_000,
        latency_ops: on("UpdateItem"),
        ..FaultConfig::default()
    });
    let lock = f.store().lock("busy", 60).unwrap();
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
        let f = Faulty::new(server).await;
        f.faults(FaultConfig {
            delay_response_ms: 300,
            delay_response_ops: on("UpdateItem"),
            ..FaultConfig::default()
        });
        let lock = f.store().lock("orders", 3600).unwrap();
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
    let f = Faulty::new(server).await;
    let lock = f.store().lock("job", 3600).unwrap();
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
    let f = Faulty::new(server).await;
    let store = Store::new(
        f.config()
            .heartbeat_interval(Duration::from_millis(400))
            .build()
            .unwrap(),
    );
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
    let f = Faulty::new(server).await;
    let store = Store::new(
        f.config()
            .heartbeat_interval(Duration::from_millis(200))
            .build()
            .unwrap(),
    );
    let direct = f.direct();
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
    let f = Faulty::new(server).await;
    let store = f.store();
    let mut sequence = std::collections::BTreeMap::new();
    sequence.insert("DeleteItem".to_owned(), vec!["drop".to_owned()]);
    f.faults(FaultConfig {
        sequence,
        ..FaultConfig::default()
    });
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
    let f = Faulty::new(server).await;
    let store = f.store();
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
    let f = Faulty::new(server).await;
    let store = Store::new(
        f.config()
            .heartbeat_interval(Duration::from_millis(300))
            .build()
            .unwrap(),
    );
    let lock = store.lock("job", 2).unwrap();
    assert!(lock.acquire().await.unwrap().is_acquired());
    let remaining = lock.remaining().unwrap();
    assert!(
        remaining <= Duration::from_secs(1),
        "ttl 2 s less the whole-second rounding: {remaining:?}"
    );
    let hb = lock.heartbeat();
    f.faults(FaultConfig {
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

// ---- fencing tokens --------------------------------------------------------------------------

/// Fences grow per key: on takeover of an expired lock, after a release deleted the item, and
/// after stock Laravel overwrote it.
async fn fences_grow_across_takeover_release_and_laravel(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let t = env.now();
    let fence_of = |o: AcquireOutcome| match o {
        AcquireOutcome::Acquired { fence: Some(f), .. } => f,
        other => panic!("{other:?}"),
    };
    let a = store.lock("f", 10).unwrap();
    let f1 = fence_of(a.acquire().await.unwrap());
    env.clock.set(t + 13); // expired past the margin: taken over
    let b = store.lock("f", 10).unwrap();
    let f2 = fence_of(b.acquire().await.unwrap());
    assert_eq!(f2, f1 + 1, "a takeover adds one");
    assert!(b.release().await.unwrap().is_released());
    let c = store.lock("f", 10).unwrap();
    let f3 = fence_of(c.acquire().await.unwrap());
    assert!(f3 > f2, "after a delete, from the clock: {f3} > {f2}");
    c.release().await.unwrap();
    // Laravel's add() writes its three attributes only (no fence).
    env.put_raw(laravel_item("app_f", s("s:3:\"php\";"), t))
        .await;
    env.clock.set(t + 20);
    let d = store.lock("f", 10).unwrap();
    let f4 = fence_of(d.acquire().await.unwrap());
    assert!(f4 > f3, "after Laravel overwrote it: {f4} > {f3}");
}

/// A holder paused past its expiry writes late to the protected resource with its old fence;
/// the resource (a DynamoDB item conditioned on the fence, as docs/semantics.md shows) refuses it.
async fn a_paused_holders_late_write_is_refused_by_the_fence(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let t = env.now();
    // The resource: an item that accepts a write only with a fence at least its last one.
    let write = |fence: u64, body: &'static str| {
        let client = env.client.clone();
        let table = env.table.clone();
        async move {
            client
                .put_item()
                .table_name(table)
                .item("key", s("resource"))
                .item("fence", n(fence))
                .item("body", s(body))
                .condition_expression("attribute_not_exists(fence) OR fence <= :f")
                .expression_attribute_values(":f", n(fence))
                .send()
                .await
                .is_ok()
        }
    };
    let a = store.lock("res", 10).unwrap();
    assert!(a.acquire().await.unwrap().is_acquired());
    let fa = a.fence().unwrap();
    // A pauses; its lease runs out; B takes over and writes.
    env.clock.set(t + 13);
    let b = store.lock("res", 10).unwrap();
    assert!(b.acquire().await.unwrap().is_acquired());
    let fb = b.fence().unwrap();
    assert!(write(fb, "from B").await, "B's write is accepted");
    // A wakes up and writes with its old token: refused.
    assert!(
        !write(fa, "late, from A").await,
        "A's late write is refused"
    );
    let item = env.raw("resource").await.unwrap();
    assert_eq!(item["body"], s("from B"));
}

// ---- clock skew ------------------------------------------------------------------------------

/// A clock `offset` seconds off the real one.
#[derive(Debug)]
struct Skewed(AtomicI64);

impl Clock for Skewed {
    fn now(&self) -> i64 {
        ddblock::SystemClock.now() + self.0.load(Ordering::SeqCst)
    }
}

/// With a clock-skew margin of 2 s set, a contender whose clock runs 2 s ahead cannot take over
/// a live lock before its true end.
async fn a_contender_two_seconds_ahead_cannot_cut_a_lease_short(server: Server) {
    let env = Env::new(server).await;
    let holder_store = env.store_with(
        StoreConfig::builder()
            .table(&env.table)
            .endpoint(server.endpoint()),
    );
    let ahead = Arc::new(Skewed(AtomicI64::new(2)));
    let skewed = env.store_with(
        StoreConfig::builder()
            .table(&env.table)
            .endpoint(server.endpoint())
            .clock(ahead.clone())
            .clock_skew_margin(Duration::from_secs(2)),
    );
    let holder = holder_store.lock("sk", 3).unwrap();
    assert!(holder.acquire().await.unwrap().is_acquired());
    let started = Instant::now();
    let contender = skewed.lock("sk", 3).unwrap();
    // Until the holder's lease ends (its ttl from the write), the ahead contender is refused.
    loop {
        let left = holder.remaining().unwrap();
        if left.is_zero() {
            break;
        }
        assert!(
            !contender.acquire().await.unwrap().is_acquired(),
            "taken {:?} after the write, with {left:?} of the lease left",
            started.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    // Without the margin the same contender would have cut in: the guard is the margin.
    let no_margin = env.store_with(
        StoreConfig::builder()
            .table(&env.table)
            .endpoint(server.endpoint())
            .clock(ahead)
            .clock_skew_margin(Duration::ZERO),
    );
    // Expiries are whole seconds: the contender can cut in from the second after next, and the
    // holder's lease ends 2 s after its write, so the window is as long as the fraction of the
    // second the write was sent in. Write late in a second, so the window is most of one.
    let into_second = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_millis();
    if into_second < 600 {
        tokio::time::sleep(Duration::from_millis(u64::from(600 - into_second))).await;
    }
    let h2 = holder_store.lock("sk2", 3).unwrap();
    assert!(h2.acquire().await.unwrap().is_acquired());
    let early = no_margin.lock("sk2", 3).unwrap();
    let end = Instant::now() + Duration::from_secs(3);
    let mut cut_in = false;
    while Instant::now() < end && !h2.remaining().unwrap().is_zero() {
        if early.acquire().await.unwrap().is_acquired() {
            cut_in = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        cut_in,
        "with margin 0 a clock 2 s ahead takes the live lock (the test can fail)"
    );
}

// ---- the smaller defects ---------------------------------------------------------------------

/// An expiry that is not a number reads as a held lock with an unknown expiry, not an error.
/// (DynamoDB and dynalite evaluate `#expires_at < :now` on an `S` as false; moto fails the
/// request with a 500 instead, which ddblock reports as a typed error: both are checked.)
async fn a_non_numeric_expiry_is_a_held_lock(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let mut item = laravel_item("app_odd", s("s:3:\"abc\";"), 0);
    item.insert("expires_at".into(), s("tomorrow"));
    env.put_raw(item).await;
    let lock = store.lock("odd", 10).unwrap();
    let holder = lock.current_holder().await.unwrap().expect("a held lock");
    assert_eq!(holder.owner.as_deref(), Some("abc"));
    assert_eq!(
        holder.expires_at, None,
        "unknown expiry, read without an error"
    );
    match (server, lock.acquire().await) {
        (Server::Dynalite, Ok(AcquireOutcome::Held(h))) => {
            assert_eq!(h.owner.as_deref(), Some("abc"));
            assert_eq!(h.expires_at, None);
        }
        (Server::Moto, Err(e)) => assert_eq!(e.kind(), ErrorKind::OutcomeUnknown, "{e}"),
        (_, other) => panic!("{other:?}"),
    }
    assert!(env.raw("app_odd").await.is_some(), "never taken over");
}

/// Release never names a holder whose lock has already expired.
async fn release_does_not_name_an_expired_holder(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let t = env.now();
    env.put_raw(laravel_item("app_old", s("s:5:\"other\";"), t - 5))
        .await;
    let mine = store.lock("old", 10).unwrap();
    assert_eq!(mine.release().await.unwrap(), ReleaseOutcome::NotHeld);
}

/// The consistent read after a failed condition is paid only where the server ignores ALL_OLD.
async fn no_read_after_a_failed_condition_where_all_old_comes_back(server: Server) {
    let f = Faulty::new(server).await;
    let store = f.store();
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
    match server {
        Server::Moto => assert_eq!(reads, 0, "moto returns ALL_OLD: no read"),
        Server::Dynalite => assert_eq!(reads, 1, "dynalite ignores ALL_OLD: one read"),
    }
}

/// Scans run a bounded number of segments at once.
async fn scans_run_a_bounded_number_of_segments_at_once(server: Server) {
    let f = Faulty::new(server).await;
    f.faults(FaultConfig {
        latency_ms: 200,
        latency_ops: on("Scan"),
        ..FaultConfig::default()
    });
    let store = f.store();
    let start = Instant::now();
    let report = store
        .scan_items(&ddblock::ScanOptions::new().segments(64), |_| {})
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
    fences_grow_across_takeover_release_and_laravel,
    a_paused_holders_late_write_is_refused_by_the_fence,
    a_contender_two_seconds_ahead_cannot_cut_a_lease_short,
    a_non_numeric_expiry_is_a_held_lock,
    release_does_not_name_an_expired_holder,
    no_read_after_a_failed_condition_where_all_old_comes_back,
    scans_run_a_bounded_number_of_segments_at_once,
);
