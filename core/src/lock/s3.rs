//! The S3 lock backend: one object per lock, created with `If-None-Match: *`, taken over (once
//! expired) and refreshed with `If-Match: <ETag>`, released with a DeleteObject `If-Match:
//! <ETag>` of the version read (or, where a server cannot do that, a conditional overwrite to a
//! released object). S3 reads are strongly consistent, so a read followed by a change conditioned
//! on its ETag never acts on a stale view. The lock rules (`lock/`) are the same as for DynamoDB.

use futures_util::future::BoxFuture;
use futures_util::FutureExt;

use super::backend::{Attempt, LockBackend, Release, Take};
use crate::config::StoreConfig;
use crate::error::{ErrorKind, Result};
use crate::format::item::is_expired;
use crate::holder::{Holder, StoredValue};
use crate::lock::ReleaseOutcome;
use crate::s3::{Bucket, Delete, LockObject, Owner, Put, Stored};

/// Read-then-change rounds when the object keeps changing between the two.
const ROUNDS: usize = 3;

/// A released object (the overwrite release): no owner, expired since 1970, the fence kept so
/// the next holder's token still grows.
fn released(fence: u64) -> LockObject {
    LockObject {
        owner: Owner::S(String::new()),
        expires_at: 0,
        attempt: String::new(),
        fence,
    }
}

impl Bucket {
    /// Ends `cur` (ours): its conditional delete, or the overwrite where that cannot be had.
    async fn end(&self, key: &str, cur: &Stored) -> Result<bool> {
        if !self.config().s3_release_by_overwrite() {
            match self.delete_if(key, &cur.etag).await? {
                Delete::Deleted => return Ok(true),
                Delete::Refused => return Ok(false),
                Delete::Unsupported => {
                    tracing::warn!(name: "ddblock.s3.conditional_delete_refused", bucket = %self.name(), "the server refuses conditional deletes; releasing by a conditional overwrite");
                }
            }
        }
        let gone = released(cur.object.fence);
        Ok(matches!(
            self.replace(key, &gone, &cur.etag).await?,
            Put::Written
        ))
    }
}

impl LockBackend for Bucket {
    fn config(&self) -> &StoreConfig {
        Bucket::config(self)
    }

    fn shared_with_laravel(&self) -> bool {
        false
    }

    fn try_acquire<'a>(&'a self, t: Take<'a>) -> BoxFuture<'a, Result<Attempt>> {
        async move {
            let mine = LockObject {
                owner: Owner::of(t.owner),
                expires_at: t.expires_at,
                attempt: t.attempt.to_owned(),
                fence: t.fence_base.saturating_add(1),
            };
            if let Put::Written = self.create(t.key, &mine).await? {
                return Ok(Attempt::Written {
                    fence: Some(mine.fence),
                });
            }
            let Some(cur) = self.read(t.key).await? else {
                return Ok(Attempt::Vanished);
            };
            if cur.object.expires_at < t.cutoff {
                // Expired (or released by overwrite): replace exactly the version read.
                let next = LockObject {
                    fence: cur.object.fence.saturating_add(1),
                    ..mine
                };
                return Ok(match self.replace(t.key, &next, &cur.etag).await? {
                    Put::Written => Attempt::Written {
                        fence: Some(next.fence),
                    },
                    // Someone changed it first (or our own replace landed unanswered): look again.
                    Put::Refused => Attempt::Vanished,
                });
            }
            Ok(Attempt::Taken {
                holder: cur.object.holder(),
                attempt: Some(cur.object.attempt),
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
            match self.read(key).await? {
                Some(cur) if cur.object.attempt == attempt && cur.object.is_owned_by(owner) => {
                    self.end(key, &cur).await
                }
                _ => Ok(false),
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
            for round in 0..ROUNDS {
                // The first look precedes any delete of ours: what it finds was not our doing.
                let found = |outcome| Release::Found {
                    outcome,
                    first: round == 0,
                };
                let Some(cur) = self.read(key).await? else {
                    return Ok(found(ReleaseOutcome::NotHeld));
                };
                if !cur.object.is_owned_by(owner) {
                    let holder = cur.object.holder();
                    if is_expired(holder.expires_at, self.now()) {
                        return Ok(found(ReleaseOutcome::NotHeld));
                    }
                    return Ok(found(ReleaseOutcome::HeldByOther(holder)));
                }
                if self.end(key, &cur).await? {
                    return Ok(found(ReleaseOutcome::Released));
                }
                // Changed between the read and the delete (a refresh, a takeover): look again.
            }
            Ok(Release::Found {
                outcome: ReleaseOutcome::NotHeld,
                first: false,
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
            for _ in 0..ROUNDS {
                let Some(cur) = self.read(key).await? else {
                    return Ok(false);
                };
                // Laravel's refresh condition: ours and live (`#expires_at > :now`).
                if !cur.object.is_owned_by(owner) || cur.object.expires_at <= self.now() {
                    return Ok(false);
                }
                let next = LockObject {
                    expires_at,
                    ..cur.object.clone()
                };
                if let Put::Written = self.replace(key, &next, &cur.etag).await? {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        .boxed()
    }

    fn read<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Holder>>> {
        async move { Ok(Bucket::read(self, key).await?.map(|s| s.object.holder())) }.boxed()
    }

    fn force_release<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool>> {
        async move {
            // S3's DeleteObject answers the same whether there was an object: the read tells (an
            // object that is not a lock object is there too, and goes).
            let there = match Bucket::read(self, key).await {
                Ok(found) => found.is_some(),
                Err(e) if e.kind() == ErrorKind::Codec => true,
                Err(e) => return Err(e),
            };
            self.delete(key).await?;
            Ok(there)
        }
        .boxed()
    }
}
