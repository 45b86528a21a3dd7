//! Locks in Laravel's `DynamoDbLock` format, released by ONE owner-conditioned DeleteItem.

use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure;
use futures_util::FutureExt;
use rand::distr::{Alphanumeric, SampleString};

use crate::codec::{self, PhpValue, StoredValue};
use crate::config::Backoff;
use crate::error::{Error, Result};
use crate::item::{self, Item};
use crate::store::{is_condition_failure, is_expired, num, Consistency, Store};

/// Laravel's lock ttl when none (0) is given: one day.
pub const DEFAULT_LOCK_TTL_SECS: i64 = 86_400;
/// Length of a generated owner (Laravel's `Str::random()` default).
pub const OWNER_LEN: usize = 16;
/// Attempts of the put-then-read dance when a server returns no old item and the item vanished.
const ACQUIRE_ATTEMPTS: usize = 3;

/// Who holds a lock, as read from the table.
#[derive(Clone, PartialEq)]
pub struct Holder {
    /// The owner as Laravel compares it: the PHP string, or the number text for `N` owners;
    /// `None` when the stored value is not a string or number (not a lock item).
    pub owner: Option<String>,
    /// The raw stored value (`N` or `S` text), `None` if the item has no value attribute or it was not returned.
    pub value: Option<StoredValue>,
    /// The Unix time the lock expires at; `None` for an item without expiry (never expires, as in Laravel).
    pub expires_at: Option<i64>,
}

impl Holder {
    pub(crate) fn from_parts(value: Option<StoredValue>, expires_at: Option<i64>) -> Holder {
        let owner = value.as_ref().and_then(|v| match v {
            StoredValue::Number(n) => Some(n.clone()),
            StoredValue::String(s) => match codec::decode_stored(s) {
                Ok(PhpValue::String(b)) => Some(String::from_utf8_lossy(&b).into_owned()),
                Ok(PhpValue::Int(i)) => Some(i.to_string()),
                _ => None,
            },
        });
        Holder {
            owner,
            value,
            expires_at,
        }
    }

    /// Whether this holder's stored value is `owner`, compared as DynamoDB's `#value = :owner` would.
    pub fn is(&self, owner: &StoredValue) -> bool {
        match (&self.value, owner) {
            (Some(StoredValue::Number(a)), StoredValue::Number(b)) => item::numbers_equal(a, b),
            (Some(StoredValue::String(a)), StoredValue::String(b)) => a == b,
            _ => false,
        }
    }
}

/// Shows at most the first 4 characters of the owner: an owner is the secret that releases a lock.
fn redact(owner: &Option<String>) -> String {
    match owner {
        None => "an unknown owner".into(),
        Some(o) if o.chars().count() <= 4 => format!("owner {o:?}"),
        Some(o) => format!(
            "owner {:?}… ({} chars)",
            o.chars().take(4).collect::<String>(),
            o.chars().count()
        ),
    }
}

impl fmt::Display for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", redact(&self.owner))?;
        match self.expires_at {
            Some(t) => write!(f, " until {t}"),
            None => write!(f, " without expiry"),
        }
    }
}

impl fmt::Debug for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Holder")
            .field("owner", &redact(&self.owner))
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// What `acquire()` found.
#[derive(Debug, Clone, PartialEq)]
pub enum AcquireOutcome {
    /// We hold the lock until `expires_at`. `recovered` is true when the item was already ours:
    /// an earlier attempt with this owner succeeded (e.g. its response was lost) and its expiry stands.
    Acquired {
        /// Unix time the lock expires at.
        expires_at: i64,
        /// The item was already ours.
        recovered: bool,
    },
    /// Someone else holds the lock.
    Held(Holder),
}

impl AcquireOutcome {
    /// True when the lock is ours.
    pub fn is_acquired(&self) -> bool {
        matches!(self, AcquireOutcome::Acquired { .. })
    }
}

/// What `release()` found.
#[derive(Debug, Clone, PartialEq)]
pub enum ReleaseOutcome {
    /// The lock was ours and is deleted.
    Released,
    /// There was no lock item (already released, force-released, or swept after expiry).
    NotHeld,
    /// Another owner holds the lock now (ours expired and was taken over, or we never held it).
    HeldByOther(Holder),
}

impl ReleaseOutcome {
    /// True when this call deleted our lock.
    pub fn is_released(&self) -> bool {
        matches!(self, ReleaseOutcome::Released)
    }
}

/// A named lock with an owner; cheap to clone. Creating one sends nothing.
#[derive(Clone)]
pub struct Lock {
    store: Store,
    name: String,
    key: String,
    owner: String,
    stored_owner: StoredValue,
    ttl_secs: i64,
    backoff: Backoff,
}

impl fmt::Debug for Lock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lock")
            .field("name", &self.name)
            .field("key", &self.key)
            .field("owner", &redact(&Some(self.owner.clone())))
            .field("ttl_secs", &self.ttl_secs)
            .finish()
    }
}

impl Lock {
    pub(crate) fn new(
        store: Store,
        name: &str,
        ttl_secs: i64,
        owner: Option<String>,
    ) -> Result<Lock> {
        let key = store.lock_key(name)?;
        let ttl_secs = lock_ttl(ttl_secs)?;
        let owner = owner.unwrap_or_else(random_owner);
        // The owner is stored exactly as Laravel's add() stores it: N when is_numeric, else serialized S.
        let stored_owner = codec::encode_stored(&PhpValue::String(owner.clone().into_bytes()))?;
        let backoff = store.config().backoff();
        Ok(Lock {
            store,
            name: name.to_owned(),
            key,
            owner,
            stored_owner,
            ttl_secs,
            backoff,
        })
    }

    /// The lock name as given.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The table key (prefix and layout applied).
    pub fn key(&self) -> &str {
        &self.key
    }
    /// This lock's owner token (share it to let another process release or refresh the lock).
    pub fn owner(&self) -> &str {
        &self.owner
    }
    /// The owner as stored in the table (`N` for numeric owners, else PHP-serialized `S`).
    pub fn stored_owner(&self) -> &StoredValue {
        &self.stored_owner
    }
    /// The ttl in seconds (0 was turned into 86400).
    pub fn ttl_secs(&self) -> i64 {
        self.ttl_secs
    }
    /// The same lock with another backoff for `block()`.
    pub fn with_backoff(mut self, backoff: Backoff) -> Lock {
        self.backoff = backoff;
        self
    }

    /// Tries once to take the lock: one conditional PutItem (`attribute_not_exists(#key) OR
    /// #expires_at < :now`). A failed condition is `Ok(Held(..))`, never an error.
    pub async fn acquire(&self) -> Result<AcquireOutcome> {
        for _ in 0..ACQUIRE_ATTEMPTS {
            let expires_at = self.store.expiry(self.ttl_secs)?;
            let item = self
                .store
                .stored_item(&self.key, &self.stored_owner, expires_at);
            let old = match self.store.conditional_put(item).await? {
                None => {
                    tracing::debug!(lock = %self.name, expires_at, "acquired");
                    return Ok(AcquireOutcome::Acquired {
                        expires_at,
                        recovered: false,
                    });
                }
                Some(old) if !old.is_empty() => old,
                // The server ignored ALL_OLD (dynalite): one consistent read tells who holds it.
                Some(_) => match self.store.get_item(&self.key, Consistency::Strong).await? {
                    Some(item) => item,
                    None => continue, // released in between: try the put again
                },
            };
            let holder = self.holder_of(&old)?;
            if holder.is(&self.stored_owner) {
                // Our own item: an earlier put of ours landed but we never saw its answer.
                let expires_at = holder.expires_at.unwrap_or(i64::MAX);
                tracing::debug!(lock = %self.name, expires_at, "acquired (recovered our earlier write)");
                return Ok(AcquireOutcome::Acquired {
                    expires_at,
                    recovered: true,
                });
            }
            if holder.expires_at.is_some_and(|e| e < self.store.now()) {
                continue; // expired between the put and the read: the next put takes it over
            }
            tracing::debug!(lock = %self.name, holder = %holder, "held by another owner");
            return Ok(AcquireOutcome::Held(holder));
        }
        Ok(AcquireOutcome::Held(Holder::from_parts(None, None)))
    }

    /// Waits up to `timeout` for the lock, retrying with capped exponential backoff and jitter;
    /// returns the expiry, or [`Error::LockTimeout`] naming the last holder.
    pub async fn block(&self, timeout: Duration) -> Result<i64> {
        let start = Instant::now();
        let mut attempt = 0u32;
        loop {
            match self.acquire().await? {
                AcquireOutcome::Acquired { expires_at, .. } => return Ok(expires_at),
                AcquireOutcome::Held(holder) => {
                    let waited = start.elapsed();
                    if waited >= timeout {
                        return Err(Error::LockTimeout {
                            name: self.name.clone(),
                            waited,
                            holder: Some(Box::new(holder)),
                        });
                    }
                    let delay = self.backoff.delay(attempt, rand::random::<f64>());
                    tokio::time::sleep(delay.min(timeout - waited)).await;
                    attempt = attempt.saturating_add(1);
                }
            }
        }
    }

    /// Releases the lock if it is ours: ONE DeleteItem conditioned on `#value = :owner`, with the
    /// owner typed as stored. No read before the delete.
    pub async fn release(&self) -> Result<ReleaseOutcome> {
        let c = self.store.config();
        let res = self
            .store
            .client()
            .delete_item()
            .table_name(c.table())
            .set_key(Some(self.store.key_item(&self.key)))
            .condition_expression("#value = :owner")
            .expression_attribute_names("#value", c.value_attribute())
            .expression_attribute_values(":owner", item::to_attr(&self.stored_owner))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let old = match res {
            Ok(_) => {
                tracing::debug!(lock = %self.name, "released");
                return Ok(ReleaseOutcome::Released);
            }
            Err(SdkError::ServiceError(se)) if se.err().is_conditional_check_failed_exception() => {
                match se.into_err() {
                    DeleteItemError::ConditionalCheckFailedException(e) => {
                        e.item.unwrap_or_default()
                    }
                    _ => Item::new(),
                }
            }
            Err(e) => return Err(self.store.sdk_error("DeleteItem", e)),
        };
        // On real DynamoDB and moto an empty ALL_OLD means there was no item. dynalite never returns
        // ALL_OLD, so tell "gone" from "someone else's" with one consistent read (failure path only).
        let old = if old.is_empty() {
            match self.store.get_item(&self.key, Consistency::Strong).await? {
                Some(item) => item,
                None => return Ok(ReleaseOutcome::NotHeld),
            }
        } else {
            old
        };
        let holder = self.holder_of(&old)?;
        tracing::debug!(lock = %self.name, holder = %holder, "not released: held by another owner");
        Ok(ReleaseOutcome::HeldByOther(holder))
    }

    /// Deletes the lock whoever holds it (Laravel's `forceRelease`).
    pub async fn force_release(&self) -> Result<()> {
        self.store.delete_unconditionally(&self.key).await
    }

    /// Extends our live lock to now + `ttl_secs` (the lock's own ttl when `None`; <= 0 means 86400),
    /// with Laravel 12.63's condition `attribute_exists(#key) AND #value = :owner AND #expires_at > :now`.
    /// False when the lock is not ours or has expired.
    pub async fn refresh(&self, ttl_secs: Option<i64>) -> Result<bool> {
        let ttl = match ttl_secs {
            None => self.ttl_secs,
            Some(t) if t <= 0 => DEFAULT_LOCK_TTL_SECS,
            Some(t) => t,
        };
        let c = self.store.config();
        let expires_at = self.store.expiry(ttl)?;
        let res = self
            .store
            .client()
            .update_item()
            .table_name(c.table())
            .set_key(Some(self.store.key_item(&self.key)))
            .update_expression("SET #expires_at = :expires_at")
            .condition_expression(
                "attribute_exists(#key) AND #value = :owner AND #expires_at > :now",
            )
            .expression_attribute_names("#key", c.key_attribute())
            .expression_attribute_names("#value", c.value_attribute())
            .expression_attribute_names("#expires_at", c.expiration_attribute())
            .expression_attribute_values(":owner", item::to_attr(&self.stored_owner))
            .expression_attribute_values(":expires_at", num(expires_at))
            .expression_attribute_values(":now", num(self.store.now()))
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) if is_condition_failure(&e) => Ok(false),
            Err(e) => Err(self.store.sdk_error("UpdateItem", e)),
        }
    }

    /// Who holds the lock now (consistent read); `None` when free or expired (`now >= expires_at`).
    pub async fn current_holder(&self) -> Result<Option<Holder>> {
        let Some(item) = self.store.get_item(&self.key, Consistency::Strong).await? else {
            return Ok(None);
        };
        let holder = self.holder_of(&item)?;
        Ok((!is_expired(holder.expires_at, self.store.now())).then_some(holder))
    }

    /// Whether anyone holds the lock now (consistent read).
    pub async fn is_locked(&self) -> Result<bool> {
        Ok(self.current_holder().await?.is_some())
    }

    /// Whether `owner` holds the lock now (consistent read).
    pub async fn is_owned_by(&self, owner: &str) -> Result<bool> {
        let stored = codec::encode_stored(&PhpValue::String(owner.as_bytes().to_vec()))?;
        Ok(self.current_holder().await?.is_some_and(|h| h.is(&stored)))
    }

    /// Whether this lock's owner holds the lock now (consistent read).
    pub async fn is_owned(&self) -> Result<bool> {
        Ok(self
            .current_holder()
            .await?
            .is_some_and(|h| h.is(&self.stored_owner)))
    }

    /// Waits up to `timeout` for the lock and returns a guard that releases it.
    pub async fn block_guard(self, timeout: Duration) -> Result<LockGuard> {
        self.block(timeout).await?;
        Ok(LockGuard { lock: Some(self) })
    }

    /// Waits up to `timeout` for the lock, runs `work`, and releases the lock when the work returns
    /// or panics (the panic then continues). See [`LockGuard`] for what happens if this future is dropped.
    pub async fn with_lock<F, Fut, T>(self, timeout: Duration, work: F) -> Result<T>
    where
        F: FnOnce(Lock) -> Fut,
        Fut: Future<Output = T>,
    {
        let guard = self.block_guard(timeout).await?;
        let lock = guard.lock().clone();
        let outcome = AssertUnwindSafe(work(lock)).catch_unwind().await;
        let released = guard.release().await;
        match outcome {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(value) => {
                released?;
                Ok(value)
            }
        }
    }

    fn holder_of(&self, item: &Item) -> Result<Holder> {
        let (value, expires_at) = self.store.parse_item(item)?;
        Ok(Holder::from_parts(value, expires_at))
    }
}

/// Holds an acquired lock. `release().await` releases it; dropping the guard without that spawns
/// the release on the current tokio runtime (best effort: without a runtime, or if the process
/// ends first, the lock stays until its ttl expires).
#[derive(Debug)]
pub struct LockGuard {
    lock: Option<Lock>,
}

impl LockGuard {
    /// The held lock (e.g. to `refresh` it).
    pub fn lock(&self) -> &Lock {
        self.lock
            .as_ref()
            .expect("LockGuard holds its lock until released")
    }

    /// Releases the lock now.
    pub async fn release(mut self) -> Result<ReleaseOutcome> {
        match self.lock.take() {
            Some(lock) => lock.release().await,
            None => Ok(ReleaseOutcome::NotHeld),
        }
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if let Some(lock) = self.lock.take() {
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                handle.spawn(async move {
                    if let Err(e) = lock.release().await {
                        tracing::warn!(lock = %lock.name, error = %e, "release on drop failed; the lock expires at its ttl");
                    }
                });
            } else {
                tracing::warn!(lock = %lock.name, "LockGuard dropped outside a tokio runtime; the lock expires at its ttl");
            }
        }
    }
}

/// A fresh owner token: 16 characters of `[A-Za-z0-9]` from the OS-seeded CSPRNG (Laravel's `Str::random()` shape).
pub fn random_owner() -> String {
    Alphanumeric.sample_string(&mut rand::rng(), OWNER_LEN)
}

/// Laravel's lock ttl: 0 means one day; negative is refused (bindings check before any request).
pub fn lock_ttl(ttl_secs: i64) -> Result<i64> {
    match ttl_secs {
        0 => Ok(DEFAULT_LOCK_TTL_SECS),
        t if t < 0 => Err(Error::InvalidTtl {
            ttl: t,
            reason: "a lock ttl must be positive seconds (0 means Laravel's default of 86400)"
                .into(),
        }),
        t => Ok(t),
    }
}
