//! What every figure shares: the profile, where the servers and the other languages are, CPU
//! accounting, percentiles, fresh tables and child processes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{SystemTime, UNIX_EPOCH};

use ddblock_test_support::{child, laravel};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;

/// How much of each figure to run.
#[derive(Debug, Clone)]
pub struct Profile {
    /// `full` (the docs' figures) or `smoke` (the test command: checks the code runs).
    pub name: &'static str,
    /// Uncontended acquire + release cycles per front (request counts).
    pub req_cycles: usize,
    /// Measured cycles per client and round (CPU), and warm-up cycles before each round.
    pub cpu_cycles: usize,
    pub cpu_warmup: usize,
    /// Worker counts of the contention figure, seconds per run, work and pause after a release.
    pub contention_workers: Vec<usize>,
    pub contention_secs: f64,
    /// Workers of the mixed contention run (half stock Laravel, half ddblock, one key); run
    /// right after the sides of that size, or after all of them if it is not in the list.
    pub contention_mixed: usize,
    /// Worker counts that also run one-shot waiters (a new `ddblock run` process per acquisition).
    pub contention_oneshot: Vec<usize>,
    /// Waiters in one process on a key another holder keeps for `local_hold_secs`.
    pub local_waiters: Vec<usize>,
    pub local_hold_secs: f64,
    /// Concurrent distinct locks in one process, and seconds per level.
    pub scaling: Vec<usize>,
    pub scaling_secs: f64,
    /// Stuck locks: staleness levels (ms), workers per side and cycles per worker.
    pub stale_ms: Vec<u64>,
    pub stuck_workers: usize,
    pub stuck_cycles: usize,
}

/// Hold time of the contention figure (ms).
pub const WORK_MS: u64 = 50;
/// Pause of a contention worker after a release before it wants the lock again (ms), so that a
/// releaser does not take the lock straight back.
pub const THINK_MS: u64 = 50;

impl Profile {
    /// The figures of `docs/benchmarks.md`.
    pub fn full() -> Profile {
        Profile {
            name: "full",
            req_cycles: 20,
            cpu_cycles: 1000,
            cpu_warmup: 300,
            // 20 s: enough acquisitions per worker at 32 workers for max / min to mean something.
            contention_workers: vec![2, 4, 8, 32],
            contention_secs: 20.0,
            contention_mixed: 8,
            contention_oneshot: vec![8, 32],
            local_waiters: vec![1, 8, 32],
            local_hold_secs: 3.0,
            scaling: vec![1, 4, 16, 64, 256],
            scaling_secs: 3.0,
            stale_ms: vec![0, 100, 500],
            stuck_workers: 4,
            stuck_cycles: 150,
        }
    }

    /// Every figure, tiny: that the code runs (no timing is judged).
    pub fn smoke() -> Profile {
        Profile {
            name: "smoke",
            req_cycles: 3,
            cpu_cycles: 20,
            cpu_warmup: 5,
            contention_workers: vec![2],
            contention_secs: 1.0,
            contention_mixed: 4,
            contention_oneshot: vec![2],
            local_waiters: vec![1, 4],
            local_hold_secs: 0.4,
            scaling: vec![1, 4],
            scaling_secs: 0.3,
            stale_ms: vec![0, 500],
            stuck_workers: 1,
            stuck_cycles: 3,
        }
    }
}

/// One want of one contention worker: when it began wanting the lock, got it, let it go.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Want {
    /// When the worker began wanting the lock (Unix seconds).
    pub t_try: f64,
    /// When it got it (`None`: the run ended first).
    pub t_acq: Option<f64>,
    /// Just before its release.
    pub t_rel: Option<f64>,
    pub acquired: bool,
}

/// Where things are.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub profile: Profile,
    /// dynalite (throughput, CPU, contention) and moto (stuck locks: it returns the old item of
    /// a failed condition, as DynamoDB does).
    pub dynalite: String,
    pub moto: String,
    /// A Python with the ddblock binding and boto3.
    pub python: String,
    /// `node`, with `NAPI_RS_NATIVE_LIBRARY_PATH` passed through for a release build.
    pub node: String,
    /// The `ddblock` CLI binary.
    pub cli: PathBuf,
    /// The Rust peer, `ddblock-peer` (the Rust contention workers).
    pub peer: PathBuf,
    pub root: PathBuf,
    /// Scratch folder for records.
    pub scratch: PathBuf,
}

/// Unix time, fractional seconds.
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The `q` quantile (0..=1) of `xs` by nearest rank; 0 for none.
pub fn quantile(xs: &[f64], q: f64) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

/// A fresh table name for `what`.
pub fn table_name(what: &str) -> String {
    format!(
        "bench_{what}_{}",
        ddblock::lock::random_owner().to_lowercase()
    )
}

pub use ddblock_bench_cycle::{cpu_seconds, store_at};

/// Creates `table` on `endpoint` (Laravel's schema, no TTL).
pub async fn create_table(endpoint: &str, table: &str) -> Result<(), String> {
    ddblock_admin::Admin::new(&store_at(endpoint, table)?)
        .create_table(&ddblock_admin::CreateTableOptions::new().ttl(false))
        .await
        .map(|_| ())
        .map_err(|e| format!("create table {table}: {e}"))
}

/// Runs a child to its end and returns its stdout; fails with its stderr.
pub async fn run_child(
    program: &str,
    args: &[String],
    env: &[(&str, String)],
    what: &str,
) -> Result<String, String> {
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = cmd
        .spawn()
        .map_err(|e| format!("{what}: cannot start {program}: {e}"))?;
    let command = format!("{program} {}", args.join(" "));
    let out = child::output(child, &command, what).await?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

pub use ddblock_test_support::child::last_json;

/// One request to a fresh Rust peer (`peer`: `ddblock-peer`, compat-tests/support/peers/
/// PROTOCOL.md) configured by the `DDB_*` variables `env`, then EOF on its stdin: its answer,
/// which must be ok. `what` names it in errors.
pub async fn rust_peer(
    peer: &Path,
    env: &[(&str, String)],
    request: &Value,
    what: &str,
) -> Result<Value, String> {
    let program = peer.display().to_string();
    let mut child = tokio::process::Command::new(peer)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| {
            format!("{what}: cannot start {program} (cargo build -p ddblock-test-support): {e}")
        })?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    stdin
        .write_all(format!("{request}\n").as_bytes())
        .await
        .map_err(|e| format!("{what}: cannot write to {program}: {e}"))?;
    drop(stdin);
    let out = child::output(child, &program, what).await?;
    let answer = last_json(&String::from_utf8_lossy(&out.stdout), what)?;
    if answer["ok"] != true {
        return Err(format!(
            "{what}: {answer}; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(answer)
}

/// A number from a JSON object, or 0.
pub fn num(v: &Value, field: &str) -> f64 {
    v.get(field).and_then(Value::as_f64).unwrap_or(0.0)
}

/// The `cycles` request of a contention worker, PHP and Rust alike: waits for lock "hot" from
/// `start_at` to `until`, holds it `WORK_MS`, pauses `THINK_MS`; a record line per want.
pub fn block_request(record: &Path, start_at: f64, until: f64) -> Value {
    json!({
        "op": "cycles",
        "names": ["hot"],
        "cycles": 1_000_000,
        "ttl": 10,
        "work_ms": WORK_MS,
        "think_ms": THINK_MS,
        "block": true,
        "start_at": start_at,
        "until": until,
        "record": record.display().to_string(),
    })
}

/// A record line of a peer's `cycles` in block mode.
#[derive(Debug, Deserialize)]
struct Record {
    pid: u64,
    /// The loop within the process (Rust peers, asked for `tasks`).
    #[serde(default)]
    task: u64,
    acquired: bool,
    t_try: f64,
    t_acq: Option<f64>,
    t_rel: Option<f64>,
    error: Option<String>,
}

/// The wants in record file `record` (then removed), one list per worker (a process, or a loop
/// within one). A failed cycle (none expected) is left out and said on stderr.
pub fn wants_by_worker(record: &Path) -> Result<Vec<Vec<Want>>, String> {
    let mut by_worker: BTreeMap<(u64, u64), Vec<Want>> = BTreeMap::new();
    for r in laravel::take_records::<Record>(record)? {
        if let Some(e) = r.error {
            eprintln!(
                "[bench] contention: a failed cycle of pid {} left out: {e}",
                r.pid
            );
            continue;
        }
        by_worker.entry((r.pid, r.task)).or_default().push(Want {
            t_try: r.t_try,
            t_acq: r.t_acq,
            t_rel: r.t_rel,
            acquired: r.acquired,
        });
    }
    Ok(by_worker.into_values().collect())
}
