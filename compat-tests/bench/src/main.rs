//! Every benchmark figure in one run, each against its baseline in the same run (run it through
//! `compat-tests/bench/run.sh`, which builds, starts the servers and draws the tables and plots).
//!
//! `ddblock-bench run [--profile full|smoke] --out results.json [--only requests,cpu,contention,local,scaling,stuck]`
//! needs `DDBLOCK_TEST_DYNALITE` and `DDBLOCK_TEST_MOTO` (`compat-tests/servers/servers.sh`), and takes
//! `BENCH_PYTHON` (a Python with the binding and boto3), `BENCH_NODE`, `BENCH_CLI` (the
//! `ddblock` binary) and `BENCH_PEER` (the Rust peer, `ddblock-peer`, the Rust contention
//! workers); the binaries default to the ones next to this one.

mod contention;
mod cycles;
mod oneshot;
mod scaling;
mod stuck;
mod util;

use std::collections::BTreeSet;
use std::path::PathBuf;

use ddblock_fault_proxy::FaultConfig;
use ddblock_test_support::faulty::try_faulty;
use serde_json::{json, Value};

use contention::Side;
use util::{unix_now, Ctx, Profile};

const FIGURES: &[&str] = &["requests", "cpu", "contention", "local", "scaling", "stuck"];

fn usage() -> ! {
    eprintln!(
        "usage: ddblock-bench run [--profile full|smoke] --out FILE [--only {}]",
        FIGURES.join(",")
    );
    std::process::exit(2)
}

/// `--flag value` pairs after the subcommand.
fn flags() -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    let mut args = std::env::args().skip(2);
    while let Some(f) = args.next() {
        let Some(name) = f.strip_prefix("--") else {
            usage()
        };
        let Some(v) = args.next() else { usage() };
        out.insert(name.to_owned(), v);
    }
    out
}

#[tokio::main]
async fn main() {
    let result = match std::env::args().nth(1).as_deref() {
        Some("run") => run().await,
        // The CPU figure's child: the core's cycle in a process of its own (cycles.rs).
        Some("cpu-child") => cycles::cpu_child().await,
        _ => usage(),
    };
    if let Err(e) = result {
        eprintln!("ddblock-bench: {e}");
        std::process::exit(1);
    }
}

fn machine() -> Value {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cpu = read("/proc/cpuinfo")
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|m| m.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_default();
    json!({
        "cpu": cpu,
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "kernel": read("/proc/sys/kernel/osrelease").trim(),
        "loadavg": read("/proc/loadavg").split_whitespace().take(3).collect::<Vec<_>>().join(" "),
    })
}

async fn run() -> Result<(), String> {
    let f = flags();
    let profile = match f.get("profile").map(String::as_str) {
        None | Some("full") => Profile::full(),
        Some("smoke") => Profile::smoke(),
        Some(p) => return Err(format!("--profile {p}: full or smoke")),
    };
    let out = PathBuf::from(f.get("out").ok_or("--out FILE is required")?);
    let only: BTreeSet<String> = match f.get("only") {
        Some(s) => s.split(',').map(str::to_owned).collect(),
        None => FIGURES.iter().map(|s| s.to_string()).collect(),
    };
    if let Some(bad) = only.iter().find(|o| !FIGURES.contains(&o.as_str())) {
        return Err(format!("--only {bad}: one of {}", FIGURES.join(",")));
    }
    let env = |k: &str| {
        std::env::var(k).map_err(|_| {
            format!("{k} is not set (compat-tests/servers/servers.sh start; source its env)")
        })
    };
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let scratch = std::env::temp_dir().join(format!("ddblock-bench-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(|e| e.to_string())?;
    let ctx = Ctx {
        profile,
        dynalite: env("DDBLOCK_TEST_DYNALITE")?,
        moto: env("DDBLOCK_TEST_MOTO")?,
        python: std::env::var("BENCH_PYTHON").unwrap_or_else(|_| "python3".into()),
        node: std::env::var("BENCH_NODE").unwrap_or_else(|_| "node".into()),
        cli: std::env::var("BENCH_CLI")
            .map(PathBuf::from)
            .unwrap_or_else(|_| me.with_file_name("ddblock")),
        peer: std::env::var("BENCH_PEER")
            .map(PathBuf::from)
            .unwrap_or_else(|_| me.with_file_name("ddblock-peer")),
        root: ddblock_test_support::repo_root(),
        scratch: scratch.clone(),
    };
    let started = unix_now();
    let mut results = json!({
        "profile": ctx.profile.name,
        "started": started,
        "machine": machine(),
        "work_ms": util::WORK_MS,
        "think_ms": util::THINK_MS,
        "prices": {"wru_per_million": contention::WRU_PRICE, "rru_per_million": contention::RRU_PRICE},
    });
    let proxy = try_faulty(&ctx.dynalite, FaultConfig::default())
        .await?
        .proxy;
    let step = |name: &str| {
        eprintln!("[bench] {name} ({:.0} s in)", unix_now() - started);
    };
    if only.contains("requests") {
        step("requests per uncontended cycle, every front");
        results["requests"] = to_json(&cycles::requests(&ctx, &proxy).await?);
    }
    if only.contains("cpu") {
        step("client CPU per cycle against the raw SDKs");
        results["cpu"] = to_json(&cycles::cpu(&ctx).await?);
    }
    if only.contains("contention") {
        let mut rows = Vec::new();
        let sizes = &ctx.profile.contention_workers;
        let mixed = ctx.profile.contention_mixed;
        for &w in sizes {
            // BENCH_WORKERS=8: only that size (iterating on one row).
            if std::env::var("BENCH_WORKERS")
                .is_ok_and(|n| n.split(',').all(|n| n != w.to_string()))
            {
                continue;
            }
            let mut sides = vec![Side::Laravel, Side::Core, Side::Writes, Side::OneProcess];
            if ctx.profile.contention_oneshot.contains(&w) {
                sides.extend([Side::LaravelOneShot, Side::OneShot]);
            }
            if w == mixed {
                sides.push(Side::Mixed);
            }
            // BENCH_SIDES=laravel,oneshot: only those sides (iterating on one row).
            if let Ok(only) = std::env::var("BENCH_SIDES") {
                sides.retain(|s| only.split(',').any(|o| o == s.name()));
            }
            for side in sides {
                step(&format!("contention: {w} workers, {}", side.label()));
                rows.push(contention::run_side(&ctx, &proxy, side, w).await?);
            }
        }
        if !sizes.contains(&mixed) {
            step(&format!(
                "contention: {mixed} workers, {}",
                Side::Mixed.label()
            ));
            rows.push(contention::run_side(&ctx, &proxy, Side::Mixed, mixed).await?);
        }
        results["contention"] = to_json(&rows);
    }
    if only.contains("local") {
        step("local waiters on a key held elsewhere");
        results["local"] = to_json(&contention::local_waiters(&ctx, &proxy).await?);
    }
    proxy.shutdown().await;
    if only.contains("scaling") {
        step("scaling: concurrent distinct locks in one process");
        results["scaling"] = to_json(&scaling::scaling(&ctx).await?);
    }
    if only.contains("stuck") {
        step("stuck locks at several stalenesses (moto)");
        results["stuck"] = to_json(&stuck::stuck(&ctx).await?);
    }
    results["machine"]["loadavg_end"] = json!(machine()["loadavg"]);
    results["seconds"] = json!(unix_now() - started);
    let _ = std::fs::remove_dir_all(&scratch);
    let text = serde_json::to_string_pretty(&results).map_err(|e| e.to_string())?;
    std::fs::write(&out, text).map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!(
        "[bench] done in {:.0} s: {}",
        unix_now() - started,
        out.display()
    );
    Ok(())
}

/// A figure's rows as JSON.
fn to_json<T: serde::Serialize>(rows: &T) -> Value {
    serde_json::to_value(rows).unwrap_or(Value::Null)
}
