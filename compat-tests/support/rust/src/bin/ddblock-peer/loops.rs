//! The `cycles` load loop (the same cycle as `harness.php`'s, through the core; several loops at
//! once with `tasks`, ddblock's old write-per-try wait with `"wait":"writes"`) and the record
//! files every loop appends one JSON line per cycle to, under an exclusive `flock` so several
//! peers can share one file.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ddblock::{ErrorKind, Lock, Store, Wait};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use serde_json::{json, Value};

use crate::request::{Failure, Req};
use crate::{fields, Fields};

/// Unix time in seconds, fractional.
pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// A record file, appended to one whole line at a time.
pub struct Records(File);

impl Records {
    /// Opens (creates) `path` for appending.
    pub fn open(path: &str) -> Result<Records, Failure> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Records(file))
    }

    /// Appends `record` as one JSON line under an exclusive lock on the file.
    pub fn append(&mut self, record: &impl Serialize) -> Result<(), Failure> {
        let mut line = serde_json::to_vec(record)
            .map_err(|e| Failure::Other(format!("record not serializable: {e}")))?;
        line.push(b'\n');
        self.0.lock()?;
        let written = self.0.write_all(&line).and_then(|()| self.0.flush());
        let unlocked = self.0.unlock();
        written?;
        Ok(unlocked?)
    }
}

/// The outcome of one cycle's lock calls.
#[derive(Default)]
struct Outcome {
    acquired: bool,
    released: bool,
    t_acq: Option<f64>,
    t_rel: Option<f64>,
    t_rel_end: Option<f64>,
}

/// Milliseconds from a request field (0 when absent).
fn millis(req: &Req, name: &str) -> Result<Duration, Failure> {
    Ok(Duration::from_millis(req.count_or(name, 0)?))
}

/// How a `block` cycle waits for the lock.
#[derive(Clone, Copy, PartialEq, Eq)]
enum WaitBy {
    /// The core's `block()` (`acquire_within`): watch, then write when free.
    Block,
    /// A conditional write per try (`acquire()`), sleeping the lock's backoff between tries:
    /// ddblock's wait before it watched (the bench's "before" side).
    Writes,
}

/// A `cycles` request, read once and shared by its loops.
struct Plan {
    names: Vec<String>,
    cycles: u64,
    ttl: i64,
    work: Duration,
    think: Duration,
    block: bool,
    wait: WaitBy,
    until: f64,
    seed: Option<i64>,
    /// Whether the records name their loop (`tasks` was given).
    tag_task: bool,
}

/// The counts a loop answers, summed over the loops.
#[derive(Default)]
struct Counts {
    cycles: u64,
    acquired: u64,
    released: u64,
    release_false: u64,
    errors: u64,
}

/// `cycles`: the load worker. `tasks` loops at once in this process (1 when absent), each
/// `cycles` cycles: a fresh lock on a name (seeded random, else round-robin from the pid), one
/// acquire (or with `block`, a wait until `until`, by `wait`), held `work_ms`, released; a pause
/// of 5 to 20 ms when not acquired, `think_ms` after a release.
pub async fn cycles(s: &Store, req: &Req) -> Result<Fields, Failure> {
    let wait = match req.opt_str("wait")? {
        None | Some("block") => WaitBy::Block,
        Some("writes") => WaitBy::Writes,
        Some(w) => return Err(Failure::bad(format!("wait {w:?}: block or writes"))),
    };
    let plan = Arc::new(Plan {
        names: req.strings("names")?,
        cycles: req.count("cycles")?,
        ttl: req.int("ttl")?,
        work: millis(req, "work_ms")?,
        think: millis(req, "think_ms")?,
        block: req.flag("block")?,
        wait,
        until: req.opt_num("until")?.unwrap_or(f64::INFINITY),
        seed: req.opt_int("seed")?,
        tag_task: req.opt_int("tasks")?.is_some(),
    });
    // `metrics`: ddblock's own, through the OpenTelemetry SDK; the answer has its histograms.
    let metrics = req
        .flag("metrics")?
        .then(ddblock_test_support::metrics::install);
    let tasks = req.count_or("tasks", 1)?.max(1);
    let out = Arc::new(Mutex::new(Records::open(req.str("record")?)?));
    if let Some(start_at) = req.opt_num("start_at")? {
        // The client is made before the start, so that the first try does not pay for it.
        s.client().await?;
        let wait = start_at - unix_now();
        if wait > 0.0 {
            tokio::time::sleep(Duration::from_secs_f64(wait.min(3600.0))).await;
        }
    }
    let loops: Vec<_> = (0..tasks)
        .map(|task| tokio::spawn(run_loop(s.clone(), plan.clone(), out.clone(), task)))
        .collect();
    let mut sum = Counts::default();
    for l in loops {
        let c = l
            .await
            .map_err(|e| Failure::Other(format!("loop: {e}")))??;
        sum.cycles += c.cycles;
        sum.acquired += c.acquired;
        sum.released += c.released;
        sum.release_false += c.release_false;
        sum.errors += c.errors;
    }
    let histograms = metrics.map(|m| m.histograms());
    Ok(fields(json!({
        "cycles": sum.cycles, "acquired": sum.acquired, "released": sum.released,
        "release_false": sum.release_false, "errors": sum.errors, "histograms": histograms,
    })))
}

/// One loop of a `cycles` request.
async fn run_loop(
    s: Store,
    plan: Arc<Plan>,
    out: Arc<Mutex<Records>>,
    task: u64,
) -> Result<Counts, Failure> {
    let pid = std::process::id();
    let mut rng = plan.seed.map(|seed| {
        let mix = u64::from(pid).wrapping_add(task.wrapping_mul(1_000_003));
        StdRng::seed_from_u64((seed as u64).wrapping_add(mix))
    });
    let names = &plan.names;
    let mut c = Counts::default();
    for i in 0..plan.cycles {
        if unix_now() >= plan.until {
            break;
        }
        let name = match &mut rng {
            Some(r) => &names[r.random_range(0..names.len())],
            None => &names[(u64::from(pid) + task + i) as usize % names.len()],
        };
        let lock = s.lock(name, plan.ttl)?;
        let t_try = unix_now();
        let mut o = Outcome::default();
        let result: Result<(), ddblock::Error> = async {
            o.acquired = if plan.block {
                wait_for(&lock, plan.wait, plan.until).await?
            } else {
                lock.acquire().await?.is_acquired()
            };
            if o.acquired {
                o.t_acq = Some(unix_now());
                tokio::time::sleep(plan.work).await;
                o.t_rel = Some(unix_now());
                o.released = lock.release().await?.is_released();
                o.t_rel_end = Some(unix_now());
            }
            Ok(())
        }
        .await;
        let mut rec = json!({
            "lang": "rust", "driver": "core", "pid": pid, "name": name, "owner": lock.owner(),
            "acquired": o.acquired, "t_try": t_try, "t_acq": o.t_acq, "t_rel": o.t_rel,
            "t_rel_end": o.t_rel_end, "released": o.released,
        });
        if plan.tag_task {
            rec["task"] = json!(task);
        }
        match &result {
            Ok(()) if o.acquired && !o.released => c.release_false += 1,
            Ok(()) => {}
            Err(e) => {
                c.errors += 1;
                let text: String = format!("{}: {e}", e.kind().as_str())
                    .chars()
                    .take(300)
                    .collect();
                rec["error"] = Value::String(text);
            }
        }
        c.cycles += 1;
        c.acquired += u64::from(o.acquired);
        c.released += u64::from(o.released);
        out.lock()
            .map_err(|_| Failure::Other("record file poisoned".into()))?
            .append(&rec)?;
        if !o.acquired && !plan.block {
            let pause = rand::rng().random_range(5..=20);
            tokio::time::sleep(Duration::from_millis(pause)).await;
        } else if o.acquired && !plan.think.is_zero() {
            tokio::time::sleep(plan.think).await;
        }
    }
    Ok(c)
}

/// Waits for `lock` until Unix time `until` as `by` says: whether it got it.
async fn wait_for(lock: &Lock, by: WaitBy, until: f64) -> Result<bool, ddblock::Error> {
    match by {
        WaitBy::Block => {
            let wait = Wait::from_secs_f64((until - unix_now()).max(0.001))?;
            match lock.block(wait).await {
                Ok(_) => Ok(true),
                Err(e) if e.kind() == ErrorKind::LockTimeout => Ok(false),
                Err(e) => Err(e),
            }
        }
        WaitBy::Writes => {
            let backoff = lock.backoff();
            let mut attempt = 0u32;
            loop {
                if lock.acquire().await?.is_acquired() {
                    return Ok(true);
                }
                let rest = until - unix_now();
                if rest <= 0.0 {
                    return Ok(false);
                }
                let mut pause = backoff.delay(attempt, rand::random::<f64>());
                if let Ok(rest) = Duration::try_from_secs_f64(rest) {
                    pause = pause.min(rest);
                }
                tokio::time::sleep(pause).await;
                attempt = attempt.saturating_add(1);
            }
        }
    }
}
