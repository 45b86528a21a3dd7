//! Waiting for a lock (`acquire_within`, `block`) and the guard that releases it.

use std::time::{Duration, Instant};

use super::{waiters, AcquireOutcome, Lock, ReleaseOutcome};
use crate::error::{Error, Result};
use crate::holder::Holder;

impl Lock {
    /// Takes the lock, waiting up to `timeout` for it: `None` or a zero wait tries once (as
    /// [`Lock::acquire`]: one resend after a lost answer, no read first); `Some(d)` tries, and
    /// while the lock is held watches it with consistent reads (pauses from the lock's backoff,
    /// capped exponential with jitter, and never past the holder's expiry plus the margin) and
    /// writes again only when it looks free, until acquired or `d` has passed; then returns the
    /// last `Held` answer. Waiters of this process on one key take turns: one watches, the
    /// others queue (first come, first served); a release in this process wakes the watcher at
    /// once; a waiter sends nothing to learn that a handle of this process holds the lock, and
    /// looks before it writes when this process saw the lock held in the last 10 s. Every
    /// request ends by the deadline plus one attempt timeout. The one "acquire with wait" of
    /// every front.
    pub async fn acquire_within(&self, timeout: Option<Duration>) -> Result<AcquireOutcome> {
        // A wait of zero is "try once", the same path as no wait at all: a lost answer is sent
        // again (a zero deadline would allow no resend) and nothing is read before the write.
        let Some(timeout) = timeout.filter(|t| !t.is_zero()) else {
            return self.acquire().await;
        };
        // `None`: a wait too long to represent (Duration::MAX, "no limit").
        let deadline = Instant::now().checked_add(timeout);
        let queue = waiters::join(&self.spec.wait_key);
        let _turn = match deadline {
            None => queue.turn().await,
            Some(d) => match tokio::time::timeout_at(d.into(), queue.turn()).await {
                Ok(turn) => turn,
                // Other waiters of this process had the lock all along: one last try answers.
                Err(_) => return self.acquire_by(deadline).await,
            },
        };
        // A handle of this process holds it: no request needed to learn that, watch. This
        // process saw it held lately: look before writing (a read costs a fifth of a write).
        let local = queue.held_locally(self.backend.now());
        let mut look_now = !local && queue.recently_contended();
        let mut write = !local && !look_now;
        let mut look = 0u32;
        let mut holder = None;
        loop {
            if write {
                match self.acquire_by(deadline).await? {
                    AcquireOutcome::Held(h) if !left(deadline).is_zero() => {
                        queue.seen_held();
                        holder = Some(h);
                    }
                    out => return Ok(out),
                }
            }
            write = true;
            // Watch until the lock looks free, a local release says it is, or time is up.
            loop {
                if !look_now {
                    let pause = self
                        .backoff
                        .delay(look, rand::random::<f64>())
                        .min(left(deadline))
                        .min(self.until_takeover(holder.as_ref()));
                    look = look.saturating_add(1);
                    tokio::select! {
                        _ = tokio::time::sleep(pause) => {}
                        _ = queue.released() => break,
                    }
                    if left(deadline).is_zero() {
                        return self.timed_out(holder).await;
                    }
                }
                look_now = false;
                let read = self.backend.read(&self.spec.key);
                let seen = match deadline {
                    Some(d) => match tokio::time::timeout_at(d.into(), read).await {
                        Ok(seen) => seen?,
                        Err(_) => return self.timed_out(holder).await,
                    },
                    None => read.await?,
                };
                match seen {
                    Some(h) if !self.can_take_over(&h) => {
                        queue.seen_held();
                        holder = Some(h);
                    }
                    _ => break,
                }
            }
        }
    }

    /// Whether an acquire write would take over `holder`'s item now (`expires_at < now - margin`).
    fn can_take_over(&self, holder: &Holder) -> bool {
        let margin = i64::try_from(self.spec.margin.as_secs()).unwrap_or(i64::MAX);
        holder
            .expires_at
            .is_some_and(|e| e < self.backend.now().saturating_sub(margin))
    }

    /// How long until `holder`'s item can be taken over (its expiry plus the margin, plus one
    /// second for the whole-second clock); unbounded when nobody is known.
    fn until_takeover(&self, holder: Option<&Holder>) -> Duration {
        let Some(expires_at) = holder.and_then(|h| h.expires_at) else {
            return Duration::MAX;
        };
        let margin = i64::try_from(self.spec.margin.as_secs()).unwrap_or(i64::MAX);
        let secs = expires_at
            .saturating_add(margin)
            .saturating_add(1)
            .saturating_sub(self.backend.now());
        Duration::from_secs(u64::try_from(secs).unwrap_or(0))
    }

    /// The answer of a wait whose deadline passed while watching: the last holder seen.
    async fn timed_out(&self, holder: Option<Holder>) -> Result<AcquireOutcome> {
        match holder {
            Some(h) => Ok(AcquireOutcome::Held(h)),
            None => self.acquire_by(Some(Instant::now())).await,
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

/// Time left until `deadline` (unbounded without one).
fn left(deadline: Option<Instant>) -> Duration {
    deadline.map_or(Duration::MAX, |d| {
        d.saturating_duration_since(Instant::now())
    })
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
