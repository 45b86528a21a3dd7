//! Node.js binding of ddblock (napi-rs). Holds core objects and converts types and errors; every
//! rule is the core's. Use it through `lib.js` (package `ddblock`), which adds `withLock`; errors
//! reach JavaScript as `DdblockError`s built here ([`error`]).
//!
//! All DynamoDB calls run on napi-rs's one tokio runtime and return Promises ([`error::promise`]:
//! a failure is turned into its JavaScript error on the JavaScript thread).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use ddblock::admin::{ClockReading, CreateTableOptions, DoctorOptions, ScanOptions, TtlState};
use ddblock::config::{Front, Setting, SettingValue, Unit};
use ddblock::format::input::{timeout_from_secs_f64, Amount};
use ddblock::{ErrorKind, Heartbeat, Held, LeaseSignal, PhpKey, PhpValue, StoreConfig, Wait};
use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;
use tokio::sync::watch;

mod error;
mod patterns;
mod runtime;
mod value;

use error::{promise, IntoNapi, OrThrow, Result};
use patterns::{NativeConflictRetry, NativeOnce, NativeVersioned, OnceOptions};
use value::{Cached, Entries, JsPhp, Many, Seconds};

/// How a Node caller creates the table, for `TABLE_NOT_FOUND`'s message.
const CREATE_TABLE_HINT: &str = "`await store.createTable()` (or `ddblock create-table`)";

/// Options of `new Store(...)`: what is not given comes from Laravel's variables
/// (`DYNAMODB_CACHE_TABLE`, `DYNAMODB_ENDPOINT`, `AWS_DEFAULT_REGION`, `CACHE_PREFIX`,
/// `DDBLOCK_LAYOUT`, `DDBLOCK_BACKEND`, `DDBLOCK_S3_BUCKET`), then Laravel's defaults.
/// (The TypeScript type of the options; the constructor reads them through the core's settings
/// table, `StoreConfig::from_settings`.)
#[napi(object)]
#[derive(Default)]
#[allow(dead_code)]
pub struct StoreOptions {
    /// Table name (default `cache`).
    pub table: Option<String>,
    /// Laravel's `cache.prefix`, as configured (default: Laravel's own from `APP_NAME`, see docs/configuration.md).
    pub prefix: Option<String>,
    /// `laravel8` (8–10), `laravel11` or `laravel12` (12+, default).
    pub layout: Option<String>,
    /// Endpoint URL (DynamoDB Local, moto, dynalite, a proxy).
    pub endpoint: Option<String>,
    /// AWS region (default from the AWS environment, else `us-east-1`).
    pub region: Option<String>,
    /// Partition key attribute (default `key`).
    pub key_attribute: Option<String>,
    /// Value attribute (default `value`).
    pub value_attribute: Option<String>,
    /// Expiry attribute (default `expires_at`).
    pub expiration_attribute: Option<String>,
    /// TCP connect timeout in milliseconds.
    pub connect_timeout_ms: Option<f64>,
    /// Timeout of a whole operation including retries, in milliseconds.
    pub operation_timeout_ms: Option<f64>,
    /// Timeout of one attempt (one HTTP request), in milliseconds.
    pub attempt_timeout_ms: Option<f64>,
    /// Attempts per request including the first (default 3).
    pub max_attempts: Option<u32>,
    /// How long past its expiry a lock must be before it is taken over, in ms (default 0: Laravel's own rule).
    pub clock_skew_margin_ms: Option<f64>,
    /// How often `withLock`'s heartbeat refreshes the lock, in ms (default: a third of the ttl).
    pub heartbeat_interval_ms: Option<f64>,
    /// Where locks live: `dynamodb` (the table, default) or `s3` (a bucket, `bucket`; `endpoint`
    /// serves it too). Cache entries, `once` and compare-and-set stay in the table.
    pub backend: Option<String>,
    /// The bucket of the `s3` lock backend.
    pub bucket: Option<String>,
}

/// Milliseconds from JS as a Duration (the core's rule for timeouts).
fn millis(what: &str, ms: f64) -> Result<Duration> {
    timeout_from_secs_f64(what, ms / 1000.0).napi()
}

/// A wait in milliseconds from JS as the core's [`Wait`]: 0 tries once, `Infinity` waits forever.
fn wait_of(ms: f64) -> Result<Wait> {
    Wait::from_secs_f64(ms / 1000.0).napi()
}

/// The options of `new Store(...)` as the core's settings, by their Node names (the core's table
/// says what each holds): a string or a number each; `undefined` and `null` are not given. A value
/// of the wrong JavaScript type is a `TypeError` (napi-rs's `InvalidArg`, which `lib.js` turns
/// into one), an unknown name or a bad value the core's `CONFIG` error.
fn settings(options: Option<JsPhp>) -> Result<Vec<(String, SettingValue)>> {
    let entries = match options.map(|o| o.0) {
        None | Some(PhpValue::Null) => return Ok(Vec::new()),
        Some(PhpValue::Array(entries)) => entries,
        Some(_) => return Err(invalid_arg("the options of new Store() must be an object")),
    };
    let mut given = Vec::with_capacity(entries.len());
    for (k, v) in entries {
        let name = match k {
            PhpKey::Str(b) => String::from_utf8_lossy(&b).into_owned(),
            PhpKey::Int(i) => i.to_string(),
        };
        let wants_text = Setting::find(Front::Node, &name)
            .map(|s| matches!(s.unit, Unit::Text | Unit::Choice(_)))
            .unwrap_or(true);
        let value = match (v, wants_text) {
            (PhpValue::Null, _) => continue,
            (PhpValue::String(b), true) => SettingValue::Text(String::from_utf8_lossy(&b).into()),
            (PhpValue::Int(i), false) => SettingValue::Number(i as f64),
            (PhpValue::Float(f), false) => SettingValue::Number(f),
            (_, text) => {
                let want = if text { "a string" } else { "a number" };
                return Err(invalid_arg(&format!("options.{name} must be {want}")));
            }
        };
        given.push((name, value));
    }
    Ok(given)
}

fn invalid_arg(message: &str) -> error::Failure {
    napi::Error::new(napi::Status::InvalidArg, message.to_owned()).into()
}

fn config(options: Option<JsPhp>) -> Result<StoreConfig> {
    let given = settings(options)?;
    Ok(
        StoreConfig::from_settings(Front::Node, given, |k| std::env::var(k).ok())?
            .create_table_hint(CREATE_TABLE_HINT)
            .build()?,
    )
}

/// Every error code, in the core's order (`ErrorKind::ALL`): what `lib.js` exports as `CODES`.
#[napi]
pub fn error_codes() -> Vec<String> {
    ErrorKind::ALL.iter().map(|k| error::code_of(*k)).collect()
}

/// A Laravel cache table (`Illuminate\Cache\DynamoDbStore`'s items). Cheap to share.
#[napi(js_name = "NativeStore")]
pub struct Store {
    inner: ddblock::Store,
}

#[napi]
impl Store {
    /// A store over `options` (CONFIG error when invalid). Connects on the first call.
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "options?: StoreOptions | undefined | null"
    )]
    pub fn new(env: &Env, options: Option<JsPhp>) -> napi::Result<Self> {
        Ok(Store {
            inner: ddblock::Store::new(config(options).or_throw(env)?),
        })
    }

    /// The table name.
    #[napi(getter)]
    pub fn table(&self) -> String {
        self.inner.config().table().to_owned()
    }

    /// The prefix as configured.
    #[napi(getter)]
    pub fn prefix(&self) -> String {
        self.inner.config().prefix().to_owned()
    }

    /// The key layout (`laravel8`, `laravel11`, `laravel12`).
    #[napi(getter)]
    pub fn layout(&self) -> String {
        self.inner.config().layout().as_str().to_owned()
    }

    /// The endpoint URL, if one is set.
    #[napi(getter)]
    pub fn endpoint(&self) -> Option<String> {
        self.inner.config().endpoint().map(str::to_owned)
    }

    /// A lock handle (no request yet). `ttl` in seconds (0 = 86400, as Laravel); `owner`
    /// defaults to a fresh random token. An invalid name, ttl or owner throws here.
    #[napi(
        catch_unwind,
        ts_args_type = "name: string, ttl?: number | undefined | null, owner?: string | undefined | null"
    )]
    pub fn lock(
        &self,
        env: &Env,
        name: String,
        ttl: Option<Seconds>,
        owner: Option<String>,
    ) -> napi::Result<Lock> {
        let ttl = ttl.map_or(0, |t| t.0);
        Ok(Lock {
            inner: self.inner.make_lock(&name, ttl, owner).or_throw(env)?,
        })
    }

    /// The once-only guard of `eventId` (a cache key); sends nothing. Bad ids or ttls throw here.
    #[napi(catch_unwind)]
    pub fn once(
        &self,
        env: &Env,
        event_id: String,
        options: OnceOptions,
    ) -> napi::Result<NativeOnce> {
        patterns::once(&self.inner, &event_id, options).or_throw(env)
    }

    /// `key`'s value and version: one strongly consistent GetItem.
    #[napi(ts_return_type = "Promise<NativeVersioned>")]
    pub fn get_versioned<'env>(
        &self,
        env: &'env Env,
        key: String,
    ) -> napi::Result<PromiseRaw<'env, NativeVersioned>> {
        promise(env, patterns::get_versioned(self.inner.clone(), key))
    }

    /// Stores `value` for `ttl` only if the entry is at `version`; the written value and
    /// version, or `null` on a conflict.
    #[napi(
        ts_args_type = "key: string, value: unknown, ttl: number, version: number",
        ts_return_type = "Promise<NativeVersioned | null>"
    )]
    pub fn put_if_version<'env>(
        &self,
        env: &'env Env,
        key: String,
        value: JsPhp,
        ttl: Seconds,
        version: f64,
    ) -> napi::Result<PromiseRaw<'env, Option<NativeVersioned>>> {
        let put = patterns::put_if_version(self.inner.clone(), key, value, ttl, version);
        promise(env, put)
    }

    /// Stores `value` only if the entry is as `seen` read it (version and value).
    #[napi(
        ts_args_type = "key: string, value: unknown, ttl: number, seen: NativeVersioned",
        ts_return_type = "Promise<NativeVersioned | null>"
    )]
    pub fn put_if_unchanged<'env>(
        &self,
        env: &'env Env,
        key: String,
        value: JsPhp,
        ttl: Seconds,
        seen: &NativeVersioned,
    ) -> napi::Result<PromiseRaw<'env, Option<NativeVersioned>>> {
        let put = patterns::put_if_unchanged(self.inner.clone(), key, value, ttl, seen);
        promise(env, put)
    }

    /// The core's bounded retry of an `update` loop on `key` (default 10 attempts).
    #[napi(catch_unwind)]
    pub fn conflict_retry(
        &self,
        env: &Env,
        key: String,
        attempts: Option<u32>,
    ) -> napi::Result<NativeConflictRetry> {
        patterns::conflict_retry(&self.inner, &key, attempts).or_throw(env)
    }

    /// The value of `key`, or `undefined` when missing or expired.
    #[napi(ts_return_type = "Promise<unknown>")]
    pub fn get<'env>(&self, env: &'env Env, key: String) -> napi::Result<PromiseRaw<'env, Cached>> {
        let store = self.inner.clone();
        promise(env, async move { Ok(Cached(store.get(&key).await?)) })
    }

    /// Values of `keys` (an object in the order asked; missing → `undefined`; an item that is
    /// not a Laravel value → a `DdblockError` with code CODEC).
    #[napi(ts_return_type = "Promise<Record<string, unknown>>")]
    pub fn many<'env>(
        &self,
        env: &'env Env,
        keys: Vec<String>,
    ) -> napi::Result<PromiseRaw<'env, Many>> {
        let store = self.inner.clone();
        promise(env, async move {
            let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
            Ok(Many(store.many(&refs).await?))
        })
    }

    /// Stores `value` for `ttl` seconds.
    #[napi(
        ts_args_type = "key: string, value: unknown, ttl: number",
        ts_return_type = "Promise<void>"
    )]
    pub fn put<'env>(
        &self,
        env: &'env Env,
        key: String,
        value: JsPhp,
        ttl: Seconds,
    ) -> napi::Result<PromiseRaw<'env, ()>> {
        let store = self.inner.clone();
        promise(
            env,
            async move { Ok(store.put(&key, &value.0, ttl.0).await?) },
        )
    }

    /// Stores many values with one expiry.
    #[napi(
        ts_args_type = "values: Record<string, unknown>, ttl: number",
        ts_return_type = "Promise<void>"
    )]
    pub fn put_many<'env>(
        &self,
        env: &'env Env,
        values: Entries,
        ttl: Seconds,
    ) -> napi::Result<PromiseRaw<'env, ()>> {
        let store = self.inner.clone();
        promise(env, async move {
            let pairs: Vec<(&str, ddblock::PhpValue)> = values
                .0
                .iter()
                .map(|(k, v)| (k.as_str(), v.clone()))
                .collect();
            Ok(store.put_many(&pairs, ttl.0).await?)
        })
    }

    /// Stores `value` only if `key` is missing or expired; true when stored.
    #[napi(
        ts_args_type = "key: string, value: unknown, ttl: number",
        ts_return_type = "Promise<boolean>"
    )]
    pub fn add<'env>(
        &self,
        env: &'env Env,
        key: String,
        value: JsPhp,
        ttl: Seconds,
    ) -> napi::Result<PromiseRaw<'env, bool>> {
        let store = self.inner.clone();
        promise(
            env,
            async move { Ok(store.add(&key, &value.0, ttl.0).await?) },
        )
    }

    /// Adds `by` (default 1; fractions too, as Laravel) to a live numeric entry; the new value
    /// cast to int as Laravel does, or `null` when missing.
    #[napi(ts_return_type = "Promise<number | bigint | null>")]
    pub fn increment<'env>(
        &self,
        env: &'env Env,
        key: String,
        by: Option<f64>,
    ) -> napi::Result<PromiseRaw<'env, JsPhp>> {
        let store = self.inner.clone();
        promise(env, async move {
            let by = Amount::from_f64(by.unwrap_or(1.0))?;
            Ok(JsPhp(store.increment(&key, by).await?.into()))
        })
    }

    /// Subtracts `by` (default 1) from a live numeric entry; the new value, or `null` when missing.
    #[napi(ts_return_type = "Promise<number | bigint | null>")]
    pub fn decrement<'env>(
        &self,
        env: &'env Env,
        key: String,
        by: Option<f64>,
    ) -> napi::Result<PromiseRaw<'env, JsPhp>> {
        let store = self.inner.clone();
        promise(env, async move {
            let by = Amount::from_f64(by.unwrap_or(1.0))?;
            Ok(JsPhp(store.decrement(&key, by).await?.into()))
        })
    }

    /// Stores `value` for 5 years (Laravel's `forever`).
    #[napi(
        ts_args_type = "key: string, value: unknown",
        ts_return_type = "Promise<void>"
    )]
    pub fn forever<'env>(
        &self,
        env: &'env Env,
        key: String,
        value: JsPhp,
    ) -> napi::Result<PromiseRaw<'env, ()>> {
        let store = self.inner.clone();
        promise(env, async move { Ok(store.forever(&key, &value.0).await?) })
    }

    /// Deletes `key`.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn forget<'env>(&self, env: &'env Env, key: String) -> napi::Result<PromiseRaw<'env, ()>> {
        let store = self.inner.clone();
        promise(env, async move { Ok(store.forget(&key).await?) })
    }

    /// Sets a live entry's expiry to now + `ttl`; false when missing or expired.
    #[napi(
        ts_args_type = "key: string, ttl: number",
        ts_return_type = "Promise<boolean>"
    )]
    pub fn touch<'env>(
        &self,
        env: &'env Env,
        key: String,
        ttl: Seconds,
    ) -> napi::Result<PromiseRaw<'env, bool>> {
        let store = self.inner.clone();
        promise(env, async move { Ok(store.touch(&key, ttl.0).await?) })
    }

    /// Always rejects with `UNSUPPORTED` (a DynamoDB table cannot be flushed, as in Laravel).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn flush<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let store = self.inner.clone();
        promise(env, async move { Ok(store.flush().await?) })
    }

    /// Creates the table Laravel's cache store needs (idempotent), waits up to `waitMs`
    /// (default 120 000) for ACTIVE and enables TTL unless `ttl` is false.
    #[napi(strict, ts_return_type = "Promise<TableReport>")]
    pub fn create_table<'env>(
        &self,
        env: &'env Env,
        options: Option<CreateTableInput>,
    ) -> napi::Result<PromiseRaw<'env, TableReport>> {
        let store = self.inner.clone();
        promise(env, create_table(store, options.unwrap_or_default()))
    }

    /// Checks the table (exists, key schema, TTL) and, unless `scan` is false, its items.
    #[napi(strict, ts_return_type = "Promise<DoctorReport>")]
    pub fn doctor<'env>(
        &self,
        env: &'env Env,
        options: Option<DoctorInput>,
    ) -> napi::Result<PromiseRaw<'env, DoctorReport>> {
        let scan = options.and_then(|o| o.scan).unwrap_or(true);
        promise(env, doctor(self.inner.clone(), scan))
    }
}

/// `Store.createTable`.
async fn create_table(store: ddblock::Store, o: CreateTableInput) -> Result<TableReport> {
    let mut opts = CreateTableOptions::new().ttl(o.ttl.unwrap_or(true));
    if let Some(ms) = o.wait_ms {
        opts = opts.wait(millis("waitMs", ms)?);
    }
    let r = store.create_table(&opts).await?;
    Ok(TableReport {
        created: r.created,
        ready: r.ready(),
        status: r.status.clone(),
        key_schema_problem: r.key_schema_problem.clone(),
        ttl: r.ttl.as_ref().map(ttl_state),
        ttl_changed: r.ttl_changed,
    })
}

/// `Store.doctor`.
async fn doctor(store: ddblock::Store, scan: bool) -> Result<DoctorReport> {
    let opts = DoctorOptions::new().scan(scan.then(ScanOptions::new));
    let r = store.doctor(&opts, |_| {}).await?;
    Ok(DoctorReport {
        healthy: r.healthy(),
        checks: r
            .checks
            .iter()
            .map(|c| Check {
                id: c.id.as_str().to_owned(),
                status: c.status.as_str().to_owned(),
                detail: c.detail.clone(),
            })
            .collect(),
        table_status: r.table_status.clone(),
        ttl: r.ttl.as_ref().map(ttl_state),
        clock: r.clock.map(|reading| {
            let measured = match reading {
                ClockReading::Measured(o) => Some(o),
                ClockReading::NoDate | ClockReading::Inconsistent => None,
            };
            ClockCheck {
                allowed: r.clock_allowed,
                offset: measured.map(|o| o.estimate()),
                low: measured.map(|o| o.low),
                high: measured.map(|o| o.high),
                answers: measured.map(|o| o.samples),
                unmeasured: reading.unmeasured().map(str::to_owned),
            }
        }),
    })
}

/// Options of `createTable`.
#[napi(object)]
#[derive(Default)]
pub struct CreateTableInput {
    /// Enable TTL on the expiry attribute (default true).
    pub ttl: Option<bool>,
    /// How long to wait for the table to become ACTIVE (default 120 000).
    pub wait_ms: Option<f64>,
}

/// Options of `doctor`.
#[napi(object)]
pub struct DoctorInput {
    /// Scan the items too (default true).
    pub scan: Option<bool>,
}

/// The table's TTL setting.
#[napi(object)]
pub struct Ttl {
    /// `enabled`, `enabling`, `disabling`, `disabled` or `unknown`.
    pub state: String,
    /// The TTL attribute, when there is one.
    pub attribute: Option<String>,
}

fn ttl_state(t: &TtlState) -> Ttl {
    Ttl {
        state: t.as_str().to_owned(),
        attribute: t.attribute().map(str::to_owned),
    }
}

/// What `createTable` did.
#[napi(object)]
pub struct TableReport {
    /// This call created the table.
    pub created: bool,
    /// ACTIVE with the right key schema.
    pub ready: bool,
    /// The table status.
    pub status: String,
    /// Why the key schema does not fit, for an existing table.
    pub key_schema_problem: Option<String>,
    /// The TTL setting afterwards.
    pub ttl: Option<Ttl>,
    /// This call enabled TTL.
    pub ttl_changed: bool,
}

/// One doctor check.
#[napi(object)]
pub struct Check {
    /// `table`, `key_schema`, `ttl`, `expired_items`, `default_ttl_locks`, `invalid_items`, `layout`.
    pub id: String,
    /// `ok`, `warn`, `fail`, `unknown`, `skipped`.
    pub status: String,
    /// What was found.
    pub detail: String,
}

/// What `doctor` found.
#[napi(object)]
pub struct DoctorReport {
    /// No check failed.
    pub healthy: bool,
    /// Every check.
    pub checks: Vec<Check>,
    /// The table status, absent when it does not exist.
    pub table_status: Option<String>,
    /// The TTL setting, absent when the table does not exist.
    pub ttl: Option<Ttl>,
    /// This host's clock offset to DynamoDB's, from the `Date` headers of its answers.
    pub clock: Option<ClockCheck>,
}

/// This host's clock minus DynamoDB's, in seconds: an interval, since `Date` has whole seconds.
#[napi(object)]
pub struct ClockCheck {
    /// The middle of the interval.
    pub offset: Option<f64>,
    /// The smallest offset the answers allow.
    pub low: Option<f64>,
    /// The largest offset the answers allow.
    pub high: Option<f64>,
    /// How many answers were intersected.
    pub answers: Option<u32>,
    /// Why there is no measurement (`no Date header`, `the answers disagree`).
    pub unmeasured: Option<String>,
    /// The offset the clock-skew margin allows: (margin + 1) / 2 seconds.
    pub allowed: f64,
}

/// Who holds a lock.
#[napi(object)]
pub struct Holder {
    /// The owner token (absent when the stored value is not a lock owner).
    pub owner: Option<String>,
    /// Unix time (seconds) the lock expires at; absent for an item without expiry.
    pub expires_at: Option<i64>,
    /// The fencing token of the holder's acquisition (absent for a lock Laravel wrote).
    pub fence: Option<i64>,
}

/// A named lock with an owner token; every method is one request (or a wait loop).
#[napi(js_name = "NativeLock")]
pub struct Lock {
    inner: ddblock::Lock,
}

#[napi]
impl Lock {
    /// The lock name as given.
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.inner.name().to_owned()
    }

    /// The owner token (share it to release from elsewhere with `restoreLock`).
    #[napi(getter)]
    pub fn owner(&self) -> String {
        self.inner.owner().to_owned()
    }

    /// The ttl in seconds (0 was turned into 86400).
    #[napi(getter)]
    pub fn ttl(&self) -> i64 {
        self.inner.ttl_secs()
    }

    /// The fencing token of this handle's acquisition (`null` when it holds none).
    #[napi(getter)]
    pub fn fence(&self) -> Option<i64> {
        self.inner.fence().and_then(|f| i64::try_from(f).ok())
    }

    /// Milliseconds this handle's lease still lasts by the local monotonic clock (`null`: none).
    #[napi]
    pub fn remaining_ms(&self) -> Option<f64> {
        self.inner.remaining().map(|d| d.as_secs_f64() * 1000.0)
    }

    /// Starts refreshing the held lock in the background (the core's heartbeat).
    #[napi]
    pub async fn heartbeat(&self) -> napi::Result<NativeHeartbeat> {
        let hb = self.inner.heartbeat();
        Ok(NativeHeartbeat {
            signal: hb.signal(),
            inner: tokio::sync::Mutex::new(Some(hb)),
        })
    }

    /// Takes the lock: one attempt without `waitMs` (or with 0); with it, watches and tries
    /// again for up to `waitMs` (`Infinity`: no limit). True when the lock is ours, false when
    /// someone else still holds it. When `cancel` is cancelled first, the acquire in flight is
    /// dropped (the core deletes its write if it landed) and the promise rejects with `ABORTED`.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        wait_ms: Option<f64>,
        cancel: Option<&NativeCancel>,
    ) -> napi::Result<PromiseRaw<'env, bool>> {
        let wait = wait_of(wait_ms.unwrap_or(0.0)).or_throw(env)?;
        let lock = self.inner.clone();
        let cancel = cancel.map(NativeCancel::subscribe);
        promise(env, async move {
            let name = lock.name().to_owned();
            let acquire = async move { lock.acquire_within(wait).await.napi() };
            Ok(cancellable(&name, cancel, acquire).await?.is_acquired())
        })
    }

    /// Waits up to `timeoutMs` (0: one attempt; `Infinity`: no limit); resolves to the expiry
    /// (Unix seconds) or rejects with `LOCK_TIMEOUT` (Laravel's `block`), or with `ABORTED` when
    /// `cancel` is cancelled first (as `acquire`).
    #[napi(ts_return_type = "Promise<number>")]
    pub fn block<'env>(
        &self,
        env: &'env Env,
        timeout_ms: f64,
        cancel: Option<&NativeCancel>,
    ) -> napi::Result<PromiseRaw<'env, i64>> {
        let wait = wait_of(timeout_ms).or_throw(env)?;
        let lock = self.inner.clone();
        let cancel = cancel.map(NativeCancel::subscribe);
        promise(env, async move {
            let name = lock.name().to_owned();
            let block = async move { lock.block(wait).await.napi() };
            cancellable(&name, cancel, block).await
        })
    }

    /// Takes the lock as `block` does and starts its heartbeat: the start of `withLock` (the
    /// core's `Held`).
    #[napi(ts_return_type = "Promise<NativeHeld>")]
    pub fn enter<'env>(
        &self,
        env: &'env Env,
        timeout_ms: f64,
        cancel: Option<&NativeCancel>,
    ) -> napi::Result<PromiseRaw<'env, NativeHeld>> {
        let wait = wait_of(timeout_ms).or_throw(env)?;
        let lock = self.inner.clone();
        let cancel = cancel.map(NativeCancel::subscribe);
        promise(env, async move {
            let name = lock.name().to_owned();
            let enter = async move { lock.enter(wait).await.napi() };
            let held = cancellable(&name, cancel, enter).await?;
            Ok(NativeHeld {
                signal: held.lease().signal().clone(),
                inner: Arc::new(tokio::sync::Mutex::new(Some(held))),
            })
        })
    }

    /// ONE DeleteItem conditioned on our owner: true when this call deleted our lock.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn release<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, bool>> {
        let lock = self.inner.clone();
        promise(env, async move { Ok(lock.release().await?.is_released()) })
    }

    /// Deletes the lock whoever holds it.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn force_release<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let lock = self.inner.clone();
        promise(env, async move { Ok(lock.force_release().await?) })
    }

    /// Extends our live lock to now + `ttl` (the lock's ttl by default); false when not ours.
    #[napi(ts_args_type = "ttl?: number", ts_return_type = "Promise<boolean>")]
    pub fn refresh<'env>(
        &self,
        env: &'env Env,
        ttl: Option<Seconds>,
    ) -> napi::Result<PromiseRaw<'env, bool>> {
        let lock = self.inner.clone();
        promise(
            env,
            async move { Ok(lock.refresh(ttl.map(|t| t.0)).await?) },
        )
    }

    /// Whether anyone holds the lock now (consistent read).
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn is_locked<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, bool>> {
        let lock = self.inner.clone();
        promise(env, async move { Ok(lock.is_locked().await?) })
    }

    /// Whether this owner holds the lock now (consistent read).
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn is_owned<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, bool>> {
        let lock = self.inner.clone();
        promise(env, async move { Ok(lock.is_owned().await?) })
    }

    /// Who holds the lock now (consistent read), or `null` when free or expired.
    #[napi(ts_return_type = "Promise<Holder | null>")]
    pub fn holder<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, Option<Holder>>> {
        let lock = self.inner.clone();
        promise(env, async move {
            let h = lock.current_holder().await?;
            Ok(h.map(|h| Holder {
                owner: h.owner,
                expires_at: h.expires_at,
                fence: h.fence.and_then(|f| i64::try_from(f).ok()),
            }))
        })
    }
}

/// A running heartbeat: refreshes the lock until stopped.
#[napi]
pub struct NativeHeartbeat {
    inner: tokio::sync::Mutex<Option<Heartbeat>>,
    signal: LeaseSignal,
}

#[napi]
impl NativeHeartbeat {
    /// Resolves with the reason when the lease is lost, or `null` once stopped without a loss.
    #[napi]
    pub async fn lost(&self) -> Option<String> {
        self.signal.ended().await
    }

    /// Stops refreshing; resolves with the reason the lease was lost, or `null`.
    #[napi]
    pub async fn stop(&self) -> Option<String> {
        let hb = self.inner.lock().await.take();
        match hb {
            Some(hb) => hb.stop().await,
            None => self.signal.reason(),
        }
    }
}

/// A lock entered by `withLock` (the core's `Held`): its heartbeat runs until `finish`.
#[napi]
pub struct NativeHeld {
    inner: Arc<tokio::sync::Mutex<Option<Held>>>,
    signal: LeaseSignal,
}

#[napi]
impl NativeHeld {
    /// Rejects with `LEASE_LOST` when the lease is lost during the body; resolves once the
    /// lease ended kept.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn lost<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let signal = self.signal.clone();
        promise(env, async move {
            signal.ended().await;
            Ok(signal.check()?)
        })
    }

    /// Ends the lease by the core's one rule: stops the heartbeat and releases; rejects with
    /// `LEASE_LOST`, or the release's error (again: nothing more).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn finish<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let inner = self.inner.clone();
        promise(env, async move {
            let held = inner.lock().await.take();
            match held {
                Some(held) => Ok(held.finish().await?),
                None => Ok(()),
            }
        })
    }
}

/// A cancellation handle for `acquire` and `block`: `lib.js` cancels it when the caller's
/// `AbortSignal` aborts.
#[napi]
pub struct NativeCancel {
    cancelled: watch::Sender<bool>,
}

#[napi]
impl NativeCancel {
    /// A handle not cancelled yet.
    #[napi(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        NativeCancel {
            cancelled: watch::channel(false).0,
        }
    }

    /// Cancels the operations given this handle (those in flight and those started later).
    #[napi]
    pub fn cancel(&self) {
        self.cancelled.send_replace(true);
    }
}

impl NativeCancel {
    fn subscribe(&self) -> watch::Receiver<bool> {
        self.cancelled.subscribe()
    }
}

/// Runs `op` until it ends or `cancel` is cancelled; then `op` is dropped, which is the core's
/// cancellation (an acquire in flight deletes its write in the background if it landed), and the
/// result is an `ABORTED` error.
async fn cancellable<T>(
    name: &str,
    cancel: Option<watch::Receiver<bool>>,
    op: impl Future<Output = Result<T>>,
) -> Result<T> {
    let Some(mut cancel) = cancel else {
        return op.await;
    };
    let cancelled = async move {
        if cancel.wait_for(|c| *c).await.is_err() {
            // The handle was dropped without a cancel: never cancelled.
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        biased;
        () = cancelled => Err(error::aborted(name)),
        r = op => r,
    }
}
