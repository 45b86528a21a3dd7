//! Fences and expiry (issue 11), against moto and dynalite with a manual or skewed clock: fencing
//! tokens grow per key and refuse a paused holder's late write, the clock-skew margin keeps a
//! contender whose clock runs ahead out of a live lease, and odd or expired items read as what
//! they are. Leases through the fault proxy: lease.rs.

mod common;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{laravel_item, n, on_servers, s, Env, Server};
use ddblock::{AcquireOutcome, Clock, ErrorKind, KeyLayout, ReleaseOutcome, StoreConfig};

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

// ---- odd and expired items ---------------------------------------------------------------------

/// An expiry that is not a number reads as a held lock with an unknown expiry, not an error.
/// (DynamoDB, DynamoDB Local and dynalite evaluate `#expires_at < :now` on an `S` as false; moto fails the
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
        (Server::Dynalite | Server::DdbLocal, Ok(AcquireOutcome::Held(h))) => {
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

on_servers!(
    fences_grow_across_takeover_release_and_laravel,
    a_paused_holders_late_write_is_refused_by_the_fence,
    a_contender_two_seconds_ahead_cannot_cut_a_lease_short,
    a_non_numeric_expiry_is_a_held_lock,
    release_does_not_name_an_expired_holder,
);
