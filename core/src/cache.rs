//! The Laravel cache API on a [`Store`]: the same items `Illuminate\Cache\DynamoDbStore` writes.

use std::collections::{HashMap, HashSet};

use crate::error::{Error, Result};
use crate::format::codec::{self, PhpValue};
use crate::format::input::Amount;
use crate::format::item::{self, FOREVER_YEARS};
use crate::holder::StoredValue;
use crate::store::Store;
use crate::time;

/// Whether a read may be served from a replica that lags (DynamoDB's default and Laravel's) or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Consistency {
    /// `ConsistentRead: false`, what Laravel's `get()` uses.
    #[default]
    Eventual,
    /// `ConsistentRead: true`: sees every write acknowledged before the read.
    Strong,
}

/// One key's answer in [`Store::many`]: the live value, `None` when missing or expired, or an
/// error when the stored item is not a Laravel value.
pub type ManyEntry = Result<Option<PhpValue>>;

impl Store {
    /// The value of `key`, or `None` when missing or expired (an eventually consistent read, as Laravel).
    pub async fn get(&self, key: &str) -> Result<Option<PhpValue>> {
        self.get_with(key, Consistency::Eventual).await
    }

    /// [`Store::get`] with a chosen read consistency.
    pub async fn get_with(&self, key: &str, consistency: Consistency) -> Result<Option<PhpValue>> {
        let k = self.cache_key(key)?;
        let strong = consistency == Consistency::Strong;
        match self.table().get(&k, strong).await? {
            Some(item) => item.live_value(key, self.config().expiration_attribute(), self.now()),
            None => Ok(None),
        }
    }

    /// [`Store::get`] decoded into a Rust type through serde (see [`codec::from_php`]).
    pub async fn get_as<T: serde::de::DeserializeOwned>(&self, key: &str) -> Result<Option<T>> {
        match self.get(key).await? {
            Some(v) => {
                Ok(Some(codec::from_php(&v).map_err(|e| {
                    e.context(format_args!("value of key {key:?}"))
                })?))
            }
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
        let v =
            codec::to_php(value).map_err(|e| e.context(format_args!("value of key {key:?}")))?;
        self.put(key, &v, ttl_secs).await
    }

    /// Values of many keys (BatchGetItem in chunks of 100), in input order. Each key gets its own
    /// answer: its live value, `None` when missing or expired, or an error when its item is not
    /// a Laravel value (one bad item does not hide the others). The call itself fails only when
    /// a request fails or a key is invalid.
    pub async fn many(&self, keys: &[&str]) -> Result<Vec<(String, ManyEntry)>> {
        let table_keys = keys
            .iter()
            .map(|k| self.cache_key(k))
            .collect::<Result<Vec<_>>>()?;
        let mut seen = HashSet::new();
        let unique: Vec<&str> = table_keys
            .iter()
            .map(String::as_str)
            .filter(|k| seen.insert(*k))
            .collect();
        let found = self.table().batch_get(&unique).await?;
        let now = self.now();
        let exp = self.config().expiration_attribute();
        Ok(keys
            .iter()
            .zip(&table_keys)
            .map(|(k, tk)| {
                let v = match found.get(tk) {
                    Some(item) => item.live_value(k, exp, now),
                    None => Ok(None),
                };
                ((*k).to_owned(), v)
            })
            .collect())
    }

    /// Stores `value` under `key` for `ttl_secs` seconds (ttl <= 0 writes an already-expired item, as Laravel's store).
    pub async fn put(&self, key: &str, value: &PhpValue, ttl_secs: i64) -> Result<()> {
        let k = self.cache_key(key)?;
        let stored = codec::encode_stored(value)?;
        let expires_at = item::expiry(self.now(), ttl_secs)?;
        self.table().put(&k, &stored, expires_at).await
    }

    /// Stores many values with one expiry (BatchWriteItem in chunks of 25; a repeated key keeps its last value).
    pub async fn put_many(&self, values: &[(&str, PhpValue)], ttl_secs: i64) -> Result<()> {
        let expires_at = item::expiry(self.now(), ttl_secs)?;
        // BatchWriteItem rejects a request naming one key twice; keep the last, like a PHP array.
        let mut items: Vec<(String, StoredValue)> = Vec::with_capacity(values.len());
        let mut index: HashMap<String, usize> = HashMap::new();
        for (k, v) in values {
            let tk = self.cache_key(k)?;
            let stored = codec::encode_stored(v)?;
            match index.get(&tk) {
                Some(&i) => items[i].1 = stored,
                None => {
                    index.insert(tk.clone(), items.len());
                    items.push((tk, stored));
                }
            }
        }
        self.table().batch_put(&items, expires_at).await
    }

    /// Stores `value` only if `key` is missing or expired (`expires_at < now`); true when stored.
    /// Under the SDK's retries a lost answer can make a successful `add` report false (the retry
    /// finds the item the first attempt wrote); `add` is not idempotent, as in Laravel.
    pub async fn add(&self, key: &str, value: &PhpValue, ttl_secs: i64) -> Result<bool> {
        let k = self.cache_key(key)?;
        let stored = codec::encode_stored(value)?;
        let expires_at = item::expiry(self.now(), ttl_secs)?;
        self.table().put_if_free(&k, &stored, expires_at).await
    }

    /// Adds `by` (an integer or a float, as Laravel sends `(string) $value`) to a live numeric
    /// entry and returns the new value cast to int as Laravel does; `None` when the key is missing
    /// or expired (Laravel's `false`). Not idempotent under the SDK's retries of a lost answer.
    pub async fn increment(&self, key: &str, by: impl Into<Amount>) -> Result<Option<i64>> {
        self.add_number(key, false, by.into()).await
    }

    /// Subtracts `by` from a live numeric entry; `None` when the key is missing or expired.
    pub async fn decrement(&self, key: &str, by: impl Into<Amount>) -> Result<Option<i64>> {
        self.add_number(key, true, by.into()).await
    }

    /// Stores `value` for 5 years, which is what Laravel's `forever()` means.
    pub async fn forever(&self, key: &str, value: &PhpValue) -> Result<()> {
        let now = self.now();
        let ttl = time::add_years(now, FOREVER_YEARS) - now;
        self.put(key, value, ttl).await
    }

    /// Deletes `key` unconditionally.
    pub async fn forget(&self, key: &str) -> Result<()> {
        let k = self.cache_key(key)?;
        self.table().delete(&k).await
    }

    /// Sets a live entry's expiry to now + `ttl_secs` (Laravel 13's `touch`); false when missing or expired.
    pub async fn touch(&self, key: &str, ttl_secs: i64) -> Result<bool> {
        let k = self.cache_key(key)?;
        let expires_at = item::expiry(self.now(), ttl_secs)?;
        self.table().touch(&k, expires_at).await
    }

    /// Always fails: a DynamoDB table cannot be flushed (as in Laravel). Create a new table instead.
    pub async fn flush(&self) -> Result<()> {
        Err(Error::Unsupported(
            "DynamoDB does not support flushing an entire table (Laravel refuses too); create a new table"
                .into(),
        ))
    }

    async fn add_number(&self, key: &str, negate: bool, by: Amount) -> Result<Option<i64>> {
        let k = self.cache_key(key)?;
        let n = self
            .table()
            .add_to_number(&k, negate, by.checked()?)
            .await?;
        Ok(n.as_deref().map(item::php_int_cast))
    }
}
