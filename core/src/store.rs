//! The Laravel-compatible cache store: the same items `Illuminate\Cache\DynamoDbStore` writes.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::{
    AttributeValue, KeysAndAttributes, PutRequest, ReturnValue, WriteRequest,
};
use aws_sdk_dynamodb::Client;

use crate::codec::{self, CodecError, PhpValue, StoredValue};
use crate::config::StoreConfig;
use crate::error::{Error, Result};
use crate::item::{self, Item};
use crate::lock::Lock;

pub use crate::config::MAX_KEY_BYTES;
/// Keys per BatchGetItem request (DynamoDB's limit).
const BATCH_GET_CHUNK: usize = 100;
/// Put requests per BatchWriteItem request (DynamoDB's limit).
const BATCH_WRITE_CHUNK: usize = 25;
/// Rounds of resending unprocessed batch keys/items before giving up as throttled.
const BATCH_RETRY_ROUNDS: u32 = 10;
/// Laravel's `forever()` means "5 years from now".
const FOREVER_YEARS: i64 = 5;

/// Whether a read may be served from a replica that lags (DynamoDB's default and Laravel's) or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Consistency {
    /// `ConsistentRead: false`, what Laravel's `get()` uses.
    #[default]
    Eventual,
    /// `ConsistentRead: true`: sees every write acknowledged before the read.
    Strong,
}

impl Consistency {
    fn flag(self) -> bool {
        self == Consistency::Strong
    }
}

/// A handle on one Laravel cache table; cheap to clone, share it between tasks.
#[derive(Clone, Debug)]
pub struct Store {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    client: Client,
    cfg: StoreConfig,
}

impl Store {
    /// A store over a client built from `aws-config`'s default chain plus the config's endpoint,
    /// region, timeouts and attempts. Without a configured region: `AWS_REGION`/`AWS_DEFAULT_REGION`,
    /// then the AWS profile, then `us-east-1` (Laravel's default); instance metadata is not asked.
    pub async fn connect(cfg: StoreConfig) -> Result<Store> {
        let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest());
        if let Some(r) = &cfg.region {
            loader = loader.region(aws_config::Region::new(r.clone()));
        }
        if let Some(e) = &cfg.endpoint {
            loader = loader.endpoint_url(e.clone());
        }
        if cfg.connect_timeout.is_some() || cfg.operation_timeout.is_some() {
            let mut t = TimeoutConfig::builder();
            if let Some(d) = cfg.connect_timeout {
                t = t.connect_timeout(d);
            }
            if let Some(d) = cfg.operation_timeout {
                t = t.operation_timeout(d);
            }
            loader = loader.timeout_config(t.build());
        }
        if let Some(n) = cfg.max_attempts {
            loader = loader.retry_config(RetryConfig::standard().with_max_attempts(n));
        }
        if cfg.region.is_none() {
            // Laravel's config falls back to us-east-1 when AWS_DEFAULT_REGION is unset. The SDK's
            // default chain would first ask EC2 instance metadata, which stalls off EC2.
            let chain = aws_config::meta::region::RegionProviderChain::first_try(
                aws_config::environment::region::EnvironmentVariableRegionProvider::new(),
            )
            .or_else(aws_config::profile::ProfileFileRegionProvider::new())
            .or_else(aws_config::Region::new("us-east-1"));
            loader = loader.region(chain);
        }
        let sdk = loader.load().await;
        let conf = aws_sdk_dynamodb::config::Builder::from(&sdk);
        Ok(Store::with_client(Client::from_conf(conf.build()), cfg))
    }

    /// A store over a client you built (your credentials, interceptors, HTTP settings).
    pub fn with_client(client: Client, cfg: StoreConfig) -> Store {
        Store {
            inner: Arc::new(Inner { client, cfg }),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &StoreConfig {
        &self.inner.cfg
    }

    /// The SDK client, for operations ddblock does not wrap.
    pub fn client(&self) -> &Client {
        &self.inner.client
    }

    /// The current Unix time from the configured clock.
    pub fn now(&self) -> i64 {
        self.inner.cfg.clock.now()
    }

    /// The table key of cache entry `key` under the configured prefix and layout, validated.
    pub fn cache_key(&self, key: &str) -> Result<String> {
        self.inner.cfg.cache_key(key)
    }

    /// The table key of lock `name` under the configured prefix and layout, validated.
    pub fn lock_key(&self, name: &str) -> Result<String> {
        self.inner.cfg.lock_key(name)
    }

    /// A lock named `name` held for `ttl_secs` (0 means 86400, as Laravel) with a fresh random owner.
    pub fn lock(&self, name: &str, ttl_secs: i64) -> Result<Lock> {
        Lock::new(self.clone(), name, ttl_secs, None)
    }

    /// A lock with a given owner (e.g. one shared with a PHP process).
    pub fn lock_with_owner(
        &self,
        name: &str,
        ttl_secs: i64,
        owner: impl Into<String>,
    ) -> Result<Lock> {
        Lock::new(self.clone(), name, ttl_secs, Some(owner.into()))
    }

    /// A handle on a lock someone already holds as `owner` (Laravel's `restoreLock`), to release or refresh it.
    pub fn restore_lock(&self, name: &str, owner: impl Into<String>) -> Result<Lock> {
        Lock::new(self.clone(), name, 0, Some(owner.into()))
    }

    /// The value of `key`, or `None` when missing or expired (an eventually consistent read, as Laravel).
    pub async fn get(&self, key: &str) -> Result<Option<PhpValue>> {
        self.get_with(key, Consistency::Eventual).await
    }

    /// [`Store::get`] with a chosen read consistency.
    pub async fn get_with(&self, key: &str, consistency: Consistency) -> Result<Option<PhpValue>> {
        let k = self.cache_key(key)?;
        let item = self.get_item(&k, consistency).await?;
        match item {
            Some(item) => self.decode_live(key, &item, self.now()),
            None => Ok(None),
        }
    }

    /// [`Store::get`] decoded into a Rust type through serde (see [`codec::from_php`]).
    pub async fn get_as<T: serde::de::DeserializeOwned>(&self, key: &str) -> Result<Option<T>> {
        match self.get(key).await? {
            Some(v) => Ok(Some(codec::from_php(&v).map_err(|e| in_key(key, e))?)),
            None => Ok(None),
        }
    }

    /// [`Store::put`] of a Rust value encoded through serde (see [`codec::to_php`]).
    pub async fn put_as<T: serde::Serialize + ?Sized>(
        &self,
        key: &str,
        value: &T,
        ttl_secs: i64,
    ) -> Result<()> {
        let v = codec::to_php(value).map_err(|e| in_key(key, e))?;
        self.put(key, &v, ttl_secs).await
    }

    /// Values of many keys (BatchGetItem in chunks of 100), in input order; `None` when missing or expired.
    pub async fn many(&self, keys: &[&str]) -> Result<Vec<(String, Option<PhpValue>)>> {
        let c = &self.inner.cfg;
        let mut table_keys = Vec::with_capacity(keys.len());
        for k in keys {
            table_keys.push(self.cache_key(k)?);
        }
        let mut unique: Vec<&String> = Vec::new();
        let mut seen = HashSet::new();
        for k in &table_keys {
            if seen.insert(k.as_str()) {
                unique.push(k);
            }
        }
        let mut found: HashMap<String, Item> = HashMap::new();
        for chunk in unique.chunks(BATCH_GET_CHUNK) {
            let mut pending = KeysAndAttributes::builder()
                .set_keys(Some(chunk.iter().map(|k| self.key_item(k)).collect()))
                .consistent_read(false)
                .build()
                .map_err(|e| Error::Config(e.to_string()))?;
            let mut round = 0;
            loop {
                let out = self
                    .inner
                    .client
                    .batch_get_item()
                    .request_items(&c.table, pending)
                    .send()
                    .await
                    .map_err(|e| self.sdk_error("BatchGetItem", e))?;
                if let Some(mut resp) = out.responses {
                    for it in resp.remove(&c.table).unwrap_or_default() {
                        if let Some(AttributeValue::S(k)) = it.get(&c.key_attribute) {
                            found.insert(k.clone(), it);
                        }
                    }
                }
                match out.unprocessed_keys.and_then(|mut u| u.remove(&c.table)) {
                    Some(rest) if !rest.keys.is_empty() => {
                        round += 1;
                        if round > BATCH_RETRY_ROUNDS {
                            return Err(self.unprocessed_error("BatchGetItem", rest.keys.len()));
                        }
                        tokio::time::sleep(batch_backoff(round)).await;
                        pending = rest;
                    }
                    _ => break,
                }
            }
        }
        let now = self.now();
        let mut result = Vec::with_capacity(keys.len());
        for (k, tk) in keys.iter().zip(&table_keys) {
            let v = match found.get(tk) {
                Some(item) => self.decode_live(k, item, now)?,
                None => None,
            };
            result.push(((*k).to_owned(), v));
        }
        Ok(result)
    }

    /// Stores `value` under `key` for `ttl_secs` seconds (ttl <= 0 writes an already-expired item, as Laravel's store).
    pub async fn put(&self, key: &str, value: &PhpValue, ttl_secs: i64) -> Result<()> {
        let k = self.cache_key(key)?;
        let item = self.value_item(&k, value, self.expiry(ttl_secs)?)?;
        self.inner
            .client
            .put_item()
            .table_name(&self.inner.cfg.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(|e| self.sdk_error("PutItem", e))?;
        Ok(())
    }

    /// Stores many values with one expiry (BatchWriteItem in chunks of 25; a repeated key keeps its last value).
    pub async fn put_many(&self, values: &[(&str, PhpValue)], ttl_secs: i64) -> Result<()> {
        let c = &self.inner.cfg;
        let expires_at = self.expiry(ttl_secs)?;
        // BatchWriteItem rejects a request naming one key twice; keep the last, like a PHP array.
        let mut order: Vec<String> = Vec::new();
        let mut latest: HashMap<String, Item> = HashMap::new();
        for (k, v) in values {
            let tk = self.cache_key(k)?;
            let item = self.value_item(&tk, v, expires_at)?;
            if latest.insert(tk.clone(), item).is_none() {
                order.push(tk);
            }
        }
        let requests: Vec<WriteRequest> = order
            .iter()
            .filter_map(|k| latest.remove(k))
            .map(|item| {
                let put = PutRequest::builder().set_item(Some(item)).build();
                put.map(|p| WriteRequest::builder().put_request(p).build())
                    .map_err(|e| Error::Config(e.to_string()))
            })
            .collect::<Result<_>>()?;
        for chunk in requests.chunks(BATCH_WRITE_CHUNK) {
            let mut pending = chunk.to_vec();
            let mut round = 0;
            loop {
                let out = self
                    .inner
                    .client
                    .batch_write_item()
                    .request_items(&c.table, pending)
                    .send()
                    .await
                    .map_err(|e| self.sdk_error("BatchWriteItem", e))?;
                match out.unprocessed_items.and_then(|mut u| u.remove(&c.table)) {
                    Some(rest) if !rest.is_empty() => {
                        round += 1;
                        if round > BATCH_RETRY_ROUNDS {
                            return Err(self.unprocessed_error("BatchWriteItem", rest.len()));
                        }
                        tokio::time::sleep(batch_backoff(round)).await;
                        pending = rest;
                    }
                    _ => break,
                }
            }
        }
        Ok(())
    }

    /// Stores `value` only if `key` is missing or expired (`expires_at < now`); true when stored.
    pub async fn add(&self, key: &str, value: &PhpValue, ttl_secs: i64) -> Result<bool> {
        let k = self.cache_key(key)?;
        let item = self.value_item(&k, value, self.expiry(ttl_secs)?)?;
        Ok(self.conditional_put(item).await?.is_none())
    }

    /// Adds `by` to a live numeric entry; `None` when the key is missing or expired (Laravel's `false`).
    pub async fn increment(&self, key: &str, by: i64) -> Result<Option<i64>> {
        self.update_number(key, '+', by).await
    }

    /// Subtracts `by` from a live numeric entry; `None` when the key is missing or expired.
    pub async fn decrement(&self, key: &str, by: i64) -> Result<Option<i64>> {
        self.update_number(key, '-', by).await
    }

    /// Stores `value` for 5 years, which is what Laravel's `forever()` means.
    pub async fn forever(&self, key: &str, value: &PhpValue) -> Result<()> {
        let now = self.now();
        let ttl = add_years(now, FOREVER_YEARS) - now;
        self.put(key, value, ttl).await
    }

    /// Deletes `key` unconditionally.
    pub async fn forget(&self, key: &str) -> Result<()> {
        let k = self.cache_key(key)?;
        self.delete_unconditionally(&k).await
    }

    /// Sets a live entry's expiry to now + `ttl_secs` (Laravel 13's `touch`); false when missing or expired.
    pub async fn touch(&self, key: &str, ttl_secs: i64) -> Result<bool> {
        let k = self.cache_key(key)?;
        let c = &self.inner.cfg;
        let expires_at = self.expiry(ttl_secs)?;
        let res = self
            .inner
            .client
            .update_item()
            .table_name(&c.table)
            .set_key(Some(self.key_item(&k)))
            .update_expression("SET #expires_at = :expires_at")
            .condition_expression("attribute_exists(#key) AND #expires_at > :now")
            .expression_attribute_names("#key", &c.key_attribute)
            .expression_attribute_names("#expires_at", &c.expiration_attribute)
            .expression_attribute_values(":expires_at", num(expires_at))
            .expression_attribute_values(":now", num(self.now()))
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) if is_condition_failure(&e) => Ok(false),
            Err(e) => Err(self.sdk_error("UpdateItem", e)),
        }
    }

    /// Always fails: a DynamoDB table cannot be flushed (as in Laravel). Create a new table instead.
    pub async fn flush(&self) -> Result<()> {
        Err(Error::Unsupported(
            "DynamoDB does not support flushing an entire table (Laravel refuses too); create a new table"
                .into(),
        ))
    }

    // ---- shared building blocks, used by locks too ----

    /// The `Key` map of table key `k`.
    pub(crate) fn key_item(&self, k: &str) -> Item {
        HashMap::from([(
            self.inner.cfg.key_attribute.clone(),
            AttributeValue::S(k.to_owned()),
        )])
    }

    /// A full item: key, encoded value, expiry.
    pub(crate) fn value_item(&self, k: &str, value: &PhpValue, expires_at: i64) -> Result<Item> {
        Ok(self.stored_item(k, &codec::encode_stored(value)?, expires_at))
    }

    /// A full item from an already encoded value (a lock's owner is encoded once).
    pub(crate) fn stored_item(&self, k: &str, stored: &StoredValue, expires_at: i64) -> Item {
        let c = &self.inner.cfg;
        HashMap::from([
            (c.key_attribute.clone(), AttributeValue::S(k.to_owned())),
            (c.value_attribute.clone(), item::to_attr(stored)),
            (c.expiration_attribute.clone(), num(expires_at)),
        ])
    }

    /// Laravel's `toTimestamp()`: now + ttl for a positive ttl, else now.
    pub(crate) fn expiry(&self, ttl_secs: i64) -> Result<i64> {
        let now = self.now();
        if ttl_secs <= 0 {
            return Ok(now);
        }
        now.checked_add(ttl_secs).ok_or_else(|| Error::InvalidTtl {
            ttl: ttl_secs,
            reason: "now + ttl overflows a 64-bit timestamp; use a smaller ttl".into(),
        })
    }

    /// One GetItem of table key `k`.
    pub(crate) async fn get_item(&self, k: &str, consistency: Consistency) -> Result<Option<Item>> {
        let out = self
            .inner
            .client
            .get_item()
            .table_name(&self.inner.cfg.table)
            .set_key(Some(self.key_item(k)))
            .consistent_read(consistency.flag())
            .send()
            .await
            .map_err(|e| self.sdk_error("GetItem", e))?;
        Ok(out.item)
    }

    /// Laravel's `add()`: a PutItem conditioned on the key being absent or expired. `Ok(None)` when
    /// written; `Ok(Some(old))` when the condition failed, with the old item if the server returned it
    /// (`ReturnValuesOnConditionCheckFailure=ALL_OLD`; dynalite ignores it and returns an empty map).
    pub(crate) async fn conditional_put(&self, item: Item) -> Result<Option<Item>> {
        let c = &self.inner.cfg;
        let res = self
            .inner
            .client
            .put_item()
            .table_name(&c.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#key) OR #expires_at < :now")
            .expression_attribute_names("#key", &c.key_attribute)
            .expression_attribute_names("#expires_at", &c.expiration_attribute)
            .expression_attribute_values(":now", num(self.now()))
            .return_values_on_condition_check_failure(
                aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure::AllOld,
            )
            .send()
            .await;
        match res {
            Ok(_) => Ok(None),
            Err(SdkError::ServiceError(se)) if se.err().is_conditional_check_failed_exception() => {
                let old = match se.into_err() {
                    aws_sdk_dynamodb::operation::put_item::PutItemError::ConditionalCheckFailedException(e) => {
                        e.item.unwrap_or_default()
                    }
                    _ => Item::new(),
                };
                Ok(Some(old))
            }
            Err(e) => Err(self.sdk_error("PutItem", e)),
        }
    }

    /// One unconditional DeleteItem of table key `k`.
    pub(crate) async fn delete_unconditionally(&self, k: &str) -> Result<()> {
        self.inner
            .client
            .delete_item()
            .table_name(&self.inner.cfg.table)
            .set_key(Some(self.key_item(k)))
            .send()
            .await
            .map_err(|e| self.sdk_error("DeleteItem", e))?;
        Ok(())
    }

    /// The stored value and expiry of an item (either may be absent).
    pub(crate) fn parse_item(&self, item: &Item) -> Result<(Option<StoredValue>, Option<i64>)> {
        let c = &self.inner.cfg;
        let value = item.get(&c.value_attribute).and_then(item::from_attr);
        let expires_at = item
            .get(&c.expiration_attribute)
            .map(|av| item::parse_timestamp(&c.expiration_attribute, av))
            .transpose()?;
        Ok((value, expires_at))
    }

    /// The decoded value of `item` unless it is expired (`now >= expires_at`, Laravel's `isExpired`).
    fn decode_live(&self, key: &str, item: &Item, now: i64) -> Result<Option<PhpValue>> {
        let (value, expires_at) = self.parse_item(item)?;
        if is_expired(expires_at, now) {
            return Ok(None);
        }
        match value {
            Some(v) => codec::decode_stored(v.text())
                .map(Some)
                .map_err(|e| in_key(key, e).into()),
            None => Ok(None),
        }
    }

    async fn update_number(&self, key: &str, op: char, by: i64) -> Result<Option<i64>> {
        let k = self.cache_key(key)?;
        let c = &self.inner.cfg;
        let res = self
            .inner
            .client
            .update_item()
            .table_name(&c.table)
            .set_key(Some(self.key_item(&k)))
            .update_expression(format!("SET #value = #value {op} :amount"))
            .condition_expression("attribute_exists(#key) AND #expires_at > :now")
            .expression_attribute_names("#key", &c.key_attribute)
            .expression_attribute_names("#value", &c.value_attribute)
            .expression_attribute_names("#expires_at", &c.expiration_attribute)
            .expression_attribute_values(":now", num(self.now()))
            .expression_attribute_values(":amount", num(by))
            .return_values(ReturnValue::UpdatedNew)
            .send()
            .await;
        match res {
            Ok(out) => {
                let n = out
                    .attributes
                    .as_ref()
                    .and_then(|a| a.get(&c.value_attribute))
                    .and_then(|v| v.as_n().ok())
                    .ok_or_else(|| Error::Service {
                        operation: "UpdateItem",
                        code: "MissingAttributes".into(),
                        message:
                            "the server did not return the updated value (ReturnValues=UPDATED_NEW)"
                                .into(),
                    })?;
                Ok(Some(php_int_cast(n)))
            }
            Err(e) if is_condition_failure(&e) => Ok(None),
            Err(e) => Err(self.sdk_error("UpdateItem", e)),
        }
    }

    fn unprocessed_error(&self, operation: &'static str, left: usize) -> Error {
        Error::Throttled {
            operation,
            code: "UnprocessedItems".into(),
            message: format!(
                "{left} items were still unprocessed after {BATCH_RETRY_ROUNDS} resends"
            ),
        }
    }

    /// Maps an SDK failure to ddblock's error kinds (every kind explicitly, no catch-all to Service
    /// for transport problems).
    pub(crate) fn sdk_error<E>(
        &self,
        operation: &'static str,
        err: SdkError<E, aws_sdk_dynamodb::config::http::HttpResponse>,
    ) -> Error
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        let c = &self.inner.cfg;
        let endpoint = c
            .endpoint
            .clone()
            .unwrap_or_else(|| "the default AWS endpoint".into());
        match &err {
            SdkError::ServiceError(se) => {
                let code = se.err().code().unwrap_or("Unknown").to_owned();
                let message = se.err().message().unwrap_or("").to_owned();
                match code.as_str() {
                    "ResourceNotFoundException" => Error::TableNotFound {
                        table: c.table.clone(),
                        endpoint,
                        key_attribute: c.key_attribute.clone(),
                        operation,
                    },
                    "ProvisionedThroughputExceededException"
                    | "ThrottlingException"
                    | "RequestLimitExceeded"
                    | "Throttling" => Error::Throttled {
                        operation,
                        code,
                        message,
                    },
                    _ => Error::Service {
                        operation,
                        code,
                        message,
                    },
                }
            }
            SdkError::TimeoutError(_)
            | SdkError::DispatchFailure(_)
            | SdkError::ResponseError(_) => Error::Transport {
                operation,
                endpoint,
                message: error_chain(&err),
            },
            SdkError::ConstructionFailure(_) => Error::Config(format!(
                "could not build the {operation} request: {}",
                DisplayErrorContext(&err)
            )),
            _ => Error::Service {
                operation,
                code: "Unknown".into(),
                message: DisplayErrorContext(&err).to_string(),
            },
        }
    }
}

/// The messages of an error and its sources, joined by `: ` (the SDK's Debug dump left out).
fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cur = Some(err);
    while let Some(e) = cur {
        let msg = e.to_string();
        if !msg.is_empty() && !parts.iter().any(|p| p.contains(&msg)) {
            parts.push(msg);
        }
        cur = e.source();
    }
    parts.join(": ")
}

/// Laravel's `isExpired`: an item without expiry never expires; otherwise expired when `now >= expires_at`.
pub(crate) fn is_expired(expires_at: Option<i64>, now: i64) -> bool {
    expires_at.is_some_and(|e| now >= e)
}

/// Whether an SDK error is DynamoDB's ConditionalCheckFailedException.
pub(crate) fn is_condition_failure<E: ProvideErrorMetadata, R>(err: &SdkError<E, R>) -> bool {
    matches!(err, SdkError::ServiceError(se) if se.err().code() == Some("ConditionalCheckFailedException"))
}

/// A DynamoDB number attribute.
pub(crate) fn num(n: i64) -> AttributeValue {
    AttributeValue::N(n.to_string())
}

fn in_key(key: &str, e: CodecError) -> CodecError {
    CodecError {
        message: format!("value of key {key:?}: {}", e.message),
        offset: e.offset,
    }
}

/// PHP's `(int)` of a DynamoDB number text (Laravel casts the incremented value).
fn php_int_cast(n: &str) -> i64 {
    n.trim()
        .parse::<i64>()
        .unwrap_or_else(|_| n.trim().parse::<f64>().map(|f| f as i64).unwrap_or(0))
}

fn batch_backoff(round: u32) -> Duration {
    Duration::from_millis((25u64 << round.min(6)).min(1000))
}

/// `ts` plus `years` calendar years in UTC (Carbon's `addYears`; Feb 29 overflows to Mar 1 as in PHP).
pub(crate) fn add_years(ts: i64, years: i64) -> i64 {
    let days = ts.div_euclid(86_400);
    let secs = ts.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    days_from_civil(y + years, m, 1) * 86_400 + (d as i64 - 1) * 86_400 + secs
}

// Howard Hinnant's proleptic Gregorian conversions.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_years_matches_calendar() {
        // 2026-11-22T01:00:00Z + 5 years = 2031-11-22T01:00:00Z
        assert_eq!(add_years(1_795_309_200, 5), 1_953_075_600);
        // 2024-02-29T00:00:00Z + 1 year = 2025-03-01 (PHP overflow)
        assert_eq!(add_years(1_709_164_800, 1), 1_740_787_200);
    }

    #[test]
    fn expiry_boundary_is_inclusive() {
        assert!(is_expired(Some(100), 100));
        assert!(!is_expired(Some(101), 100));
        assert!(!is_expired(None, 100));
    }

    #[test]
    fn int_cast_like_php() {
        assert_eq!(php_int_cast("42"), 42);
        assert_eq!(php_int_cast("2.5"), 2);
        assert_eq!(php_int_cast("-2.5"), -2);
    }
}
