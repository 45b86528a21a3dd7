//! Waiting for a lock (`acquire_within`, `block`), running work under it (`with_lock`), and the
//! guard that releases it.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

use futures_util::FutureExt;

use super::{AcquireOutcome, Lock, ReleaseOutcome};
use crate::error::{Error, Result};

impl Lock {
    /// Takes the lock, waiting up to `timeout` for it: `None` tries once; `Some(d)` retries with
    /// the lock's backoff (capped exponential with jitter) until acquired or `d` has passed, and
    /// then returns the last `Held` answer. The one "acquire with wait" of every front.
    pub async fn acquire_within(&self, timeout: Option<Duration>) -> Result<AcquireOutcome> {
        let start = Instant::now();
        let mut attempt = 0u32;
        loop {
            let out = self.acquire().await?;
            let Some(timeout) = timeout else {
                return Ok(out);
            };
            if out.is_acquired() {
                return Ok(out);
            }
            let waited = start.elapsed();
            if waited >= timeout {
                return Ok(out);
            }
            let delay = self.backoff.delay(attempt, rand::random::<f64>());
            tokio::time::sleep(delay.min(timeout - waited)).await;
            attempt = attempt.saturating_add(1);
        }
    }

    /// Waits up to `timeout` for the lock (Laravel's `block`); returns the expiry, or
    /// [`Error::LockTimeout`] naming the last holder.
    pub async fn block(&self, timeout: Duration) -> Result<i64> {
        let start = Instant::now();
        match self.acquire_within(Some(timeout)).await? {
            AcquireOutcome::Acquired { expires_at, .. } => Ok(expires_at),
            AcquireOutcome::Held(holder) => Err(Error::LockTimeout {
                name: self.spec.name.clone(),
                waited: start.elapsed(),
                holder: Some(Box::new(holder)),
            }),
        }
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
                        tracing::warn!(lock = %lock.name(), error = %e, "release on drop failed; the lock expires at its ttl");
                    }
                });
            } else {
                tracing::warn!(lock = %lock.name(), "LockGuard dropped outside a tokio runtime; the lock expires at its ttl");
            }
        }
    }
}
