//! The DynamoDB lock backend: Laravel's lock item, taken with `add()`'s condition (as one
//! UpdateItem that also keeps ddblock's attempt id and fencing token) and released with ONE
//! owner-conditioned DeleteItem.

use futures_util::future::BoxFuture;
use futures_util::FutureExt;

use super::backend::{Attempt, LockBackend, Take};
use crate::dynamo::{DeleteIfValue, Table, TakeLock};
use crate::error::Result;
use crate::format::item::is_expired;
use crate::holder::{Holder, StoredValue};
use crate::lock::ReleaseOutcome;

impl LockBackend for Table {
    fn now(&self) -> i64 {
        Table::now(self)
    }

    fn try_acquire<'a>(&'a self, t: Take<'a>) -> BoxFuture<'a, Result<Attempt>> {
        async move {
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
        Table::delete_attempt(self, key, owner, attempt).boxed()
    }

    fn release<'a>(
        &'a self,
        key: &'a str,
        owner: &'a StoredValue,
    ) -> BoxFuture<'a, Result<ReleaseOutcome>> {
        async move {
            let old = match self.delete_if_value(key, owner).await? {
                DeleteIfValue::Deleted => return Ok(ReleaseOutcome::Released),
                DeleteIfValue::NotDeleted(Some(old)) => old,
                DeleteIfValue::NotDeleted(None) if self.empty_old_means_absent() => {
                    return Ok(ReleaseOutcome::NotHeld)
                }
                // A server that may ignore ALL_OLD: one consistent read tells "gone" from
                // "someone else's" (failure path only).
                DeleteIfValue::NotDeleted(None) => match self.get(key, true).await? {
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
        .boxed()
    }

    fn refresh<'a>(
        &'a self,
        key: &'a str,
        owner: &'a StoredValue,
        expires_at: i64,
    ) -> BoxFuture<'a, Result<bool>> {
        self.refresh_if_value(key, owner, expires_at).boxed()
    }

    fn read<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Holder>>> {
        async move { Ok(self.get(key, true).await?.map(|i| i.holder())) }.boxed()
    }

    fn force_release<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<()>> {
        self.delete(key).boxed()
    }
}
