//! Contention: W workers (processes) want one key, hold it 50 ms, pause 50 ms, want it again.
//! Stock Laravel's `block()` (PHP processes) against ddblock's wait (Rust processes: the core's
//! `block`), the wait ddblock had before (writes with backoff), and W waiters in ONE process
//! (the core's local waiters). Every worker process is a peer (compat-tests/support/peers/
//! PROTOCOL.md) sent one `cycles` request: harness.php, or the Rust peer `ddblock-peer`. Write
//! requests per acquisition, hand-off latency, waits, fairness (max / min acquisitions per
//! worker, Jain's index), and the request-unit cost. One more run mixes stock Laravel's and
//! ddblock's waiters on the same key (is either kind starved?). Plus: N local waiters on a key
//! held elsewhere cost what 1 does.

use std::collections::{BTreeMap, BTreeSet};

use std::time::Duration;

use ddblock::format::item::ATTEMPT_ATTRIBUTE;
use ddblock::Store;
use ddblock_fault_proxy::ProxyHandle;
use ddblock_test_support::laravel::{self, PeerEnv};
use ddblock_test_support::metrics::Buckets;
use serde::Serialize;
use serde_json::json;

use crate::util::{
    block_request, create_table, quantile, rust_peer, store_at, table_name, unix_now,
    wants_by_worker, Ctx, Want,
};

/// DynamoDB on-demand prices (us-east-1), US$ per million request units: a write request unit
/// (an item up to 1 KB), a read request unit (a strongly consistent read up to 4 KB; an
/// eventually consistent read is half a unit).
pub const WRU_PRICE: f64 = 0.625;
pub const RRU_PRICE: f64 = 0.125;

/// One row of the contention table.
#[derive(Debug, Clone, Serialize)]
pub struct ContentionRow {
    pub side: String,
    pub workers: usize,
    pub acquisitions: usize,
    pub writes_per_acq: f64,
    /// Acquire writes per acquisition (Laravel's `add()` PutItems, ddblock's UpdateItems): the
    /// writes without the release's.
    pub acquire_writes_per_acq: f64,
    /// Refused acquire writes per acquisition (the waiting's own write cost).
    pub refused_per_acq: f64,
    /// Reads per acquisition as DynamoDB would see them (dynalite's extra read after a refused
    /// write, where it ignores ALL_OLD, left out).
    pub reads_per_acq: f64,
    /// Consistent reads count one read unit, eventually consistent ones (the proxy's
    /// `eventual_reads`: Laravel's release read, ddblock's looks) half.
    pub read_units_per_acq: f64,
    pub handoff_median_ms: f64,
    pub handoff_p99_ms: f64,
    /// Hand-offs measured (an acquisition by a worker that was waiting at the release).
    pub handoffs: usize,
    /// Every hand-off measured, ms (the distribution plot).
    pub handoff_samples_ms: Vec<f64>,
    pub max_wait_ms: f64,
    /// Request-unit cost per 1,000 acquisitions, in write-unit equivalents (WRU + RRU/5).
    pub wru_eq_per_1000: f64,
    /// US$ per million acquisitions at on-demand prices.
    pub usd_per_million: f64,
    /// Acquisitions by the worker that got fewest, and most.
    pub min_per_worker: usize,
    pub max_per_worker: usize,
    /// Waits (from wanting the lock to getting it; a want the run ended first counts until the
    /// end of the run), over every want of every worker: median and p99 (nearest rank), ms.
    pub median_wait_ms: f64,
    pub p99_wait_ms: f64,
    /// `max_per_worker / min_per_worker`; `None` (JSON `null`: infinite) when a worker got none.
    pub max_min_ratio: Option<f64>,
    /// Jain's fairness index over acquisitions per worker, `(Σx)² / (n·Σx²)`: 1 when every
    /// worker got as many, `1/n` when one got them all (0 when none got any).
    pub jain: f64,
    /// The mixed run only: its Laravel and ddblock workers apart.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mixed: Option<MixedFigures>,
    /// The Rust rows that wait with `block()`: ddblock's own wait and hold histograms, as its
    /// metrics recorded them (OpenTelemetry SDK in each worker), summed over the workers.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub histograms: BTreeMap<String, Buckets>,
}

/// The figures of one kind of worker in the mixed run.
#[derive(Debug, Clone, Serialize)]
pub struct KindFigures {
    pub workers: usize,
    pub acquisitions: usize,
    pub min_per_worker: usize,
    pub max_per_worker: usize,
    pub median_wait_ms: f64,
    pub p99_wait_ms: f64,
    pub max_wait_ms: f64,
}

/// The mixed run: stock Laravel's `block()` and ddblock's, on one key at once.
#[derive(Debug, Clone, Serialize)]
pub struct MixedFigures {
    pub laravel: KindFigures,
    pub ddblock: KindFigures,
    /// The lock's table key, as the Rust workers' store builds it (`store_at`: Laravel 12 layout,
    /// no prefix) and as the PHP workers' stock Laravel 12 store does (`laravel12`, prefix "").
    pub key: String,
    /// Every table key seen by scans of the table during the run (straight to dynalite, every
    /// 250 ms), with who held it (`laravel`: Laravel's `add()` item; `ddblock`: an item with
    /// ddblock's attempt attribute). The run fails unless `key` is the only key.
    pub keys_seen: BTreeMap<String, BTreeSet<String>>,
    /// Holds (acquire returned .. release began) of one kind overlapping a hold of the other: 0
    /// when the two kinds exclude each other on the one item.
    pub cross_overlaps: usize,
}

/// The sides of the figure.
#[derive(Debug, Clone, Copy)]
pub enum Side {
    Laravel,
    Core,
    Writes,
    OneProcess,
    /// Every acquisition a new `ddblock run --wait` process (`oneshot.rs`).
    OneShot,
    /// Every acquisition a new PHP process, stock Laravel's `block()` (`oneshot.rs`).
    LaravelOneShot,
    /// Half the workers stock Laravel's `block()` (PHP), half ddblock's (Rust processes), on the
    /// same table and key at once.
    Mixed,
}

impl Side {
    /// The side's short name (`BENCH_SIDES`).
    pub fn name(self) -> &'static str {
        match self {
            Side::Laravel => "laravel",
            Side::Core => "core",
            Side::Writes => "writes",
            Side::OneProcess => "oneprocess",
            Side::OneShot => "oneshot",
            Side::LaravelOneShot => "laravel-oneshot",
            Side::Mixed => "mixed",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Side::Laravel => "stock Laravel block() (PHP processes, 250 ms poll)",
            Side::Core => "ddblock block() (Rust processes)",
            Side::Writes => "ddblock before: a write per try, 50 ms doubling to 1 s",
            Side::OneProcess => "ddblock block(), all waiters in one process",
            Side::OneShot => "ddblock run --wait, a new CLI process per acquisition",
            Side::LaravelOneShot => "stock Laravel block(), a new PHP process per acquisition",
            Side::Mixed => "mixed: stock Laravel and ddblock block() sharing one key",
        }
    }
}

/// One run of `side` with `workers` workers; the row.
pub async fn run_side(
    ctx: &Ctx,
    proxy: &ProxyHandle,
    side: Side,
    workers: usize,
) -> Result<ContentionRow, String> {
    let table = table_name("hot");
    create_table(&ctx.dynalite, &table).await?;
    let url = proxy.url();
    // Time for every process to start before they begin together.
    let startup = match side {
        Side::Laravel | Side::LaravelOneShot | Side::Mixed => 1.0 + 0.06 * workers as f64,
        _ => 0.5 + 0.02 * workers as f64,
    };
    let start_at = unix_now() + startup;
    let until = start_at + ctx.profile.contention_secs;
    proxy.reset();
    let mut mixed = None;
    let mut histograms = BTreeMap::new();
    let per_worker: Vec<Vec<Want>> = match side {
        Side::Laravel => php_block_workers(ctx, &url, &table, workers, start_at, until).await?,
        Side::Writes => {
            rust_workers(ctx, &url, &table, (workers, 1, "writes"), start_at, until)
                .await?
                .0
        }
        Side::OneProcess => {
            rust_workers(ctx, &url, &table, (1, workers, "block"), start_at, until)
                .await?
                .0
        }
        Side::OneShot => {
            crate::oneshot::cli_workers(ctx, &url, &table, workers, start_at, until).await?
        }
        Side::LaravelOneShot => {
            crate::oneshot::php_workers(ctx, &url, &table, workers, start_at, until).await?
        }
        Side::Core => {
            let (wants, h) =
                rust_workers(ctx, &url, &table, (workers, 1, "block"), start_at, until).await?;
            histograms = h;
            wants
        }
        Side::Mixed => {
            let php = workers / 2;
            let rust = workers - php;
            let store = store_at(&ctx.dynalite, &table)?;
            let key = store.lock_key("hot").map_err(|e| e.to_string())?;
            let (lar, (ours, _), keys_seen) = tokio::try_join!(
                php_block_workers(ctx, &url, &table, php, start_at, until),
                rust_workers(ctx, &url, &table, (rust, 1, "block"), start_at, until),
                keys_during(&store, until + 1.0),
            )?;
            if keys_seen.keys().any(|k| *k != key) {
                return Err(format!(
                    "mixed contention: the table held keys {:?}, not only {key:?}: stock Laravel's \
                     and ddblock's workers did not share one item",
                    keys_seen.keys().collect::<Vec<_>>()
                ));
            }
            mixed = Some(MixedFigures {
                laravel: kind_figures(&lar, until),
                ddblock: kind_figures(&ours, until),
                key,
                keys_seen,
                cross_overlaps: cross_overlaps(&lar, &ours),
            });
            lar.into_iter().chain(ours).collect()
        }
    };
    let stats = proxy.stats();
    let mut row = summarize(side, workers, &per_worker, &stats, until);
    row.mixed = mixed;
    row.histograms = histograms;
    Ok(row)
}

/// `procs` Rust peers (`ddblock-peer`, the core; Laravel 12's layout, no prefix, as `store_at`),
/// each sent one `cycles` request with `tasks` loops: the PHP side's request, waiting by `wait`
/// (`block`: the core's `block()`; `writes`: a conditional write per try, the lock's backoff
/// between tries). Every loop's wants, and (waiting by `block`) ddblock's own wait and hold
/// histograms.
async fn rust_workers(
    ctx: &Ctx,
    url: &str,
    table: &str,
    (procs, tasks, wait): (usize, usize, &str),
    start_at: f64,
    until: f64,
) -> Result<(Vec<Vec<Want>>, BTreeMap<String, Buckets>), String> {
    let record = ctx.scratch.join(format!("{table}.rust.jsonl"));
    let mut request = block_request(&record, start_at, until);
    request["wait"] = json!(wait);
    request["tasks"] = json!(tasks);
    let env = [
        ("DDB_ENDPOINT", url.to_owned()),
        ("DDB_TABLE", table.to_owned()),
        ("DDB_LAYOUT", "laravel12".to_owned()),
        ("DDB_PREFIX", String::new()),
    ];
    request["metrics"] = json!(wait == "block");
    let mut children = Vec::new();
    for _ in 0..procs {
        let (peer, env, request) = (ctx.peer.clone(), env.clone(), request.clone());
        children.push(tokio::spawn(async move {
            rust_peer(&peer, &env, &request, "Rust contention worker").await
        }));
    }
    let mut histograms: BTreeMap<String, Buckets> = BTreeMap::new();
    for c in children {
        let answer = c.await.map_err(|e| e.to_string())??;
        let theirs: BTreeMap<String, Buckets> =
            serde_json::from_value(answer["histograms"].clone()).unwrap_or_default();
        for (name, b) in theirs {
            histograms.entry(name).or_default().add(b.bounds, b.counts);
        }
    }
    Ok((wants_by_worker(&record)?, histograms))
}

/// Scans `store`'s table every 250 ms until `until` (straight to the server, not through the
/// proxy, so the row's request counts leave it out): every key seen, with who held it then.
async fn keys_during(
    store: &Store,
    until: f64,
) -> Result<BTreeMap<String, BTreeSet<String>>, String> {
    let client = store.client().await.map_err(|e| e.to_string())?;
    let cfg = store.config();
    let mut seen: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    while unix_now() < until {
        let page = client
            .scan()
            .table_name(cfg.table())
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| format!("scan {}: {e:?}", cfg.table()))?;
        for item in page.items() {
            let Some(key) = item.get(cfg.key_attribute()).and_then(|k| k.as_s().ok()) else {
                continue;
            };
            let who = if item.contains_key(ATTEMPT_ATTRIBUTE) {
                "ddblock"
            } else {
                "laravel"
            };
            seen.entry(key.clone()).or_default().insert(who.into());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Ok(seen)
}

/// Every want's wait, ms: until the acquisition, or until the end of the run (`until`) for a want
/// the run ended first.
fn waits_ms<'a>(wants: impl IntoIterator<Item = &'a Want>, until: f64) -> Vec<f64> {
    wants
        .into_iter()
        .map(|w| ((w.t_acq.unwrap_or(until) - w.t_try) * 1e3).max(0.0))
        .collect()
}

/// Acquisitions of each worker.
fn acquisitions_per_worker(per_worker: &[Vec<Want>]) -> Vec<usize> {
    per_worker
        .iter()
        .map(|ws| ws.iter().filter(|w| w.acquired).count())
        .collect()
}

/// Max / min of `counts` (`None`: a worker got none), and Jain's index (0 when none got any).
fn fairness(counts: &[usize]) -> (Option<f64>, f64) {
    let min = counts.iter().copied().min().unwrap_or(0);
    let max = counts.iter().copied().max().unwrap_or(0);
    let ratio = (min > 0).then(|| max as f64 / min as f64);
    let sum: f64 = counts.iter().map(|&c| c as f64).sum();
    let squares: f64 = counts.iter().map(|&c| (c as f64).powi(2)).sum();
    let jain = if squares > 0.0 {
        sum * sum / (counts.len() as f64 * squares)
    } else {
        0.0
    };
    (ratio, jain)
}

/// One kind's figures in the mixed run.
fn kind_figures(per_worker: &[Vec<Want>], until: f64) -> KindFigures {
    let counts = acquisitions_per_worker(per_worker);
    let waits = waits_ms(per_worker.iter().flatten(), until);
    KindFigures {
        workers: per_worker.len(),
        acquisitions: counts.iter().sum(),
        min_per_worker: counts.iter().copied().min().unwrap_or(0),
        max_per_worker: counts.iter().copied().max().unwrap_or(0),
        median_wait_ms: quantile(&waits, 0.5),
        p99_wait_ms: quantile(&waits, 0.99),
        max_wait_ms: waits.iter().copied().fold(0.0, f64::max),
    }
}

/// Holds of `a`'s workers overlapping a hold of `b`'s (acquire returned .. release began).
fn cross_overlaps(a: &[Vec<Want>], b: &[Vec<Want>]) -> usize {
    let holds = |ws: &[Vec<Want>]| -> Vec<(f64, f64)> {
        ws.iter()
            .flatten()
            .filter_map(|w| Some((w.t_acq?, w.t_rel?)))
            .collect()
    };
    let (a, b) = (holds(a), holds(b));
    a.iter()
        .filter(|(a0, a1)| b.iter().any(|(b0, b1)| a0 < b1 && b0 < a1))
        .count()
}

fn summarize(
    side: Side,
    workers: usize,
    per_worker: &[Vec<Want>],
    stats: &ddblock_fault_proxy::Stats,
    until: f64,
) -> ContentionRow {
    let mut held: Vec<&Want> = per_worker.iter().flatten().filter(|w| w.acquired).collect();
    held.sort_by(|a, b| a.t_acq.unwrap_or(0.0).total_cmp(&b.t_acq.unwrap_or(0.0)));
    let acquisitions = held.len().max(1);
    // A hand-off: the next holder was already waiting when the previous one began releasing.
    let handoffs: Vec<f64> = held
        .windows(2)
        .filter_map(|p| {
            let (rel, next) = (p[0].t_rel?, p[1]);
            let acq = next.t_acq?;
            (next.t_try < rel).then_some((acq - rel) * 1e3)
        })
        .collect();
    let waits = waits_ms(per_worker.iter().flatten(), until);
    let max_wait_ms = waits.iter().copied().fold(0.0, f64::max);
    let mut counts = acquisitions_per_worker(per_worker);
    // A worker that left no record at all (none expected) got nothing.
    counts.resize(counts.len().max(workers), 0);
    let (max_min_ratio, jain) = fairness(&counts);
    let refused_updates = stats.count(
        "UpdateItem",
        "forwarded_error:ConditionalCheckFailedException",
    );
    let refused_puts = stats.count("PutItem", "forwarded_error:ConditionalCheckFailedException");
    let writes = stats.total("PutItem") + stats.total("UpdateItem") + stats.total("DeleteItem");
    let gets = stats.total("GetItem");
    // dynalite ignores ALL_OLD, so ddblock reads the holder once after each refused write;
    // DynamoDB returns it with the refusal.
    let reads = gets.saturating_sub(refused_updates) as f64;
    // Read units as DynamoDB prices them: a consistent read one, an eventually consistent read
    // half. The proxy counts which reads asked for no consistency: Laravel's release read, and
    // ddblock's looks while it waits.
    let eventual = (stats.eventual_reads as f64).min(reads);
    let read_units = (reads - eventual) + 0.5 * eventual;
    let per = |x: f64| x / acquisitions as f64;
    let wru_eq = per(writes as f64) + per(read_units) * RRU_PRICE / WRU_PRICE;
    ContentionRow {
        side: side.label().into(),
        workers,
        acquisitions: held.len(),
        writes_per_acq: per(writes as f64),
        acquire_writes_per_acq: per((stats.total("PutItem") + stats.total("UpdateItem")) as f64),
        refused_per_acq: per((refused_updates + refused_puts) as f64),
        reads_per_acq: per(reads),
        read_units_per_acq: per(read_units),
        handoff_median_ms: quantile(&handoffs, 0.5),
        handoff_p99_ms: quantile(&handoffs, 0.99),
        handoffs: handoffs.len(),
        handoff_samples_ms: handoffs
            .iter()
            .map(|h| (h * 100.0).round() / 100.0)
            .collect(),
        max_wait_ms,
        wru_eq_per_1000: wru_eq * 1000.0,
        usd_per_million: per(writes as f64) * WRU_PRICE + per(read_units) * RRU_PRICE,
        min_per_worker: counts.iter().copied().min().unwrap_or(0),
        max_per_worker: counts.iter().copied().max().unwrap_or(0),
        median_wait_ms: quantile(&waits, 0.5),
        p99_wait_ms: quantile(&waits, 0.99),
        max_min_ratio,
        jain,
        mixed: None,
        histograms: BTreeMap::new(),
    }
}

/// `workers` PHP peers (stock Laravel 12's layout), each sent one `cycles` request: Laravel's
/// `block()` on one name from `start_at` to `until`, holding it `WORK_MS` and pausing `THINK_MS`.
async fn php_block_workers(
    ctx: &Ctx,
    endpoint: &str,
    table: &str,
    workers: usize,
    start_at: f64,
    until: f64,
) -> Result<Vec<Vec<Want>>, String> {
    let record = ctx.scratch.join(format!("{table}.php.jsonl"));
    let env = PeerEnv::new(endpoint, table, "laravel12", "", "laravel");
    let request = block_request(&record, start_at, until);
    let mut children = Vec::new();
    for _ in 0..workers {
        let (env, request) = (env.clone(), request.clone());
        children.push(tokio::spawn(async move {
            laravel::request(&env, &request, "PHP block worker").await
        }));
    }
    for c in children {
        c.await.map_err(|e| e.to_string())??;
    }
    wants_by_worker(&record)
}

/// N waiters in one process on a key another holder keeps: requests per second of waiting.
#[derive(Debug, Clone, Serialize)]
pub struct LocalRow {
    pub waiters: usize,
    pub hold_secs: f64,
    pub writes: u64,
    pub reads: u64,
    pub requests_per_sec: f64,
    /// From the holder's release to the last waiter's acquisition (they take turns, each holding
    /// for no time): how fast local releases wake the next waiter.
    pub drain_ms: f64,
}

/// The local-waiters figure: `n` tasks of this process wait on a key that a holder through
/// another endpoint (so not "local") keeps for the hold time, then each takes and releases it.
pub async fn local_waiters(ctx: &Ctx, proxy: &ProxyHandle) -> Result<Vec<LocalRow>, String> {
    let mut rows = Vec::new();
    for &n in &ctx.profile.local_waiters {
        let table = table_name("local");
        create_table(&ctx.dynalite, &table).await?;
        let holder = store_at(&ctx.dynalite, &table)?
            .lock("held", 30)
            .map_err(|e| e.to_string())?;
        if !holder
            .acquire()
            .await
            .map_err(|e| e.to_string())?
            .is_acquired()
        {
            return Err("local waiters: the holder did not get the lock".into());
        }
        let store = store_at(&proxy.url(), &table)?;
        store.client().await.map_err(|e| e.to_string())?;
        proxy.reset();
        let hold = ctx.profile.local_hold_secs;
        let mut tasks = Vec::new();
        for _ in 0..n {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                let lock = store.lock("held", 30).map_err(|e| e.to_string())?;
                lock.block(Duration::from_secs(60))
                    .await
                    .map_err(|e| e.to_string())?;
                let got = unix_now();
                lock.release().await.map_err(|e| e.to_string())?;
                Ok::<f64, String>(got)
            }));
        }
        tokio::time::sleep(Duration::from_secs_f64(hold)).await;
        let during = proxy.stats();
        let released_at = unix_now();
        holder.release().await.map_err(|e| e.to_string())?;
        let mut last = released_at;
        for t in tasks {
            last = last.max(t.await.map_err(|e| e.to_string())??);
        }
        let writes = during.total("UpdateItem") + during.total("DeleteItem");
        let reads = during.total("GetItem");
        rows.push(LocalRow {
            waiters: n,
            hold_secs: hold,
            writes,
            reads,
            requests_per_sec: (writes + reads) as f64 / hold,
            drain_ms: (last - released_at) * 1e3,
        });
    }
    Ok(rows)
}
