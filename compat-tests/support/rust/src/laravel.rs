//! The PHP peer (`compat-tests/laravel/harness.php`): stock Laravel, or Laravel with the ddblock
//! driver, configured by the `DDB_*` variables (compat-tests/support/peers/PROTOCOL.md). [`command`]
//! is the one place a Rust test starts it: long-lived (the interop suite's `PhpHarness`, the CLI
//! tests' `Php`), or sent one request and then EOF on its stdin, so that it answers and exits
//! ([`start`], [`request`]). The records its `cycles` requests write are read back with
//! [`take_records`].

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::process::Child;

use crate::child;

/// The `DDB_*` configuration of a PHP peer.
#[derive(Debug, Clone)]
pub struct PeerEnv {
    /// `DDB_ENDPOINT`: the server (or the proxy in front of it).
    pub endpoint: String,
    /// `DDB_TABLE`.
    pub table: String,
    /// `DDB_LAYOUT`: `laravel8`, `laravel11` or `laravel12`.
    pub layout: String,
    /// `DDB_PREFIX`: the cache prefix.
    pub prefix: String,
    /// `DDB_DRIVER`: `laravel` (Laravel's own lock) or `ddblock` (the driver, `bindings/php`).
    pub driver: String,
    /// A wall clock this far off (e.g. `+2s`, by `compat-tests/support/skew`: libfaketime;
    /// monotonic clocks are left alone), or `None`.
    pub skew: Option<String>,
}

impl PeerEnv {
    /// The configuration from its five values, in the order of the fields (no skew).
    pub fn new(endpoint: &str, table: &str, layout: &str, prefix: &str, driver: &str) -> PeerEnv {
        let [endpoint, table, layout, prefix, driver] =
            [endpoint, table, layout, prefix, driver].map(str::to_owned);
        PeerEnv {
            endpoint,
            table,
            layout,
            prefix,
            driver,
            skew: None,
        }
    }
}

/// `compat-tests/laravel/harness.php`.
pub fn harness() -> PathBuf {
    crate::repo_root().join("compat-tests/laravel/harness.php")
}

/// The command that starts a PHP peer configured by `env`: `php harness.php` (under `faketime`
/// when skewed), its `DDB_*` variables, test credentials when none are set; stdin and stdout
/// piped (stderr is the caller's). `tokio::process::Command::from` makes it async.
pub fn command(env: &PeerEnv) -> Command {
    let mut cmd = match &env.skew {
        Some(skew) => {
            let mut c = Command::new(crate::skew_script());
            c.args([skew, "php"]);
            c
        }
        None => Command::new("php"),
    };
    cmd.arg(harness())
        .env("DDB_ENDPOINT", &env.endpoint)
        .env("DDB_TABLE", &env.table)
        .env("DDB_LAYOUT", &env.layout)
        .env("DDB_PREFIX", &env.prefix)
        .env("DDB_DRIVER", &env.driver)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    if std::env::var_os("AWS_ACCESS_KEY_ID").is_none() {
        cmd.env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test");
    }
    cmd
}

/// Why a PHP peer could not start (`what` names it), with what to run.
pub fn cannot_start(what: &str, e: &std::io::Error) -> String {
    format!(
        "{what}: cannot start `php {}` ({e}): run compat-tests/setup.sh (or run-tests.sh), which \
         installs PHP, faketime and Laravel's cache component",
        harness().display()
    )
}

/// Starts a PHP peer configured by `env`, writes `request` to it and closes its stdin; wait for
/// its answer with [`answer`]. `what` names the peer in errors.
pub async fn start(env: &PeerEnv, request: &Value, what: &str) -> Result<Child, String> {
    let mut child = tokio::process::Command::from(command(env))
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| cannot_start(what, &e))?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    stdin
        .write_all(format!("{request}\n").as_bytes())
        .await
        .map_err(|e| format!("{what}: cannot write to php: {e}"))?;
    Ok(child)
}

/// Every answer of a PHP peer configured by `env` to `requests`, sent at once before EOF on its
/// stdin (blocking; for synchronous tests). Each answer as it is, `ok:false` included.
pub fn answers(env: &PeerEnv, requests: &[Value], what: &str) -> Result<Vec<Value>, String> {
    let mut child = command(env)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| cannot_start(what, &e))?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    let lines: String = requests.iter().map(|r| format!("{r}\n")).collect();
    // A failed write shows as missing answers and the peer's stderr below.
    let _ = stdin.write_all(lines.as_bytes());
    drop(stdin);
    let out = child
        .wait_with_output()
        .map_err(|e| format!("{what}: {e}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let answers: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).map_err(|e| format!("{what}: answer {l:?}: {e}")))
        .collect::<Result<_, _>>()?;
    if !out.status.success() || answers.len() != requests.len() {
        return Err(format!(
            "{what}: {} answers to {} requests ({}); stderr: {stderr}",
            answers.len(),
            requests.len(),
            out.status
        ));
    }
    Ok(answers)
}

/// The answer of a peer [`start`]ed: an error unless it exited 0 and answered `"ok": true`.
pub async fn answer(peer: Child, what: &str) -> Result<Value, String> {
    let command = format!("php {}", harness().display());
    let out = child::output(peer, &command, what).await?;
    let answer = child::last_json(&String::from_utf8_lossy(&out.stdout), what)?;
    if answer["ok"] != true {
        return Err(format!(
            "{what}: {answer}; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(answer)
}

/// [`start`], then [`answer`]: one request to a fresh PHP peer.
pub async fn request(env: &PeerEnv, request: &Value, what: &str) -> Result<Value, String> {
    answer(start(env, request, what).await?, what).await
}

/// Reads the record file `path` (one JSON object a line, as the peers' `cycles` requests write
/// it) and removes it.
pub fn take_records<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let _ = std::fs::remove_file(path);
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| format!("bad record {l:?}: {e}")))
        .collect()
}
