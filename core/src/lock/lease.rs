//! Keeping a lease: the heartbeat that refreshes a held lock and says when the lease is lost;
//! [`Held`], a lock entered for a body of work, whose `finish` decides the end of the lease for
//! every front; and `with_lock`, built on it.

use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures_util::FutureExt;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{Lock, LockGuard, ReleaseOutcome, Wait};
use crate::error::{Error, ErrorKind};

/// Shortest pause between two refreshes.
const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// Refreshes a held lock in the background (owner-conditioned, Laravel 12.63's refresh) until
/// stopped, and reports the lease lost when a refresh finds the lock gone or another owner's, or
/// when no refresh succeeded before the local lease deadline (a paused process, a network that
/// stays down). Dropping it stops it.
#[derive(Debug)]
pub struct Heartbeat {
    lost: LeaseSignal,
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
            crate::telemetry::lease_lost(&lock.spec.place);
            tracing::warn!(name: "ddblock.lock.lease_lost", lock = %lock.logged_name(), reason = %reason, "lease lost");
            let _ = tx.send(Some(reason));
        });
        Heartbeat {
            lost: LeaseSignal {
                name: self.name().to_owned(),
                rx,
            },
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
                tracing::debug!(lock = %lock.logged_name(), error = %e, "refresh failed; retrying");
                wait = (interval / 4).max(MIN_INTERVAL);
            }
        }
    }
}

impl Heartbeat {
    /// Whether the lease has been lost.
    pub fn is_lost(&self) -> bool {
        self.lost.is_lost()
    }

    /// Why the lease was lost, if it was.
    pub fn reason(&self) -> Option<String> {
        self.lost.reason()
    }

    /// A receiver that turns `Some(reason)` when the lease is lost (for `select!`, or to hand to
    /// the work).
    pub fn subscribe(&self) -> watch::Receiver<Option<String>> {
        self.lost.rx.clone()
    }

    /// The loss signal, apart from the heartbeat (which `stop` consumes): for a front that
    /// waits on the loss while another call stops the heartbeat.
    pub fn signal(&self) -> LeaseSignal {
        self.lost.clone()
    }

    /// Resolves with the reason when the lease is lost; never, while it is kept.
    pub async fn lost(&self) -> String {
        self.lost.lost().await
    }

    /// Stops refreshing; the reason the lease was lost, if it was.
    pub async fn stop(mut self) -> Option<String> {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
        self.reason()
    }

    /// Stops refreshing; [`Error::LeaseLost`] if the lease was lost meanwhile. For a body run
    /// under a heartbeat without the release (that is [`Held::finish`]).
    pub async fn finish(self) -> Result<(), Error> {
        let signal = self.signal();
        self.stop().await;
        signal.check()
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Whether a heartbeat's lease was lost, and why; it keeps its last value after the heartbeat
/// stops. Cheap to clone.
#[derive(Debug, Clone)]
pub struct LeaseSignal {
    name: String,
    rx: watch::Receiver<Option<String>>,
}

impl LeaseSignal {
    /// [`Error::LeaseLost`] (naming the lock and the reason) if the lease was lost, else `Ok`.
    pub fn check(&self) -> Result<(), Error> {
        match self.reason() {
            Some(reason) => Err(Error::LeaseLost {
                name: self.name.clone(),
                reason,
            }),
            None => Ok(()),
        }
    }

    /// Whether the lease has been lost.
    pub fn is_lost(&self) -> bool {
        self.rx.borrow().is_some()
    }

    /// Why the lease was lost, if it was.
    pub fn reason(&self) -> Option<String> {
        self.rx.borrow().clone()
    }

    /// Resolves with the reason when the lease is lost; never, while it is kept.
    pub async fn lost(&self) -> String {
        match self.ended().await {
            Some(reason) => reason,
            // The heartbeat stopped without a loss: the lease was kept; wait forever.
            None => std::future::pending().await,
        }
    }

    /// Resolves when the lease ends: with the reason when it was lost, `None` when the
    /// heartbeat stopped with the lease kept (the body finished). For a front's callback that
    /// must settle either way (a JS promise).
    pub async fn ended(&self) -> Option<String> {
        let mut rx = self.rx.clone();
        loop {
            if let Some(r) = rx.borrow_and_update().clone() {
                return Some(r);
            }
            if rx.changed().await.is_err() {
                return rx.borrow().clone();
            }
        }
    }
}

/// What the work of [`Lock::with_lock`] gets: the held lock and the lease-loss signal.
#[derive(Debug, Clone)]
pub struct Lease {
    lock: Lock,
    lost: LeaseSignal,
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
        self.lost.is_lost()
    }
    /// Resolves with the reason when the lease is lost (select on it next to the work).
    pub async fn lost(&self) -> String {
        self.lost.lost().await
    }
    /// The loss signal (for a front that settles a promise either way: see
    /// [`LeaseSignal::ended`]).
    pub fn signal(&self) -> &LeaseSignal {
        &self.lost
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

/// A lock entered for a body of work ([`Lock::enter`]): acquired, kept by a heartbeat, and
/// ended by [`Held::finish`], which decides the end of the lease once for every front (the
/// core's `with_lock`, Python's `with`, Node's `withLock`, the CLI's `run`). Dropped without
/// `finish`, it stops the heartbeat and releases in the background (as [`LockGuard`]).
#[derive(Debug)]
pub struct Held {
    guard: LockGuard,
    heartbeat: Option<Heartbeat>,
    lease: Lease,
    /// Without a heartbeat: the sender of a loss signal that never fires, kept until `finish`.
    _unkept: Option<watch::Sender<Option<String>>>,
}

impl Lock {
    /// Takes the lock, waiting as `wait` says ([`Error::LockTimeout`] when it does not come),
    /// and starts its heartbeat: the start of every "run this under the lock".
    pub async fn enter(self, wait: impl Into<Wait>) -> Result<Held, Error> {
        self.enter_kept(wait, true).await
    }

    /// [`Lock::enter`], with or without the heartbeat. Without it the lease is the ttl taken at
    /// acquire, and [`Held::finish`] still says whether the body ended within it (the CLI's
    /// `run` without `--heartbeat`).
    pub async fn enter_kept(self, wait: impl Into<Wait>, heartbeat: bool) -> Result<Held, Error> {
        let guard = self.block_guard(wait).await?;
        let (heartbeat, signal, unkept) = if heartbeat {
            let hb = guard.lock().heartbeat();
            let signal = hb.signal();
            (Some(hb), signal, None)
        } else {
            let (tx, rx) = watch::channel(None);
            let name = guard.lock().name().to_owned();
            (None, LeaseSignal { name, rx }, Some(tx))
        };
        let lease = Lease {
            lock: guard.lock().clone(),
            lost: signal,
        };
        Ok(Held {
            guard,
            heartbeat,
            lease,
            _unkept: unkept,
        })
    }
}

impl Held {
    /// The held lock.
    pub fn lock(&self) -> &Lock {
        self.guard.lock()
    }

    /// The lease, for the body: fence, time left, and the signal that it was lost.
    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    /// Ends the body's lease: stops the heartbeat and releases. `Ok` when the body ran under the
    /// lock to its end and nothing of ours is left. [`Error::LeaseLost`] is about the body, in
    /// three cases: a refresh during the body found the lock no longer ours (or none succeeded
    /// in time); the release's first send found the lock gone or another owner's (it vanished
    /// under the body: [`Lock::release`]); or the body did not end within its lease by the local
    /// monotonic clock. The release's own error when it failed. A release is a release: after a
    /// body that ended within its lease, a release whose RESEND finds the lock gone or already
    /// the next holder's (its first answer was lost, the delete done) left nothing of ours
    /// behind, and is `Ok`. After a body that failed, the front keeps the body's error and
    /// attaches this one to it.
    pub async fn finish(self) -> Result<(), Error> {
        let Held {
            guard, heartbeat, ..
        } = self;
        // Whether the body ended within the lease, by the local monotonic clock.
        let within = guard.lock().remaining().is_some_and(|r| !r.is_zero());
        let lost = match heartbeat {
            Some(hb) => hb.stop().await,
            None => None,
        };
        let name = guard.lock().name().to_owned();
        let logged = guard.lock().logged_name().to_owned();
        // A heartbeat that saw the loss has reported it: the release does not again.
        let released = match guard.into_lock() {
            Some(lock) => lock.release_reporting(lost.is_none()).await,
            None => Ok(ReleaseOutcome::NotHeld),
        };
        if let Some(reason) = lost {
            return Err(Error::LeaseLost { name, reason });
        }
        let found = match released {
            Err(e) => return Err(e),
            Ok(found) if within => {
                if found != ReleaseOutcome::Released {
                    tracing::debug!(lock = %logged, found = ?found, "released: the body ended within its lease; the release's resend after a lost answer found the lock no longer ours");
                }
                return Ok(());
            }
            Ok(found) => found,
        };
        let reason = match found {
            ReleaseOutcome::Released => "the body outlasted the lease; nobody took the lock \
                                         meanwhile, and the release deleted it"
                .to_owned(),
            ReleaseOutcome::NotHeld => "the body outlasted the lease, and at release the lock \
                                        was gone: it expired and was swept, or was force-released"
                .to_owned(),
            ReleaseOutcome::HeldByOther(h) => format!(
                "the body outlasted the lease, and at release the lock was held by {h}: ours \
                 expired and was taken over"
            ),
        };
        Err(Error::LeaseLost { name, reason })
    }
}

impl Lock {
    /// Waits for the lock as `wait` says, runs `work` with a heartbeat keeping the lease, and
    /// releases the lock when the work returns or panics (the panic then continues): the
    /// [`Lock::enter`] and [`Held::finish`] every front drives. A lease lost during the work
    /// ([`Error::LeaseLost`]) and a failed release are errors, never dropped, and keep the
    /// work's value in [`WorkError::value`]; a release whose resend finds the lock gone after
    /// work that ended within its lease is a completed release (see [`Held::finish`]). If this
    /// future is dropped, the lock is released in the background (see [`crate::LockGuard`]).
    pub async fn with_lock<F, Fut, T>(
        self,
        wait: impl Into<Wait>,
        work: F,
    ) -> Result<T, WorkError<T>>
    where
        F: FnOnce(Lease) -> Fut,
        Fut: Future<Output = T>,
    {
        let held = self.enter(wait).await?;
        let outcome = AssertUnwindSafe(work(held.lease().clone()))
            .catch_unwind()
            .await;
        let end = held.finish().await;
        let value = match outcome {
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(value) => value,
        };
        match end {
            Ok(()) => Ok(value),
            Err(error) => Err(WorkError {
                error,
                value: Some(value),
            }),
        }
    }
}
