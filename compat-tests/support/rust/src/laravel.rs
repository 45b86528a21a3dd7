//! The PHP peer (`compat-tests/laravel/harness.php`): stock Laravel, or Laravel with the ddblock
//! driver, configured by the `DDB_*` variables, sent one request (compat-tests/support/peers/
//! PROTOCOL.md) and then EOF on its stdin, so that it answers and exits. The records its `cycles`
//! requests write are read back with [`take_records`].

use std::path::{Path, PathBuf};
use std::process::Stdio;

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
}

impl PeerEnv {
    /// The configuration from its five values, in the order of the fields.
    pub fn new(endpoint: &str, table: &str, layout: &str, prefix: &str, driver: &str) -> PeerEnv {
        let [endpoint, table, layout, prefix, driver] =
            [endpoint, table, layout, prefix, driver].map(str::to_owned);
        PeerEnv {
            endpoint,
            table,
            layout,
            prefix,
            driver,
        }
    }
}

/// `compat-tests/laravel/harness.php`.
pub fn harness() -> PathBuf {
    crate::repo_root().join("compat-tests/laravel/harness.php")
}

/// Starts a PHP peer configured by `env`, writes `request` to it and closes its stdin; wait for
/// its answer with [`answer`]. `what` names the peer in errors.
pub async fn start(env: &PeerEnv, request: &Value, what: &str) -> Result<Child, String> {
    let mut child = tokio::process::Command::new("php")
        .arg(harness())
        .env("DDB_ENDPOINT", &env.endpoint)
        .env("DDB_TABLE", &env.table)
        .env("DDB_LAYOUT", &env.layout)
        .env("DDB_PREFIX", &env.prefix)
        .env("DDB_DRIVER", &env.driver)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("{what}: cannot start php (run compat-tests/setup.sh): {e}"))?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    stdin
        .write_all(format!("{request}\n").as_bytes())
        .await
        .map_err(|e| format!("{what}: cannot write to php: {e}"))?;
    Ok(child)
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
