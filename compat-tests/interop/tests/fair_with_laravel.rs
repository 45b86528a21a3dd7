//! Stock Laravel workers on a key ddblock's waiters share (issue 26, docs/semantics.md#waiting):
//! Laravel's `block()` knows nothing of ddblock's fair waiting (it sends an `add()` every 250 ms
//! and writes no `ddblock_since`), and it must not be starved by it, nor ever hold the lock
//! together with a ddblock holder. Real Laravel 8.83 (compat-tests/laravel/harness.php) on moto,
//! dynalite and DynamoDB Local.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ddblock::{Store, StoreConfig};
use ddblock_test_support::laravel::{self, PeerEnv};
use ddblock_test_support::{client_for, new_table, on_servers, unique, Server};
use serde::Deserialize;
use serde_json::json;

/// One of the PHP peer's `cycles` records.
#[derive(Debug, Deserialize)]
struct Record {
    pid: u64,
    acquired: bool,
    t_acq: Option<f64>,
    t_rel: Option<f64>,
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Two stock Laravel workers (PHP processes, `block()`) and three ddblock waiters (tasks of this
/// process, `acquire_within`) want lock "hot" for 8 s, each holding it 50 ms and pausing 50 ms:
/// every Laravel worker gets it several times, and no two holds overlap.
async fn laravel_workers_are_not_starved_by_fair_waiters(server: Server) {
    let endpoint = server.endpoint();
    let table = new_table(&client_for(&endpoint), "key").await;
    let start_at = unix_now() + 3.0;
    let until = start_at + 8.0;
    let record = std::env::temp_dir().join(format!("{}.jsonl", unique("fair")));
    let env = PeerEnv::new(&endpoint, &table, "laravel12", "", "laravel");
    let request = json!({
        "op": "cycles", "names": ["hot"], "cycles": 1_000_000, "ttl": 10, "work_ms": 50,
        "think_ms": 50, "block": true, "start_at": start_at, "until": until,
        "record": record.display().to_string(),
    });
    let mut php = Vec::new();
    for _ in 0..2 {
        let (env, request) = (env.clone(), request.clone());
        php.push(tokio::spawn(async move {
            laravel::request(&env, &request, "Laravel block() worker").await
        }));
    }
    // Laravel 12's layout with no prefix: the lock key is the bare name on both sides.
    let cfg = StoreConfig::builder()
        .table(&table)
        .endpoint(&endpoint)
        .region("us-east-1")
        .build()
        .unwrap();
    let store = Store::new(cfg);
    store.client().await.unwrap();
    let ours: Arc<Mutex<Vec<(f64, f64)>>> = Arc::default();
    let mut tasks = Vec::new();
    for _ in 0..3 {
        let (store, ours) = (store.clone(), ours.clone());
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs_f64((start_at - unix_now()).max(0.0))).await;
            while unix_now() < until {
                let lock = store.lock("hot", 10).unwrap();
                let left = Duration::from_secs_f64((until - unix_now()).max(0.0));
                if !lock.acquire_within(left).await.unwrap().is_acquired() {
                    break;
                }
                let t_acq = unix_now();
                tokio::time::sleep(Duration::from_millis(50)).await;
                let t_rel = unix_now();
                assert!(lock.release().await.unwrap().is_released());
                ours.lock().unwrap().push((t_acq, t_rel));
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    for p in php {
        p.await.unwrap().unwrap();
    }
    let records: Vec<Record> = laravel::take_records(&record).unwrap();
    let mut per_pid = std::collections::BTreeMap::<u64, usize>::new();
    let mut holds: Vec<(f64, f64, &str)> = Vec::new();
    for r in &records {
        let n = per_pid.entry(r.pid).or_default();
        if r.acquired {
            *n += 1;
            holds.push((r.t_acq.unwrap(), r.t_rel.unwrap(), "laravel"));
        }
    }
    let ours = ours.lock().unwrap().clone();
    holds.extend(ours.iter().map(|&(a, r)| (a, r, "ddblock")));
    holds.sort_by(|a, b| a.0.total_cmp(&b.0));
    for w in holds.windows(2) {
        // Each hold is stamped after its acquire returned and before its release began.
        assert!(w[0].1 <= w[1].0, "two holders at once: {w:?}");
    }
    eprintln!(
        "Laravel workers: {per_pid:?}; ddblock holds: {}",
        ours.len()
    );
    assert_eq!(per_pid.len(), 2, "both Laravel workers ran: {per_pid:?}");
    for (pid, n) in &per_pid {
        assert!(*n >= 3, "Laravel worker {pid} starved: {per_pid:?}");
    }
    assert!(ours.len() >= 10, "ddblock starved: {}", ours.len());
    let _ = std::fs::remove_file(PathBuf::from(&record));
}

on_servers!(laravel_workers_are_not_starved_by_fair_waiters);
