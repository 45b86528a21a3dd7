//! One acquire attempt: a conditional write tagged with the attempt's id, so a retry of the same
//! attempt recognises its own earlier write (a lost answer) while another handle or process with
//! the same owner does not; writes whose outcome is unknown are sent again while the deadline
//! allows and cleaned up when it does not; a cancelled attempt cleans up after itself.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::backend::{Attempt, LockBackend, Take};
use super::{random_owner, AcquireOutcome, Lock, LockSpec};
use crate::aws::fault::refused_before_landing;
use crate::error::{Error, Result};
use crate::format::item;
use crate::holder::{Holder, StoredValue};
use crate::{telemetry, time};

/// Writes per attempt when the item changes hands under us (vanished, or expired between the
/// write and the look), or a resend after an unknown outcome when there is no deadline.
const WRITES_PER_ATTEMPT: u32 = 3;
/// First pause before resending a write whose outcome is unknown.
const RESEND_PAUSE: Duration = Duration::from_millis(50);
/// First pause before retrying a write that was refused before it could land (throttling).
const REFUSED_PAUSE: Duration = Duration::from_millis(50);

impl Lock {
    /// Tries once to take the lock: one conditional write (Laravel's `add()` condition: the key is
    /// absent or `expires_at < now - margin`). A failed condition is `Ok(Held(..))`, never an
    /// error. A write whose answer was lost is sent again; if its outcome is still unknown, this
    /// attempt's write is deleted again (if it landed) and [`Error::OutcomeUnknown`] says so.
    pub async fn acquire(&self) -> Result<AcquireOutcome> {
        self.observed_acquire(false, self.acquire_by(None, None))
            .await
    }

    /// One attempt whose requests end by `deadline` (plus one attempt timeout); a waiting
    /// acquisition passes when it began waiting (`since_ms`, written as `ddblock_since`).
    pub(crate) async fn acquire_by(
        &self,
        deadline: Option<Instant>,
        since_ms: Option<i64>,
    ) -> Result<AcquireOutcome> {
        let s = &*self.spec;
        let (attempt, fixed_base) = match &self.fixed_attempt {
            Some(f) => (f.id.clone(), Some(f.fence_base)),
            None => (random_owner(), None),
        };
        let margin = i64::try_from(s.margin.as_secs()).unwrap_or(i64::MAX);
        let mut guard = AttemptGuard::new(self.backend.clone(), s, &attempt);
        let mut last_holder: Option<Holder> = None;
        let mut unknown: Option<Error> = None;
        let mut writes = 0u32;
        let mut pause = RESEND_PAUSE;
        // The acquire write is sent without the SDK's retries (one try per call), so every
        // try's outcome is seen here: tries refused before they could land are retried like
        // the SDK would, and a try that may have landed is never hidden behind a later refusal.
        let mut refused = 0u32;
        let mut refused_pause = REFUSED_PAUSE;
        let failure = loop {
            writes += 1;
            let now = self.backend.now();
            let expires_at = item::expiry(now, s.ttl_secs)?;
            let sent = Instant::now();
            guard.arm(expires_at);
            let answer = self
                .backend
                .try_acquire(Take {
                    key: &s.key,
                    owner: &s.stored_owner,
                    attempt: &attempt,
                    expires_at,
                    cutoff: now.saturating_sub(margin),
                    fence_base: fixed_base.unwrap_or_else(fence_base),
                    since_ms,
                    deadline,
                })
                .await;
            let seen = match &answer {
                Ok(Attempt::Written { .. }) => "written",
                Ok(Attempt::Taken { .. } | Attempt::Vanished) => "refused",
                Err(e) if e.may_have_committed() => "unknown",
                Err(_) => "error",
            };
            telemetry::acquire_write(&s.place, seen);
            match answer {
                Ok(Attempt::Written { fence }) => {
                    guard.disarm();
                    self.record_lease(sent, s.ttl_secs, fence);
                    tracing::debug!(lock = %s.logged, expires_at, "acquired");
                    return Ok(AcquireOutcome::Acquired {
                        expires_at,
                        recovered: false,
                        fence,
                    });
                }
                Ok(Attempt::Taken {
                    holder,
                    attempt: theirs,
                }) if theirs.as_deref() == Some(attempt.as_str()) => {
                    // This attempt's own earlier write landed; its answer was lost.
                    let now = self.backend.now();
                    match holder.expires_at {
                        Some(e) if e > now => {
                            guard.disarm();
                            let ttl_left = e - now;
                            self.record_lease(Instant::now(), ttl_left, holder.fence);
                            tracing::debug!(lock = %s.logged, expires_at = e, "acquired (recovered this attempt's earlier write)");
                            return Ok(AcquireOutcome::Acquired {
                                expires_at: e,
                                recovered: true,
                                fence: holder.fence,
                            });
                        }
                        // Our write has already expired: not a lease; write again.
                        _ => last_holder = Some(holder),
                    }
                }
                Ok(Attempt::Taken { holder, .. }) => {
                    let expired_between = holder
                        .expires_at
                        .is_some_and(|e| e < self.backend.now().saturating_sub(margin));
                    if !expired_between {
                        guard.disarm();
                        tracing::debug!(lock = %s.logged, holder = %holder, "held");
                        return Ok(AcquireOutcome::Held(holder));
                    }
                    last_holder = Some(holder);
                }
                Ok(Attempt::Vanished) => {}
                Err(e) if e.may_have_committed() => {
                    tracing::debug!(lock = %s.logged, error = %e, "acquire outcome unknown; sending again");
                    unknown = Some(e);
                    let more = match deadline {
                        Some(d) => Instant::now() + pause < d,
                        None => writes < 2,
                    };
                    if !more {
                        break None;
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(1));
                    continue;
                }
                Err(e) if refused_before_landing(&e) && refused + 1 < s.tries => {
                    refused += 1;
                    let wait = jittered(refused_pause);
                    if deadline.is_some_and(|d| Instant::now() + wait >= d) {
                        break Some(e);
                    }
                    tracing::debug!(lock = %s.logged, error = %e, "acquire refused; trying again");
                    tokio::time::sleep(wait).await;
                    refused_pause = (refused_pause * 2).min(Duration::from_secs(1));
                    writes -= 1; // not a write that reached the item
                    continue;
                }
                Err(e) if unknown.is_some() => break Some(e),
                Err(e) => {
                    guard.disarm();
                    return Err(e);
                }
            }
            if writes >= WRITES_PER_ATTEMPT {
                break None;
            }
        };
        if let Some(cause) = unknown {
            let (clean, cleanup) = guard.clean_up().await;
            telemetry::unknown_outcome(&s.place, clean);
            let cause = match failure {
                Some(last) => format!("{cause}; then: {last}"),
                None => cause.to_string(),
            };
            return Err(Error::OutcomeUnknown {
                operation: "UpdateItem",
                name: s.name.clone(),
                cause,
                cleanup,
            });
        }
        guard.disarm();
        if let Some(e) = failure {
            return Err(e);
        }
        // The lock changed hands under us every time: report the last holder seen.
        let holder = last_holder.unwrap_or(Holder {
            owner: None,
            value: None,
            expires_at: None,
            fence: None,
            since_ms: None,
        });
        tracing::debug!(lock = %s.logged, holder = %holder, "held (the lock kept changing hands)");
        Ok(AcquireOutcome::Held(holder))
    }
}

/// `d` less up to half of it at random (the SDK's jittered backoff).
fn jittered(d: Duration) -> Duration {
    d.mul_f64(1.0 - rand::random::<f64>() * 0.5)
}

/// The clock in microseconds: where a fencing token starts when the lock item has none.
fn fence_base() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros().min(u128::from(u64::MAX / 2)) as u64)
        .unwrap_or(0)
}

/// Deletes an attempt's write if the attempt ends without knowing its outcome: awaited when the
/// attempt gives up, spawned when the attempt is dropped mid-flight (a cancelled caller).
struct AttemptGuard {
    backend: Arc<dyn LockBackend>,
    key: String,
    /// The lock's name as warnings say it.
    logged: String,
    owner: StoredValue,
    attempt: String,
    armed: bool,
    /// The latest expiry this attempt has written: how long a write that landed can hold.
    latest_expiry: i64,
}

impl AttemptGuard {
    fn new(backend: Arc<dyn LockBackend>, s: &LockSpec, attempt: &str) -> Self {
        AttemptGuard {
            backend,
            key: s.key.clone(),
            logged: s.logged.clone(),
            owner: s.stored_owner.clone(),
            attempt: attempt.to_owned(),
            armed: false,
            latest_expiry: i64::MIN,
        }
    }

    /// A write is about to be sent: from now on, this attempt may own the item.
    fn arm(&mut self, expires_at: i64) {
        self.armed = true;
        self.latest_expiry = self.latest_expiry.max(expires_at);
    }

    /// The outcome is known: nothing to clean.
    fn disarm(&mut self) {
        self.armed = false;
    }

    /// Deletes this attempt's write, if it is there; says whether nothing of it is left, and
    /// what it found.
    async fn clean_up(&mut self) -> (bool, String) {
        self.armed = false;
        match self
            .backend
            .delete_attempt(&self.key, &self.owner, &self.attempt)
            .await
        {
            Ok(true) => (
                true,
                "the write had landed and was deleted again: the lock is free".into(),
            ),
            Ok(false) => (
                true,
                "nothing of this attempt's is there: the write did not land (or was taken over)"
                    .into(),
            ),
            Err(e) => (
                false,
                format!(
                    "the clean-up delete failed too ({e}): if the write landed, the lock stays \
                     until it expires (at the latest {})",
                    time::utc(self.latest_expiry)
                ),
            ),
        }
    }
}

impl Drop for AttemptGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        // Dropped mid-flight: the caller was cancelled while a write may have landed.
        let (backend, key, logged, owner, attempt) = (
            self.backend.clone(),
            std::mem::take(&mut self.key),
            std::mem::take(&mut self.logged),
            self.owner.clone(),
            std::mem::take(&mut self.attempt),
        );
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move {
                    if let Err(e) = backend.delete_attempt(&key, &owner, &attempt).await {
                        tracing::warn!(name: "ddblock.lock.cleanup_failed", lock = %logged, error = %e, "clean-up of a cancelled acquire failed; the lock expires at its ttl");
                    }
                });
            }
            Err(_) => {
                tracing::warn!(name: "ddblock.lock.cleanup_failed", lock = %logged, "acquire cancelled outside a tokio runtime; a write that landed stays until its ttl")
            }
        }
    }
}
