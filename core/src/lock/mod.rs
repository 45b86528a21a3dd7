//! Locks in Laravel's `DynamoDbLock` format, released by ONE owner-conditioned request.
//!
//! The rules (own-write recovery, waiting, guards) are written once here over [`LockBackend`];
//! the DynamoDB backend is `lock/dynamo.rs`.

mod backend;
mod dynamo;
mod wait;

use std::fmt;
use std::sync::Arc;

use rand::distr::{Alphanumeric, SampleString};

use crate::config::{Backoff, StoreConfig};
use crate::error::Result;
use crate::format::input;
use crate::format::item::{self, is_expired, OWNER_LEN};
use crate::holder::{redact_owner, Holder, StoredValue};
use crate::store::Store;

use backend::{Attempt, LockBackend};
pub use input::{lock_ttl, DEFAULT_LOCK_TTL_SECS};
pub use wait::LockGuard;

/// Attempts of the put-then-read dance when a server returns no old item and the item vanished.
const ACQUIRE_ATTEMPTS: usize = 3;

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

/// A lock's name, key, owner and ttl, checked once (no request, no connection).
#[derive(Clone)]
struct LockSpec {
    name: String,
    key: String,
    owner: String,
    stored_owner: StoredValue,
    ttl_secs: i64,
}

impl LockSpec {
    fn new(
        cfg: &StoreConfig,
        name: &str,
        ttl_secs: i64,
        owner: Option<String>,
    ) -> Result<LockSpec> {
        let key = cfg.lock_key(name)?;
        let ttl_secs = lock_ttl(ttl_secs)?;
        let owner = owner.unwrap_or_else(random_owner);
        let stored_owner = item::stored_owner(&owner)?;
        Ok(LockSpec {
            name: name.to_owned(),
            key,
            owner,
            stored_owner,
            ttl_secs,
        })
    }
}

/// A named lock with an owner; cheap to clone. Creating one sends nothing.
#[derive(Clone)]
pub struct Lock {
    backend: Arc<dyn LockBackend>,
    spec: Arc<LockSpec>,
    backoff: Backoff,
}

impl fmt::Debug for Lock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lock")
            .field("name", &self.spec.name)
            .field("key", &self.spec.key)
            .field("owner", &redact_owner(Some(&self.spec.owner)))
            .field("ttl_secs", &self.spec.ttl_secs)
            .finish()
    }
}

impl Store {
    /// A lock named `name` held for `ttl_secs` (0 means 86400, as Laravel) with a fresh random
    /// owner. The name and ttl are checked here; nothing is sent.
    pub fn lock(&self, name: &str, ttl_secs: i64) -> Result<Lock> {
        self.make_lock(name, ttl_secs, None)
    }

    /// A lock with a given owner (e.g. one shared with a PHP process).
    pub fn lock_with_owner(
        &self,
        name: &str,
        ttl_secs: i64,
        owner: impl Into<String>,
    ) -> Result<Lock> {
        self.make_lock(name, ttl_secs, Some(owner.into()))
    }

    /// A handle on a lock someone already holds as `owner` (Laravel's `restoreLock`), to release or refresh it.
    pub fn restore_lock(&self, name: &str, owner: impl Into<String>) -> Result<Lock> {
        self.make_lock(name, 0, Some(owner.into()))
    }

    /// A lock with an optional owner (a fresh random one when `None`): what every front calls.
    pub fn make_lock(&self, name: &str, ttl_secs: i64, owner: Option<String>) -> Result<Lock> {
        let spec = LockSpec::new(self.config(), name, ttl_secs, owner)?;
        Ok(Lock {
            backend: Arc::new(self.table().clone()),
            spec: Arc::new(spec),
            backoff: self.config().backoff(),
        })
    }
}

impl Lock {
    /// The lock name as given.
    pub fn name(&self) -> &str {
        &self.spec.name
    }
    /// The table key (prefix and layout applied).
    pub fn key(&self) -> &str {
        &self.spec.key
    }
    /// This lock's owner token (share it to let another process release or refresh the lock).
    pub fn owner(&self) -> &str {
        &self.spec.owner
    }
    /// The owner as stored in the table (`N` for numeric owners, else PHP-serialized `S`).
    pub fn stored_owner(&self) -> &StoredValue {
        &self.spec.stored_owner
    }
    /// The ttl in seconds (0 was turned into 86400).
    pub fn ttl_secs(&self) -> i64 {
        self.spec.ttl_secs
    }
    /// The backoff `block()` waits with.
    pub fn backoff(&self) -> Backoff {
        self.backoff
    }
    /// The same lock with another backoff for `block()`; the backoff is checked.
    pub fn with_backoff(mut self, backoff: Backoff) -> Result<Lock> {
        backoff.validate()?;
        self.backoff = backoff;
        Ok(self)
    }

    /// Tries once to take the lock: one conditional write (Laravel's `add()`: the key is absent
    /// or `expires_at < now`). A failed condition is `Ok(Held(..))`, never an error.
    pub async fn acquire(&self) -> Result<AcquireOutcome> {
        let s = &*self.spec;
        for _ in 0..ACQUIRE_ATTEMPTS {
            let expires_at = item::expiry(self.backend.now(), s.ttl_secs)?;
            let holder = match self
                .backend
                .try_acquire(&s.key, &s.stored_owner, expires_at)
                .await?
            {
                Attempt::Written => {
                    tracing::debug!(lock = %s.name, expires_at, "acquired");
                    return Ok(AcquireOutcome::Acquired {
                        expires_at,
                        recovered: false,
                    });
                }
                Attempt::Vanished => continue, // released in between: try the write again
                Attempt::Taken(holder) => holder,
            };
            if holder.is(&s.stored_owner) {
                // Our own item: an earlier write of ours landed but we never saw its answer.
                let expires_at = holder.expires_at.unwrap_or(i64::MAX);
                tracing::debug!(lock = %s.name, expires_at, "acquired (recovered our earlier write)");
                return Ok(AcquireOutcome::Acquired {
                    expires_at,
                    recovered: true,
                });
            }
            if holder.expires_at.is_some_and(|e| e < self.backend.now()) {
                continue; // expired between the write and the read: the next write takes it over
            }
            tracing::debug!(lock = %s.name, holder = %holder, "held by another owner");
            return Ok(AcquireOutcome::Held(holder));
        }
        Ok(AcquireOutcome::Held(Holder {
            owner: None,
            value: None,
            expires_at: None,
        }))
    }

    /// Releases the lock if it is ours: ONE delete conditioned on the stored owner (`#value =
    /// :owner`, typed as stored). No read before the delete.
    pub async fn release(&self) -> Result<ReleaseOutcome> {
        let s = &*self.spec;
        let out = self.backend.release(&s.key, &s.stored_owner).await?;
        match &out {
            ReleaseOutcome::Released => tracing::debug!(lock = %s.name, "released"),
            ReleaseOutcome::NotHeld => {
                tracing::debug!(lock = %s.name, "not released: no lock item")
            }
            ReleaseOutcome::HeldByOther(h) => {
                tracing::debug!(lock = %s.name, holder = %h, "not released: held by another owner")
            }
        }
        Ok(out)
    }

    /// Deletes the lock whoever holds it (Laravel's `forceRelease`).
    pub async fn force_release(&self) -> Result<()> {
        self.backend.force_release(&self.spec.key).await
    }

    /// Extends our live lock to now + `ttl_secs` (the lock's own ttl when `None`; <= 0 means 86400),
    /// with Laravel 12.63's condition `attribute_exists(#key) AND #value = :owner AND #expires_at > :now`.
    /// False when the lock is not ours or has expired.
    pub async fn refresh(&self, ttl_secs: Option<i64>) -> Result<bool> {
        let ttl = match ttl_secs {
            None => self.spec.ttl_secs,
            Some(t) if t <= 0 => DEFAULT_LOCK_TTL_SECS,
            Some(t) => t,
        };
        let expires_at = item::expiry(self.backend.now(), ttl)?;
        self.backend
            .refresh(&self.spec.key, &self.spec.stored_owner, expires_at)
            .await
    }

    /// Who holds the lock now (consistent read); `None` when free or expired (`now >= expires_at`).
    pub async fn current_holder(&self) -> Result<Option<Holder>> {
        let holder = self.backend.read(&self.spec.key).await?;
        let now = self.backend.now();
        Ok(holder.filter(|h| !is_expired(h.expires_at, now)))
    }

    /// Whether anyone holds the lock now (consistent read).
    pub async fn is_locked(&self) -> Result<bool> {
        Ok(self.current_holder().await?.is_some())
    }

    /// Whether `owner` holds the lock now (consistent read).
    pub async fn is_owned_by(&self, owner: &str) -> Result<bool> {
        let stored = item::stored_owner(owner)?;
        Ok(self.current_holder().await?.is_some_and(|h| h.is(&stored)))
    }

    /// Whether this lock's owner holds the lock now (consistent read).
    pub async fn is_owned(&self) -> Result<bool> {
        Ok(self
            .current_holder()
            .await?
            .is_some_and(|h| h.is(&self.spec.stored_owner)))
    }
}

/// A fresh owner token: 16 characters of `[A-Za-z0-9]` from the OS-seeded CSPRNG (Laravel's `Str::random()` shape).
pub fn random_owner() -> String {
    Alphanumeric.sample_string(&mut rand::rng(), OWNER_LEN)
}
