//! Node.js binding of ddblock (napi-rs). Converts types and errors; every protocol decision is
//! the core's. Use it through `lib.js` (package `ddblock`), which adds `withLock` and turns the
//! tagged messages of [`error`] into `DdblockError`s with a `code`.
//!
//! All DynamoDB calls run on napi-rs's one tokio runtime and return Promises.

use std::sync::Arc;
use std::time::Duration;

use ddblock::{ErrorKind, KeyLayout, StoreConfig};
use napi::bindgen_prelude::Result;
use napi_derive::napi;
use tokio::sync::OnceCell;

mod error;
mod value;

use error::{binding_error, IntoNapi};
use value::{Cached, Entries, JsPhp, Many};

/// Options of `new Store(...)`; every field is optional (Laravel's defaults).
#[napi(object)]
#[derive(Default)]
pub struct StoreOptions {
    /// Table name (default `cache`).
    pub table: Option<String>,
    /// Laravel's `cache.prefix`, as configured (default empty).
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
    pub connect_timeout_ms: Option<u32>,
    /// Timeout of a whole operation including retries, in milliseconds.
    pub operation_timeout_ms: Option<u32>,
    /// Attempts per request including the first (default 3).
    pub max_attempts: Option<u32>,
}

fn apply(mut b: ddblock::StoreConfigBuilder, o: StoreOptions) -> Result<StoreConfig> {
    if let Some(v) = o.table {
        b = b.table(v);
    }
    if let Some(v) = o.prefix {
        b = b.prefix(v);
    }
    if let Some(v) = o.layout {
        b = b.layout(v.parse::<KeyLayout>().napi()?);
    }
    if let Some(v) = o.endpoint {
        b = b.endpoint(v);
    }
    if let Some(v) = o.region {
        b = b.region(v);
    }
    if let Some(v) = o.key_attribute {
        b = b.key_attribute(v);
    }
    if let Some(v) = o.value_attribute {
        b = b.value_attribute(v);
    }
    if let Some(v) = o.expiration_attribute {
        b = b.expiration_attribute(v);
    }
    if let Some(v) = o.connect_timeout_ms {
        b = b.connect_timeout(Duration::from_millis(v.into()));
    }
    if let Some(v) = o.operation_timeout_ms {
        b = b.operation_timeout(Duration::from_millis(v.into()));
    }
    if let Some(v) = o.max_attempts {
        b = b.max_attempts(v);
    }
    b.build().napi()
}

/// The configuration plus the core store, connected on first use (building the AWS client is
/// async, a JS constructor is not).
struct Shared {
    cfg: StoreConfig,
    store: OnceCell<ddblock::Store>,
}

impl Shared {
    async fn store(&self) -> Result<&ddblock::Store> {
        self.store
            .get_or_try_init(|| ddblock::Store::connect(self.cfg.clone()))
            .await
            .map_err(error::to_napi)
    }
}

/// Whole seconds from a JS number (ttl), refusing NaN, fractions and out-of-range values.
fn secs(ttl: f64) -> Result<i64> {
    if !ttl.is_finite() || ttl.fract() != 0.0 || ttl.abs() > 1e15 {
        return Err(binding_error(
            ErrorKind::InvalidTtl,
            format!("invalid ttl {ttl}: use whole seconds"),
        ));
    }
    Ok(ttl as i64)
}

/// A Laravel cache table (`Illuminate\Cache\DynamoDbStore`'s items). Cheap to share.
#[napi(js_name = "NativeStore")]
pub struct Store {
    shared: Arc<Shared>,
}

#[napi]
impl Store {
    /// A store over `options` (CONFIG error when invalid). Connects on the first call.
    #[napi(constructor, catch_unwind)]
    pub fn new(options: Option<StoreOptions>) -> Result<Self> {
        let cfg = apply(StoreConfig::builder(), options.unwrap_or_default())?;
        Ok(Self::from_cfg(cfg))
    }

    /// A store from Laravel's variables (`DYNAMODB_CACHE_TABLE`, `DYNAMODB_ENDPOINT`,
    /// `AWS_DEFAULT_REGION`, `CACHE_PREFIX`, `DDBLOCK_LAYOUT`), then `overrides`.
    #[napi(factory, catch_unwind)]
    pub fn from_env(overrides: Option<StoreOptions>) -> Result<Self> {
        let b = StoreConfig::from_env().napi()?;
        Ok(Self::from_cfg(apply(b, overrides.unwrap_or_default())?))
    }

    fn from_cfg(cfg: StoreConfig) -> Self {
        Store {
            shared: Arc::new(Shared {
                cfg,
                store: OnceCell::new(),
            }),
        }
    }

    /// The table name.
    #[napi(getter)]
    pub fn table(&self) -> String {
        self.shared.cfg.table().to_owned()
    }

    /// The prefix as configured.
    #[napi(getter)]
    pub fn prefix(&self) -> String {
        self.shared.cfg.prefix().to_owned()
    }

    /// The key layout (`laravel8`, `laravel11`, `laravel12`).
    #[napi(getter)]
    pub fn layout(&self) -> String {
        self.shared.cfg.layout().as_str().to_owned()
    }

    /// A lock handle (no request yet). `ttl` in seconds (0 = 86400, as Laravel); `owner`
    /// defaults to a fresh random token. An invalid name or ttl throws here.
    #[napi(catch_unwind)]
    pub fn lock(&self, name: String, ttl: Option<f64>, owner: Option<String>) -> Result<Lock> {
        let ttl = secs(ttl.unwrap_or(0.0))?;
        self.shared.cfg.lock_key(&name).napi()?;
        ddblock::lock::lock_ttl(ttl).napi()?;
        let owner = owner.unwrap_or_else(ddblock::lock::random_owner);
        Ok(Lock::new(self.shared.clone(), name, ttl, owner))
    }

    /// A handle on a lock someone holds as `owner` (Laravel's `restoreLock`).
    #[napi(catch_unwind)]
    pub fn restore_lock(&self, name: String, owner: String) -> Result<Lock> {
        self.shared.cfg.lock_key(&name).napi()?;
        Ok(Lock::new(self.shared.clone(), name, 0, owner))
    }

    /// The value of `key`, or `undefined` when missing or expired.
    #[napi(ts_return_type = "Promise<unknown>")]
    pub async fn get(&self, key: String) -> Result<Cached> {
        let s = self.shared.clone();
        Ok(Cached(s.store().await?.get(&key).await.napi()?))
    }

    /// Values of `keys` (an object in the order asked; missing → `undefined`).
    #[napi(ts_return_type = "Promise<Record<string, unknown>>")]
    pub async fn many(&self, keys: Vec<String>) -> Result<Many> {
        let s = self.shared.clone();
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        Ok(Many(s.store().await?.many(&refs).await.napi()?))
    }

    /// Stores `value` for `ttl` seconds.
    #[napi(ts_args_type = "key: string, value: unknown, ttl: number")]
    pub async fn put(&self, key: String, value: JsPhp, ttl: f64) -> Result<()> {
        let s = self.shared.clone();
        s.store()
            .await?
            .put(&key, &value.0, secs(ttl)?)
            .await
            .napi()
    }

    /// Stores many values with one expiry.
    #[napi(ts_args_type = "values: Record<string, unknown>, ttl: number")]
    pub async fn put_many(&self, values: Entries, ttl: f64) -> Result<()> {
        let s = self.shared.clone();
        let pairs: Vec<(&str, ddblock::PhpValue)> = values
            .0
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        s.store().await?.put_many(&pairs, secs(ttl)?).await.napi()
    }

    /// Stores `value` only if `key` is missing or expired; true when stored.
    #[napi(ts_args_type = "key: string, value: unknown, ttl: number")]
    pub async fn add(&self, key: String, value: JsPhp, ttl: f64) -> Result<bool> {
        let s = self.shared.clone();
        s.store()
            .await?
            .add(&key, &value.0, secs(ttl)?)
            .await
            .napi()
    }

    /// Adds `by` (default 1) to a live numeric entry; the new value, or `null` when missing.
    #[napi(ts_return_type = "Promise<number | bigint | null>")]
    pub async fn increment(&self, key: String, by: Option<f64>) -> Result<JsPhp> {
        let s = self.shared.clone();
        let r = s
            .store()
            .await?
            .increment(&key, secs(by.unwrap_or(1.0))?)
            .await;
        Ok(JsPhp(r.napi()?.into()))
    }

    /// Subtracts `by` (default 1) from a live numeric entry; the new value, or `null` when missing.
    #[napi(ts_return_type = "Promise<number | bigint | null>")]
    pub async fn decrement(&self, key: String, by: Option<f64>) -> Result<JsPhp> {
        let s = self.shared.clone();
        let r = s
            .store()
            .await?
            .decrement(&key, secs(by.unwrap_or(1.0))?)
            .await;
        Ok(JsPhp(r.napi()?.into()))
    }

    /// Stores `value` for 5 years (Laravel's `forever`).
    #[napi(ts_args_type = "key: string, value: unknown")]
    pub async fn forever(&self, key: String, value: JsPhp) -> Result<()> {
        let s = self.shared.clone();
        s.store().await?.forever(&key, &value.0).await.napi()
    }

    /// Deletes `key`.
    #[napi]
    pub async fn forget(&self, key: String) -> Result<()> {
        let s = self.shared.clone();
        s.store().await?.forget(&key).await.napi()
    }

    /// Sets a live entry's expiry to now + `ttl`; false when missing or expired.
    #[napi]
    pub async fn touch(&self, key: String, ttl: f64) -> Result<bool> {
        let s = self.shared.clone();
        s.store().await?.touch(&key, secs(ttl)?).await.napi()
    }

    /// Always rejects with `UNSUPPORTED` (a DynamoDB table cannot be flushed, as in Laravel).
    #[napi]
    pub async fn flush(&self) -> Result<()> {
        let s = self.shared.clone();
        s.store().await?.flush().await.napi()
    }
}

/// Who holds a lock.
#[napi(object)]
pub struct Holder {
    /// The owner token (absent when the stored value is not a lock owner).
    pub owner: Option<String>,
    /// Unix time (seconds) the lock expires at; absent for an item without expiry.
    pub expires_at: Option<i64>,
}

/// A named lock with an owner token; every method is one request (or a wait loop for `block`).
#[napi(js_name = "NativeLock")]
pub struct Lock {
    shared: Arc<Shared>,
    name: String,
    ttl: i64,
    owner: String,
    lock: Arc<OnceCell<ddblock::Lock>>,
}

impl Lock {
    fn new(shared: Arc<Shared>, name: String, ttl: i64, owner: String) -> Self {
        Lock {
            shared,
            name,
            ttl,
            owner,
            lock: Arc::new(OnceCell::new()),
        }
    }

    fn parts(
        &self,
    ) -> (
        Arc<Shared>,
        Arc<OnceCell<ddblock::Lock>>,
        String,
        i64,
        String,
    ) {
        (
            self.shared.clone(),
            self.lock.clone(),
            self.name.clone(),
            self.ttl,
            self.owner.clone(),
        )
    }
}

async fn core_lock(
    parts: &(
        Arc<Shared>,
        Arc<OnceCell<ddblock::Lock>>,
        String,
        i64,
        String,
    ),
) -> Result<&ddblock::Lock> {
    let (shared, cell, name, ttl, owner) = parts;
    cell.get_or_try_init(|| async {
        let store = shared.store().await?;
        store.lock_with_owner(name, *ttl, owner.clone()).napi()
    })
    .await
}

#[napi]
impl Lock {
    /// The lock name as given.
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// The owner token (share it to release from elsewhere with `restoreLock`).
    #[napi(getter)]
    pub fn owner(&self) -> String {
        self.owner.clone()
    }

    /// The ttl in seconds as given (0 means 86400).
    #[napi(getter)]
    pub fn ttl(&self) -> i64 {
        self.ttl
    }

    /// One conditional PutItem: true when the lock is ours (also when an earlier attempt with
    /// this owner already took it), false when someone else holds it.
    #[napi]
    pub async fn acquire(&self) -> Result<bool> {
        let p = self.parts();
        Ok(core_lock(&p).await?.acquire().await.napi()?.is_acquired())
    }

    /// Retries for up to `timeoutMs`; resolves to the expiry (Unix seconds) or rejects with
    /// `LOCK_TIMEOUT`.
    #[napi]
    pub async fn block(&self, timeout_ms: f64) -> Result<i64> {
        let p = self.parts();
        let timeout = Duration::from_secs_f64(timeout_ms.max(0.0) / 1000.0);
        core_lock(&p).await?.block(timeout).await.napi()
    }

    /// ONE DeleteItem conditioned on our owner: true when this call deleted our lock.
    #[napi]
    pub async fn release(&self) -> Result<bool> {
        let p = self.parts();
        Ok(core_lock(&p).await?.release().await.napi()?.is_released())
    }

    /// Deletes the lock whoever holds it.
    #[napi]
    pub async fn force_release(&self) -> Result<()> {
        let p = self.parts();
        core_lock(&p).await?.force_release().await.napi()
    }

    /// Extends our live lock to now + `ttl` (the lock's ttl by default); false when not ours.
    #[napi]
    pub async fn refresh(&self, ttl: Option<f64>) -> Result<bool> {
        let p = self.parts();
        let ttl = ttl.map(secs).transpose()?;
        core_lock(&p).await?.refresh(ttl).await.napi()
    }

    /// Whether anyone holds the lock now (consistent read).
    #[napi]
    pub async fn is_locked(&self) -> Result<bool> {
        let p = self.parts();
        core_lock(&p).await?.is_locked().await.napi()
    }

    /// Whether this owner holds the lock now (consistent read).
    #[napi]
    pub async fn is_owned(&self) -> Result<bool> {
        let p = self.parts();
        core_lock(&p).await?.is_owned().await.napi()
    }

    /// Who holds the lock now (consistent read), or `null` when free or expired.
    #[napi]
    pub async fn holder(&self) -> Result<Option<Holder>> {
        let p = self.parts();
        let h = core_lock(&p).await?.current_holder().await.napi()?;
        Ok(h.map(|h| Holder {
            owner: h.owner,
            expires_at: h.expires_at,
        }))
    }
}
