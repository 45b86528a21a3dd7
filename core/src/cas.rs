//! Versioned compare-and-set on Laravel cache entries: read a value with its version (a strongly
//! consistent read, never an index), write only if the version is unchanged, and [`Store::update`],
//! which retries a read-modify-write with backoff and gives up with [`Error::Conflict`].
//!
//! The version lives in an attribute Laravel ignores (`ddblock_version`), so PHP reads and writes
//! the same entries. A Laravel `put` replaces the whole item without a version, so the next
//! compare-and-set against the version read before it fails instead of overwriting it. A lost
//! answer on the conditional write is recognised by a write token (see `format::versioned`).
//! Items: `docs/format.md#versioned-items`.

use std::sync::atomic::{AtomicU32, Ordering};

use rand::distr::{Alphanumeric, SampleString};

use crate::config::Backoff;
use crate::dynamo::CasWrite;
use crate::error::{Error, Result};
use crate::format::codec::{self, PhpValue};
use crate::format::item;
use crate::format::versioned::{next_version, Landed, Precondition, VersionedWrite};
use crate::store::Store;

pub use crate::format::versioned::{version_from_f64, version_from_i64, version_from_str};

/// Attempts of [`Store::update`] when none are given.
pub const DEFAULT_CAS_ATTEMPTS: u32 = 10;
/// Length of a write token.
const TOKEN_LEN: usize = 12;

/// A value read with its version.
#[derive(Debug, Clone, PartialEq)]
pub struct Versioned {
    /// The live value; `None` when missing or expired.
    pub value: Option<PhpValue>,
    /// The version: 0 when the item has none (no item, or one Laravel wrote), else the number
    /// ddblock's last write gave it.
    pub version: u64,
    /// What a write conditioned on this read requires (the version and the stored value).
    seen: Precondition,
}

impl Versioned {
    /// `value` as just written at `version` (what [`Store::update`] returns): a later
    /// [`Store::put_if_unchanged`] with it expects exactly this write.
    pub fn written(value: PhpValue, version: u64) -> Result<Versioned> {
        let stored = codec::encode_stored(&value)?;
        Ok(Versioned {
            value: Some(value),
            version,
            seen: Precondition::Seen(Some((version, Some(stored)))),
        })
    }
}

/// The answer to a conditional write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CasOutcome {
    /// Written; the item's new version.
    Written {
        /// The new version.
        version: u64,
    },
    /// Someone else wrote since the version was read: nothing written. Read again.
    Conflict,
}

impl CasOutcome {
    /// The new version, when written.
    pub fn version(&self) -> Option<u64> {
        match self {
            CasOutcome::Written { version } => Some(*version),
            CasOutcome::Conflict => None,
        }
    }
}

/// Options of [`Store::update_with`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CasOptions {
    attempts: u32,
    backoff: Option<Backoff>,
}

impl Default for CasOptions {
    fn default() -> Self {
        CasOptions::new()
    }
}

impl CasOptions {
    /// [`DEFAULT_CAS_ATTEMPTS`] attempts, the store's backoff between them.
    pub fn new() -> CasOptions {
        CasOptions {
            attempts: DEFAULT_CAS_ATTEMPTS,
            backoff: None,
        }
    }
    /// Read-modify-write rounds before giving up (at least 1).
    pub fn attempts(mut self, n: u32) -> Self {
        self.attempts = n;
        self
    }
    /// The wait between rounds (default: the store's backoff).
    pub fn backoff(mut self, b: Backoff) -> Self {
        self.backoff = Some(b);
        self
    }
}

/// The bounded retry of a read-modify-write loop: count a conflict, wait the backoff, or give up.
/// [`Store::update`] uses it; bindings whose callbacks run in their own language drive their loop
/// with it, so the bound, the backoff and the error are the core's.
#[derive(Debug)]
pub struct ConflictRetry {
    key: String,
    conflicts: AtomicU32,
    attempts: u32,
    backoff: Backoff,
}

impl ConflictRetry {
    /// After a conflict: waits before the next round, or fails with [`Error::Conflict`] once
    /// `attempts` rounds all conflicted.
    pub async fn after_conflict(&self) -> Result<()> {
        let n = self.conflicts.fetch_add(1, Ordering::SeqCst) + 1;
        if n >= self.attempts {
            return Err(Error::Conflict {
                key: self.key.clone(),
                message: format!(
                    "another writer changed the entry between our read and our write in each of \
                     {n} attempts; nothing was written. Retry later, allow more attempts, or \
                     write less often to this key"
                ),
            });
        }
        let delay = self.backoff.delay(n - 1, rand::random::<f64>());
        tokio::time::sleep(delay).await;
        Ok(())
    }
}

/// The system clock in microseconds: the first version of an item (see `next_version`).
fn now_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(1)
}

impl Store {
    /// `key`'s value and version: ONE strongly consistent GetItem.
    pub async fn get_versioned(&self, key: &str) -> Result<Versioned> {
        let k = self.cache_key(key)?;
        let Some(vi) = self.table().get_versioned(&k).await? else {
            return Ok(Versioned {
                value: None,
                version: 0,
                seen: Precondition::Seen(None),
            });
        };
        let version = vi.version.unwrap_or(0);
        Ok(Versioned {
            value: vi
                .item
                .live_value(key, self.config().expiration_attribute(), self.now())?,
            version,
            seen: Precondition::Seen(Some((version, vi.item.value.stored().cloned()))),
        })
    }

    /// Stores `value` for `ttl_secs` only if `key`'s version is still `version` (0: the item has
    /// no version, or there is none): ONE conditional write. The item is replaced as by Laravel's
    /// `put`, plus the new version.
    pub async fn put_if_version(
        &self,
        key: &str,
        value: &PhpValue,
        ttl_secs: i64,
        version: u64,
    ) -> Result<CasOutcome> {
        self.write_if(key, value, ttl_secs, &Precondition::Version(version))
            .await
    }

    /// Stores `value` only if `key` is as `seen` read it: the same version AND the same stored
    /// value, so an in-place change that keeps the version (Laravel's `increment`) fails it too.
    pub async fn put_if_unchanged(
        &self,
        key: &str,
        seen: &Versioned,
        value: &PhpValue,
        ttl_secs: i64,
    ) -> Result<CasOutcome> {
        self.write_if(key, value, ttl_secs, &seen.seen).await
    }

    /// Read-modify-write until it sticks: reads `key` (consistent), stores `f(value)` if nothing
    /// changed meanwhile ([`Store::put_if_unchanged`]), else waits the backoff and tries again;
    /// [`Error::Conflict`] after [`DEFAULT_CAS_ATTEMPTS`] rounds. `f` may run several times.
    pub async fn update<F>(&self, key: &str, ttl_secs: i64, f: F) -> Result<Versioned>
    where
        F: FnMut(Option<&PhpValue>) -> PhpValue,
    {
        self.update_with(key, ttl_secs, &CasOptions::new(), f).await
    }

    /// [`Store::update`] with chosen attempts and backoff.
    pub async fn update_with<F>(
        &self,
        key: &str,
        ttl_secs: i64,
        opts: &CasOptions,
        mut f: F,
    ) -> Result<Versioned>
    where
        F: FnMut(Option<&PhpValue>) -> PhpValue,
    {
        self.update_by(key, ttl_secs, opts, |v| {
            std::future::ready(Ok::<_, Error>(f(v.as_ref())))
        })
        .await
    }

    /// [`Store::update_with`] with a function that may fail or wait (a front's callback: a
    /// Python callable, a JavaScript function returning a promise): its error ends the update
    /// as it is, nothing written. The one read-modify-write loop of every front.
    pub async fn update_by<F, Fut, E>(
        &self,
        key: &str,
        ttl_secs: i64,
        opts: &CasOptions,
        mut f: F,
    ) -> std::result::Result<Versioned, E>
    where
        F: FnMut(Option<PhpValue>) -> Fut,
        Fut: std::future::Future<Output = std::result::Result<PhpValue, E>>,
        E: From<Error>,
    {
        let retry = self.conflict_retry(key, opts)?;
        item::expiry(self.now(), ttl_secs)?; // a bad ttl fails before the first read
        loop {
            let current = self.get_versioned(key).await?;
            let value = f(current.value.clone()).await?;
            match self
                .put_if_unchanged(key, &current, &value, ttl_secs)
                .await?
            {
                CasOutcome::Written { version } => return Ok(Versioned::written(value, version)?),
                CasOutcome::Conflict => retry.after_conflict().await?,
            }
        }
    }

    /// The bounded retry of a read-modify-write loop on `key` (attempts at least 1).
    pub fn conflict_retry(&self, key: &str, opts: &CasOptions) -> Result<ConflictRetry> {
        self.cache_key(key)?;
        if opts.attempts == 0 {
            return Err(Error::Config(
                "attempts must be at least 1 (one read-modify-write round)".into(),
            ));
        }
        let backoff = opts.backoff.unwrap_or_else(|| self.config().backoff());
        backoff.validate()?;
        Ok(ConflictRetry {
            key: key.to_owned(),
            conflicts: AtomicU32::new(0),
            attempts: opts.attempts,
            backoff,
        })
    }

    async fn write_if(
        &self,
        key: &str,
        value: &PhpValue,
        ttl_secs: i64,
        pre: &Precondition,
    ) -> Result<CasOutcome> {
        let k = self.cache_key(key)?;
        let stored = codec::encode_stored(value)?;
        let expires_at = item::expiry(self.now(), ttl_secs)?;
        let version = next_version(pre.version(), now_micros());
        let token = Alphanumeric.sample_string(&mut rand::rng(), TOKEN_LEN);
        let table = self.table();
        let old = match table
            .put_versioned(&VersionedWrite {
                key: &k,
                value: &stored,
                expires_at,
                pre,
                version,
                token: &token,
            })
            .await?
        {
            CasWrite::Written => return Ok(CasOutcome::Written { version }),
            // Only this request's one attempt ran: nothing of ours landed.
            CasWrite::Refused { retried: false, .. } => return Ok(CasOutcome::Conflict),
            CasWrite::Refused { old: Some(old), .. } => Some(*old),
            CasWrite::Refused { old: None, .. } if table.empty_old_means_absent() => None,
            CasWrite::Refused { old: None, .. } => table.get_versioned(&k).await?,
        };
        // An earlier attempt got no answer and the SDK's retry failed the condition: was the
        // item changed by that attempt of ours, or by someone else?
        match old.map_or(Landed::No, |o| o.landed(version, &token)) {
            Landed::Yes => Ok(CasOutcome::Written { version }),
            Landed::No => Ok(CasOutcome::Conflict),
            Landed::Unknown => Err(Error::Transport {
                operation: if pre.version() == 0 {
                    "PutItem"
                } else {
                    "UpdateItem"
                },
                endpoint: self
                    .config()
                    .endpoint()
                    .unwrap_or("the default AWS endpoint")
                    .to_owned(),
                sent: true,
                message: format!(
                    "the answer to the write of version {version} of {key:?} was lost, and by \
                     the SDK's retry other writers had moved the entry on too far to tell whether \
                     it landed; read it again before writing"
                ),
            }),
        }
    }
}
