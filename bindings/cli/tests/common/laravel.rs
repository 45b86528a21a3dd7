//! Real Laravel next to the binary: one `php compat-tests/laravel/harness.php` command loop
//! (Laravel's unmodified lock and cache classes) against a test's server and table, optionally
//! under `faketime` for a skewed wall clock, started by the support crate's starter
//! (`ddblock_test_support::laravel::command`).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

use base64::Engine;
use ddblock_test_support::laravel::{self, PeerEnv};
use serde_json::{json, Value};

use super::Ctx;

/// One `php harness.php` command loop; killed when dropped.
pub struct Php {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Php {
    /// The harness with Laravel's `layout` and `prefix`, on `ctx`'s server and table.
    pub fn start(ctx: &Ctx, layout: &str, prefix: &str) -> Php {
        Self::start_skewed(ctx, layout, prefix, None)
    }

    /// The same, its wall clock `skew` off when given (`compat-tests/support/skew`, libfaketime,
    /// e.g. "+2s"; monotonic clocks are left alone).
    pub fn start_skewed(ctx: &Ctx, layout: &str, prefix: &str, skew: Option<&str>) -> Php {
        let mut env = PeerEnv::new(&ctx.endpoint, &ctx.table, layout, prefix, "laravel");
        env.skew = skew.map(str::to_owned);
        let mut child = laravel::command(&env)
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("{}", laravel::cannot_start("PHP harness", &e)));
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Php {
            child,
            stdin,
            stdout,
        }
    }

    /// One command of the loop; its answer, which must be `"ok": true`.
    pub fn call(&mut self, cmd: Value) -> Value {
        writeln!(self.stdin, "{cmd}").unwrap();
        self.stdin.flush().unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("harness answered {line:?} to {cmd} ({e})"));
        assert_eq!(v["ok"], true, "harness failed {cmd}: {v}");
        v
    }

    /// Laravel's `Cache::lock(name, ttl, owner)->get()`: whether it acquired, and the owner.
    pub fn acquire(&mut self, name: &str, ttl: i64, owner: Option<&str>) -> (bool, Value) {
        let mut cmd = json!({"op": "lock.acquire", "name": name, "ttl": ttl});
        if let Some(o) = owner {
            cmd["owner"] = json!(o);
        }
        let v = self.call(cmd);
        (v["acquired"] == true, v["owner"].clone())
    }

    /// Laravel's `get()` of `key`, as PHP `serialize()` text.
    pub fn get(&mut self, key: &str) -> String {
        let v = self.call(json!({"op": "get", "key": key}));
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(v["value"].as_str().unwrap())
            .unwrap();
        String::from_utf8(bytes).unwrap()
    }

    /// Laravel's `put()` of `key`, given as PHP `serialize()` text.
    pub fn put(&mut self, key: &str, serialized: &str, ttl: i64) {
        let v = base64::engine::general_purpose::STANDARD.encode(serialized);
        self.call(json!({"op": "put", "key": key, "v": v, "ttl": ttl}));
    }
}

impl Drop for Php {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
