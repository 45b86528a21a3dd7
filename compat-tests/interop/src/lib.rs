//! Test support for checking ddblock against Laravel's real PHP code (and, later, for benchmarks).
//!
//! - [`PhpHarness`]: one long-lived `php compat-tests/php/harness.php` process running Laravel
//!   8.83's unmodified `DynamoDbStore`/`DynamoDbLock` with a chosen key layout and prefix, with a
//!   typed async method per command of its JSON-lines protocol.
//! - [`Server`], [`client_for`], [`create_table`], [`store`]: the local DynamoDB servers
//!   (moto, dynalite) from `compat-tests/servers.sh`, tables with Laravel's schema, ddblock stores.
//! - [`Interop`]: all of it for one test: a fresh table, a Rust [`Store`] and a PHP harness on it,
//!   both with the same layout and prefix, plus raw item access.
//!
//! PHP values cross the protocol as base64 of PHP `serialize()` text; this crate converts them to
//! and from [`PhpValue`] with `ddblock::codec`.
#![warn(missing_docs)]

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use ddblock::codec::{serialize, unserialize};
use ddblock::{KeyLayout, PhpValue, Store, StoreConfig, StoreConfigBuilder};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Mutex;

pub use ddblock;

/// A DynamoDB item as the SDK gives it.
pub type Item = HashMap<String, AttributeValue>;

/// How long one harness command may take before the test fails (blocking commands included).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// The current Unix time in whole seconds (what PHP's `time()` and ddblock's `SystemClock` say).
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock before 1970")
        .as_secs() as i64
}

/// Sleeps until the Unix time is past `ts` (`now() > ts`), plus 20 ms of margin.
pub async fn sleep_until_after(ts: i64) {
    let target_ms = (ts + 1) as u128 * 1000 + 20;
    loop {
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock before 1970")
            .as_millis();
        if now_ms >= target_ms {
            return;
        }
        tokio::time::sleep(Duration::from_millis((target_ms - now_ms) as u64)).await;
    }
}

// ---- servers, clients, tables, stores -----------------------------------------------------------

pub use ddblock_test_support::{client_for, delete_table, repo_root, Server};

/// A fresh table with Laravel's schema (`key` S hash key, on-demand billing), ACTIVE on return.
pub async fn create_table(client: &Client) -> String {
    ddblock_test_support::new_table(client, "key").await
}

/// A lock item ddblock wrote, as Laravel sees it: ddblock's own attributes (the fencing token
/// and the attempt id, which Laravel never reads) checked present and removed.
pub fn laravel_view(mut item: Item) -> Item {
    for attr in [
        ddblock::format::item::FENCE_ATTRIBUTE,
        ddblock::format::item::ATTEMPT_ATTRIBUTE,
    ] {
        assert!(
            item.remove(attr).is_some(),
            "ddblock's lock item carries `{attr}`: {item:?}"
        );
    }
    item
}

/// A config builder for `table` on `server` with a layout and prefix (real clock).
pub fn store_config(
    server: Server,
    table: &str,
    layout: KeyLayout,
    prefix: &str,
) -> StoreConfigBuilder {
    StoreConfig::builder()
        .table(table)
        .endpoint(server.endpoint())
        .prefix(prefix)
        .layout(layout)
}

/// A ddblock store on `client` for `table` with a layout and prefix.
pub fn store(
    server: Server,
    client: &Client,
    table: &str,
    layout: KeyLayout,
    prefix: &str,
) -> Store {
    let cfg = store_config(server, table, layout, prefix)
        .build()
        .expect("store config");
    Store::with_client(client.clone(), cfg)
}

// ---- values across the protocol ------------------------------------------------------------

/// `base64(serialize(value))`, how values go to the harness.
pub fn to_b64(value: &PhpValue) -> String {
    B64.encode(serialize(value))
}

/// The value of a `base64(serialize(value))` text from the harness; panics on bad input.
pub fn from_b64(text: &str) -> PhpValue {
    let bytes = B64
        .decode(text)
        .unwrap_or_else(|e| panic!("harness sent bad base64 {text:?}: {e}"));
    unserialize(&bytes).unwrap_or_else(|e| {
        panic!(
            "harness sent serialize() text ddblock cannot decode ({e}): {:?}",
            String::from_utf8_lossy(&bytes)
        )
    })
}

/// A PHP string value.
pub fn php_str(s: &str) -> PhpValue {
    PhpValue::String(s.as_bytes().to_vec())
}

/// DynamoDB's wire JSON of an item (`{"key": {"S": "k"}, ...}`) as SDK attribute values.
pub fn item_from_wire(wire: &Value) -> Item {
    let obj = wire
        .as_object()
        .unwrap_or_else(|| panic!("an item must be a JSON object: {wire}"));
    obj.iter()
        .map(|(k, v)| (k.clone(), attr_from_wire(v)))
        .collect()
}

/// One attribute value from DynamoDB's wire JSON (`{"S": ".."}`, `{"N": ".."}`, ...).
pub fn attr_from_wire(wire: &Value) -> AttributeValue {
    let obj = wire
        .as_object()
        .filter(|o| o.len() == 1)
        .unwrap_or_else(|| panic!("an attribute value must have exactly one type: {wire}"));
    let (ty, v) = obj.iter().next().expect("one entry");
    let text = || {
        v.as_str()
            .unwrap_or_else(|| panic!("{ty} must be a string: {wire}"))
            .to_owned()
    };
    let texts = || -> Vec<String> {
        v.as_array()
            .unwrap_or_else(|| panic!("{ty} must be a list: {wire}"))
            .iter()
            .map(|s| s.as_str().expect("set member").to_owned())
            .collect()
    };
    match ty.as_str() {
        "S" => AttributeValue::S(text()),
        "N" => AttributeValue::N(text()),
        "BOOL" => AttributeValue::Bool(v.as_bool().expect("BOOL")),
        "NULL" => AttributeValue::Null(true),
        "SS" => AttributeValue::Ss(texts()),
        "NS" => AttributeValue::Ns(texts()),
        "B" => AttributeValue::B(aws_sdk_dynamodb::primitives::Blob::new(
            B64.decode(text()).expect("B is base64"),
        )),
        "L" => AttributeValue::L(
            v.as_array()
                .expect("L is a list")
                .iter()
                .map(attr_from_wire)
                .collect(),
        ),
        "M" => AttributeValue::M(item_from_wire(v)),
        other => panic!("unsupported attribute type {other}: {wire}"),
    }
}

/// An item with Laravel's three attributes: `{key: S key, value, expires_at: N}`.
pub fn laravel_item(key: &str, value: AttributeValue, expires_at: i64) -> Item {
    HashMap::from([
        ("key".to_owned(), AttributeValue::S(key.to_owned())),
        ("value".to_owned(), value),
        (
            "expires_at".to_owned(),
            AttributeValue::N(expires_at.to_string()),
        ),
    ])
}

/// The `expires_at` of an item as an integer; panics if missing or not an integer `N`.
pub fn expires_at(item: &Item) -> i64 {
    match item.get("expires_at") {
        Some(AttributeValue::N(n)) => n
            .parse()
            .unwrap_or_else(|_| panic!("expires_at {n:?} is not an integer")),
        other => panic!("item has no numeric expires_at: {other:?}"),
    }
}

// ---- the PHP harness ---------------------------------------------------------------------------

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

/// What `lock.acquire` / `lock.block` answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhpLock {
    /// Whether Laravel's `acquire()` (or `block()`) got the lock.
    pub acquired: bool,
    /// The lock's owner (generated by Laravel's `Str::random()` unless one was given).
    pub owner: String,
}

struct Io {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

/// One long-lived `php compat-tests/php/harness.php` process: Laravel 8.83's real
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
    /// prefix. Panics when `php` cannot be started (run `compat-tests/setup.sh`).
    pub fn spawn(endpoint: &str, table: &str, layout: KeyLayout, prefix: &str) -> PhpHarness {
        let script = repo_root().join("compat-tests/php/harness.php");
        assert!(
            script.is_file(),
            "{} is missing: the interop tests need the PHP harness",
            script.display()
        );
        let mut child = Command::new("php")
            .arg(&script)
            .env("DDB_ENDPOINT", endpoint)
            .env("DDB_TABLE", table)
            .env("DDB_LAYOUT", layout.as_str())
            .env("DDB_PREFIX", prefix)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start `php {}` ({e}): install PHP and Laravel's cache component with \
                     compat-tests/setup.sh",
                    script.display()
                )
            });
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
            io.stdin
                .write_all(line.as_bytes())
                .await
                .map_err(|e| HarnessError::Protocol(format!("writing to the harness: {e}")))?;
            io.stdin
                .flush()
                .await
                .map_err(|e| HarnessError::Protocol(format!("writing to the harness: {e}")))?;
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
        let mut v: Value = serde_json::from_str(&answer)
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

    /// [`PhpHarness::call`] that must succeed.
    pub async fn ok(&self, cmd: Value) -> Value {
        match self.call(cmd.clone()).await {
            Ok(v) => v,
            Err(e) => panic!("PHP harness command {cmd} failed: {e}"),
        }
    }

    async fn field(&self, cmd: Value, name: &str) -> Value {
        let mut v = self.ok(cmd.clone()).await;
        v.get_mut(name)
            .map(Value::take)
            .unwrap_or_else(|| panic!("answer to {cmd} has no {name:?}: {v}"))
    }

    async fn bool_field(&self, cmd: Value, name: &str) -> bool {
        let v = self.field(cmd.clone(), name).await;
        v.as_bool()
            .unwrap_or_else(|| panic!("answer to {cmd}: {name} is not a bool: {v}"))
    }

    /// `$store->get($key)` (`Null` when missing or expired, as Laravel).
    pub async fn get(&self, key: &str) -> PhpValue {
        let v = self.field(json!({"op": "get", "key": key}), "value").await;
        from_b64(v.as_str().expect("value is base64 text"))
    }

    /// `$store->put($key, $value, $ttl)`.
    pub async fn put(&self, key: &str, value: &PhpValue, ttl: i64) -> bool {
        self.bool_field(put_cmd("put", key, value, ttl), "result")
            .await
    }

    /// `$store->put(..)`, returning PHP's refusal instead of panicking.
    pub async fn try_put(
        &self,
        key: &str,
        value: &PhpValue,
        ttl: i64,
    ) -> Result<bool, HarnessError> {
        let v = self.call(put_cmd("put", key, value, ttl)).await?;
        Ok(v["result"].as_bool().expect("put result is a bool"))
    }

    /// `$store->add($key, $value, $ttl)`.
    pub async fn add(&self, key: &str, value: &PhpValue, ttl: i64) -> bool {
        self.bool_field(put_cmd("add", key, value, ttl), "result")
            .await
    }

    /// `$store->putMany([$key => $value, ...], $ttl)`.
    pub async fn put_many(&self, values: &[(&str, PhpValue)], ttl: i64) -> bool {
        self.bool_field(put_many_cmd(values, ttl), "result").await
    }

    /// `$store->putMany(..)`, returning PHP's refusal instead of panicking.
    pub async fn try_put_many(
        &self,
        values: &[(&str, PhpValue)],
        ttl: i64,
    ) -> Result<bool, HarnessError> {
        let v = self.call(put_many_cmd(values, ttl)).await?;
        Ok(v["result"].as_bool().expect("putMany result is a bool"))
    }

    /// `$store->many($keys)`: every key mapped to its value (`Null` when missing).
    pub async fn many(&self, keys: &[&str]) -> BTreeMap<String, PhpValue> {
        let v = self
            .field(json!({"op": "many", "keys": keys}), "values")
            .await;
        v.as_object()
            .unwrap_or_else(|| panic!("many values is not an object: {v}"))
            .iter()
            .map(|(k, b)| (k.clone(), from_b64(b.as_str().expect("base64 text"))))
            .collect()
    }

    /// `$store->increment($key, $by)`: the new value, `None` for Laravel's `false`.
    pub async fn increment(&self, key: &str, by: i64) -> Option<i64> {
        self.counter("increment", key, by).await
    }

    /// `$store->decrement($key, $by)`: the new value, `None` for Laravel's `false`.
    pub async fn decrement(&self, key: &str, by: i64) -> Option<i64> {
        self.counter("decrement", key, by).await
    }

    async fn counter(&self, op: &str, key: &str, by: i64) -> Option<i64> {
        let cmd = json!({"op": op, "key": key, "by": by});
        match self.field(cmd.clone(), "result").await {
            Value::Bool(false) => None,
            Value::Number(n) => Some(
                n.as_i64()
                    .unwrap_or_else(|| panic!("{op} result {n} is not an int")),
            ),
            other => panic!("answer to {cmd}: result is neither false nor an int: {other}"),
        }
    }

    /// `$store->forever($key, $value)`.
    pub async fn forever(&self, key: &str, value: &PhpValue) -> bool {
        let cmd = json!({"op": "forever", "key": key, "v": to_b64(value)});
        self.bool_field(cmd, "result").await
    }

    /// `$store->forget($key)`.
    pub async fn forget(&self, key: &str) -> bool {
        self.bool_field(json!({"op": "forget", "key": key}), "result")
            .await
    }

    /// `$store->lock($name, $ttl, $owner)->acquire()`.
    pub async fn acquire(&self, name: &str, ttl: i64, owner: Option<&str>) -> PhpLock {
        let mut cmd = json!({"op": "lock.acquire", "name": name, "ttl": ttl});
        if let Some(o) = owner {
            cmd["owner"] = json!(o);
        }
        self.lock_answer(cmd).await
    }

    /// `$store->restoreLock($name, $owner)->release()` (Laravel's read-then-delete release).
    pub async fn release(&self, name: &str, owner: &str) -> bool {
        let cmd = json!({"op": "lock.release", "name": name, "owner": owner});
        self.bool_field(cmd, "released").await
    }

    /// `$store->lock($name)->forceRelease()`.
    pub async fn force_release(&self, name: &str) {
        self.ok(json!({"op": "lock.forceRelease", "name": name}))
            .await;
    }

    /// `$store->lock($name, $ttl, $owner)->block($seconds)` (acquired false on Laravel's
    /// `LockTimeoutException`); `sleep_ms` sets `betweenBlockedAttemptsSleepFor` (250 ms default).
    pub async fn block(
        &self,
        name: &str,
        ttl: i64,
        seconds: i64,
        owner: Option<&str>,
        sleep_ms: Option<u64>,
    ) -> PhpLock {
        let mut cmd = json!({"op": "lock.block", "name": name, "ttl": ttl, "seconds": seconds});
        if let Some(o) = owner {
            cmd["owner"] = json!(o);
        }
        if let Some(ms) = sleep_ms {
            cmd["sleep_ms"] = json!(ms);
        }
        self.lock_answer(cmd).await
    }

    async fn lock_answer(&self, cmd: Value) -> PhpLock {
        let v = self.ok(cmd.clone()).await;
        PhpLock {
            acquired: v["acquired"]
                .as_bool()
                .unwrap_or_else(|| panic!("answer to {cmd} has no bool acquired: {v}")),
            owner: v["owner"]
                .as_str()
                .unwrap_or_else(|| panic!("answer to {cmd} has no string owner: {v}"))
                .to_owned(),
        }
    }

    /// The lock's current owner as Laravel reads it (`getCurrentOwner()`, i.e. `$store->get()`):
    /// a string, an int for numeric owners, `Null` when free.
    pub async fn lock_get(&self, name: &str) -> PhpValue {
        let v = self
            .field(json!({"op": "lock.get", "name": name}), "value")
            .await;
        from_b64(v.as_str().expect("value is base64 text"))
    }

    /// `restoreLock($name, $owner)->refresh($ttl)` (Laravel 12.63+; the harness only allows it
    /// for the `laravel12` layout).
    pub async fn refresh(&self, name: &str, owner: &str, ttl: i64) -> bool {
        let cmd = json!({"op": "lock.refresh", "name": name, "owner": owner, "ttl": ttl});
        self.bool_field(cmd, "refreshed").await
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

fn put_cmd(op: &str, key: &str, value: &PhpValue, ttl: i64) -> Value {
    json!({"op": op, "key": key, "v": to_b64(value), "ttl": ttl})
}

fn put_many_cmd(values: &[(&str, PhpValue)], ttl: i64) -> Value {
    let map: serde_json::Map<String, Value> = values
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Value::String(to_b64(v))))
        .collect();
    json!({"op": "putMany", "values": map, "ttl": ttl})
}

impl Drop for PhpHarness {
    fn drop(&mut self) {
        // kill_on_drop does the same; this makes it explicit and immediate.
        let _ = self.child.start_kill();
    }
}

// ---- one test's world --------------------------------------------------------------------------

/// One interop test's world: a fresh table on `server`, a ddblock [`Store`] and a PHP harness on
/// it, both with the same layout and prefix.
#[derive(Debug)]
pub struct Interop {
    /// The server the table lives on.
    pub server: Server,
    /// The key layout of both sides.
    pub layout: KeyLayout,
    /// The configured prefix of both sides.
    pub prefix: String,
    /// A plain SDK client for the server.
    pub client: Client,
    /// The table, created for this test.
    pub table: String,
    /// The Rust side.
    pub store: Store,
    /// The PHP side (an `Arc` so spawned tasks can use it too).
    pub php: Arc<PhpHarness>,
}

impl Interop {
    /// Creates the table and starts the harness.
    pub async fn new(server: Server, layout: KeyLayout, prefix: &str) -> Interop {
        let endpoint = server.endpoint();
        let client = client_for(&endpoint);
        let table = create_table(&client).await;
        let store = store(server, &client, &table, layout, prefix);
        let php = Arc::new(PhpHarness::spawn(&endpoint, &table, layout, prefix));
        Interop {
            server,
            layout,
            prefix: prefix.to_owned(),
            client,
            table,
            store,
            php,
        }
    }

    /// The table key of cache entry `key` (as ddblock computes it).
    pub fn cache_key(&self, key: &str) -> String {
        self.store.cache_key(key).expect("valid key")
    }

    /// The table key of lock `name` (as ddblock computes it).
    pub fn lock_key(&self, name: &str) -> String {
        self.store.lock_key(name).expect("valid lock name")
    }

    /// The raw item under table key `key` (strongly consistent GetItem, plain SDK).
    pub async fn raw(&self, key: &str) -> Option<Item> {
        self.client
            .get_item()
            .table_name(&self.table)
            .key("key", AttributeValue::S(key.to_owned()))
            .consistent_read(true)
            .send()
            .await
            .unwrap_or_else(|e| panic!("GetItem {key}: {e:?}"))
            .item
    }

    /// The raw item under table key `key`, which must exist.
    pub async fn raw_some(&self, key: &str) -> Item {
        self.raw(key)
            .await
            .unwrap_or_else(|| panic!("no item under table key {key:?}"))
    }

    /// Every table key, sorted (a consistent Scan; each test has its own table).
    pub async fn keys(&self) -> Vec<String> {
        let mut keys = Vec::new();
        let mut start = None;
        loop {
            let out = self
                .client
                .scan()
                .table_name(&self.table)
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .unwrap_or_else(|e| panic!("Scan: {e:?}"));
            for item in out.items() {
                match item.get("key") {
                    Some(AttributeValue::S(k)) => keys.push(k.clone()),
                    other => panic!("item without a string key: {other:?}"),
                }
            }
            match out.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => break,
            }
        }
        keys.sort();
        keys
    }

    /// Writes a raw item (plain SDK).
    pub async fn put_raw(&self, item: Item) {
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .unwrap_or_else(|e| panic!("PutItem: {e:?}"));
    }

    /// Ends the test: stops the harness and deletes the table (skipped when a test panics).
    pub async fn finish(self) {
        drop(self.php);
        delete_table(&self.client, &self.table).await;
    }
}
