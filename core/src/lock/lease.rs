//! Keeping a lease: the heartbeat that refreshes a held lock and says when the lease is lost,
//! and `with_lock`, which runs work under a lock and never drops a lost lease or a failed release.

use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures_util::FutureExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{Lock, ReleaseOutcome};
use crate::error::{Error, ErrorKind};

/// Shortest pause between two refreshes.
const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// Refreshes a held lock in the background (owner-conditioned, Laravel 12.63's refresh) until
/// stopped, and reports the lease lost when a refresh finds the lock gone or another owner's, or
/// when no refresh succeeded before the local lease deadline (a paused process, a network that
/// stays down). Dropping it stops it.
#[derive(Debug)]
pub struct Heartbeat {
    lost: watch::Receiver<Option<String>>,
    task: Option<JoinHandle<()>>,
}

impl Lock {
    /// Starts a heartbeat on the current tokio runtime: a refresh every `heartbeat_interval`
    /// (default a third of the ttl) extends the lease by the lock's ttl. The lock should be held
    /// (acquired by this handle); a handle without a lease reports it lost at once.
    pub fn heartbeat(&self) -> Heartbeat {
        let interval = self
            .spec
            .heartbeat_interval
            .unwrap_or_else(|| {
                Duration::from_secs(u64::try_from(self.spec.ttl_secs).unwrap_or(3)) / 3
            })
            .max(MIN_INTERVAL);
        let (tx, rx) = watch::channel(None);
        let lock = self.clone();
        let task = tokio::spawn(async move {
            let reason = beat(&lock, interval).await;
            tracing::warn!(lock = %lock.name(), reason = %reason, "lease lost");
            let _ = tx.send(Some(reason));
        });
        Heartbeat {
            lost: rx,
            task: Some(task),
        }
    }
}

/// Refreshes until the lease is lost; returns why.
async fn beat(lock: &Lock, interval: Duration) -> String {
    let mut wait = interval;
    loop {
        let Some(left) = lock.remaining().filter(|l| !l.is_zero()) else {
            return "the local lease deadline passed before a refresh succeeded (a paused \
                    process, or refreshes failing): another holder may have taken the lock"
                .into();
        };
        tokio::time::sleep(wait.min(left)).await;
        if lock.remaining().is_none_or(|l| l.is_zero()) {
            continue; // reported at the top
        }
        match lock.refresh(None).await {
            Ok(true) => wait = interval,
            Ok(false) => {
                return "a refresh found the lock no longer ours: it expired and was taken over, \
                        or was released or force-released"
                    .into()
            }
            Err(e) => {
                tracing::debug!(lock = %lock.name(), error = %e, "refresh failed; retrying");
                wait = (interval / 4).max(MIN_INTERVAL);
            }
        }
    }
}

impl Heartbeat {
    /// Whether the lease has been lost.
    pub fn is_lost(&self) -> bool {
        self.lost.borrow().is_some()
    }

    /// Why the lease was lost, if it was.
    pub fn reason(&self) -> Option<String> {
        self.lost.borrow().clone()
    }

    /// A receiver that turns `Some(reason)` when the lease is lost (for `select!`, or to hand to
    /// the work).
    pub fn subscribe(&self) -> watch::Receiver<Option<String>> {
        self.lost.clone()
    }

    /// Resolves with the reason when the lease is lost; never, while it is kept.
    pub async fn lost(&self) -> String {
        wait_lost(self.lost.clone()).await
    }

    /// Stops refreshing; the reason the lease was lost, if it was.
    pub async fn stop(mut self) -> Option<String> {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
        self.reason()
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

async fn wait_lost(mut rx: watch::Receiver<Option<String>>) -> String {
    loop {
        if let Some(r) = rx.borrow_and_update().clone() {
            return r;
        }
        if rx.changed().await.is_err() {
            // The heartbeat stopped without a loss: the lease was kept; wait forever.
            std::future::pending::<()>().await;
        }
    }
}

/// What the work of [`Lock::with_lock`] gets: the held lock and the lease-loss signal.
#[derive(Debug, Clone)]
pub struct Lease {
    lock: Lock,
    lost: watch::Receiver<Option<String>>,
}

impl Lease {
    /// The held lock.
    pub fn lock(&self) -> &Lock {
        &self.lock
    }
    /// The fencing token of this acquisition: send it with every write to the protected resource.
    pub fn fence(&self) -> Option<u64> {
        self.lock.fence()
    }
    /// How long the lease still lasts by the local monotonic clock.
    pub fn remaining(&self) -> Duration {
        self.lock.remaining().unwrap_or_default()
    }
    /// Whether the lease has been lost: stop touching the protected resource.
    pub fn is_lost(&self) -> bool {
        self.lost.borrow().is_some()
    }
    /// Resolves with the reason when the lease is lost (select on it next to the work).
    pub async fn lost(&self) -> String {
        wait_lost(self.lost.clone()).await
    }
}

/// Why [`Lock::with_lock`] failed, with the work's value when the work ran: the lock was not
/// acquired (no value), the lease was lost during the work, or the release failed.
pub struct WorkError<T> {
    /// What went wrong (`LockTimeout`, `LeaseLost`, a request error of the release, ...).
    pub error: Error,
    /// The work's value, when the work ran to the end.
    pub value: Option<T>,
}

impl<T> WorkError<T> {
    /// The kind of the error.
    pub fn kind(&self) -> ErrorKind {
        self.error.kind()
    }
    /// The work's value, if the work ran.
    pub fn into_value(self) -> Option<T> {
        self.value
    }
}

impl<T> fmt::Debug for WorkError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkError")
            .field("error", &self.error)
            .field("value", &self.value.as_ref().map(|_| ".."))
            .finish()
    }
}

impl<T> fmt::Display for WorkError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value {
            Some(_) => write!(f, "{} (the work finished; its value is kept)", self.error),
            None => write!(f, "{}", self.error),
        }
    }
}

impl<T> std::error::Error for WorkError<T> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// `?` in a function returning `ddblock::Result`: the error, without the work's value.
impl<T> From<WorkError<T>> for Error {
    fn from(e: WorkError<T>) -> Self {
        e.error
    }
}

impl<T> From<Error> for WorkError<T> {
    fn from(error: Error) -> Self {
        WorkError { error, value: None }
    }
}

impl Lock {
    /// Waits up to `timeout` for the lock, runs `work` with a heartbeat keeping the lease, and
    /// releases the lock when the work returns or panics (the panic then continues). A lease lost
    /// during the work ([`Error::LeaseLost`]: the heartbeat saw it, or the work did not end
    /// within the lease and the release found the lock no longer ours) and a failed release are
    /// errors, never dropped, and keep the work's value in [`WorkError::value`]. A release is a
    /// release: after work that ended within its lease, a release that finds the lock gone or
    /// already the next holder's (its first answer was lost, and the resend found the delete
    /// done) left nothing of ours behind, and the call succeeds. If this future is dropped, the guard releases the lock in the
    /// background (see [`crate::LockGuard`]).
    pub async fn with_lock<F, Fut, T>(self, timeout: Duration, work: F) -> Result<T, WorkError<T>>
    where
        F: FnOnce(Lease) -> Fut,
        Fut: Future<Output = T>,
    {
        let guard = self.block_guard(timeout).await?;
        let heartbeat = guard.lock().heartbeat();
        let lease = Lease {
            lock: guard.lock().clone(),
            lost: heartbeat.subscribe(),
        };
        let outcome = AssertUnwindSafe(work(lease)).catch_unwind().await;
        // Whether the work ended within the lease, by the local monotonic clock.
        let within = guard.lock().remaining().is_some_and(|r| !r.is_zero());
        let lost = heartbeat.stop().await;
        let name = guard.lock().name().to_owned();
        let released = guard.release().await;
        let value = match outcome {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(value) => value,
        };
        let error = match (lost, released) {
            (Some(reason), _) => Error::LeaseLost { name, reason },
            (None, Ok(ReleaseOutcome::Released)) => return Ok(value),
            (None, Ok(found)) if within => {
                tracing::debug!(lock = %name, found = ?found, "released: the work ended within its lease; the release found the lock no longer ours (a resend after a lost answer)");
                return Ok(value);
            }
            (None, Ok(ReleaseOutcome::NotHeld)) => Error::LeaseLost {
                name,
                reason: "the work outlasted the lease, and at release the lock was gone: it \
                         expired and was swept, or was force-released"
                    .into(),
            },
            (None, Ok(ReleaseOutcome::HeldByOther(h))) => Error::LeaseLost {
                name,
                reason: format!(
                    "the work outlasted the lease, and at release the lock was held by {h}: \
                     ours expired and was taken over"
                ),
            },
            (None, Err(e)) => e,
        };
        Err(WorkError {
            error,
            value: Some(value),
        })
    }
}
