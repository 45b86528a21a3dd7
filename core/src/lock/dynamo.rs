//! The DynamoDB lock backend: Laravel's lock item, taken with `add()`'s conditional PutItem and
//! released with ONE owner-conditioned DeleteItem.

use futures_util::future::BoxFuture;
use futures_util::FutureExt;

use super::backend::{Attempt, LockBackend};
use crate::dynamo::{DeleteIfValue, PutIfFree, Table};
use crate::error::Result;
use crate::holder::{Holder, StoredValue};
use crate::lock::ReleaseOutcome;

impl LockBackend for Table {
    fn now(&self) -> i64 {
        Table::now(self)
    }

    fn try_acquire<'a>(
        &'a self,
        key: &'a str,
        owner: &'a StoredValue,
        expires_at: i64,
    ) -> BoxFuture<'a, Result<Attempt>> {
        async move {
            match self.put_if_free(key, owner, expires_at).await? {
                PutIfFree::Written => Ok(Attempt::Written),
                PutIfFree::Exists(Some(old)) => Ok(Attempt::Taken(old.holder())),
                // The server ignored ALL_OLD (dynalite): one consistent read tells who holds it.
                PutIfFree::Exists(None) => Ok(match self.get(key, true).await? {
                    Some(item) => Attempt::Taken(item.holder()),
                    None => Attempt::Vanished,
                }),
            }
        }
        .boxed()
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
            Ok(ReleaseOutcome::HeldByOther(old.holder()))
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
