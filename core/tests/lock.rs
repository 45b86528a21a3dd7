//! Lock behaviour against real local servers: acquire, one-request release, restore, refresh,
//! takeover, block, guards, contention, and failure kinds.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{laravel_item, n, on_servers, s, Env, Server};
use ddblock::{AcquireOutcome, Backoff, ErrorKind, KeyLayout, ReleaseOutcome, StoredValue};

async fn numeric_owner_is_stored_as_n_and_released(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel8);
    let lock = store.lock_with_owner("num", 10, "12345").unwrap();
    assert_eq!(lock.stored_owner(), &StoredValue::Number("12345".into()));
    assert!(lock.acquire().await.unwrap().is_acquired());
    let key = "app_:app_:num";
    assert_eq!(env.raw(key).await.unwrap()["value"], n(12345));
    // Laravel's restoreLock('num', '12345')->release() returns false here (int !== string); ddblock releases.
    let restored = store.restore_lock("num", "12345").unwrap();
    assert_eq!(restored.release().await.unwrap(), ReleaseOutcome::Released);
    assert!(env.raw(key).await.is_none());
}

/// A numeric owner with leading zeros, taken by ddblock's UpdateItem: moto and DynamoDB Local
/// store the number text as sent (`N 007`: DynamoDB Local normalises a PutItem's numbers, not an
/// UpdateItem's), dynalite normalises it (`N 7`). The conditions compare numbers, so the lock is
/// owned and released on every server (docs/compatibility.md, "Servers").
async fn a_numeric_owner_with_leading_zeros_is_released(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel8);
    let lock = store.lock_with_owner("zeros", 10, "007").unwrap();
    assert!(lock.acquire().await.unwrap().is_acquired());
    let stored = env.raw(lock.key()).await.unwrap()["value"].clone();
    let want = match server {
        Server::Dynalite => n(7),
        Server::Moto | Server::DdbLocal => n("007"),
    };
    assert_eq!(stored, want, "{server}");
    assert!(lock.is_owned().await.unwrap(), "{server}");
    assert_eq!(lock.release().await.unwrap(), ReleaseOutcome::Released);
    assert!(env.raw(lock.key()).await.is_none(), "{server}");
}

async fn acquire_reports_holder_and_recovers_own_write(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let t = env.now();
    let a = store.lock("orders", 30).unwrap();
    assert_eq!(a.owner().len(), 16);
    assert!(a.owner().bytes().all(|b| b.is_ascii_alphanumeric()));
    let fence = match a.acquire().await.unwrap() {
        AcquireOutcome::Acquired {
            expires_at,
            recovered: false,
            fence: Some(f),
        } => {
            assert_eq!(expires_at, t + 30);
            f
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(a.fence(), Some(fence));
    // Another handle with the same owner (Laravel's restoreLock pattern, another process) does not
    // get the lock: only this attempt's own write is recovered (as Laravel answers false).
    env.clock.advance(5);
    let again = store.lock_with_owner("orders", 30, a.owner()).unwrap();
    assert!(
        matches!(again.acquire().await.unwrap(), AcquireOutcome::Held(ref h) if h.owner.as_deref() == Some(a.owner())),
        "a second holder with the same owner is refused"
    );
    assert!(
        !a.clone().acquire().await.unwrap().is_acquired(),
        "a clone too"
    );
    let b = store.lock("orders", 30).unwrap();
    match b.acquire().await.unwrap() {
        AcquireOutcome::Held(h) => {
            assert_eq!(h.owner.as_deref(), Some(a.owner()));
            assert_eq!(h.expires_at, Some(t + 30));
            assert!(
                !h.to_string().contains(a.owner()),
                "Display redacts the owner: {h}"
            );
        }
        other => panic!("expected Held, got {other:?}"),
    }
}

async fn release_is_conditional_and_tells_outcomes_apart(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel11);
    let a = store.lock("r", 30).unwrap();
    let b = store.lock("r", 30).unwrap();
    assert!(a.acquire().await.unwrap().is_acquired());
    match b.release().await.unwrap() {
        ReleaseOutcome::HeldByOther(h) => assert_eq!(h.owner.as_deref(), Some(a.owner())),
        other => panic!("expected HeldByOther, got {other:?}"),
    }
    assert!(
        env.raw("app_app_r").await.is_some(),
        "another owner's release deletes nothing"
    );
    assert_eq!(a.release().await.unwrap(), ReleaseOutcome::Released);
    assert!(env.raw("app_app_r").await.is_none());
    assert_eq!(a.release().await.unwrap(), ReleaseOutcome::NotHeld);
}

async fn expired_lock_is_taken_over(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let t = env.now();
    let a = store.lock("x", 10).unwrap();
    let b = store.lock("x", 10).unwrap();
    assert!(a.acquire().await.unwrap().is_acquired());
    env.clock.set(t + 10);
    assert!(
        !b.acquire().await.unwrap().is_acquired(),
        "expires_at == now is still held"
    );
    assert!(
        !a.is_locked().await.unwrap(),
        "but reads as expired, like Laravel's get()"
    );
    // With the default margin (0, Laravel's rule) taken over once expires_at < now.
    let c = store.lock("y", 10).unwrap();
    assert!(c.acquire().await.unwrap().is_acquired());
    env.clock.set(t + 21);
    assert!(
        store
            .lock("y", 10)
            .unwrap()
            .acquire()
            .await
            .unwrap()
            .is_acquired(),
        "expires_at < now: taken over with the default margin"
    );
    // With a margin set, taken over only once expires_at < now - margin: a contender whose clock
    // runs up to 2 s ahead cannot cut the holder's lease short.
    let store = env.store_with(
        env.config()
            .prefix("app_")
            .layout(KeyLayout::Laravel12)
            .clock_skew_margin(std::time::Duration::from_secs(2)),
    );
    let b = store.lock("x", 10).unwrap();
    env.clock.set(t + 12);
    match b.acquire().await.unwrap() {
        AcquireOutcome::Held(h) => {
            assert_eq!(h.expires_at, Some(t + 10), "expired, within the margin")
        }
        other => panic!("taken over within the clock-skew margin: {other:?}"),
    }
    env.clock.set(t + 13);
    assert!(matches!(
        b.acquire().await.unwrap(),
        AcquireOutcome::Acquired {
            expires_at,
            recovered: false,
            ..
        } if expires_at == t + 23
    ));
    assert!(
        !a.refresh(None).await.unwrap(),
        "a lost lock cannot be refreshed"
    );
    // `a` still holds its lease by its own clock: its release's first send finds another owner,
    // a lease lost under its holder (issue 36); then, holding none, the outcome.
    let lost = a.release().await.unwrap_err();
    assert_eq!(lost.kind(), ErrorKind::LeaseLost, "{lost}");
    assert!(matches!(
        a.release().await.unwrap(),
        ReleaseOutcome::HeldByOther(_)
    ));
    assert!(b.is_owned().await.unwrap());
}

async fn ttl_zero_means_a_day(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let lock = store.lock("zero", 0).unwrap();
    assert_eq!(lock.ttl_secs(), 86_400);
    lock.acquire().await.unwrap();
    assert_eq!(
        env.raw("app_zero").await.unwrap()["expires_at"],
        n(env.now() + 86_400)
    );
    assert_eq!(
        store.lock("neg", -1).unwrap_err().kind(),
        ErrorKind::InvalidTtl
    );
}

async fn refresh_follows_laravel_12_63(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let t = env.now();
    let a = store.lock("f", 10).unwrap();
    assert!(!a.refresh(None).await.unwrap(), "nothing to refresh");
    a.acquire().await.unwrap();
    assert!(a.refresh(Some(60)).await.unwrap());
    assert_eq!(env.raw("app_f").await.unwrap()["expires_at"], n(t + 60));
    assert!(a.refresh(Some(0)).await.unwrap());
    assert_eq!(env.raw("app_f").await.unwrap()["expires_at"], n(t + 86_400));
    assert!(a.refresh(None).await.unwrap());
    assert_eq!(env.raw("app_f").await.unwrap()["expires_at"], n(t + 10));
    let other = store.restore_lock("f", "someone-else").unwrap();
    assert!(!other.refresh(Some(60)).await.unwrap());
    env.clock.set(t + 10);
    assert!(
        !a.refresh(Some(60)).await.unwrap(),
        "expired (expires_at > now fails)"
    );
}

async fn inspection_uses_consistent_reads(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let a = store.lock("i", 10).unwrap();
    assert!(!a.is_locked().await.unwrap());
    assert_eq!(a.current_holder().await.unwrap(), None);
    a.acquire().await.unwrap();
    assert!(a.is_locked().await.unwrap());
    assert!(a.is_owned().await.unwrap());
    assert!(a.is_owned_by(a.owner()).await.unwrap());
    assert!(!a.is_owned_by("nobody").await.unwrap());
    let h = a.current_holder().await.unwrap().unwrap();
    assert_eq!(h.owner.as_deref(), Some(a.owner()));
    assert_eq!(h.expires_at, Some(env.now() + 10));
    a.force_release().await.unwrap();
    assert!(!a.is_locked().await.unwrap());
    // A lock item written by PHP with a numeric owner is owned by the string form.
    env.put_raw(laravel_item("app_p", n(777), env.now() + 10))
        .await;
    let p = store.lock("p", 10).unwrap();
    assert!(p.is_owned_by("777").await.unwrap());
    assert!(!p.is_owned_by("778").await.unwrap());
    env.put_raw(laravel_item("app_q", s(r#"s:3:"abc";"#), env.now() + 10))
        .await;
    assert!(store
        .lock("q", 10)
        .unwrap()
        .is_owned_by("abc")
        .await
        .unwrap());
}

async fn block_waits_for_release_and_times_out(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let holder = store.lock("b", 30).unwrap();
    holder.acquire().await.unwrap();
    let waiter = store
        .lock("b", 30)
        .unwrap()
        .with_backoff(Backoff {
            initial: Duration::from_millis(10),
            max: Duration::from_millis(50),
            multiplier: 2.0,
            jitter: 0.5,
        })
        .unwrap();
    let err = waiter.block(Duration::from_millis(200)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LockTimeout);
    match &err {
        ddblock::Error::LockTimeout {
            holder: Some(h),
            waited,
            ..
        } => {
            assert_eq!(h.owner.as_deref(), Some(holder.owner()));
            assert!(*waited >= Duration::from_millis(200));
        }
        other => panic!("{other:?}"),
    }
    let h2 = holder.clone();
    let releaser = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        h2.release().await.unwrap()
    });
    let exp = waiter.block(Duration::from_secs(10)).await.unwrap();
    assert_eq!(exp, env.now() + 30);
    assert_eq!(releaser.await.unwrap(), ReleaseOutcome::Released);
    assert!(waiter.is_owned().await.unwrap());
}

async fn with_lock_releases_after_work_and_panic(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let v = store
        .lock("w", 30)
        .unwrap()
        .with_lock(Duration::from_secs(1), |l| async move {
            assert!(l.lock().is_owned().await.unwrap());
            42
        })
        .await
        .unwrap();
    assert_eq!(v, 42);
    assert!(env.raw("app_w").await.is_none(), "released after the work");

    let s2 = store.clone();
    let panicked = tokio::spawn(async move {
        s2.lock("w", 30)
            .unwrap()
            .with_lock(Duration::from_secs(1), |_| async { panic!("work failed") })
            .await
    })
    .await;
    assert!(panicked.unwrap_err().is_panic(), "the panic continues");
    assert!(env.raw("app_w").await.is_none(), "released after the panic");

    // Dropping a guard releases in the background.
    let guard = store
        .lock("g", 30)
        .unwrap()
        .block_guard(Duration::from_secs(1))
        .await
        .unwrap();
    assert!(env.raw("app_g").await.is_some());
    drop(guard);
    let mut gone = false;
    for _ in 0..100 {
        if env.raw("app_g").await.is_none() {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(gone, "a dropped guard releases");
}

async fn contending_tasks_never_overlap(server: Server) {
    const TASKS: usize = 8;
    // 480 acquisitions of one lock; the chaos run (compat-tests/chaos) contends far harder.
    const ROUNDS: usize = 60;
    let env = Env::new(server).await;
    // Real time here: the clock must move for nothing, the ttl is far longer than the test.
    let store = env.store_with(env.config().clock(Arc::new(ddblock::SystemClock)).backoff(
        Backoff {
            initial: Duration::from_millis(1),
            max: Duration::from_millis(20),
            multiplier: 2.0,
            jitter: 1.0,
        },
    ));
    let inside = Arc::new(AtomicBool::new(false));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let total = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..TASKS {
        let (store, inside, overlaps, total) = (
            store.clone(),
            inside.clone(),
            overlaps.clone(),
            total.clone(),
        );
        tasks.push(tokio::spawn(async move {
            for _ in 0..ROUNDS {
                let lock = store.lock("hot", 300).unwrap();
                lock.block(Duration::from_secs(120)).await.unwrap();
                if inside.swap(true, Ordering::SeqCst) {
                    overlaps.fetch_add(1, Ordering::SeqCst);
                }
                tokio::task::yield_now().await;
                inside.store(false, Ordering::SeqCst);
                total.fetch_add(1, Ordering::SeqCst);
                assert_eq!(lock.release().await.unwrap(), ReleaseOutcome::Released);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(overlaps.load(Ordering::SeqCst), 0, "two holders at once");
    assert_eq!(total.load(Ordering::SeqCst), TASKS * ROUNDS);
}

on_servers!(
    numeric_owner_is_stored_as_n_and_released,
    a_numeric_owner_with_leading_zeros_is_released,
    acquire_reports_holder_and_recovers_own_write,
    release_is_conditional_and_tells_outcomes_apart,
    expired_lock_is_taken_over,
    ttl_zero_means_a_day,
    refresh_follows_laravel_12_63,
    inspection_uses_consistent_reads,
    block_waits_for_release_and_times_out,
    with_lock_releases_after_work_and_panic,
    contending_tasks_never_overlap,
);
