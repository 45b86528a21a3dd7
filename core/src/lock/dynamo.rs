//! The DynamoDB lock backend: Laravel's lock item, taken with `add()`'s condition (as one
//! UpdateItem that also keeps ddblock's attempt id and fencing token) and released with ONE
//! owner-conditioned DeleteItem, or, in keep-fence mode, ONE owner-conditioned UpdateItem that
//! expires the item and keeps its fencing token. Every operation first checks, once per process,
//! that the table is not a global table with eventual consistency (`dynamo/regions.rs`).

use futures_util::future::BoxFuture;
use futures_util::FutureExt;

use super::backend::{Attempt, LockBackend, Release, Take};
use crate::config::{ReleaseMode, StoreConfig};
use crate::dynamo::{DeleteIfValue, Table, TakeLock};
use crate::error::Result;
use crate::format::item::{is_expired, released_expiry, ItemView};
use crate::holder::{Holder, StoredValue};
use crate::lock::ReleaseOutcome;

impl LockBackend for Table {
    fn config(&self) -> &StoreConfig {
        Table::config(self)
    }

    fn shared_with_laravel(&self) -> bool {
        true
    }

    fn try_acquire<'a>(&'a self, t: Take<'a>) -> BoxFuture<'a, Result<Attempt>> {
        async move {
            self.check_regions().await?;
            let answer = self.take_lock(&t).await?;
            let old = match answer {
                TakeLock::Written { fence } => return Ok(Attempt::Written { fence }),
                TakeLock::Exists(Some(old)) => old,
                // The server ignored ALL_OLD (dynalite): one consistent read tells who holds it.
                TakeLock::Exists(None) => match self.get(t.key, true).await? {
                    Some(item) => item,
                    None => return Ok(Attempt::Vanished),
                },
            };
            Ok(Attempt::Taken {
                holder: old.holder(),
                attempt: old.attempt,
            })
        }
        .boxed()
    }

    fn delete_attempt<'a>(
        &'a self,
        key: &'a str,
        owner: &'a StoredValue,
        attempt: &'a str,
    ) -> BoxFuture<'a, Result<bool>> {
        async move {
            match self.config().release_mode() {
                ReleaseMode::Delete => Table::delete_attempt(self, key, owner, attempt).await,
                // The clean-up keeps the fence too: a deleted item would let the next acquirer
                // restart it from a clock that may be behind (found by compat-tests/model).
                ReleaseMode::KeepFence => {
                    let expires_at = released_expiry(self.now());
                    self.expire_attempt(key, owner, attempt, expires_at).await
                }
            }
        }
        .boxed()
    }

    fn release<'a>(
        &'a self,
        key: &'a str,
        owner: &'a StoredValue,
    ) -> BoxFuture<'a, Result<Release>> {
        async move {
            self.check_regions().await?;
            let answer = match self.config().release_mode() {
                ReleaseMode::Delete => self.delete_if_value(key, owner).await?,
                ReleaseMode::KeepFence => {
                    let expires_at = released_expiry(self.now());
                    self.expire_if_value(key, owner, expires_at).await?
                }
            };
            let (old, resent) = match answer {
                DeleteIfValue::Deleted => {
                    return Ok(Release::Found {
                        outcome: ReleaseOutcome::Released,
                        first: true,
                    })
                }
                DeleteIfValue::Unsettled(e) => return Ok(Release::Unsettled(e)),
                DeleteIfValue::NotDeleted { old, resent } => (old, resent),
            };
            Ok(Release::Found {
                outcome: self.refused_release(key, old).await?,
                first: !resent,
            })
        }
        .boxed()
    }

    fn refresh<'a>(
        &'a self,
        key: &'a str,
        owner: &'a StoredValue,
        expires_at: i64,
    ) -> BoxFuture<'a, Result<bool>> {
        async move {
            self.check_regions().await?;
            self.refresh_if_value(key, owner, expires_at).await
        }
        .boxed()
    }

    fn read<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Holder>>> {
        async move {
            self.check_regions().await?;
            Ok(self.get(key, true).await?.map(|i| i.holder()))
        }
        .boxed()
    }

    fn look<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Holder>>> {
        async move {
            self.check_regions().await?;
            // Eventually consistent: half the price of `read`'s consistent read. Safe for a look
            // only: a release is settled, and `holder()`/`is_locked()` answer, by `read`.
            Ok(self.get(key, false).await?.map(|i| i.holder()))
        }
        .boxed()
    }

    fn force_release<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool>> {
        async move {
            self.check_regions().await?;
            match self.config().release_mode() {
                ReleaseMode::Delete => self.delete_any(key).await,
                ReleaseMode::KeepFence => self.expire_any(key, released_expiry(self.now())).await,
            }
        }
        .boxed()
    }
}

impl Table {
    /// What a refused release found, from the item the refusal sent back (`old`). The same
    /// answers in both release modes: a kept item has no owner and has expired, so a resend
    /// after a lost answer, or a second release, finds it "not held".
    async fn refused_release(&self, key: &str, old: Option<ItemView>) -> Result<ReleaseOutcome> {
        let old = match old {
            Some(old) => old,
            None if self.empty_old_means_absent() => return Ok(ReleaseOutcome::NotHeld),
            // A server that may ignore ALL_OLD: one consistent read tells "gone" from
            // "someone else's" (failure path only).
            None => match self.get(key, true).await? {
                Some(item) => item,
                None => return Ok(ReleaseOutcome::NotHeld),
            },
        };
        let holder = old.holder();
        // An expired item held by nobody live: nothing to name.
        if is_expired(holder.expires_at, self.now()) {
            return Ok(ReleaseOutcome::NotHeld);
        }
        Ok(ReleaseOutcome::HeldByOther(holder))
    }
}
