//! The bench's uncontended lock cycle and how its CPU is measured: used by the bench itself and by
//! this crate's binary, which the bench runs as the core built without metrics.

use std::future::Future;
use std::time::Instant;

use ddblock::{Store, StoreConfig};

/// User + system CPU seconds of this process (every thread), or of its waited-for children.
pub fn cpu_seconds(children: bool) -> f64 {
    let who = if children {
        libc::RUSAGE_CHILDREN
    } else {
        libc::RUSAGE_SELF
    };
    // SAFETY: getrusage writes one plain struct we own.
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(who, &mut r) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(r.ru_utime) + tv(r.ru_stime)
}

/// A store on `table` at `endpoint` (no prefix, Laravel 12 keys).
pub fn store_at(endpoint: &str, table: &str) -> Result<Store, String> {
    let cfg = StoreConfig::builder()
        .table(table)
        .endpoint(endpoint)
        .region("us-east-1")
        .prefix("")
        .build()
        .map_err(|e| e.to_string())?;
    Ok(Store::new(cfg))
}

/// One uncontended cycle of the core: acquire, release (2 requests).
pub async fn core_cycle(lock: &ddblock::Lock) -> Result<(), String> {
    let acquired = lock.acquire().await.map_err(|e| e.to_string())?;
    let released = lock.release().await.map_err(|e| e.to_string())?;
    if acquired.is_acquired() && released.is_released() {
        Ok(())
    } else {
        Err(format!("core cycle: {acquired:?} / {released:?}"))
    }
}

/// `cycles` runs of `f` after `warmup`: CPU of this process and wall time per run, in µs.
pub async fn measure<F, Fut>(warmup: usize, cycles: usize, mut f: F) -> Result<(f64, f64), String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    for _ in 0..warmup {
        f().await?;
    }
    let (c0, t0) = (cpu_seconds(false), Instant::now());
    for _ in 0..cycles {
        f().await?;
    }
    let cpu = (cpu_seconds(false) - c0) / cycles as f64 * 1e6;
    Ok((cpu, t0.elapsed().as_secs_f64() / cycles as f64 * 1e6))
}

/// The child's work: `CYCLES` core cycles after `WARMUP` on lock `NAME` of `TABLE` at
/// `ENDPOINT` (its arguments, in that order); prints `{"cpu_us", "wall_us", "metrics"}`, the last
/// whether this build of the core has its metrics compiled in.
pub async fn child(args: &[String]) -> Result<(), String> {
    let [ep, table, name, n, w] = args else {
        return Err("usage: ENDPOINT TABLE NAME CYCLES WARMUP".into());
    };
    let count = |s: &str| s.parse::<usize>().map_err(|e| format!("{s}: {e}"));
    let store = store_at(ep, table)?;
    let lock = store.lock(name, 10).map_err(|e| e.to_string())?;
    let (cpu_us, wall_us) = measure(count(w)?, count(n)?, || core_cycle(&lock)).await?;
    let metrics = ddblock::telemetry::METRICS_COMPILED_IN;
    println!(
        "{}",
        serde_json::json!({"cpu_us": cpu_us, "wall_us": wall_us, "metrics": metrics})
    );
    Ok(())
}
