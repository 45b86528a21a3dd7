//! The stuck-lock comparison: W workers loop acquire → work → release on a few lock names through a
//! proxy that serves eventually consistent reads stale, once with Laravel's real PHP lock, once with
//! Laravel and the ddblock driver (`bindings/php`), once with ddblock, and the counts of stuck
//! locks, double holders and requests per cycle.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ddblock::{KeyLayout, ReleaseOutcome, Store, StoreConfig};
use ddblock_fault_proxy::{FaultConfig, ProxyHandle, Stats};
use ddblock_test_support::faulty::try_faulty;
use ddblock_test_support::laravel::{self, PeerEnv};
use rand::Rng;
use serde::Deserialize;

/// The workload and the fault model.
#[derive(Debug, Clone)]
pub struct Options {
    /// The DynamoDB-compatible server behind the proxy.
    pub upstream: String,
    /// Workers per side (PHP processes for the two Laravel sides, tokio tasks for ddblock).
    pub workers: usize,
    /// Lock names the workers contend on.
    pub names: Vec<String>,
    /// Cycles (acquire attempts) per worker.
    pub cycles: usize,
    /// Lock ttl in seconds: how long a stuck lock blocks its name.
    pub ttl_secs: i64,
    /// Time spent holding the lock per cycle.
    pub work_ms: u64,
    /// Eventually consistent reads see items as they were up to this long ago.
    pub stale_ms: u64,
    /// Share of eventually consistent reads that are stale at all.
    pub stale_probability: f64,
    /// Seed of the proxy's fault choices.
    pub seed: u64,
    /// Key layout of every side (the PHP harness subclasses Laravel's store for 11 and 12; with the
    /// driver it loads upstream Laravel 13's lock classes for 12).
    pub layout: KeyLayout,
    /// Cache prefix of both sides.
    pub prefix: String,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            upstream: String::new(),
            workers: 4,
            names: vec!["orders".into(), "invoices".into()],
            cycles: 40,
            ttl_secs: 1,
            work_ms: 10,
            stale_ms: 500,
            stale_probability: 1.0,
            seed: 42,
            layout: KeyLayout::Laravel8,
            prefix: "app_".into(),
        }
    }
}

/// One side's figures.
#[derive(Debug, Clone)]
pub struct SideReport {
    /// Which release path, e.g. `Laravel 8.83 release` or `ddblock release`.
    pub label: String,
    /// Acquire attempts.
    pub cycles: usize,
    /// Attempts that got the lock.
    pub acquired: usize,
    /// Releases that deleted the lock.
    pub released: usize,
    /// Releases that returned false and left our lock in the table until it expires.
    pub stuck: usize,
    /// Times a lock was acquired while another holder's recorded hold had not ended.
    pub overlaps: usize,
    /// Calls that failed with an error.
    pub errors: usize,
    /// Requests the proxy saw, by operation.
    pub requests: BTreeMap<String, u64>,
    /// Eventually consistent reads answered stale.
    pub stale_reads: u64,
    /// Wall time of the side's run.
    pub wall: Duration,
}

impl SideReport {
    /// Requests of operation `op` per acquire attempt.
    pub fn per_cycle(&self, op: &str) -> f64 {
        *self.requests.get(op).unwrap_or(&0) as f64 / self.cycles.max(1) as f64
    }
}

/// One cycle of one worker, as recorded (PHP's harness writes the same fields as JSON lines).
#[derive(Debug, Clone, Deserialize)]
pub struct Record {
    /// Lock name.
    pub name: String,
    /// Whether acquire succeeded.
    pub acquired: bool,
    /// When acquire returned (Unix seconds, fractional).
    pub t_acq: Option<f64>,
    /// Just before release was called.
    pub t_rel: Option<f64>,
    /// Whether release deleted the lock.
    pub released: Option<bool>,
    /// An error, if a call failed.
    #[serde(default)]
    pub error: Option<String>,
}

/// Counts holds that began before the previous hold of the same name ended. A recorded hold lies
/// inside the real one (taken after acquire returned, before release was sent), so any overlap
/// found here is a real double holder.
pub fn count_overlaps(records: &[Record]) -> usize {
    let mut by_name: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    for r in records {
        if let (true, Some(a), Some(b)) = (r.acquired, r.t_acq, r.t_rel) {
            by_name.entry(&r.name).or_default().push((a, b));
        }
    }
    let mut overlaps = 0;
    for holds in by_name.values_mut() {
        holds.sort_by(|x, y| x.0.total_cmp(&y.0));
        let mut latest_end = f64::MIN;
        for &(start, end) in holds.iter() {
            if start < latest_end {
                overlaps += 1;
            }
            latest_end = latest_end.max(end);
        }
    }
    overlaps
}

fn summarize(label: &str, records: &[Record], stats: &Stats, wall: Duration) -> SideReport {
    let acquired = records.iter().filter(|r| r.acquired).count();
    // A PHP record says `released: false` for a cycle that never acquired; only held locks count.
    let held = || records.iter().filter(|r| r.acquired);
    let released = held().filter(|r| r.released == Some(true)).count();
    let requests = stats
        .ops
        .iter()
        .filter(|(op, _)| !op.starts_with("__"))
        .map(|(op, outcomes)| (op.clone(), outcomes.values().sum()))
        .collect();
    SideReport {
        label: label.to_owned(),
        cycles: records.len(),
        acquired,
        released,
        stuck: held().filter(|r| r.released == Some(false)).count(),
        overlaps: count_overlaps(records),
        errors: records.iter().filter(|r| r.error.is_some()).count(),
        requests,
        stale_reads: stats
            .ops
            .values()
            .map(|m| {
                m.get(ddblock_fault_proxy::STALE_SERVED)
                    .copied()
                    .unwrap_or(0)
            })
            .sum(),
        wall,
    }
}

/// A store on `table` at `endpoint` (credentials from the environment, as any ddblock user).
async fn store_at(endpoint: &str, table: &str, opts: &Options) -> Result<Store, String> {
    let cfg = StoreConfig::builder()
        .table(table)
        .endpoint(endpoint)
        .prefix(&opts.prefix)
        .layout(opts.layout)
        .build()
        .map_err(|e| e.to_string())?;
    Store::connect(cfg).await.map_err(|e| e.to_string())
}

/// A fresh Laravel-schema table on the upstream (not through the proxy).
async fn create_table(opts: &Options, table: &str) -> Result<(), String> {
    let store = store_at(&opts.upstream, table, opts).await?;
    ddblock_admin::Admin::new(&store)
        .create_table(&ddblock_admin::CreateTableOptions::new().ttl(false))
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn table_name(side: &str) -> String {
    format!(
        "stuck_{side}_{}_{}",
        std::process::id(),
        ddblock::lock::random_owner().to_lowercase()
    )
}

/// Starts the stale-read proxy in front of `opts.upstream`.
pub async fn start_proxy(opts: &Options) -> Result<ProxyHandle, String> {
    let faults = FaultConfig {
        seed: opts.seed,
        stale_ms: opts.stale_ms,
        stale_probability: opts.stale_probability,
        ..FaultConfig::default()
    };
    Ok(try_faulty(&opts.upstream, faults).await?.proxy)
}

/// Which lock the PHP workers use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhpLock {
    /// Laravel's own `DynamoDbLock` (read, then delete).
    Laravel,
    /// Laravel's store with the ddblock driver installed (`bindings/php`: one conditional delete).
    Driver,
}

impl PhpLock {
    fn env(self) -> &'static str {
        match self {
            PhpLock::Laravel => "laravel",
            PhpLock::Driver => "ddblock",
        }
    }

    /// Its part of the side's table name.
    fn table_tag(self) -> &'static str {
        match self {
            PhpLock::Laravel => "php",
            PhpLock::Driver => "drv",
        }
    }
}

/// Laravel's real lock (PHP worker processes: `compat-tests/laravel/harness.php`'s `cycles`).
pub async fn run_laravel(opts: &Options, proxy: &ProxyHandle) -> Result<SideReport, String> {
    let label = "Laravel 8.83 release (GetItem, then DeleteItem)";
    run_side(opts, proxy, Some(PhpLock::Laravel), label).await
}

/// Laravel with the ddblock driver (PHP worker processes, `DDB_DRIVER=ddblock`), the same workload.
pub async fn run_laravel_driver(opts: &Options, proxy: &ProxyHandle) -> Result<SideReport, String> {
    let label = "Laravel + ddblock driver (one cond. DeleteItem)";
    run_side(opts, proxy, Some(PhpLock::Driver), label).await
}

/// ddblock's lock (tokio tasks sharing one client), the same workload.
pub async fn run_ddblock(opts: &Options, proxy: &ProxyHandle) -> Result<SideReport, String> {
    let label = "ddblock release (one conditional DeleteItem)";
    run_side(opts, proxy, None, label).await
}

/// One side on a fresh table: PHP workers with `php`'s lock, or ddblock's workers for `None`.
async fn run_side(
    opts: &Options,
    proxy: &ProxyHandle,
    php: Option<PhpLock>,
    label: &str,
) -> Result<SideReport, String> {
    let table = table_name(php.map_or("rs", PhpLock::table_tag));
    create_table(opts, &table).await?;
    let store = match php {
        None => Some(store_at(&proxy.url(), &table, opts).await?),
        Some(_) => None,
    };
    proxy.reset();
    let started = Instant::now();
    let records = match (php, &store) {
        (Some(lock), _) => php_workers(opts, &proxy.url(), &table, lock).await?,
        (None, Some(store)) => rust_workers(opts, store).await?,
        (None, None) => unreachable!("ddblock's side has its store"),
    };
    Ok(summarize(
        label,
        &records,
        &proxy.stats(),
        started.elapsed(),
    ))
}

/// The three sides' figures of a mixed run, and the overlaps across all of them.
#[derive(Debug, Clone)]
pub struct MixedReport {
    /// Laravel's own lock.
    pub laravel: SideReport,
    /// Laravel with the ddblock driver.
    pub driver: SideReport,
    /// ddblock (Rust).
    pub ddblock: SideReport,
    /// Holds of one lock that overlapped, whichever sides held them.
    pub overlaps: usize,
}

/// All three at once on ONE table, as during a migration: Laravel's PHP workers, PHP workers with
/// the ddblock driver and ddblock's workers contend for the same locks.
pub async fn run_mixed(opts: &Options, proxy: &ProxyHandle) -> Result<MixedReport, String> {
    let table = table_name("mix");
    create_table(opts, &table).await?;
    let store = store_at(&proxy.url(), &table, opts).await?;
    proxy.reset();
    let started = Instant::now();
    let url = proxy.url();
    let (php, driver, rust) = tokio::join!(
        php_workers(opts, &url, &table, PhpLock::Laravel),
        php_workers(opts, &url, &table, PhpLock::Driver),
        rust_workers(opts, &store)
    );
    let (php, driver, rust) = (php?, driver?, rust?);
    let wall = started.elapsed();
    let stats = proxy.stats();
    let all: Vec<Record> = php.iter().chain(&driver).chain(&rust).cloned().collect();
    // The proxy cannot tell the sides' requests apart: per-side request figures are left out.
    let side = |label: &str, records: &[Record]| {
        let mut report = summarize(label, records, &stats, wall);
        report.requests.clear();
        report
    };
    Ok(MixedReport {
        laravel: side("same table: Laravel 8.83 workers", &php),
        driver: side("same table: Laravel + driver workers", &driver),
        ddblock: side("same table: ddblock workers", &rust),
        overlaps: count_overlaps(&all),
    })
}

/// `opts.workers` PHP peers (`compat-tests/laravel/harness.php`), each sent one `cycles` request
/// (compat-tests/support/peers/PROTOCOL.md); every cycle's record.
async fn php_workers(
    opts: &Options,
    endpoint: &str,
    table: &str,
    lock: PhpLock,
) -> Result<Vec<Record>, String> {
    let record = std::env::temp_dir().join(format!("{table}.{}.jsonl", lock.env()));
    let layout = opts.layout.as_str();
    let env = PeerEnv::new(endpoint, table, layout, &opts.prefix, lock.env());
    let mut children = Vec::new();
    for i in 0..opts.workers {
        let request = serde_json::json!({
            "op": "cycles", "names": opts.names, "cycles": opts.cycles, "ttl": opts.ttl_secs,
            "work_ms": opts.work_ms, "seed": opts.seed + i as u64,
            "record": record.display().to_string(),
        });
        children.push(laravel::start(&env, &request, "a PHP worker").await?);
    }
    for child in children {
        laravel::answer(child, "a PHP worker").await?;
    }
    laravel::take_records(&record)
}

async fn rust_workers(opts: &Options, store: &Store) -> Result<Vec<Record>, String> {
    let records = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for w in 0..opts.workers {
        let (store, records, opts) = (store.clone(), records.clone(), opts.clone());
        tasks.push(tokio::spawn(async move {
            for c in 0..opts.cycles {
                let name = &opts.names[(w + c) % opts.names.len()];
                let rec = cycle(&store, name, &opts).await;
                records.lock().expect("records").push(rec);
            }
        }));
    }
    for t in tasks {
        t.await.map_err(|e| e.to_string())?;
    }
    let records = records.lock().expect("records").clone();
    Ok(records)
}

async fn cycle(store: &Store, name: &str, opts: &Options) -> Record {
    let mut rec = Record {
        name: name.to_owned(),
        acquired: false,
        t_acq: None,
        t_rel: None,
        released: None,
        error: None,
    };
    let lock = match store.lock(name, opts.ttl_secs) {
        Ok(l) => l,
        Err(e) => {
            rec.error = Some(e.to_string());
            return rec;
        }
    };
    match lock.acquire().await {
        Ok(o) if o.is_acquired() => {
            rec.acquired = true;
            rec.t_acq = Some(unix_now());
            tokio::time::sleep(Duration::from_millis(opts.work_ms)).await;
            rec.t_rel = Some(unix_now());
            match lock.release().await {
                Ok(out) => rec.released = Some(out == ReleaseOutcome::Released),
                Err(e) => rec.error = Some(e.to_string()),
            }
        }
        Ok(_) => {
            let pause = rand::rng().random_range(5..=20);
            tokio::time::sleep(Duration::from_millis(pause)).await;
        }
        Err(e) => rec.error = Some(e.to_string()),
    }
    rec
}

/// The printed comparison table.
pub fn render(reports: &[SideReport], opts: &Options) -> String {
    let staleness = if opts.stale_probability >= 1.0 {
        "every eventually consistent read stale (probability 1: the worst case)".to_owned()
    } else {
        format!(
            "{:.0} % of eventually consistent reads stale",
            opts.stale_probability * 100.0
        )
    };
    let mut out = format!(
        "{} workers x {} cycles on {} lock names, ttl {} s, {} ms of work; {staleness}, by up to {} ms\n\n",
        opts.workers,
        opts.cycles,
        opts.names.len(),
        opts.ttl_secs,
        opts.work_ms,
        opts.stale_ms,
    );
    let header = "cycles|acquired|stuck|overlaps|errors|wall s|Write/cyc|Get/cyc|Del/cyc|all/cyc";
    let header: Vec<String> = header.split('|').map(String::from).collect();
    out.push_str(&table_row("release path", &header));
    for r in reports {
        let all: u64 = r.requests.values().sum();
        let per_cycle = [
            r.per_cycle("PutItem") + r.per_cycle("UpdateItem"),
            r.per_cycle("GetItem"),
            r.per_cycle("DeleteItem"),
            all as f64 / r.cycles.max(1) as f64,
        ];
        let counts = [r.cycles, r.acquired, r.stuck, r.overlaps, r.errors];
        let mut cells: Vec<String> = counts.iter().map(ToString::to_string).collect();
        cells.push(format!("{:.1}", r.wall.as_secs_f64()));
        // The requests of a mixed run's side are unknown (one proxy for every side).
        cells.extend(per_cycle.iter().map(|x| {
            if r.requests.is_empty() {
                "-".to_owned()
            } else {
                format!("{x:.2}")
            }
        }));
        out.push_str(&table_row(&r.label, &cells));
    }
    out.push_str(
        "\ncycle = one try: acquire, and when it got the lock, the work and the release; \
         acquired = cycles that got the lock.\n\
         stuck = release returned false and left the lock in the table until it expires; \
         overlaps = a lock acquired while another holder's hold had not ended.\n\
         Requests per cycle (Write = the conditional write that takes the lock: Laravel's PutItem, \
         ddblock's UpdateItem): a cycle that got the lock costs ddblock 2 (write + DeleteItem) and \
         Laravel 3 (write + GetItem + DeleteItem), or 2 when the stale read skips the delete (a \
         stuck lock); a cycle that did not get it costs 1 write. So all/cyc falls towards 1 when \
         most cycles find the lock held.\n\
         When stock Laravel shares the names, the locks it leaves stuck block every worker on that \
         name until they expire, ddblock's and the driver's included: their few acquisitions in \
         such rows are the bug's cost to everyone, not slowness of their own.\n",
    );
    out.push('\n');
    out.push_str(&verdict(reports));
    out
}

/// One line of the table: the label, then the ten figures right-aligned in their columns.
fn table_row(label: &str, cells: &[String]) -> String {
    const WIDTHS: [usize; 10] = [6, 8, 6, 8, 8, 6, 8, 8, 8, 8];
    let mut line = format!("{label:<48}");
    for (cell, width) in cells.iter().zip(WIDTHS) {
        line.push_str(&format!(" {cell:>width$}"));
    }
    line.push('\n');
    line
}

/// One line: how many acquired locks each release path left stuck, and the overlaps.
pub fn verdict(reports: &[SideReport]) -> String {
    let parts: Vec<String> = reports
        .iter()
        .map(|r| {
            format!(
                "{}: {} of {} acquired locks stuck",
                r.label, r.stuck, r.acquired
            )
        })
        .collect();
    let overlaps: usize = reports.iter().map(|r| r.overlaps).sum();
    format!(
        "verdict: {}; double holders: {overlaps}.\n",
        parts.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hold(name: &str, a: f64, b: f64) -> Record {
        Record {
            name: name.into(),
            acquired: true,
            t_acq: Some(a),
            t_rel: Some(b),
            released: Some(true),
            error: None,
        }
    }

    fn side(label: &str, acquired: usize, stuck: usize) -> SideReport {
        SideReport {
            label: label.into(),
            cycles: 100,
            acquired,
            released: acquired - stuck,
            stuck,
            overlaps: 0,
            errors: 0,
            requests: BTreeMap::from([("PutItem".to_owned(), 100)]),
            stale_reads: 0,
            wall: Duration::from_secs(1),
        }
    }

    #[test]
    fn the_report_explains_itself_and_ends_in_a_verdict() {
        let opts = Options {
            stale_probability: 1.0,
            ..Options::default()
        };
        let text = render(&[side("Laravel", 8, 8), side("ddblock", 90, 0)], &opts);
        assert!(text.contains("probability 1: the worst case"), "{text}");
        assert!(text.contains("cycle = one try"), "{text}");
        assert!(text.contains("costs ddblock 2"), "{text}");
        assert!(text.contains("block every worker on that name"), "{text}");
        assert!(
            text.ends_with(
                "verdict: Laravel: 8 of 8 acquired locks stuck; ddblock: 0 of 90 acquired locks \
                 stuck; double holders: 0.\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn overlaps_are_counted_per_name() {
        assert_eq!(
            count_overlaps(&[
                hold("a", 1.0, 2.0),
                hold("a", 2.5, 3.0),
                hold("b", 1.5, 2.2)
            ]),
            0
        );
        assert_eq!(
            count_overlaps(&[hold("a", 1.0, 2.0), hold("a", 1.9, 3.0)]),
            1
        );
        assert_eq!(
            count_overlaps(&[
                hold("a", 1.0, 5.0),
                hold("a", 2.0, 3.0),
                hold("a", 4.0, 4.5)
            ]),
            2
        );
    }
}
