//! What the lock rules need from storage, as a trait, so a second backend (S3) can sit behind the
//! same rules without branches in `lock/`. The DynamoDB backend is in `lock/dynamo.rs`.

use futures_util::future::BoxFuture;
use std::fmt;

use crate::config::StoreConfig;
use crate::error::{Error, Result};
use crate::holder::{Holder, StoredValue};
use crate::lock::ReleaseOutcome;

/// One conditional create-or-take-over of a lock (its item is the table format's).
pub(crate) use crate::format::item::Take;

/// The answer to one [`Take`].
#[derive(Debug)]
pub(crate) enum Attempt {
    /// Our item is written, with this fencing token.
    Written {
        /// The fencing token, when the backend keeps one.
        fence: Option<u64>,
    },
    /// A live item is there: its holder, and the id of the attempt that wrote it (equal to ours
    /// when an earlier send of this very attempt landed and its answer was lost).
    Taken {
        /// Who holds it.
        holder: Holder,
        /// The attempt id stored with it, if any.
        attempt: Option<String>,
    },
    /// The condition failed but the item was gone when looked at: try again.
    Vanished,
}

/// The answer to one release.
#[derive(Debug)]
pub(crate) enum Release {
    /// What the release found. `first`: its first send found it (no earlier send of it may have
    /// landed), so a lock found gone or another owner's was not this release's doing.
    Found {
        /// What it found.
        outcome: ReleaseOutcome,
        /// The first send found it.
        first: bool,
    },
    /// No answer settled it: it failed after a send that may have landed unanswered (its
    /// error). One consistent read tells (`Lock::release`).
    Unsettled(Error),
}

/// Storage for locks: every method is one conditional request (plus, where a server cannot say
/// who holds the lock in its answer, one consistent read on that failure path only).
pub(crate) trait LockBackend: Send + Sync + fmt::Debug {
    /// The configuration (its clock: the Unix time of expiries, and a waiter's `since` in ms).
    fn config(&self) -> &StoreConfig;

    /// The current Unix time by the configured clock.
    fn now(&self) -> i64 {
        self.config().clock.now()
    }

    /// The current Unix time in milliseconds by the configured clock (a waiter's `since`).
    fn now_millis(&self) -> i64 {
        self.config().clock.now_millis()
    }

    /// Whether stock Laravel can share these locks (its `block()` then tries every 250 ms, and
    /// ddblock's waiters look as often at a holder without a stamp: `fair.rs`).
    fn shared_with_laravel(&self) -> bool;

    /// Writes the lock item if the key is free or its lock expired before `take.cutoff`.
    fn try_acquire<'a>(&'a self, take: Take<'a>) -> BoxFuture<'a, Result<Attempt>>;

    /// Deletes the lock item only if it is attempt `attempt`'s write (the clean-up of an attempt
    /// whose outcome is unknown, or that was cancelled); true when it deleted it.
    fn delete_attempt<'a>(
        &'a self,
        key: &'a str,
        owner: &'a StoredValue,
        attempt: &'a str,
    ) -> BoxFuture<'a, Result<bool>>;

    /// Deletes the lock item only if `owner` holds it.
    fn release<'a>(
        &'a self,
        key: &'a str,
        owner: &'a StoredValue,
    ) -> BoxFuture<'a, Result<Release>>;

    /// Moves the expiry of a live lock `owner` holds; false when not held by `owner` or expired.
    fn refresh<'a>(
        &'a self,
        key: &'a str,
        owner: &'a StoredValue,
        expires_at: i64,
    ) -> BoxFuture<'a, Result<bool>>;

    /// Who holds the lock item (strongly consistent), expired or not; `None` when there is none.
    fn read<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Holder>>>;

    /// A waiter's look at the lock while it waits: who holds it, as [`LockBackend::read`], but
    /// it decides nothing (the acquire write does), so a backend may answer from a replica that
    /// lags (DynamoDB: an eventually consistent read, half a read unit). A stale look costs time
    /// (a lock seen held that is free: the next look or a wake sees it) or one refused write
    /// (seen free while held: the write's answer names the holder), never the lock.
    fn look<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Holder>>> {
        self.read(key)
    }

    /// Deletes the lock item whoever holds it; true when there was one.
    fn force_release<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool>>;
}
