//! The `chaos` op: the chaos run's worker (docs/reliability.md). Loops wait → guarded write →
//! work → guarded write → release on random keys through the core until `acquisitions` or
//! `duration_ms`, one [`Cycle`] record per cycle; the guarded write goes through the SDK client
//! the core built (`ddblock_test_support::guarded`). The margin is the store's (`DDB_MARGIN`).

use std::time::{Duration, Instant};

use ddblock::{ErrorKind, Store};
use ddblock_test_support::chaos::Cycle;
use ddblock_test_support::guarded;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

use crate::loops::Records;
use crate::request::{Failure, Req};
use crate::{fields, Fields};

/// Keep this much of the lease before a guarded write (a write sent later might land after it).
const LEASE_SAFETY: Duration = Duration::from_millis(1500);

/// `chaos`: answers how many cycles ran, how many acquired, and what ddblock's metrics counted
/// (the OpenTelemetry SDK's in-memory exporter; the chaos checker holds them against the journal).
pub async fn run(s: &Store, req: &Req) -> Result<Fields, Failure> {
    // Before the first lock operation, which makes ddblock's instruments from the global provider.
    let metrics = ddblock_test_support::metrics::install();
    let keys = req.strings("keys")?;
    let worker = req.str("worker")?.to_owned();
    let ttl = req.int("ttl")?;
    let work = Duration::from_millis(req.count("work_ms")?);
    let wait = Duration::from_millis(req.count("wait_ms")?);
    let until = Instant::now() + Duration::from_millis(req.count("duration_ms")?);
    let target = req.count("acquisitions")?;
    let mut rng = StdRng::seed_from_u64(req.int("seed")? as u64);
    let mut out = Records::open(req.str("out")?)?;
    let client = s.client().await?;
    let table = s.config().table().to_owned();
    // The counter's client, straight to the server (no fault proxy).
    let direct = std::env::var("DDB_COUNTER_ENDPOINT")
        .ok()
        .map(|e| ddblock_test_support::client_for(&e));

    // `unconditional-release` or `laravel-stale-release`: this worker releases wrongly.
    let inject = std::env::var("DDB_CHAOS_INJECT")
        .ok()
        .filter(|v| !v.is_empty());
    let (mut cycles, mut acquired) = (0u64, 0u64);
    while acquired < target && Instant::now() < until {
        let name = &keys[rng.random_range(0..keys.len())];
        let lock = s.lock(name, ttl)?;
        let mut c = Cycle {
            lang: "rust".into(),
            worker: worker.clone(),
            name: name.clone(),
            owner: lock.owner().to_owned(),
            ..Cycle::default()
        };
        let left = until.saturating_duration_since(Instant::now());
        // The body runs as every front's does: the core's `enter` (acquire, heartbeat), then
        // `Held::finish` (release, and the one rule for the end of the lease).
        match lock.clone().enter(wait.min(left)).await {
            Ok(held) => {
                acquired += 1;
                c.acquire = "acquired".into();
                c.fence = held.lock().fence();
                let lock = held.lock();
                for i in 0..2 {
                    if i == 1 {
                        // The work: the counter's read, a pause, its write (unguarded).
                        let live = lock.remaining().is_some_and(|r| r >= LEASE_SAFETY);
                        match &direct {
                            Some(d) if live && !held.lease().is_lost() => {
                                let count = async {
                                    let n = guarded::counter_read(d, &table, name).await?;
                                    tokio::time::sleep(work).await;
                                    guarded::counter_write(d, &table, name, n + 1).await
                                };
                                c.counter = Some(match count.await {
                                    Ok(()) => "counted".into(),
                                    Err(kind) => {
                                        c.errors.push(("counter".into(), kind));
                                        "error".into()
                                    }
                                });
                            }
                            _ => tokio::time::sleep(work).await,
                        }
                    }
                    let (Some(fence), Some(rem)) = (lock.fence(), lock.remaining()) else {
                        c.writes.push("skipped".into());
                        continue;
                    };
                    if rem < LEASE_SAFETY || held.lease().is_lost() {
                        c.writes.push("skipped".into());
                        continue;
                    }
                    let write = guarded::write(&client, &table, name, lock.owner(), fence).await;
                    c.writes.push(match write {
                        Ok(true) => "accepted".into(),
                        Ok(false) => "refused".into(),
                        Err(kind) => {
                            c.errors.push(("guarded_write".into(), kind));
                            "error".into()
                        }
                    });
                }
                let left = lock.remaining().unwrap_or_default();
                let by_refresh = held.lease().is_lost();
                if let Some(how) = &inject {
                    // A broken release on purpose (`chaos --inject`), which the trace validation
                    // must reject; the lease is dropped without the core's release.
                    let key = lock.key().to_owned();
                    drop(held);
                    c.release = Some(
                        match broken_release(&client, &table, &key, &c.owner, how).await {
                            Ok(true) => "released".into(),
                            Ok(false) => "not_held".into(),
                            Err(kind) => {
                                c.errors.push(("release".into(), kind));
                                "error".into()
                            }
                        },
                    );
                    cycles += 1;
                    out.append(&c)?;
                    continue;
                }
                c.release = Some(match held.finish().await {
                    Ok(()) => "released".into(),
                    Err(e) if e.kind() == ErrorKind::LeaseLost => {
                        c.lease_left_ms = Some(u64::try_from(left.as_millis()).unwrap_or(u64::MAX));
                        c.lost_by_refresh = Some(by_refresh);
                        "lease_lost".into()
                    }
                    Err(e) => {
                        c.errors.push(("release".into(), e.kind().as_str().into()));
                        "error".into()
                    }
                });
            }
            Err(e) if e.kind() == ErrorKind::LockTimeout => c.acquire = "held".into(),
            Err(e) => {
                c.acquire = "error".into();
                c.errors.push(("acquire".into(), e.kind().as_str().into()));
            }
        }
        cycles += 1;
        out.append(&c)?;
    }
    Ok(fields(json!({
        "cycles": cycles,
        "acquired": acquired,
        "metrics": metrics.counts(None),
    })))
}

/// A release the protocol forbids, on the lock item `key`: `unconditional-release`, a DeleteItem
/// without the owner condition; `laravel-stale-release`, stock Laravel's: an eventually
/// consistent GetItem (stale through the proxy), and the DeleteItem, unconditional, if it saw
/// `owner`. True if it deleted.
async fn broken_release(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    key: &str,
    owner: &str,
    how: &str,
) -> Result<bool, String> {
    use aws_sdk_dynamodb::types::AttributeValue;
    let k = AttributeValue::S(key.to_owned());
    if how == "laravel-stale-release" {
        let read = client
            .get_item()
            .table_name(table)
            .key("key", k.clone())
            .send()
            .await;
        let read = read.map_err(|e| guarded::sdk_kind(&e))?;
        let value = read
            .item()
            .and_then(|i| i.get("value"))
            .and_then(|v| v.as_s().ok());
        if !value.is_some_and(|v| v.contains(owner)) {
            return Ok(false);
        }
    }
    let deleted = client
        .delete_item()
        .table_name(table)
        .key("key", k)
        .send()
        .await;
    deleted.map(|_| true).map_err(|e| guarded::sdk_kind(&e))
}
