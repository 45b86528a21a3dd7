//! The driver of the PHP harness (`compat-tests/laravel/harness.php`): one long-lived process
//! speaking the JSON-lines peer protocol (compat-tests/support/peers/PROTOCOL.md). This module
//! starts it (by the support crate's starter, `ddblock_test_support::laravel::command`) and
//! exchanges one command; `cache.rs` and `lock.rs` hold a typed method per command.

use std::fmt;
use std::process::Stdio;
use std::time::Duration;

use ddblock::KeyLayout;
use ddblock_test_support::laravel::{self, PeerEnv};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Mutex;

use crate::wire::item_from_wire;
use crate::Item;

mod cache;
mod lock;

pub use lock::PhpLock;

/// How long one harness command may take before the test fails (blocking commands included).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// A failed harness command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HarnessError {
    /// The harness answered `{"ok":false,"error":..}`: Laravel, the AWS SDK for PHP or DynamoDB
    /// refused or failed the command (e.g. a non-UTF-8 value).
    Php(String),
    /// The process died, timed out or answered something that is not the protocol.
    Protocol(String),
}

impl fmt::Display for HarnessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HarnessError::Php(e) => write!(f, "PHP answered ok:false: {e}"),
            HarnessError::Protocol(e) => write!(f, "harness protocol failure: {e}"),
        }
    }
}

impl std::error::Error for HarnessError {}

struct Io {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

/// One long-lived `php compat-tests/laravel/harness.php` process: Laravel 8.83's real
/// `DynamoDbStore`/`DynamoDbLock` with a key layout and prefix, on one table.
///
/// Commands are sent one at a time (a clone of an `Arc<PhpHarness>` in another task waits its
/// turn). Typed methods panic with the command and PHP's error when the harness answers
/// `ok:false`; [`PhpHarness::call`] and the `try_*` methods return it instead. The child is
/// killed when the harness is dropped.
pub struct PhpHarness {
    io: Mutex<Io>,
    child: Child,
    table: String,
    layout: KeyLayout,
    prefix: String,
}

impl fmt::Debug for PhpHarness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PhpHarness")
            .field("pid", &self.child.id())
            .field("table", &self.table)
            .field("layout", &self.layout)
            .field("prefix", &self.prefix)
            .finish()
    }
}

impl PhpHarness {
    /// Starts the harness (needs a tokio runtime) for `table` at `endpoint` with a layout and
    /// prefix, by the support crate's starter ([`laravel::command`]). Panics when `php` cannot be
    /// started (run `compat-tests/setup.sh`).
    pub fn spawn(endpoint: &str, table: &str, layout: KeyLayout, prefix: &str) -> PhpHarness {
        let env = PeerEnv::new(endpoint, table, layout.as_str(), prefix, "laravel");
        let mut child = Command::from(laravel::command(&env))
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("{}", laravel::cannot_start("PHP harness", &e)));
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        PhpHarness {
            io: Mutex::new(Io { stdin, stdout }),
            child,
            table: table.to_owned(),
            layout,
            prefix: prefix.to_owned(),
        }
    }

    /// The table the harness works on.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The key layout (Laravel version) the harness emulates.
    pub fn layout(&self) -> KeyLayout {
        self.layout
    }

    /// The store prefix as configured (before Laravel 8's `:`).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Sends one command object and returns the answer without its `ok` field, or the error.
    pub async fn call(&self, cmd: Value) -> Result<Value, HarnessError> {
        let mut line = serde_json::to_string(&cmd).expect("JSON command");
        line.push('\n');
        let mut io = self.io.lock().await;
        let exchange = async {
            let written =
                |e: std::io::Error| HarnessError::Protocol(format!("writing to the harness: {e}"));
            io.stdin.write_all(line.as_bytes()).await.map_err(written)?;
            io.stdin.flush().await.map_err(written)?;
            let mut answer = String::new();
            let n =
                io.stdout.read_line(&mut answer).await.map_err(|e| {
                    HarnessError::Protocol(format!("reading from the harness: {e}"))
                })?;
            if n == 0 {
                return Err(HarnessError::Protocol(
                    "the harness exited (see its stderr above)".into(),
                ));
            }
            Ok(answer)
        };
        let answer = tokio::time::timeout(COMMAND_TIMEOUT, exchange)
            .await
            .map_err(|_| {
                HarnessError::Protocol(format!("no answer within {COMMAND_TIMEOUT:?}"))
            })??;
        parse_answer(&answer)
    }

    /// [`PhpHarness::call`] that must succeed.
    pub async fn ok(&self, cmd: Value) -> Value {
        match self.call(cmd.clone()).await {
            Ok(v) => v,
            Err(e) => panic!("PHP harness command {cmd} failed: {e}"),
        }
    }

    /// Field `name` of the answer to `cmd`, which must succeed and have it.
    async fn field(&self, cmd: Value, name: &str) -> Value {
        let mut v = self.ok(cmd.clone()).await;
        v.get_mut(name)
            .map(Value::take)
            .unwrap_or_else(|| panic!("answer to {cmd} has no {name:?}: {v}"))
    }

    /// Boolean field `name` of the answer to `cmd`.
    async fn bool_field(&self, cmd: Value, name: &str) -> bool {
        let v = self.field(cmd.clone(), name).await;
        v.as_bool()
            .unwrap_or_else(|| panic!("answer to {cmd}: {name} is not a bool: {v}"))
    }

    /// Any DynamoDB operation through PHP's client; `params` and the result are wire JSON.
    pub async fn raw(&self, call: &str, params: Value) -> Value {
        self.field(
            json!({"op": "raw", "call": call, "params": params}),
            "result",
        )
        .await
    }

    /// A strongly consistent GetItem of table key `key` done by PHP's client.
    pub async fn get_item(&self, key: &str) -> Option<Item> {
        let params = json!({
            "TableName": self.table,
            "Key": {"key": {"S": key}},
            "ConsistentRead": true,
        });
        let result = self.raw("GetItem", params).await;
        result.get("Item").map(item_from_wire)
    }

    /// PHP's `time()`.
    pub async fn now(&self) -> i64 {
        let v = self.field(json!({"op": "now"}), "now").await;
        v.as_i64().expect("now is an int")
    }
}

/// One answer line without its `ok` field, or the error it reports.
fn parse_answer(answer: &str) -> Result<Value, HarnessError> {
    let mut v: Value = serde_json::from_str(answer)
        .map_err(|e| HarnessError::Protocol(format!("answer is not JSON ({e}): {answer:?}")))?;
    let obj = v
        .as_object_mut()
        .ok_or_else(|| HarnessError::Protocol(format!("answer is not an object: {answer}")))?;
    match obj.remove("ok") {
        Some(Value::Bool(true)) => Ok(v),
        Some(Value::Bool(false)) => Err(HarnessError::Php(
            obj.get("error")
                .and_then(Value::as_str)
                .unwrap_or("(no error text)")
                .to_owned(),
        )),
        _ => Err(HarnessError::Protocol(format!(
            "answer has no boolean ok: {answer}"
        ))),
    }
}

impl Drop for PhpHarness {
    fn drop(&mut self) {
        // kill_on_drop does the same; this makes it explicit and immediate.
        let _ = self.child.start_kill();
    }
}
