//! Test support for the `ddblock` binary: the local servers started by compat-tests/servers/servers.sh,
//! a fresh table per test, and helpers to run the binary and read its JSON, and to drive and
//! signal child processes. `laravel` drives real Laravel through compat-tests' PHP harness.
#![allow(dead_code)]

pub mod laravel;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command as StdCommand, Output, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use ddblock::aws_sdk_dynamodb::types::AttributeValue;
use ddblock::aws_sdk_dynamodb::Client;
use ddblock_test_support::{put_raw_item, raw_item, skew_script};
use serde_json::Value;

// Not every test file runs on both servers (`on_servers`): s3.rs and bad_input.rs run on moto.
#[allow(unused_imports)]
pub use ddblock_test_support::{on_servers, unique, Server};

/// The built `ddblock` binary.
pub fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_ddblock"))
}

/// The repository root.
pub fn root() -> PathBuf {
    ddblock_test_support::repo_root()
}

/// A scratch directory.
pub fn scratch() -> PathBuf {
    let d = std::env::temp_dir().join(unique("ddblock-cli-"));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A shell script that leaves what it saw in a file: `script` with `{file}` replaced by the path
/// of `name` in a fresh scratch folder. Returns that path and the script.
pub fn script_writing(name: &str, script: &str) -> (PathBuf, String) {
    let file = scratch().join(name);
    let script = script.replace("{file}", &file.display().to_string());
    (file, script)
}

/// The fields of `acquire --json` (also printed by `run --json` when the lock is held).
/// The doctor's table checks, in report order.
pub const CHECK_IDS: [&str; 9] = [
    "table",
    "key_schema",
    "regions",
    "ttl",
    "expired_items",
    "default_ttl_locks",
    "invalid_items",
    "layout",
    "clock",
];

pub const ACQUIRE_FIELDS: &str = "acquired name key owner expires_at holder recovered fence";

/// One server, one fresh table (created by `ddblock create-table`), prefix `app_`, layout laravel12.
pub struct Ctx {
    pub server: Server,
    pub endpoint: String,
    pub table: String,
}

impl Ctx {
    pub fn new(server: Server) -> Ctx {
        Self::with_table(server, &unique("cli"), true)
    }

    /// `create`: run `ddblock create-table --no-ttl` first. TTL off: DynamoDB Local's TTL deletes
    /// expired items by itself, at times of its choosing, and tests that put expired items expect
    /// them to stay (as on DynamoDB, where TTL takes days). The TTL tests create their own tables.
    pub fn with_table(server: Server, table: &str, create: bool) -> Ctx {
        let ctx = Ctx {
            server,
            endpoint: server.endpoint(),
            table: table.to_owned(),
        };
        if create {
            ctx.cmd()
                .args(["create-table", "--no-ttl"])
                .assert()
                .success();
        }
        ctx
    }

    /// This context's server and table through another endpoint (a fault proxy, say).
    pub fn via(&self, endpoint: impl Into<String>) -> Ctx {
        Ctx {
            server: self.server,
            endpoint: endpoint.into(),
            table: self.table.clone(),
        }
    }

    /// An endpoint with no DynamoDB behind it (a closed port, a listener that never answers),
    /// table `cache`.
    pub fn unserved(endpoint: impl Into<String>) -> Ctx {
        Ctx {
            server: Server::Moto,
            endpoint: endpoint.into(),
            table: "cache".into(),
        }
    }

    /// Environment of every invocation: this server and table, Laravel's variable names, test
    /// credentials, nothing inherited that could change the outcome.
    pub fn env(&self, c: &mut StdCommand) {
        for k in [
            "DYNAMODB_CACHE_TABLE",
            "DYNAMODB_ENDPOINT",
            "CACHE_PREFIX",
            "DDBLOCK_LAYOUT",
            "AWS_PROFILE",
            "AWS_REGION",
        ] {
            c.env_remove(k);
        }
        c.env("DYNAMODB_ENDPOINT", &self.endpoint)
            .env("DYNAMODB_CACHE_TABLE", &self.table)
            .env("CACHE_PREFIX", "app_")
            .env("AWS_DEFAULT_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_EC2_METADATA_DISABLED", "true");
    }

    /// `ddblock` with this context's environment, its clock `skew` off when given
    /// (`compat-tests/support/skew`, libfaketime). Monotonic clocks are left alone
    /// (`DONT_FAKE_MONOTONIC`): only the wall clock, which lock expiry is judged by, is skewed.
    pub fn skewed(&self, skew: Option<&str>) -> StdCommand {
        let mut c = match skew {
            Some(s) => {
                let mut c = StdCommand::new(skew_script());
                c.arg(s).arg(bin());
                c
            }
            None => StdCommand::new(bin()),
        };
        self.env(&mut c);
        c
    }

    /// `ddblock` for assert_cmd.
    pub fn cmd(&self) -> Command {
        let mut c = StdCommand::new(bin());
        self.env(&mut c);
        Command::from_std(c)
    }

    /// `ddblock ARGS` as a child process (stdout/stderr piped), for signals and concurrency.
    pub fn spawn(&self, args: &[&str]) -> Child {
        let mut c = StdCommand::new(bin());
        self.env(&mut c);
        c.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn ddblock")
    }

    /// Runs `ddblock --json ARGS`; returns the exit status and the JSON on stdout.
    pub fn json(&self, args: &[&str]) -> (i32, Value) {
        let out = self.cmd().arg("--json").args(args).output().unwrap();
        json_of(&out, &format!("ddblock {args:?}"))
    }

    /// Runs `ddblock ARGS`; returns (status, stdout, stderr).
    pub fn text(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.cmd().args(args).output().unwrap();
        (
            out.status.code().expect("exit status"),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    }

    /// `ddblock run NAME --ttl TTL -- sh -c SCRIPT`; returns (status, stdout, stderr).
    pub fn run_sh(&self, name: &str, ttl: &str, script: &str) -> (i32, String, String) {
        self.text(&["run", name, "--ttl", ttl, "--", "sh", "-c", script])
    }

    /// `status --json NAME`.
    pub fn status(&self, name: &str) -> Value {
        let (code, v) = self.json(&["status", name]);
        assert_eq!(code, 0, "{v}");
        v
    }

    /// Waits until lock `name` is held (by anyone).
    pub fn wait_held(&self, name: &str) -> Value {
        let start = Instant::now();
        loop {
            let v = self.status(name);
            if v["held"] == true {
                return v;
            }
            assert!(
                start.elapsed() < Duration::from_secs(15),
                "lock {name} never became held"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Takes lock `name` for `ttl` seconds; returns the owner.
    pub fn acquire(&self, name: &str, ttl: i64) -> String {
        let (code, v) = self.json(&["acquire", name, "--ttl", &ttl.to_string()]);
        assert_eq!(code, 0, "{v}");
        v["owner"].as_str().unwrap().to_owned()
    }

    /// A plain SDK client for raw writes.
    pub fn client(&self) -> Client {
        ddblock_test_support::client_for(&self.endpoint)
    }

    /// Writes an item as is (e.g. one Laravel wrote long ago).
    pub fn put_raw(&self, key: &str, value: Option<AttributeValue>, expires_at: Option<i64>) {
        let mut item = HashMap::from([("key".to_owned(), AttributeValue::S(key.into()))]);
        if let Some(v) = value {
            item.insert("value".into(), v);
        }
        if let Some(e) = expires_at {
            item.insert("expires_at".into(), AttributeValue::N(e.to_string()));
        }
        block_on(put_raw_item(&self.client(), &self.table, item));
    }

    /// Whether table key `key` is in the table (consistent read).
    pub fn raw_exists(&self, key: &str) -> bool {
        block_on(raw_item(&self.client(), &self.table, key)).is_some()
    }
}

/// The exit status and the JSON on stdout of a finished `ddblock --json` (`what` it was, for the
/// message when there is no JSON).
pub fn json_of(out: &Output, what: &str) -> (i32, Value) {
    let code = out.status.code().expect("exit status");
    let text = String::from_utf8_lossy(&out.stdout);
    let v = serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "{what} printed no JSON ({e}): {text:?}; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (code, v)
}

/// Runs a future to completion on a runtime of its own.
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// The current Unix time.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Some fields of `v` as a JSON array, to assert several at once: `pick(&v, &["a", "b"])` is
/// `[v["a"], v["b"]]`.
pub fn pick(v: &Value, names: &[&str]) -> Value {
    Value::Array(names.iter().map(|n| v[*n].clone()).collect())
}

/// Asserts that `v` is an object with exactly these fields (names separated by white space).
pub fn assert_fields(v: &Value, fields: &str) {
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"));
    let mut have: Vec<&str> = obj.keys().map(String::as_str).collect();
    have.sort_unstable();
    let mut want: Vec<&str> = fields.split_whitespace().collect();
    want.sort_unstable();
    assert_eq!(have, want, "fields of {v}");
}

/// Waits (polling, bounded) until `path` exists: a command we started got that far.
pub fn wait_for(path: &Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{path:?} never appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends `signal` to a child (a `ddblock` we started and have not waited for yet).
pub fn send_signal(child: &Child, signal: i32) {
    // SAFETY: kill(2) on the pid of our own child, not yet waited for.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
}

/// Waits for a child with a deadline; kills it and panics on timeout.
pub fn wait_timeout(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("child did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The stderr of a finished child.
pub fn stderr_of(child: &mut Child) -> String {
    let mut s = String::new();
    use std::io::Read;
    child.stderr.take().unwrap().read_to_string(&mut s).unwrap();
    s
}
