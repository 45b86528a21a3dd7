//! Fair waiting between processes (issue 26, docs/semantics.md#waiting): the longest waiting goes
//! first, by the `ddblock_since` stamp every waiting acquisition writes, with no request of its own.
//! Each "process" here is a store through its own fault proxy: another endpoint, so to the
//! waiters' registry it is another process (nothing is shared but the table). Against moto, dynalite
//! and DynamoDB Local.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{faulty, n, s, FaultyServer, FaultyTable, Server};
use ddblock::{Store, StoreConfig};
use ddblock_fault_proxy::FaultConfig;
use ddblock_test_support::on_servers;

const HOLD: Duration = Duration::from_millis(50);
const THINK: Duration = Duration::from_millis(50);
/// The most holds of a busy process that may begin during one wait of a lone process beside it:
/// two of its runs (fair.rs `run_budget`, 1 s) of `HOLD`s, so one window the lone process
/// missed is allowed, two are not.
const MAX_OVERTAKEN: usize = 2 * 1_000 / 50;

/// `n` processes' stores on `f`'s table, each through its own proxy with `faults`.
async fn processes(f: &FaultyTable, n: usize, faults: &FaultConfig) -> Vec<(Store, FaultyServer)> {
    let mut out = Vec::new();
    for _ in 0..n {
        let proxy = faulty(&f.proxy.upstream, faults.clone()).await;
        let cfg = StoreConfig::builder()
            .table(&f.table)
            .endpoint(&proxy.endpoint)
            .region("us-east-1")
            .build()
            .unwrap();
        let store = Store::new(cfg);
        store.client().await.unwrap();
        out.push((store, proxy));
    }
    out
}

/// Every process loops for `run`: waits for lock "hot" (`block`), holds it [`HOLD`], releases,
/// does [`THINK`] of other work. Returns the acquisitions per process; panics if two ever held
/// the lock at once (each hold is checked against every other by the monotonic clock).
async fn contend(procs: &[(Store, FaultyServer)], run: Duration) -> Vec<usize> {
    let tasks = vec![1; procs.len()];
    let per = contend_with_tasks(procs, &tasks, run).await;
    per.into_iter().map(|c| c.got).collect()
}

/// [`contend`] with `tasks[i]` waiters (tasks) in process `i`: per process, its tasks'
/// acquisitions together, the longest wait of any of them (a wait the run ended counts until
/// then), and the most holds of other processes that began during one of its waits (how often
/// it was overtaken: a count of turns, which a slow server does not inflate as it does waits).
async fn contend_with_tasks(
    procs: &[(Store, FaultyServer)],
    tasks_per_process: &[usize],
    run: Duration,
) -> Vec<Contended> {
    // Every hold (from, to, process) and every wait (from, to, process).
    let holds: Arc<Mutex<Vec<(Instant, Instant, usize)>>> = Arc::default();
    let waits: Arc<Mutex<Vec<(Instant, Instant, usize)>>> = Arc::default();
    let until = Instant::now() + run;
    let mut tasks = Vec::new();
    let stores = procs.iter().zip(tasks_per_process).enumerate();
    for (i, store) in stores.flat_map(|(i, ((store, _), &n))| std::iter::repeat_n((i, store), n)) {
        let (store, holds, waits) = (store.clone(), holds.clone(), waits.clone());
        tasks.push(tokio::spawn(async move {
            let mut got = 0;
            while Instant::now() < until {
                let lock = store.lock("hot", 10).unwrap();
                let left = until.saturating_duration_since(Instant::now());
                let wanted = Instant::now();
                let out = lock.acquire_within(Some(left)).await;
                waits.lock().unwrap().push((wanted, Instant::now(), i));
                match out {
                    Ok(out) if out.is_acquired() => {}
                    Ok(_) => break,
                    // Under injected faults an attempt may end in a clear error (its write's
                    // outcome stayed unknown and was cleaned up): the caller tries again.
                    Err(e) => {
                        eprintln!("acquire: {e}");
                        continue;
                    }
                }
                let from = Instant::now();
                tokio::time::sleep(HOLD).await;
                let to = Instant::now();
                // With a 10 s ttl and 50 ms holds the lock cannot expire under us, so every
                // answer means it is released: a lost answer's resend finds it gone (`NotHeld`)
                // or already the next holder's (`HeldByOther`). Overlaps are checked below.
                let out = lock.release().await.unwrap();
                if !out.is_released() {
                    eprintln!("release after a lost answer: {out:?}");
                }
                holds.lock().unwrap().push((from, to, i));
                got += 1;
                tokio::time::sleep(THINK).await;
            }
            (i, got)
        }));
    }
    let mut per = vec![Contended::default(); procs.len()];
    for t in tasks {
        let (i, got) = t.await.unwrap();
        per[i].got += got;
    }
    let mut holds = holds.lock().unwrap().clone();
    holds.sort();
    for w in holds.windows(2) {
        assert!(w[0].1 <= w[1].0, "two holders at once: {w:?}");
    }
    for &(from, to, i) in waits.lock().unwrap().iter() {
        let overtaken = holds
            .iter()
            .filter(|h| h.2 != i && h.0 > from && h.0 < to)
            .count();
        per[i].longest_wait = per[i].longest_wait.max(to - from);
        per[i].overtaken = per[i].overtaken.max(overtaken);
    }
    per
}

/// What one process got in [`contend_with_tasks`].
#[derive(Debug, Clone, Default)]
struct Contended {
    /// Acquisitions by its tasks together.
    got: usize,
    /// The longest wait of any of its tasks.
    longest_wait: Duration,
    /// The most holds of other processes that began during one of its waits.
    overtaken: usize,
}

/// Jain's fairness index: 1 when every process got as many, 1/n when one got everything.
fn jain(per: &[usize]) -> f64 {
    let sum: f64 = per.iter().map(|&x| x as f64).sum();
    let squares: f64 = per.iter().map(|&x| (x as f64).powi(2)).sum();
    sum * sum / (per.len() as f64 * squares)
}

/// Six processes take turns: none gets the lock much more often than another. Before fair
/// waiting, the process that had just released (it looks again after 50 ms) won most races
/// against processes that had backed off for long: this test on the old code (`09d0992`) gave
/// [20, 22, 14, 15, 14, 12] (Jain 0.953), [12, 22, 6, 29, 9, 24] (0.802) and
/// [14, 9, 27, 18, 0, 31] (0.713); with fair waiting, Jain 0.989 to 0.999.
async fn processes_take_turns(server: Server) {
    let f = FaultyTable::new(server).await;
    let procs = processes(&f, 6, &FaultConfig::default()).await;
    // Jain's index needs turns to judge by: about 10 each in 8 s, but on a server slowed by a
    // loaded machine 6 or 7, where one queue jump moves it by 0.03 (moto: [7, 6, 7, 7, 10, 6],
    // 0.966). So the run goes on, 8 s at a time (at most 3), until 60 turns were taken.
    let mut per = vec![0; 6];
    let mut overtaken = 0;
    for _ in 0..3 {
        let all = contend_with_tasks(&procs, &[1; 6], Duration::from_secs(8)).await;
        for (p, c) in per.iter_mut().zip(&all) {
            *p += c.got;
            overtaken = overtaken.max(c.overtaken);
        }
        if per.iter().sum::<usize>() >= 60 {
            break;
        }
    }
    eprintln!(
        "acquisitions per process: {per:?}, Jain {:.3}, overtaken at most {overtaken} times in a wait",
        jain(&per)
    );
    let mean = per.iter().sum::<usize>() as f64 / per.len() as f64;
    assert!(
        *per.iter().min().unwrap() as f64 >= 0.6 * mean,
        "a process starved: {per:?}"
    );
    assert!(jain(&per) >= 0.97, "unfair: {per:?}");
}

/// A process whose four waiters hand the lock over among themselves (a local queue hands over in
/// a millisecond, and a waiter of another process cannot be told of the release) leaves it free
/// for a moment after each second of such a run, so a one-waiter process beside it waits about a
/// second (each time it gets the lock, the run starts over). Before this rule, on the same code
/// otherwise, the lone process's longest wait in 8 s was 0.8 to 7.5 s, over 3.3 s on at least one
/// server in each of 3 runs on moto, dynalite and DynamoDB Local. On a loaded server (the whole
/// suite at once) a 300 ms window was missed run after run, and each miss fed the next (a longer
/// wait, a longer yield after the release, a doubled budget): lone waits of 1.0, 2.2, then 4.1 s,
/// and the suite failed one run in two or three, this rule's own code of `5a92a95` included. Now
/// the window lasts three of the last release's round trips when that is longer, a releaser's
/// yield ends before another process's first window, and one unused window does not double the
/// budget: 0.8 to 2.0 s in 5 runs of the whole suite (2026-11-28). Still load-sensitive after
/// that (2.54 s in one CI run): a look whose answer was read before a local release landed saw
/// the lock held by this process's last holder after the release, took it for someone else's,
/// and restarted the run, and a waiter whose look (not the release) found the lock free took it
/// without the window; on a slow server both happened every few hand-overs, so no window came
/// for 2 s (traces of every look, 2026-11-28). The bound is now a count of turns, not seconds:
/// the busy process takes at most [`MAX_OVERTAKEN`] turns during one of the lone process's waits
/// (7 to 17 in 9 runs of the whole suite beside three builds; its longest waits 0.6 to 1.1 s).
async fn a_process_with_many_waiters_leaves_room_for_others(server: Server) {
    let f = FaultyTable::new(server).await;
    let procs = processes(&f, 2, &FaultConfig::default()).await;
    let per = contend_with_tasks(&procs, &[4, 1], Duration::from_secs(8)).await;
    eprintln!("4 waiters in one process and 1 in another: {per:?}");
    let lone = &per[1];
    assert!(lone.got >= 3, "the lone process starved: {per:?}");
    assert!(
        lone.overtaken <= MAX_OVERTAKEN,
        "the lone process was overtaken often: {per:?}"
    );
    assert!(per[0].got >= 30, "the busy process starved: {per:?}");
}

/// Faults do not break the turns or the one-holder rule: every process sees lost answers to its
/// reads and writes, throttling and uneven latency.
async fn turns_survive_lost_answers_throttling_and_latency(server: Server) {
    let f = FaultyTable::new(server).await;
    let faults = FaultConfig {
        seed: 26,
        drop_response_rate: 0.03,
        throttle_rate: 0.03,
        latency_ms: 2,
        latency_jitter_ms: 20,
        ..FaultConfig::default()
    };
    let procs = processes(&f, 4, &faults).await;
    let per = contend(&procs, Duration::from_secs(10)).await;
    eprintln!("acquisitions per process under faults: {per:?}");
    // Faults cost turns (a throttled request is sent again after the SDK's backoff, up to seconds,
    // so one process's share moves with its luck), so the bar is "nobody starves": about 10 each
    // in 10 s, the fewest seen in 57 runs (19 on each server) 6.
    assert!(
        *per.iter().min().unwrap() >= 3,
        "a process starved: {per:?}"
    );
    assert!(jain(&per) >= 0.8, "unfair: {per:?}");
    let dropped: u64 = procs
        .iter()
        .map(|(_, p)| {
            let st = p.stats();
            ["GetItem", "UpdateItem", "DeleteItem"]
                .iter()
                .map(|op| st.count(op, "dropped") + st.count(op, "throttled"))
                .sum::<u64>()
        })
        .sum();
    assert!(dropped > 0, "the faults did not happen");
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// A holder item as another process would have written it, with a `ddblock_since` stamp.
async fn hold_with_stamp(f: &FaultyTable, since_ms: i64) {
    let expires = now_ms() / 1000 + 30;
    let item = [
        ("key", s("hot")),
        ("value", s("s:16:\"elsewhere-owner0\";")),
        ("expires_at", n(expires)),
        ("ddblock_since", n(since_ms)),
    ];
    ddblock_test_support::put_raw_item(
        &common::client_for(&f.proxy.upstream),
        &f.table,
        item.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
    )
    .await;
}

/// A stamp that misleads (a holder's clock an hour off, either way, or a stamp left behind) costs
/// time, never the lock: looks stay bounded while it is held (at most 12 quick looks per holder,
/// then the plain backoff), and once it is freed the waiter takes it within about the backoff's cap
/// (1 s) plus one hold-back (0.1 s).
async fn a_misleading_stamp_costs_bounded_looks_and_time(server: Server) {
    for offset_ms in [-3_600_000, 3_600_000] {
        let f = FaultyTable::new(server).await;
        hold_with_stamp(&f, now_ms() + offset_ms).await;
        let store = Store::new(f.through().build().unwrap());
        store.client().await.unwrap();
        let lock = store.lock("hot", 10).unwrap();
        let waiter = tokio::spawn(async move {
            let out = lock.acquire_within(Some(Duration::from_secs(20))).await;
            (out, Instant::now(), lock)
        });
        tokio::time::sleep(Duration::from_secs(3)).await;
        let reads = f.proxy.stats().total("GetItem");
        // A stamp an hour younger than the waiter: it is overdue, looks quickly 12 times, then
        // by the backoff (50 ms doubling to 1 s): about 17 in 3 s. An hour older: it sleeps the
        // backoff's cap between looks. Without the bound it would look every 25 ms: 120 times.
        assert!(reads <= 24, "{offset_ms}: {reads} reads in 3 s");
        common::client_for(&f.proxy.upstream)
            .delete_item()
            .table_name(&f.table)
            .key("key", s("hot"))
            .send()
            .await
            .unwrap();
        let freed = Instant::now();
        let (out, at, lock) = waiter.await.unwrap();
        assert!(out.unwrap().is_acquired());
        let took = at - freed;
        assert!(
            took <= Duration::from_millis(1_800),
            "{offset_ms}: {took:?}"
        );
        assert!(lock.release().await.unwrap().is_released());
    }
}

/// A process that waited (its acquisition carries a stamp) and then died holding the lock keeps
/// it only until its expiry, as any holder: its stamp holds nobody up beyond that.
async fn a_stamped_holder_that_dies_is_taken_over_at_its_expiry(server: Server) {
    let f = FaultyTable::new(server).await;
    let procs = processes(&f, 2, &FaultConfig::default()).await;
    let dead = procs[0].0.lock("hot", 2).unwrap();
    assert!(dead
        .acquire_within(Some(Duration::from_secs(5)))
        .await
        .unwrap()
        .is_acquired());
    let stamped = f.raw("hot").await.unwrap();
    assert!(stamped.contains_key("ddblock_since"), "{stamped:?}");
    let since = Instant::now();
    let next = procs[1].0.lock("hot", 10).unwrap();
    assert!(next
        .acquire_within(Some(Duration::from_secs(10)))
        .await
        .unwrap()
        .is_acquired());
    // Expiry (2 s, whole seconds: up to 3) plus the takeover's second, plus one look.
    let took = since.elapsed();
    assert!(took <= Duration::from_millis(5_200), "{took:?}");
    assert!(next.release().await.unwrap().is_released());
}

/// Acquire without waiting stays Laravel's item plus attempt and fence: no stamp (its request is
/// the one the conformance vectors fix); waiting acquisitions carry one.
async fn only_waiting_acquisitions_are_stamped(server: Server) {
    let f = FaultyTable::new(server).await;
    let store = Store::new(f.through().build().unwrap());
    let once = store.lock("once", 10).unwrap();
    assert!(once.acquire().await.unwrap().is_acquired());
    assert!(!f.raw("once").await.unwrap().contains_key("ddblock_since"));
    let waited = store.lock("waited", 10).unwrap();
    let before = now_ms();
    assert!(waited
        .acquire_within(Some(Duration::from_secs(1)))
        .await
        .unwrap()
        .is_acquired());
    let item = f.raw("waited").await.unwrap();
    let stamp: i64 = item["ddblock_since"].as_n().unwrap().parse().unwrap();
    assert!(
        stamp >= before - 1_000 && stamp <= now_ms(),
        "{stamp} vs {before}"
    );
    assert!(once.release().await.unwrap().is_released());
    assert!(waited.release().await.unwrap().is_released());
}

on_servers!(
    processes_take_turns,
    a_process_with_many_waiters_leaves_room_for_others,
    turns_survive_lost_answers_throttling_and_latency,
    a_misleading_stamp_costs_bounded_looks_and_time,
    a_stamped_holder_that_dies_is_taken_over_at_its_expiry,
    only_waiting_acquisitions_are_stamped,
);
