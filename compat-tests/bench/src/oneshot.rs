//! One-shot waiters: every acquisition is a new process, as cron jobs on several hosts, a shell
//! loop or a short-lived worker take the lock. ddblock's: `ddblock run NAME --wait SECS -- CMD`,
//! a process with no memory of the key (what its wait knows comes from the lock item); stock
//! Laravel's, the same: a new PHP process whose `block()` takes the lock once. Each worker holds
//! the lock `WORK_MS`, pauses `THINK_MS` after its process ends, and starts the next.

use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, BufReader};

use ddblock_test_support::laravel::{self, PeerEnv};
use serde_json::json;

use crate::util::{block_request, unix_now, wants_by_worker, Ctx, Want, THINK_MS, WORK_MS};

/// `workers` loops, each starting `ddblock run hot --wait ...` processes from `start_at` until
/// `until` (each waits at most until `until`): every loop's wants.
pub async fn cli_workers(
    ctx: &Ctx,
    url: &str,
    table: &str,
    workers: usize,
    start_at: f64,
    until: f64,
) -> Result<Vec<Vec<Want>>, String> {
    let mut loops = Vec::new();
    for _ in 0..workers {
        let (cli, url, table) = (ctx.cli.clone(), url.to_owned(), table.to_owned());
        loops.push(tokio::spawn(async move {
            tokio::time::sleep(secs(start_at - unix_now())).await;
            let mut wants = Vec::new();
            while unix_now() < until {
                wants.push(one_run(&cli, &url, &table, until).await?);
                tokio::time::sleep(std::time::Duration::from_millis(THINK_MS)).await;
            }
            Ok::<_, String>(wants)
        }));
    }
    let mut out = Vec::new();
    for l in loops {
        out.push(l.await.map_err(|e| e.to_string())??);
    }
    Ok(out)
}

/// One `ddblock run` process: its command says when it starts (the lock is held) and ends.
async fn one_run(
    cli: &std::path::Path,
    url: &str,
    table: &str,
    until: f64,
) -> Result<Want, String> {
    let t_try = unix_now();
    let work = format!("echo held; sleep {}; echo done", WORK_MS as f64 / 1000.0);
    let mut child = tokio::process::Command::new(cli)
        .args([
            "--endpoint",
            url,
            "--table",
            table,
            "--layout",
            "laravel12",
            "--prefix",
            "",
        ])
        .args(["run", "hot", "--ttl", "10", "--wait"])
        .arg(format!("{:.3}", (until - t_try).max(0.001)))
        .args(["--", "sh", "-c", &work])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("one-shot worker: cannot start {}: {e}", cli.display()))?;
    let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    let (mut t_acq, mut t_rel) = (None, None);
    while let Some(line) = lines.next_line().await.map_err(|e| e.to_string())? {
        match line.as_str() {
            "held" => t_acq = Some(unix_now()),
            "done" => t_rel = Some(unix_now()),
            _ => {}
        }
    }
    let status = child.wait().await.map_err(|e| e.to_string())?;
    // 75: still held when the wait ran out (the run's end).
    if !status.success() && status.code() != Some(75) {
        return Err(format!("one-shot worker: ddblock run exited {status}"));
    }
    Ok(Want {
        t_try,
        t_acq,
        t_rel,
        acquired: t_acq.is_some(),
    })
}

/// `workers` loops, each starting a PHP peer per acquisition (stock Laravel 12's `block()`, once)
/// from `start_at` until `until`: every loop's wants.
pub async fn php_workers(
    ctx: &Ctx,
    url: &str,
    table: &str,
    workers: usize,
    start_at: f64,
    until: f64,
) -> Result<Vec<Vec<Want>>, String> {
    let env = PeerEnv::new(url, table, "laravel12", "", "laravel");
    let mut loops = Vec::new();
    for i in 0..workers {
        let record = ctx.scratch.join(format!("{table}.php-once.{i}.jsonl"));
        let env = env.clone();
        loops.push(tokio::spawn(async move {
            tokio::time::sleep(secs(start_at - unix_now())).await;
            while unix_now() < until {
                let mut request = block_request(&record, unix_now(), until);
                request["cycles"] = json!(1);
                laravel::request(&env, &request, "one-shot PHP worker").await?;
                tokio::time::sleep(std::time::Duration::from_millis(THINK_MS)).await;
            }
            // One worker: every process of this loop.
            Ok::<_, String>(wants_by_worker(&record)?.concat())
        }));
    }
    let mut out = Vec::new();
    for l in loops {
        out.push(l.await.map_err(|e| e.to_string())??);
    }
    Ok(out)
}

fn secs(s: f64) -> std::time::Duration {
    std::time::Duration::from_secs_f64(s.max(0.0))
}
