//! The `cycles` load loop (the same cycle as `harness.php`'s, through the core) and the record
//! files every loop appends one JSON line per cycle to, under an exclusive `flock` so several
//! peers can share one file.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ddblock::{ErrorKind, Store, Wait};
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

/// `cycles`: the load worker. Each cycle takes a fresh lock on a name (seeded random, else
/// round-robin from the pid), one acquire (or with `block`, waits until `until`), holds it
/// `work_ms`, releases; pauses 5 to 20 ms when not acquired, `think_ms` after a release.
pub async fn cycles(s: &Store, req: &Req) -> Result<Fields, Failure> {
    let names = req.strings("names")?;
    let n = req.count("cycles")?;
    let ttl = req.int("ttl")?;
    let work = millis(req, "work_ms")?;
    let think = millis(req, "think_ms")?;
    let block = req.flag("block")?;
    let until = req.opt_num("until")?.unwrap_or(f64::INFINITY);
    let mut out = Records::open(req.str("record")?)?;
    let pid = std::process::id();
    let mut rng = req
        .opt_int("seed")?
        .map(|seed| StdRng::seed_from_u64((seed as u64).wrapping_add(u64::from(pid))));
    if let Some(start_at) = req.opt_num("start_at")? {
        let wait = start_at - unix_now();
        if wait > 0.0 {
            tokio::time::sleep(Duration::from_secs_f64(wait.min(3600.0))).await;
        }
    }
    let (mut cycles, mut acquired, mut released, mut release_false, mut errors) = (0, 0, 0, 0, 0);
    for i in 0..n {
        if unix_now() >= until {
            break;
        }
        let name = match &mut rng {
            Some(r) => &names[r.random_range(0..names.len())],
            None => &names[(u64::from(pid) + i) as usize % names.len()],
        };
        let lock = s.lock(name, ttl)?;
        let t_try = unix_now();
        let mut o = Outcome::default();
        let result: Result<(), ddblock::Error> = async {
            o.acquired = if block {
                let wait = Wait::from_secs_f64((until - unix_now()).max(0.001))?;
                match lock.block(wait).await {
                    Ok(_) => true,
                    Err(e) if e.kind() == ErrorKind::LockTimeout => false,
                    Err(e) => return Err(e),
                }
            } else {
                lock.acquire().await?.is_acquired()
            };
            if o.acquired {
                o.t_acq = Some(unix_now());
                tokio::time::sleep(work).await;
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
        match &result {
            Ok(()) if o.acquired && !o.released => release_false += 1,
            Ok(()) => {}
            Err(e) => {
                errors += 1;
                let text: String = format!("{}: {e}", e.kind().as_str())
                    .chars()
                    .take(300)
                    .collect();
                rec["error"] = Value::String(text);
            }
        }
        cycles += 1;
        acquired += u64::from(o.acquired);
        released += u64::from(o.released);
        out.append(&rec)?;
        if !o.acquired && !block {
            let pause = rand::rng().random_range(5..=20);
            tokio::time::sleep(Duration::from_millis(pause)).await;
        } else if o.acquired && !think.is_zero() {
            tokio::time::sleep(think).await;
        }
    }
    Ok(fields(json!({
        "cycles": cycles, "acquired": acquired, "released": released,
        "release_false": release_false, "errors": errors,
    })))
}
