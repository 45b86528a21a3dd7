//! The patterns of compat-tests/patterns/concurrency.py, each run to the end before the answer:
//! the once-only guard (`once`), compare-and-set (`cas`), a file counter under a lock
//! (`lock.counter`) and the takeover race on expired locks (`takeover`).

use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ddblock::{AcquireOutcome, Backoff, CasOptions, PhpValue, Store};
use serde_json::{json, Map};

use crate::request::{Failure, Req};
use crate::{fields, Fields};

/// `once`: claims each event with the once-only guard, marks it done when won.
pub async fn once(s: &Store, req: &Req) -> Result<Fields, Failure> {
    let ttl = req.int("ttl")?;
    let mut won = Vec::new();
    for event in req.strings("events")? {
        let once = s.once(&event, ttl)?;
        if let Some(claim) = once.claim().await?.claim() {
            claim.done().await?;
            won.push(event);
        }
    }
    Ok(fields(json!({ "won": won })))
}

/// `cas`: `n` increments of the integer under `key` through the core's compare-and-set update
/// (ttl 600), retried on conflict; answers how many rounds a conflict cost.
pub async fn cas(s: &Store, req: &Req) -> Result<Fields, Failure> {
    let key = req.str("key")?;
    let n = req.count("n")?;
    let opts = CasOptions::new().attempts(10_000).backoff(Backoff {
        initial: Duration::from_millis(2),
        max: Duration::from_millis(50),
        multiplier: 2.0,
        jitter: 1.0,
    });
    let mut rounds = 0u64;
    for _ in 0..n {
        s.update_by(key, 600, &opts, |v| {
            rounds += 1;
            std::future::ready(match v {
                Some(PhpValue::Int(i)) => i
                    .checked_add(1)
                    .map(PhpValue::Int)
                    .ok_or_else(|| Failure::Other(format!("cas: {key} overflows"))),
                other => Err(Failure::Other(format!(
                    "cas: {key} holds no integer but {other:?}"
                ))),
            })
        })
        .await?;
    }
    Ok(fields(
        json!({"increments": n, "conflicts": rounds.saturating_sub(n)}),
    ))
}

/// Nanoseconds since the Unix epoch.
fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// `lock.counter`: `n` times, under lock `name` (ttl 30, waiting up to 120 s): read the number
/// in file `counter`, pause 10 ms, write it plus one, and append `rust FENCE START_NS END_NS` to
/// file `log`; then release.
pub async fn counter(s: &Store, req: &Req) -> Result<Fields, Failure> {
    let (name, counter, log) = (req.str("name")?, req.str("counter")?, req.str("log")?);
    let n = req.count("n")?;
    for _ in 0..n {
        let lock = s.lock(name, 30)?;
        lock.block(Duration::from_secs(120)).await?;
        let start = now_ns();
        let text = std::fs::read_to_string(counter)?;
        let v: i64 = text
            .trim()
            .parse()
            .map_err(|_| Failure::Other(format!("{counter} holds {text:?}, not a number")))?;
        tokio::time::sleep(Duration::from_millis(10)).await;
        std::fs::write(counter, (v + 1).to_string())?;
        let fence = lock
            .fence()
            .ok_or_else(|| Failure::Other("held without a fencing token".into()))?;
        let line = format!("rust {fence} {start} {}\n", now_ns());
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(log)?
            .write_all(line.as_bytes())?;
        if !lock.release().await?.is_released() {
            return Err(Failure::Other(format!(
                "lock {name} was not ours any more at its release"
            )));
        }
    }
    Ok(fields(json!({ "held": n })))
}

/// `takeover`: one attempt at each lock (ttl `ttl`, default 30); what was won, with its fence.
pub async fn takeover(s: &Store, req: &Req) -> Result<Fields, Failure> {
    let ttl = req.opt_int("ttl")?.unwrap_or(30);
    let mut won = Map::new();
    for name in req.strings("names")? {
        let lock = s.lock(&name, ttl)?;
        if let AcquireOutcome::Acquired { fence, .. } = lock.acquire().await? {
            won.insert(name, json!(fence));
        }
    }
    Ok(fields(json!({ "won": won })))
}
