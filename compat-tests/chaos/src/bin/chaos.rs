//! `chaos [--profile short|long] [--server dynalite|ddblocal] [--release-mode delete|keep-fence]
//! [--out DIR]`: the chaos run (`--release-mode`: every ddblock worker's `DDBLOCK_RELEASE_MODE`). Starts
//! its own dynalite or DynamoDB Local (data on disk, so it survives the restart mid-run) behind the fault proxy with every fault on at once,
//! runs workers in Rust, Python, Node and PHP (the ddblock/laravel driver) on shared keys and
//! stock Laravel workers on their own keys (the control group), some under `faketime` with their
//! clock 2 s ahead or behind; each worker is its language's peer (compat-tests/support/peers/
//! PROTOCOL.md; the Rust one is `ddblock-peer` beside this binary, `cargo build -p
//! ddblock-test-support --bin ddblock-peer`) given one `chaos` request. It restarts the server
//! once, then judges the run with the checker from the proxy's journal of committed writes.
//! Prints the table of figures; exits 1 when a ddblock guarantee was broken. Stops every process
//! it started, whatever happens.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use ddblock::{Clock, Store, StoreConfig, SystemClock};
use ddblock_chaos::checker::counter;
use ddblock_chaos::checker::{check, check_metrics, Cycle, GroupReport, Keys, LockKey, Report};
use ddblock_chaos::guarded::resource_key;
use ddblock_chaos::peers::{answer_problem, read_records, worker_commands, PREFIX};
use ddblock_chaos::profile::{Profile, INJECTIONS};
use ddblock_chaos::server::{free_port, kill_group, start_server, Group, ServerKind};
use ddblock_chaos::trace::{validate_run, TraceReport};
use ddblock_fault_proxy::FaultConfig;
use ddblock_test_support::faulty::try_faulty;
use ddblock_test_support::{client_for, repo_root};

struct Args {
    profile: Profile,
    server: ServerKind,
    out: PathBuf,
    /// Worker languages to run (default: all).
    only: Option<Vec<String>>,
    /// Judge the trace of the run recorded in this directory again, without running.
    revalidate: Option<PathBuf>,
}

fn args() -> Result<Args, String> {
    let mut profile = Profile::short();
    let mut out = repo_root().join("compat-tests/.run/chaos");
    let mut only = None;
    let mut revalidate = None;
    let mut server = ServerKind::Dynalite;
    let mut release_mode = None;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--profile" => {
                let name = it.next().ok_or("--profile needs short or long")?;
                profile = Profile::by_name(&name)
                    .ok_or(format!("unknown profile {name:?}: short or long"))?;
            }
            "--out" => out = PathBuf::from(it.next().ok_or("--out needs a directory")?),
            "--server" => {
                let name = it.next().ok_or("--server needs dynalite or ddblocal")?;
                server = ServerKind::by_name(&name)
                    .ok_or(format!("unknown server {name:?}: dynalite or ddblocal"))?;
            }
            "--release-mode" => {
                release_mode = match it.next().as_deref() {
                    Some("delete") => Some("delete"),
                    Some("keep-fence") => Some("keep-fence"),
                    _ => return Err("--release-mode needs delete or keep-fence".into()),
                };
            }
            "--revalidate" => {
                revalidate = Some(PathBuf::from(
                    it.next().ok_or("--revalidate needs a run's --out")?,
                ));
            }
            "--inject" => {
                let how = it.next().unwrap_or_default();
                profile.inject = INJECTIONS.into_iter().find(|i| *i == how);
                profile
                    .inject
                    .ok_or(format!("--inject needs one of {INJECTIONS:?}"))?;
            }
            "--only" => {
                let langs = it
                    .next()
                    .ok_or("--only needs languages, e.g. rust,python")?;
                only = Some(langs.split(',').map(str::to_owned).collect());
            }
            "-h" | "--help" => {
                return Err(
                    "usage: chaos [--profile short|long] [--server dynalite|ddblocal] \
                            [--release-mode delete|keep-fence] [--out DIR] \
                            [--only rust,python,node,php,laravel] [--revalidate OUT] \
                            [--inject unconditional-release|laravel-stale-release]"
                        .into(),
                );
            }
            other => return Err(format!("unknown argument {other:?}; try --help")),
        }
    }
    if let Some(mode) = release_mode {
        profile.release_mode = mode;
    }
    Ok(Args {
        profile,
        server,
        out,
        only,
        revalidate,
    })
}

fn print_report(p: &Profile, kind: ServerKind, r: &Report, elapsed: Duration, workers: &[String]) {
    println!(
        "chaos run `{}` on {}: {} workers ({}), {:.0} s, {} journal entries",
        p.name,
        kind.name(),
        workers.len(),
        workers.join(", "),
        elapsed.as_secs_f64(),
        r.journal_entries
    );
    println!(
        "faults: {:.0}% lost responses, {:.0}% dropped requests, {:.0}% throttled, {:.0}% 500s, \
         {:.0}% resets, latency spikes up to {} ms, reads up to {} ms stale, server restart: {}, \
         clocks: {:?} (margin {} s), release mode {}",
        p.lost_responses * 100.0,
        p.dropped_requests * 100.0,
        p.throttling * 100.0,
        p.errors_500 * 100.0,
        p.resets * 100.0,
        p.latency_jitter_ms,
        p.stale_ms,
        p.restart_after
            .map_or("no".into(), |d| format!("after {} s", d.as_secs())),
        p.skews,
        p.margin_secs,
        p.release_mode
    );
    println!();
    println!("| | ddblock (Rust, Python, Node, PHP driver) | stock Laravel (control) |");
    println!("| --- | --- | --- |");
    type Row = (&'static str, fn(&GroupReport) -> u64);
    let rows: [Row; 20] = [
        ("acquisitions committed", |g| g.acquisitions),
        ("  reported by their worker", |g| g.acquisitions_learned),
        ("  outcome unknown to the worker, cleaned up", |g| {
            g.unlearned_cleaned
        }),
        ("  outcome unknown to the worker, left to expire", |g| {
            g.unlearned_left
        }),
        ("**overlapping holders**", |g| g.overlaps),
        ("guarded writes accepted", |g| g.writes_accepted),
        (
            "guarded writes refused by the fence (writer no longer held the lock)",
            |g| g.writes_refused,
        ),
        (
            "guarded writes refused by the fence (from the holder: token regression)",
            |g| g.writes_refused_holder,
        ),
        ("**stale-token writes accepted**", |g| {
            g.stale_token_accepted
        }),
        ("**writes accepted from a non-holder**", |g| {
            g.writes_by_non_holder
        }),
        (
            "**fencing tokens not above the previous, item kept**",
            |g| g.fence_regressions_in_item,
        ),
        (
            "fencing tokens not above the previous, after a release (clock skew)",
            |g| g.fence_regressions_after_delete,
        ),
        (
            "releases answered \"not yours\" (a resend after a lost answer, or a lease run out)",
            |g| g.releases_not_own,
        ),
        (
            "lease-lost reports (the Rust workers end each body with the core's Held::finish)",
            |g| g.lease_lost,
        ),
        (
            "**false lease losses** (reported with lease left by the holder's clock, no refresh saw it)",
            |g| g.false_lease_losses,
        ),
        (
            "**locks left in place by a release that reported success**",
            |g| g.expired_unreleased,
        ),
        (
            "locks left to expire after the release found them \"not yours\" (Laravel: stuck; ddblock: lease ran out first)",
            |g| g.expired_release_refused,
        ),
        (
            "locks left to expire after an error their worker saw",
            |g| g.expired_unreleased_explained,
        ),
        (
            "locks held at the end after an error their worker saw",
            |g| g.held_at_end_explained,
        ),
        ("**locks held at the end, unexplained**", |g| g.held_at_end),
    ];
    for (label, f) in rows {
        println!("| {label} | {} | {} |", f(&r.ddblock), f(&r.control));
    }
    println!(
        "| writes that committed but whose answer was lost | {} (all keys) | |",
        r.committed_unanswered
    );
    println!();
    println!("| worker language | cycles | acquired | errors seen (operation: kind × count) |");
    println!("| --- | --- | --- | --- |");
    for (lang, (cycles, acquired)) in &r.cycles {
        let errors = r
            .errors
            .get(lang)
            .map(|m| {
                m.iter()
                    .map(|(k, n)| format!("{k} × {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        println!("| {lang} | {cycles} | {acquired} | {errors} |");
    }
    println!();
    let rust = r.metric_workers;
    match r.metric_mismatches.len() {
        0 => println!(
            "ddblock's metrics (OpenTelemetry SDK, in the {rust} Rust workers) agree with the \
             journal and the records: acquisitions by outcome, unknown outcomes, lost leases"
        ),
        n => println!("ddblock's metrics disagree with the journal in {n} ways (verdict below)"),
    }
}

/// `--revalidate OUT`: the trace of the run recorded in `OUT` (its journal.json and records)
/// judged again, as the run judged it. True when no step is rejected.
fn revalidate(p: &Profile, dir: &Path) -> Result<bool, String> {
    let journal =
        fs::read(dir.join("journal.json")).map_err(|e| format!("{}: {e}", dir.display()))?;
    let journal: Vec<serde_json::Value> =
        serde_json::from_slice(&journal).map_err(|e| format!("journal.json: {e}"))?;
    let trace = validate_run(p, &journal, &read_records(&dir.join("records"))?);
    print_trace(&trace);
    Ok(trace.rejected == 0)
}

/// The validation's line, and each rejection described.
fn print_trace(trace: &TraceReport) {
    println!("{}", trace.line());
    for r in &trace.rejections {
        println!("  rejected: {r}");
    }
}

fn main() -> ExitCode {
    let args = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if let Some(dir) = &args.revalidate {
        return match revalidate(&args.profile, dir) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::from(1),
            Err(e) => {
                eprintln!("chaos: {e}");
                ExitCode::from(2)
            }
        };
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let limit = args.profile.max_duration + Duration::from_secs(300);
    let outcome = rt.block_on(async {
        // A signal or the time limit drops `run`, whose process groups kill every child.
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| e.to_string())?;
        tokio::select! {
            r = tokio::time::timeout(limit, run(args)) => {
                r.map_err(|_| format!("the run took longer than {} s: stopped", limit.as_secs()))?
            }
            _ = tokio::signal::ctrl_c() => Err("interrupted".to_owned()),
            _ = term.recv() => Err("terminated".to_owned()),
        }
    });
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("chaos: {e}");
            ExitCode::from(2)
        }
    }
}

async fn run(args: Args) -> Result<bool, String> {
    let p = args.profile;
    let root = repo_root();
    let out = args.out.clone();
    let _ = fs::remove_dir_all(&out);
    fs::create_dir_all(out.join("records")).map_err(|e| format!("{}: {e}", out.display()))?;
    let records = out.join("records");
    let mut servers = Group(Vec::new());

    // The server, with its data on disk, so a restart keeps the table and the items.
    let kind = args.server;
    let port = free_port();
    let data = out.join(format!("{}-data", kind.name()));
    let log = |n: &str| out.join(format!("{}{n}.log", kind.name()));
    start_server(&mut servers, kind, port, &data, &log(""), "start")?;
    let upstream = format!("http://127.0.0.1:{port}");
    let table = "chaos";
    let direct = Store::with_client(
        client_for(&upstream),
        StoreConfig::builder()
            .table(table)
            .endpoint(&upstream)
            .build()
            .map_err(|e| e.to_string())?,
    );
    ddblock_admin::Admin::new(&direct)
        .create_table(&ddblock_admin::CreateTableOptions::default())
        .await
        .map_err(|e| format!("create table: {e}"))?;

    let faults = FaultConfig {
        seed: p.seed,
        journal: true,
        drop_response_rate: p.lost_responses,
        throttle_rate: p.throttling,
        error_500_rate: p.errors_500,
        drop_request_rate: p.dropped_requests,
        reset_response_rate: p.resets,
        latency_jitter_ms: p.latency_jitter_ms,
        stale_ms: p.stale_ms,
        stale_probability: 0.5,
        ..FaultConfig::default()
    };
    let proxy = try_faulty(&upstream, faults).await?.proxy;

    let mut specs = worker_commands(&root, &p, &proxy.url(), &upstream, table, &records);
    if let Some(only) = &args.only {
        specs.retain(|s| only.iter().any(|l| l == s.lang));
    }
    let labels: Vec<String> = specs.iter().map(|s| s.id.clone()).collect();
    let answers: HashMap<String, PathBuf> = specs
        .iter()
        .map(|s| (s.id.clone(), s.answer.clone()))
        .collect();
    let mut workers = Group(Vec::new());
    let started = Instant::now();
    eprintln!(
        "[chaos] profile {}: {} workers through the fault proxy at {} (server {upstream}); records in {}",
        p.name,
        specs.len(),
        proxy.url(),
        records.display()
    );
    for s in specs {
        let lang = s.lang;
        workers.spawn_peer(&s.id, s.cmd, &s.request).map_err(|e| {
            let hint = match lang {
                "rust" => " (cargo build -p ddblock-test-support --bin ddblock-peer)",
                _ => "",
            };
            format!("cannot start the {lang} worker {}: {e}{hint}", s.id)
        })?;
    }

    // The restart, while the workers run.
    let mut restarted = false;
    let deadline = started + p.max_duration + Duration::from_secs(30);
    let mut exits: HashMap<String, Option<i32>> = HashMap::new();
    loop {
        if let Some(after) = p.restart_after {
            if !restarted && started.elapsed() >= after {
                restarted = true;
                eprintln!(
                    "[chaos] restarting the server ({} ms down)",
                    p.restart_downtime.as_millis()
                );
                if let Some((_, mut c)) = servers.0.pop() {
                    kill_group(&mut c);
                }
                tokio::time::sleep(p.restart_downtime).await;
                start_server(&mut servers, kind, port, &data, &log("-2"), "restart")?;
            }
        }
        for (label, c) in &mut workers.0 {
            if !exits.contains_key(label.as_str()) {
                if let Ok(Some(status)) = c.try_wait() {
                    exits.insert(label.clone(), status.code());
                }
            }
        }
        if exits.len() == workers.0.len() || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let elapsed = started.elapsed();
    eprintln!(
        "[chaos] {} of {} workers finished in {:.0} s; checking",
        exits.len(),
        workers.0.len(),
        elapsed.as_secs_f64()
    );
    drop(workers); // kills stragglers
    proxy
        .set_config(FaultConfig::default())
        .map_err(|e| e.to_string())?;
    let journal = proxy.journal();

    // What the workers said.
    let mut cycles = read_records(&records)?;
    // A worker that did not exit 0 (a panic, an uncaught exception) or did not answer ok is an
    // untyped failure.
    for (label, code) in &exits {
        let problem = match code {
            Some(0) => answers.get(label).and_then(|a| answer_problem(a)),
            _ => Some(format!("exited {code:?}")),
        };
        if let Some(problem) = problem {
            let lang = label.split('-').next().unwrap_or("?").to_owned();
            let stderr = fs::read_to_string(records.join(format!(
                "{}.stderr",
                label.split(' ').next().unwrap_or(label)
            )))
            .unwrap_or_default();
            let tail: String = stderr.lines().rev().take(3).collect::<Vec<_>>().join(" / ");
            cycles.push(Cycle {
                lang,
                worker: label.clone(),
                untyped: vec![format!("{label} {problem}: {tail}")],
                ..Cycle::default()
            });
        }
    }
    for label in &labels {
        if !exits.contains_key(label) {
            cycles.push(Cycle {
                lang: label.split('-').next().unwrap_or("?").to_owned(),
                worker: label.clone(),
                untyped: vec![format!(
                    "{label} did not finish within the run's time limit"
                )],
                ..Cycle::default()
            });
        }
    }

    // What the table holds at the end (straight from the server, consistent).
    let mut end_items = HashMap::new();
    let raw = client_for(&upstream);
    let request = raw.scan().table_name(table).consistent_read(true);
    let scan = request
        .send()
        .await
        .map_err(|e| format!("final scan: {e}"))?;
    // The counters of the critical sections (`cnt_<lock name>`), summed.
    let mut counted = 0i64;
    for item in scan.items() {
        let key = item.get("key").and_then(|v| v.as_s().ok()).cloned();
        if key.as_deref().is_some_and(|k| k.starts_with("cnt_")) {
            let n = item.get("n").and_then(|v| v.as_n().ok());
            counted += n.and_then(|n| n.parse::<i64>().ok()).unwrap_or(0);
        }
        let exp = item
            .get("expires_at")
            .and_then(|v| v.as_n().ok())
            .and_then(|n| n.parse::<i64>().ok());
        if let (Some(k), Some(e)) = (key, exp) {
            end_items.insert(k, e);
        }
    }
    let end_now = SystemClock.now();

    let mut locks = std::collections::BTreeMap::new();
    let mut resources = std::collections::BTreeMap::new();
    for (prefix, n, control) in [("k", p.keys, false), ("c", p.control_keys, true)] {
        for i in 0..n {
            let name = format!("{prefix}{i}");
            locks.insert(
                name.clone(),
                LockKey {
                    key: format!("{PREFIX}{name}"),
                    control,
                },
            );
            resources.insert(name.clone(), resource_key(&name));
        }
    }
    let keys = Keys {
        locks,
        resources,
        value_attribute: "value".into(),
        expiration_attribute: "expires_at".into(),
    };
    let mut report = check(&keys, &journal, &cycles, &end_items, end_now);
    // Each Rust worker that answered: its metrics against the journal and its records.
    let mut metrics = std::collections::BTreeMap::new();
    for (label, code) in &exits {
        let id = label.split(' ').next().unwrap_or(label);
        let answer = answers.get(label).and_then(|a| fs::read_to_string(a).ok());
        if let (Some(0), true, Some(text)) = (code, id.starts_with("rust-"), answer) {
            let counts = serde_json::from_str::<serde_json::Value>(text.trim())
                .ok()
                .and_then(|v| serde_json::from_value(v["metrics"].clone()).ok())
                .ok_or_else(|| format!("{label}'s answer has no metrics: {text}"))?;
            metrics.insert(id.to_owned(), counts);
        }
    }
    check_metrics(&mut report, &cycles, &metrics);
    // Every step of the trace against the model (ddblock's keys: the control group's stock
    // Laravel is not the protocol the model's ddblock clients follow).
    let trace = validate_run(&p, &journal, &cycles);
    fs::write(
        out.join("trace.json"),
        serde_json::to_vec_pretty(&trace).unwrap_or_default(),
    )
    .map_err(|e| e.to_string())?;
    fs::write(
        out.join("journal.json"),
        serde_json::to_vec(&journal).unwrap_or_default(),
    )
    .map_err(|e| e.to_string())?;
    fs::write(
        out.join("report.json"),
        serde_json::to_vec_pretty(&report).unwrap_or_default(),
    )
    .map_err(|e| e.to_string())?;
    print_report(&p, kind, &report, elapsed, &labels);
    print_trace(&trace);
    proxy.shutdown().await;
    drop(servers);
    let (counter_line, counter_violation) = counter(&cycles, counted);
    println!("{counter_line}");
    let mut violations = report.violations();
    violations.extend(counter_violation);
    // A rejected step is printed above with its state; it fails the run only with
    // DDBLOCK_CHAOS_STRICT_TRACE=1. The validator still rejects a few correct steps (a takeover
    // in the very second of the expiry on DynamoDB Local, keep-fence mode: 1 in about 1,400 steps
    // of one short run), so CI, which has no such setting, reports them without failing on them.
    if trace.rejected > 0 {
        let line = format!(
            "{} steps of the trace rejected by the model ({})",
            trace.rejected,
            out.join("trace.json").display()
        );
        if std::env::var_os("DDBLOCK_CHAOS_STRICT_TRACE").is_some_and(|v| v == "1") {
            violations.push(line);
        } else {
            println!("trace: {line}; not judged (DDBLOCK_CHAOS_STRICT_TRACE=1 judges it)");
        }
    }
    if violations.is_empty() {
        println!(
            "\nverdict: no guarantee broken ({}).",
            out.join("report.json").display()
        );
        Ok(true)
    } else {
        println!("\nverdict: BROKEN");
        for v in &violations {
            println!("  - {v}");
        }
        Ok(false)
    }
}
