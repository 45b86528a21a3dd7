//! The chaos run's workers: each one its language's peer (compat-tests/support/peers/
//! PROTOCOL.md) given one `chaos` request with its part of the profile, configured through the
//! `DDB_*` environment; the Rust peer is `ddblock-peer` beside the chaos binary.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::checker::Cycle;
use crate::profile::Profile;

/// The cache prefix of the run's lock items (layout laravel12: lock `k0` is `chaos_k0`).
pub const PREFIX: &str = "chaos_";

/// One worker: a peer process (compat-tests/support/peers/PROTOCOL.md) given one `chaos`
/// request on stdin, its answer line going to `answer`.
pub struct WorkerSpec {
    /// `rust`, `python`, `node`, `php` (the driver) or `laravel` (the control group).
    pub lang: &'static str,
    /// Its label: `LANG-N`, plus its clock when skewed.
    pub id: String,
    /// The peer's command (stdin piped, stdout to `answer`, stderr to `ID.stderr`).
    pub cmd: Command,
    /// The request line.
    pub request: String,
    /// Where its answer line goes.
    pub answer: PathBuf,
}

/// The peer of each worker language: program, arguments, and `DDB_DRIVER` (PHP only).
fn peer_program(root: &Path, exe_dir: &Path, lang: &str) -> (PathBuf, Vec<PathBuf>, &'static str) {
    let peers = root.join("compat-tests/support/peers");
    let harness = root.join("compat-tests/laravel/harness.php");
    match lang {
        "rust" => (exe_dir.join("ddblock-peer"), vec![], ""),
        "python" => (
            root.join("bindings/python/.venv/bin/python"),
            vec![peers.join("peer.py")],
            "",
        ),
        "node" => ("node".into(), vec![peers.join("peer.mjs")], ""),
        "php" => ("php".into(), vec![harness], "ddblock"),
        _ => ("php".into(), vec![harness], "laravel"),
    }
}

/// Every worker of profile `p` on `table` at `endpoint`, records and answers into `out`; each
/// critical section's counter goes to `direct`, the server itself.
pub fn worker_commands(
    root: &Path,
    p: &Profile,
    endpoint: &str,
    direct: &str,
    table: &str,
    out: &Path,
) -> Vec<WorkerSpec> {
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
        .expect("the chaos binary's directory");
    let names = |prefix: &str, n: usize| (0..n).map(|i| format!("{prefix}{i}")).collect::<Vec<_>>();
    let keys = names("k", p.keys);
    let control_keys = names("c", p.control_keys);
    let mut specs = Vec::new();
    let mut skews = p.skews.clone();
    let mut n = 0u64;
    let mut make = |lang: &'static str, keys: &[String], control: bool| {
        n += 1;
        let id = format!("{lang}-{n}");
        let (program, args, driver) = peer_program(root, &exe_dir, lang);
        // Skewed clocks go to the first ddblock worker of each language the profile names.
        let skew = match skews.iter().position(|(l, _)| *l == lang) {
            Some(i) if !control => Some(skews.remove(i).1),
            _ => None,
        };
        let mut cmd = match skew {
            Some(s) => {
                let mut c = Command::new(ddblock_test_support::skew_script());
                c.arg(s).arg(&program);
                c
            }
            None => Command::new(&program),
        };
        cmd.args(&args);
        if !driver.is_empty() {
            cmd.env("DDB_DRIVER", driver);
        }
        // The guarded writes' client settings of the old workers: 3 s per HTTP call, 2 retries.
        // `--inject`: the first Rust worker releases wrongly.
        if let (Some(how), "rust", 1) = (p.inject, lang, n) {
            cmd.env("DDB_CHAOS_INJECT", how);
        }
        cmd.env("DDB_ENDPOINT", endpoint)
            .env("DDB_COUNTER_ENDPOINT", direct)
            .env("DDB_TABLE", table)
            .env("DDB_LAYOUT", "laravel12")
            .env("DDB_PREFIX", PREFIX)
            .env("DDB_MARGIN", p.margin_secs.to_string())
            // Every front's own setting (stock Laravel, the control group, ignores it).
            .env("DDBLOCK_RELEASE_MODE", p.release_mode)
            .env("DDB_TIMEOUT", "3")
            .env("DDB_RETRIES", "2")
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_DEFAULT_REGION", "us-east-1")
            .stdin(Stdio::piped())
            .stdout(fs::File::create(out.join(format!("{id}.answer"))).expect("answer file"))
            .stderr(fs::File::create(out.join(format!("{id}.stderr"))).expect("stderr file"));
        let request = serde_json::json!({
            "op": "chaos",
            "keys": keys,
            "ttl": p.ttl_secs,
            "work_ms": p.work.as_millis() as u64,
            "wait_ms": p.wait.as_millis() as u64,
            "duration_ms": p.max_duration.as_millis() as u64,
            "acquisitions": if control { p.control_acquisitions } else { p.acquisitions },
            "seed": p.seed * 1000 + n,
            "worker": id,
            "out": out.join(format!("{id}.jsonl")),
        });
        let label = match skew {
            Some(s) => format!("{id} (clock {s})"),
            None => id.clone(),
        };
        specs.push(WorkerSpec {
            lang,
            id: label,
            cmd,
            request: format!("{request}\n"),
            answer: out.join(format!("{id}.answer")),
        });
    };
    for _ in 0..p.workers_per_lang {
        for lang in ["rust", "python", "node", "php"] {
            make(lang, &keys, false);
        }
    }
    for _ in 0..p.control_workers {
        make("laravel", &control_keys, true);
    }
    specs
}

/// What a finished worker's answer line says is wrong with it, if anything.
pub fn answer_problem(answer: &Path) -> Option<String> {
    let text = fs::read_to_string(answer).unwrap_or_default();
    let Some(line) = text.lines().find(|l| !l.trim().is_empty()) else {
        return Some("no answer".into());
    };
    match serde_json::from_str::<serde_json::Value>(line) {
        Ok(v) if v["ok"] == true => None,
        Ok(v) => Some(format!("answered {}", v["error"])),
        Err(_) => Some(format!("answered {line:?}")),
    }
}

/// Every worker's records (`*.jsonl` in `records`).
pub fn read_records(records: &Path) -> Result<Vec<Cycle>, String> {
    let mut cycles: Vec<Cycle> = Vec::new();
    for entry in fs::read_dir(records).map_err(|e| format!("{}: {e}", records.display()))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            let text = fs::read_to_string(&path).map_err(|e| e.to_string())?;
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                cycles.push(
                    serde_json::from_str(line)
                        .map_err(|e| format!("{}: bad record {line:?}: {e}", path.display()))?,
                );
            }
        }
    }
    Ok(cycles)
}
