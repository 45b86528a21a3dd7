//! A Rust process of the mixed-language concurrency test (compat-tests/patterns/concurrency.py):
//! the core's once-only guard or compare-and-set `update`, in a loop, started on a signal.
//!
//!   pattern-worker once EVENT...      claims each event, marks it done when won
//!   pattern-worker cas KEY N          N increments of KEY through `Store::update`
//!   pattern-worker lock NAME COUNTER LOG N
//!                                     N times under lock NAME (`block`, then `release`):
//!                                     increment the number in file COUNTER (read, pause, write),
//!                                     append `lang fence start_ns end_ns` to file LOG
//!   pattern-worker takeover NAME...   one attempt at each lock (expired ones): what it won
//!
//! Configuration from Laravel's variables (`DYNAMODB_ENDPOINT`, `DYNAMODB_CACHE_TABLE`,
//! `CACHE_PREFIX`). Prints `ready`, waits for a line on stdin (the start signal, so that every
//! process of the test starts together), then prints one JSON line: what it won or did.

use std::io::BufRead;

use ddblock::{AcquireOutcome, Backoff, CasOptions, PhpValue, Store, StoreConfig};
use serde_json::json;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let store = Store::connect(StoreConfig::from_env().unwrap().build().unwrap())
        .await
        .unwrap();
    println!("ready");
    let mut go = String::new();
    std::io::stdin().lock().read_line(&mut go).unwrap();
    let out = match args.first().map(String::as_str) {
        Some("once") => {
            let mut won = Vec::new();
            for event in &args[1..] {
                let once = store.once(event, 60).unwrap();
                if let Some(claim) = once.claim().await.unwrap().claim() {
                    claim.done().await.unwrap();
                    won.push(event.clone());
                }
            }
            json!({"lang": "rust", "won": won})
        }
        Some("cas") => {
            let (key, n): (&str, u32) = (&args[1], args[2].parse().unwrap());
            let opts = CasOptions::new().attempts(10_000).backoff(Backoff {
                initial: std::time::Duration::from_millis(2),
                max: std::time::Duration::from_millis(50),
                multiplier: 2.0,
                jitter: 1.0,
            });
            let mut rounds = 0u64;
            for _ in 0..n {
                store
                    .update_with(key, 600, &opts, |v| {
                        rounds += 1;
                        match v {
                            Some(PhpValue::Int(i)) => PhpValue::Int(i + 1),
                            other => panic!("counter is {other:?}"),
                        }
                    })
                    .await
                    .unwrap();
            }
            json!({"lang": "rust", "increments": n, "conflicts": rounds - u64::from(n)})
        }
        Some("lock") => {
            let (name, counter, log) = (&args[1], &args[2], &args[3]);
            let n: u32 = args[4].parse().unwrap();
            let now_ns = || {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos()
            };
            for _ in 0..n {
                let lock = store.lock(name, 30).unwrap();
                lock.block(std::time::Duration::from_secs(120)).await.unwrap();
                let start = now_ns();
                let v: u64 = std::fs::read_to_string(counter).unwrap().trim().parse().unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                std::fs::write(counter, (v + 1).to_string()).unwrap();
                let line = format!("rust {} {start} {}\n", lock.fence().unwrap(), now_ns());
                std::fs::OpenOptions::new()
                    .append(true)
                    .open(log)
                    .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()))
                    .unwrap();
                assert!(lock.release().await.unwrap().is_released());
            }
            json!({"lang": "rust", "held": n})
        }
        Some("takeover") => {
            let mut won = serde_json::Map::new();
            for name in &args[1..] {
                let lock = store.lock(name, 30).unwrap();
                if let AcquireOutcome::Acquired { fence, .. } = lock.acquire().await.unwrap() {
                    won.insert(name.clone(), json!(fence));
                }
            }
            json!({"lang": "rust", "won": won})
        }
        _ => panic!("usage: pattern-worker once EVENT... | cas KEY N | lock NAME COUNTER LOG N | takeover NAME..."),
    };
    println!("{out}");
}
