//! Waiting for a lock: how long ([`Wait`], one type and one parser for every front),
//! `acquire_within`, `block`, and the guard that releases it.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use super::fair::{self, Place};
use super::{waiters, AcquireOutcome, Lock, ReleaseOutcome};
use crate::error::{Error, Result};
use crate::holder::Holder;

/// How long an acquire may wait for a held lock: the one wait of every front (Python's
/// `blocking`/`timeout`, Node's `timeoutMs`, the CLI's `--wait`), so that "try once" takes one
/// path everywhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Wait {
    /// One attempt, as [`Lock::acquire`]: resent once after a lost answer, nothing read first.
    #[default]
    Once,
    /// Watch the lock and try again until it is acquired or this long has passed (not zero).
    UpTo(Duration),
    /// Watch and try again until the lock is acquired or the call is cancelled.
    Forever,
}

impl Wait {
    /// A wait in seconds (a Python float, a JS number over 1000): 0 tries once, infinity waits
    /// forever; NaN and negative waits are refused with a `Config` error naming the value.
    pub fn from_secs_f64(secs: f64) -> Result<Wait> {
        if secs.is_nan() || secs < 0.0 {
            return Err(Error::Config(format!(
                "a wait must be 0 or more seconds (0 tries once), or infinite to wait \
                 forever; got {secs}"
            )));
        }
        if secs == 0.0 {
            return Ok(Wait::Once);
        }
        // Past Duration's range (about 584 billion years) is forever too.
        Ok(Duration::try_from_secs_f64(secs).map_or(Wait::Forever, Wait::UpTo))
    }

    /// A wait as text (a command-line argument, an environment variable): seconds, where 0 (or
    /// `once`) tries once, or `forever` (also `inf`, `infinity`, any case) to wait without limit.
    /// What [`Wait`]'s `Display` writes reads back.
    pub fn parse(text: &str) -> Result<Wait> {
        let t = text.trim();
        if t.eq_ignore_ascii_case("once") {
            return Ok(Wait::Once);
        }
        let t = t.strip_suffix('s').unwrap_or(t);
        if ["forever", "inf", "infinity"]
            .iter()
            .any(|f| t.eq_ignore_ascii_case(f))
        {
            return Ok(Wait::Forever);
        }
        match t.parse::<f64>() {
            Ok(secs) if secs.is_finite() => Wait::from_secs_f64(secs),
            _ => Err(Error::Config(format!(
                "{text:?} is not a wait: give seconds (0 tries once) or \"forever\""
            ))),
        }
    }

    /// The longest this wait lasts: `None` for [`Wait::Forever`], zero for [`Wait::Once`].
    pub fn limit(self) -> Option<Duration> {
        match self {
            Wait::Once => Some(Duration::ZERO),
            Wait::UpTo(d) => Some(d),
            Wait::Forever => None,
        }
    }
}

/// A duration as a wait: zero tries once, `Duration::MAX` waits forever.
impl From<Duration> for Wait {
    fn from(d: Duration) -> Self {
        match d {
            Duration::ZERO => Wait::Once,
            Duration::MAX => Wait::Forever,
            d => Wait::UpTo(d),
        }
    }
}

/// `None` tries once (the meaning of an absent wait in every front).
impl From<Option<Duration>> for Wait {
    fn from(d: Option<Duration>) -> Self {
        d.map_or(Wait::Once, Wait::from)
    }
}

impl FromStr for Wait {
    type Err = Error;
    fn from_str(s: &str) -> Result<Wait> {
        Wait::parse(s)
    }
}

/// `once`, `2.5s` or `forever`: what [`Wait::parse`] reads back.
impl fmt::Display for Wait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Wait::Once => f.write_str("once"),
            Wait::UpTo(d) => write!(f, "{}s", d.as_secs_f64()),
            Wait::Forever => f.write_str("forever"),
        }
    }
}

/// The lock was seen free, by a release in this process or by a look: how long to leave it free
/// before looking again (`None`: write now). When this process's handles have held it one after
/// another past their budget, the window ([`waiters::Membership::yielded`]), so that waiters of
/// other processes, who cannot be told of a release, can take it; whether the release woke this
/// waiter or its look found the lock free (a look in flight across a local release: on a slow
/// server, often) makes no difference. Otherwise, when older waiters of other processes are
/// likely, a hold-back ([`Place::hold_back`]).
fn on_free(queue: &waiters::Membership, place: &mut Place) -> Option<Duration> {
    if queue.long_run() {
        Some(queue.yielded())
    } else {
        place.hold_back()
    }
}

impl Lock {
    /// Takes the lock, waiting for it as `wait` says: [`Wait::Once`] (also `None` or a zero
    /// duration) tries once (as [`Lock::acquire`]: one resend after a lost answer, no read
    /// first); [`Wait::UpTo`] and [`Wait::Forever`] try, and while the lock is held watch it
    /// with looks (on DynamoDB eventually consistent reads; pauses from the lock's backoff,
    /// capped exponential with jitter, and never past the holder's expiry plus the margin) and
    /// writes again only when it looks free, until acquired or `d` has passed; then returns the
    /// last `Held` answer ([`Wait::Forever`]: until acquired or cancelled). Waiters of this
    /// process on one key take turns: one watches, the others queue (first come, first served);
    /// a release in this process wakes the watcher at once; a waiter sends nothing to learn that
    /// a handle of this process holds the lock, and looks before it writes when this process saw
    /// the lock held in the last 10 s. Between processes the longest waiting goes first: the
    /// acquire write stamps when the wait began (`ddblock_since`) and waiters time their looks
    /// and writes by the holders' stamps (docs/semantics.md#waiting), with no extra request.
    /// Every request ends by the deadline plus one attempt timeout. The one "acquire with wait"
    /// of every front.
    pub async fn acquire_within(&self, wait: impl Into<Wait>) -> Result<AcquireOutcome> {
        // "Try once" is the same path as `acquire`: a lost answer is sent again (a zero deadline
        // would allow no resend) and nothing is read before the write.
        let deadline = match wait.into() {
            Wait::Once => return self.acquire().await,
            // `None`: no limit (forever, or a wait too long to represent).
            Wait::UpTo(d) => Instant::now().checked_add(d),
            Wait::Forever => None,
        };
        self.observed_acquire(true, self.wait_until(deadline)).await
    }

    /// The waiting acquire: this waiter's turn in its process, then [`Lock::watch_and_take`].
    async fn wait_until(&self, deadline: Option<Instant>) -> Result<AcquireOutcome> {
        // When this waiter began waiting (Unix ms): its writes stamp it as `ddblock_since`, and
        // it orders itself against the holders' stamps (`fair.rs`).
        let since_ms = self.backend.now_millis();
        let started = Instant::now();
        let queue = waiters::join(&self.spec.wait_key);
        let _turn = match deadline {
            None => queue.turn().await,
            Some(d) => match tokio::time::timeout_at(d.into(), queue.turn()).await {
                Ok(turn) => turn,
                // Other waiters of this process had the lock all along: one last try answers.
                Err(_) => return self.acquire_by(deadline, Some(since_ms)).await,
            },
        };
        let mut place = Place::new(
            since_ms,
            &queue.memory(),
            self.backend.shared_with_laravel(),
        );
        let out = self.watch_and_take(deadline, &queue, &mut place).await;
        let acquired_after =
            matches!(out, Ok(AcquireOutcome::Acquired { .. })).then(|| started.elapsed());
        queue.remember(place.memory(acquired_after));
        out
    }

    /// The wait itself, once it is this waiter's turn in its process: write or look, watch, and
    /// write again when the lock looks free and it is this waiter's turn among all processes.
    async fn watch_and_take(
        &self,
        deadline: Option<Instant>,
        queue: &waiters::Membership,
        place: &mut Place,
    ) -> Result<AcquireOutcome> {
        let since = Some(place.since_ms());
        // A handle of this process holds it: no request needed to learn that, watch. This
        // process saw it held lately: look before writing (a look costs a tenth of a write),
        // and if this process has just released it, look only after a pause, so that remote
        // waiters who waited longer take it first.
        let local = queue.held_locally(self.backend.now());
        let contended = !local && queue.recently_contended();
        let mut first_pause = if contended && queue.released_lately(fair::TUNING.just_released) {
            fair::yield_after_release(&queue.memory(), &self.backoff)
        } else {
            None
        };
        let mut look_now = contended && first_pause.is_none();
        let mut write = !local && !contended;
        let mut look = 0u32;
        let mut holder: Option<Holder> = None;
        loop {
            if write {
                match self.acquire_by(deadline, since).await? {
                    AcquireOutcome::Held(h) if !left(deadline).is_zero() => {
                        queue.seen_held(h.owner.as_deref(), self.backend.now());
                        holder = Some(h);
                    }
                    out => return Ok(out),
                }
            }
            write = true;
            // Watch until the lock looks free (and this waiter's turn, `fair.rs`), a local
            // release says it is, or time is up.
            loop {
                if !look_now {
                    let pause = first_pause
                        .take()
                        .or_else(|| {
                            let rand = rand::random::<f64>();
                            holder
                                .as_ref()
                                .map(|h| place.pause(h, look, &self.backoff, rand))
                        })
                        .unwrap_or_else(|| self.backoff.delay(look, rand::random::<f64>()))
                        .min(left(deadline))
                        .min(self.until_takeover(holder.as_ref()));
                    look = look.saturating_add(1);
                    let released = tokio::select! {
                        _ = tokio::time::sleep(pause) => false,
                        _ = queue.released() => true,
                    };
                    if left(deadline).is_zero() {
                        return self.timed_out(holder, since).await;
                    }
                    if released {
                        // Freed in this process: write now, unless it should stay free a moment
                        // (`on_free`); after that, look once more.
                        match on_free(queue, place) {
                            None => break,
                            Some(d) => {
                                tokio::time::sleep(d.min(left(deadline))).await;
                                if left(deadline).is_zero() {
                                    // It was free: one last try answers.
                                    return self.timed_out(None, since).await;
                                }
                            }
                        }
                    }
                }
                look_now = false;
                let read = self.backend.look(&self.spec.key);
                let seen = match deadline {
                    Some(d) => match tokio::time::timeout_at(d.into(), read).await {
                        Ok(seen) => seen?,
                        Err(_) => return self.timed_out(holder, since).await,
                    },
                    None => read.await?,
                };
                match seen {
                    Some(h) if !self.can_take_over(&h) => {
                        queue.seen_held(h.owner.as_deref(), self.backend.now());
                        holder = Some(h);
                    }
                    // Free: write, unless it should stay free a moment (`on_free`; then look
                    // again).
                    _ => match on_free(queue, place) {
                        None => break,
                        Some(d) => {
                            tokio::time::sleep(d.min(left(deadline))).await;
                            if left(deadline).is_zero() {
                                return self.timed_out(None, since).await;
                            }
                            look_now = true;
                        }
                    },
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
    async fn timed_out(
        &self,
        holder: Option<Holder>,
        since: Option<i64>,
    ) -> Result<AcquireOutcome> {
        match holder {
            Some(h) => Ok(AcquireOutcome::Held(h)),
            None => self.acquire_by(Some(Instant::now()), since).await,
        }
    }

    /// Waits for the lock as `wait` says (Laravel's `block($seconds)`: a duration, zero tries
    /// once); returns the expiry, or [`Error::LockTimeout`] naming the last holder.
    pub async fn block(&self, wait: impl Into<Wait>) -> Result<i64> {
        let start = Instant::now();
        match self.acquire_within(wait).await? {
            AcquireOutcome::Acquired { expires_at, .. } => Ok(expires_at),
            AcquireOutcome::Held(holder) => Err(Error::LockTimeout {
                name: self.spec.name.clone(),
                waited: start.elapsed(),
                holder: Some(Box::new(holder)),
            }),
        }
    }

    /// Waits for the lock as `wait` says and returns a guard that releases it.
    pub async fn block_guard(self, wait: impl Into<Wait>) -> Result<LockGuard> {
        self.block(wait).await?;
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

    /// The lock, no longer released on drop (for [`super::Held::finish`]).
    pub(super) fn into_lock(mut self) -> Option<Lock> {
        self.lock.take()
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
                        tracing::warn!(name: "ddblock.lock.cleanup_failed", lock = %lock.logged_name(), error = %e, "release on drop failed; the lock expires at its ttl");
                    }
                });
            } else {
                tracing::warn!(name: "ddblock.lock.cleanup_failed", lock = %lock.logged_name(), "LockGuard dropped outside a tokio runtime; the lock expires at its ttl");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_wait_rule_for_numbers_and_text() {
        assert_eq!(Wait::from_secs_f64(0.0).unwrap(), Wait::Once);
        assert_eq!(Wait::from_secs_f64(-0.0).unwrap(), Wait::Once);
        assert_eq!(
            Wait::from_secs_f64(2.5).unwrap(),
            Wait::UpTo(Duration::from_millis(2500))
        );
        assert_eq!(Wait::from_secs_f64(f64::INFINITY).unwrap(), Wait::Forever);
        assert_eq!(Wait::from_secs_f64(1e300).unwrap(), Wait::Forever);
        for bad in [-1.0, -0.001, f64::NAN, f64::NEG_INFINITY] {
            let e = Wait::from_secs_f64(bad).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::Config, "{bad}");
            assert!(
                e.to_string().contains("a wait must be 0 or more seconds"),
                "{e}"
            );
        }
        for (text, wait) in [
            ("0", Wait::Once),
            (" 1.5 ", Wait::UpTo(Duration::from_millis(1500))),
            ("forever", Wait::Forever),
            ("Infinity", Wait::Forever),
            ("inf", Wait::Forever),
        ] {
            assert_eq!(text.parse::<Wait>().unwrap(), wait, "{text}");
        }
        for bad in ["", "soon", "-1", "NaN", "1e999x"] {
            assert_eq!(
                Wait::parse(bad).unwrap_err().kind(),
                crate::ErrorKind::Config,
                "{bad}"
            );
        }
        for w in [
            Wait::Once,
            Wait::UpTo(Duration::from_millis(2500)),
            Wait::Forever,
        ] {
            let shown = w.to_string();
            let back = if w == Wait::Once {
                Wait::parse("0")
            } else {
                Wait::parse(shown.trim_end_matches('s'))
            };
            assert_eq!(back.unwrap(), w, "{shown}");
        }
        assert_eq!(Wait::from(Duration::ZERO), Wait::Once);
        assert_eq!(Wait::from(Duration::MAX), Wait::Forever);
        assert_eq!(Wait::from(None::<Duration>), Wait::Once);
    }
}
