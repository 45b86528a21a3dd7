//! Scaling: 1 to 256 concurrent distinct locks from one process (Rust tasks, Python asyncio,
//! Node promises): cycles per second and client CPU per cycle at each level.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use crate::cycles::{bench_script, core_cycle, Script};
use crate::util::{cpu_seconds, create_table, num, store_at, table_name, Ctx};

/// One level of one language.
#[derive(Debug, Clone, Serialize)]
pub struct ScalingRow {
    pub language: String,
    pub locks: usize,
    pub cycles: usize,
    pub cycles_per_sec: f64,
    pub cpu_us_per_cycle: f64,
}

/// Rust: `locks` tasks, each looping acquire + release of its own lock for `secs`.
async fn rust_level(
    endpoint: &str,
    table: &str,
    locks: usize,
    secs: f64,
) -> Result<ScalingRow, String> {
    let store = store_at(endpoint, table)?;
    store.client().await.map_err(|e| e.to_string())?;
    let done = Arc::new(AtomicUsize::new(0));
    let (c0, t0) = (cpu_seconds(false), Instant::now());
    let stop = t0 + std::time::Duration::from_secs_f64(secs);
    let mut tasks = Vec::new();
    for i in 0..locks {
        let (store, done) = (store.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            let lock = store
                .lock(&format!("s{i}"), 10)
                .map_err(|e| e.to_string())?;
            while Instant::now() < stop {
                core_cycle(&lock).await?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<(), String>(())
        }));
    }
    for t in tasks {
        t.await.map_err(|e| e.to_string())??;
    }
    let (cpu, wall) = (cpu_seconds(false) - c0, t0.elapsed().as_secs_f64());
    let n = done.load(Ordering::Relaxed).max(1);
    Ok(ScalingRow {
        language: "Rust".into(),
        locks,
        cycles: n,
        cycles_per_sec: n as f64 / wall,
        cpu_us_per_cycle: cpu / n as f64 * 1e6,
    })
}

/// Figure 4, every language and level (dynalite, no proxy).
pub async fn scaling(ctx: &Ctx) -> Result<Vec<ScalingRow>, String> {
    let secs = ctx.profile.scaling_secs;
    let table = table_name("scale");
    create_table(&ctx.dynalite, &table).await?;
    let mut rows = Vec::new();
    for &locks in &ctx.profile.scaling {
        // A short warm-up at the level (connections, the server's JIT).
        rust_level(&ctx.dynalite, &table, locks, secs / 5.0).await?;
        rows.push(rust_level(&ctx.dynalite, &table, locks, secs).await?);
        let (l, s) = (locks.to_string(), secs.to_string());
        let mode = ["--mode", "scaling", "--locks", &l, "--secs", &s];
        let py = bench_script(ctx, Script::Python, &mode, &ctx.dynalite, &table, 0, 0).await?;
        rows.push(from_child("Python (asyncio)", locks, &py));
        let nd = bench_script(ctx, Script::Node, &mode, &ctx.dynalite, &table, 0, 0).await?;
        rows.push(from_child("Node", locks, &nd));
    }
    Ok(rows)
}

fn from_child(language: &str, locks: usize, v: &serde_json::Value) -> ScalingRow {
    ScalingRow {
        language: language.into(),
        locks,
        cycles: num(v, "cycles") as usize,
        cycles_per_sec: num(v, "cycles_per_sec"),
        cpu_us_per_cycle: num(v, "cpu_us"),
    }
}
