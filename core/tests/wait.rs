//! Waiting for a held lock (issue 14): a waiter watches the lock with eventually consistent reads
//! and writes only when it looks free; waiters of one process on one key share one watcher, and a
//! release in the process wakes the next waiter at once. Requests are counted by the fault proxy
//! in front of moto and dynalite.

mod common;

use std::time::{Duration, Instant};

use common::{on_servers, FaultyTable, Server};
use ddblock::{AcquireOutcome, Backoff, Store};
use ddblock_fault_proxy::{FaultConfig, Stats};

/// A fixed pause between looks (no jitter), so request counts are predictable.
const EVERY_100MS: Backoff = Backoff {
    initial: Duration::from_millis(100),
    max: Duration::from_millis(100),
    multiplier: 1.0,
    jitter: 0.0,
};

/// A store through the proxy (its requests are counted).
fn counted(f: &FaultyTable, backoff: Backoff) -> Store {
    Store::new(f.through().backoff(backoff).build().unwrap())
}

/// A store straight to the server: another endpoint, so to the waiters it is another process.
fn elsewhere(f: &FaultyTable) -> Store {
    Store::new(f.direct().build().unwrap())
}

fn writes(s: &Stats) -> u64 {
    s.total("UpdateItem") + s.total("PutItem") + s.total("DeleteItem")
}

/// The requests `n` waiters of one process send while a lock held elsewhere stays held for
/// `hold`; then the holder releases and every waiter takes the lock in turn. Each call uses its
/// own key (a key this process saw held lately is looked at before it is written).
async fn requests_while_held(f: &FaultyTable, n: usize, hold: Duration) -> (Stats, Duration) {
    let key = format!("hot-{n}");
    let holder = elsewhere(f).lock(&key, 30).unwrap();
    assert!(holder.acquire().await.unwrap().is_acquired());
    let store = counted(f, EVERY_100MS);
    store.client().await.unwrap();
    f.proxy.reset();
    let mut tasks = Vec::new();
    for _ in 0..n {
        let (store, key) = (store.clone(), key.clone());
        tasks.push(tokio::spawn(async move {
            let lock = store.lock(&key, 30).unwrap();
            lock.block(Duration::from_secs(30)).await.unwrap();
            assert!(lock.release().await.unwrap().is_released());
        }));
    }
    tokio::time::sleep(hold).await;
    let during = f.proxy.stats();
    let released = Instant::now();
    assert!(holder.release().await.unwrap().is_released());
    for t in tasks {
        t.await.unwrap();
    }
    (during, released.elapsed())
}

/// Eight waiters in one process on a lock held elsewhere send about as many requests as one:
/// one of them watches (one write, then a look per pause), the others queue. The two
/// runs go side by side (each through its own proxy) so that both see the same machine load.
async fn local_waiters_share_one_watcher(server: Server) {
    let (f1, f8) = (
        FaultyTable::new(server).await,
        FaultyTable::new(server).await,
    );
    let hold = Duration::from_millis(1_000);
    let ((one, _), (eight, drained)) = tokio::join!(
        requests_while_held(&f1, 1, hold),
        requests_while_held(&f8, 8, hold)
    );
    // One write (refused: held), then a read every 100 ms at most; dynalite ignores ALL_OLD, so
    // there the refusal costs one more read. Eight waiters each writing and reading would send
    // eight times that.
    assert_eq!(writes(&one), 1, "{one:?}");
    assert_eq!(writes(&eight), 1, "eight waiters, one write: {eight:?}");
    let (r1, r8) = (one.total("GetItem"), eight.total("GetItem"));
    assert!(
        (2..=13).contains(&r1),
        "one waiter: {r1} reads in 1 s: {one:?}"
    );
    assert!(
        r8 <= r1 + r1 / 2 + 2,
        "eight waiters read {r8} times, one {r1}: {eight:?}"
    );
    // After the release each takes it in turn, woken by the previous one's release (a sanity
    // bound: the next test shows the wake-up against a 5 s pause).
    assert!(drained < Duration::from_secs(8), "took {drained:?}");
}

/// A waiter whose next look is far away is woken by a release in its own process at once, and
/// sends no write while a handle of its process holds the lock.
async fn a_local_release_wakes_the_next_waiter_at_once(server: Server) {
    let f = FaultyTable::new(server).await;
    let slow = Backoff {
        initial: Duration::from_secs(5),
        max: Duration::from_secs(5),
        multiplier: 1.0,
        jitter: 0.0,
    };
    let store = counted(&f, slow);
    let holder = store.lock("hot", 30).unwrap();
    assert!(holder.acquire().await.unwrap().is_acquired());
    f.proxy.reset();
    let waiter = store.lock("hot", 30).unwrap();
    let w = waiter.clone();
    let task = tokio::spawn(async move { w.acquire_within(Some(Duration::from_secs(20))).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        f.proxy.stats().grand_total(),
        0,
        "the lock is held in this process: no request to learn it"
    );
    let released = Instant::now();
    assert!(holder.release().await.unwrap().is_released());
    let out = task.await.unwrap().unwrap();
    let took = released.elapsed();
    assert!(matches!(out, AcquireOutcome::Acquired { .. }), "{out:?}");
    // Its next look was 5 s away; the release and one write take well under 2.5 s even on a
    // loaded machine.
    assert!(
        took < Duration::from_millis(2_500),
        "woken after {took:?}, not at once"
    );
    // The holder's release and the waiter's one write.
    let s = f.proxy.stats();
    assert_eq!(
        (s.total("DeleteItem"), s.total("UpdateItem")),
        (1, 1),
        "{s:?}"
    );
    assert!(waiter.release().await.unwrap().is_released());
}

/// A remote release is seen by the watcher's next read, and only then does it write.
async fn a_remote_release_is_seen_by_a_read_then_one_write(server: Server) {
    let f = FaultyTable::new(server).await;
    let holder = elsewhere(&f).lock("hot", 30).unwrap();
    assert!(holder.acquire().await.unwrap().is_acquired());
    let lock = counted(&f, EVERY_100MS).lock("hot", 30).unwrap();
    f.proxy.reset();
    let h = holder.clone();
    let releaser = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(450)).await;
        h.release().await.unwrap()
    });
    let out = lock
        .acquire_within(Some(Duration::from_secs(10)))
        .await
        .unwrap();
    assert!(out.is_acquired(), "{out:?}");
    assert!(releaser.await.unwrap().is_released());
    let s = f.proxy.stats();
    // The first write (refused), the winning write; reads in between, the last of which saw
    // the lock free (plus dynalite's read of the holder after the refusal).
    assert_eq!(s.total("UpdateItem"), 2, "{s:?}");
    assert!(s.total("GetItem") >= 1, "{s:?}");
    assert!(lock.release().await.unwrap().is_released());
}

/// A waiter's looks are eventually consistent reads (half the price of a consistent one): a
/// stale look, showing a released lock still held, costs time, never the lock. The reads that
/// answer the caller (`is_locked`) stay consistent.
async fn looks_are_eventually_consistent_and_a_stale_one_costs_time(server: Server) {
    let f = FaultyTable::new(server).await;
    // Every eventual read of an item written in the last 1.5 s shows it as it was 1.5 s before.
    f.proxy.set_faults(FaultConfig {
        stale_ms: 1_500,
        stale_min_ms: 1_500,
        stale_probability: 1.0,
        seed: 1,
        ..FaultConfig::default()
    });
    // Another process, through the same proxy (so that it sees the holder's writes): the same
    // endpoint spelt with a slash is another endpoint to the waiter's process.
    let other = f.through().endpoint(format!("{}/", f.proxy.endpoint));
    let holder = Store::new(other.build().unwrap()).lock("hot", 30).unwrap();
    assert!(holder.acquire().await.unwrap().is_acquired());
    // Past the staleness of the holder's write: no look shows the lock free while it is held.
    tokio::time::sleep(Duration::from_millis(1_600)).await;
    let lock = counted(&f, EVERY_100MS).lock("hot", 30).unwrap();
    f.proxy.reset();
    let h = holder.clone();
    let releaser = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(450)).await;
        assert!(h.release().await.unwrap().is_released());
        Instant::now()
    });
    let out = lock
        .acquire_within(Some(Duration::from_secs(10)))
        .await
        .unwrap();
    let acquired = Instant::now();
    assert!(out.is_acquired(), "{out:?}");
    // A consistent read sees the new holder (an eventual one would show the lock free).
    assert!(lock.is_locked().await.unwrap());
    let released = releaser.await.unwrap();
    let s = f.proxy.stats();
    assert!(s.eventual_reads >= 2, "the looks: {s:?}");
    // The refused first write and the winning one: the stale looks cost no write.
    assert_eq!(s.total("UpdateItem"), 2, "{s:?}");
    // A stale look served after the release showed the lock held, so the waiter wrote only
    // once the staleness ran out. (A look that reaches the proxy while the release is on its way
    // back is forwarded fresh: the proxy records a write when its answer comes, so on a slow
    // server, in about one run in five on dynalite, no stale look comes after the release.)
    if s.count("GetItem", "stale_served") >= 1 {
        let late = acquired.saturating_duration_since(released);
        assert!(
            late >= Duration::from_millis(1_200),
            "acquired {late:?} after the release, with a stale look served: {s:?}"
        );
    }
    assert!(lock.release().await.unwrap().is_released());
    assert!(
        !lock.is_locked().await.unwrap(),
        "a consistent read sees it free"
    );
}

on_servers!(
    looks_are_eventually_consistent_and_a_stale_one_costs_time,
    local_waiters_share_one_watcher,
    a_local_release_wakes_the_next_waiter_at_once,
    a_remote_release_is_seen_by_a_read_then_one_write,
);
