//! Waiting for a lock (`acquire_within`, `block`) and the guard that releases it.

use std::time::{Duration, Instant};

use super::{AcquireOutcome, Lock, ReleaseOutcome};
use crate::error::{Error, Result};

impl Lock {
    /// Takes the lock, waiting up to `timeout` for it: `None` tries once; `Some(d)` retries with
    /// the lock's backoff (capped exponential with jitter) until acquired or `d` has passed, and
    /// then returns the last `Held` answer. Every request ends by the deadline plus one attempt
    /// timeout. The one "acquire with wait" of every front.
    pub async fn acquire_within(&self, timeout: Option<Duration>) -> Result<AcquireOutcome> {
        let Some(timeout) = timeout else {
            return self.acquire().await;
        };
        let start = Instant::now();
        // `None`: a wait too long to represent (Duration::MAX, "no limit").
        let deadline = start.checked_add(timeout);
        let mut attempt = 0u32;
        loop {
            let out = self.acquire_by(deadline).await?;
            let left = match deadline {
                Some(d) => d.saturating_duration_since(Instant::now()),
                None => Duration::MAX,
            };
            if out.is_acquired() || left.is_zero() {
                return Ok(out);
            }
            let delay = self.backoff.delay(attempt, rand::random::<f64>());
            tokio::time::sleep(delay.min(left)).await;
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
