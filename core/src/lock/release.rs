//! The release: ONE owner-conditioned request, and what its answer means. A first send that
//! finds the lock gone or another owner's, from a handle that holds a lease, is a lost lease
//! (the lock vanished under its holder); a resend that finds it so after a lost answer is a
//! release; a release whose answers were all lost is settled by one consistent read.

use std::time::Instant;

use tracing::Instrument as _;

use super::backend::Release;
use super::{waiters, Lock, ReleaseOutcome};
use crate::error::{Error, Result};
use crate::telemetry;

impl Lock {
    /// Releases the lock if it is ours: ONE delete conditioned on the stored owner (`#value =
    /// :owner`, typed as stored). No read before the delete. [`Error::LeaseLost`] when this
    /// handle holds a lease that has not run out by the local clock and the delete's first send
    /// found the lock gone or another owner's: it vanished under its holder (a force-release, a foreign writer, a clock, a fault). When
    /// every answer was lost, one consistent read settles it (docs/semantics.md, "Releasing").
    pub async fn release(&self) -> Result<ReleaseOutcome> {
        self.release_reporting(true).await
    }

    /// [`Lock::release`]; `report`: a lease lost at the first send is also counted and warned of
    /// (false where a heartbeat already did).
    pub(super) async fn release_reporting(&self, report: bool) -> Result<ReleaseOutcome> {
        let s = &*self.spec;
        let span = tracing::info_span!(
            "ddblock.lock.release",
            db.collection.name = s.place.collection(),
            ddblock.key_layout = s.place.layout(),
            ddblock.lock.release_outcome = tracing::field::Empty,
        );
        let lease = self.lease_state();
        let held = lease.acquired_at.map(|t| t.elapsed());
        let ran_out = lease.deadline.is_some_and(|d| d <= Instant::now());
        let sent = Instant::now();
        let out = self.settled().instrument(span.clone()).await;
        let (outcome, error) = match &out {
            Ok((o, _)) => (o.as_str(), None),
            Err(e) => ("error", Some(e.kind().as_str())),
        };
        span.record("ddblock.lock.release_outcome", outcome);
        telemetry::release(&s.place, outcome, error, held);
        let (out, first) = out?;
        self.clear_lease();
        match &out {
            ReleaseOutcome::Released => {
                waiters::released(&s.wait_key, Some(sent.elapsed()));
                tracing::debug!(lock = %s.logged, "released")
            }
            ReleaseOutcome::NotHeld => {
                tracing::debug!(lock = %s.logged, first, "not released: no live lock item")
            }
            ReleaseOutcome::HeldByOther(h) => {
                tracing::debug!(lock = %s.logged, holder = %h, first, "not released: held by another owner")
            }
        }
        // A lease that ran out by the local clock ended as the holder knows: the outcome.
        if !first || lease.deadline.is_none() || ran_out || out.is_released() {
            return Ok(out);
        }
        let reason = lost_reason(&out);
        if report {
            telemetry::lease_lost(&s.place);
            tracing::warn!(name: "ddblock.lock.lease_lost", lock = %s.logged, reason = %reason, "lease lost");
        }
        Err(Error::LeaseLost {
            name: s.name.clone(),
            reason,
        })
    }

    /// The release's outcome, and whether its first send found it; an unsettled release settled
    /// by one consistent read.
    async fn settled(&self) -> Result<(ReleaseOutcome, bool)> {
        let s = &*self.spec;
        let err = match self.backend.release(&s.key, &s.stored_owner).await? {
            Release::Found { outcome, first } => return Ok((outcome, first)),
            Release::Unsettled(err) => err,
        };
        // A send may have landed, its answer lost: the outcome is unknown until one consistent
        // read tells. Not ours: released (by our send, or the lock was gone anyway). Ours: the
        // release did not land.
        match self.backend.read(&s.key).await {
            Ok(Some(h)) if h.is(&s.stored_owner) => Err(not_landed(err, h.expires_at)),
            Ok(_) => {
                tracing::debug!(lock = %s.logged, error = %err, "the release's answers were lost; a read found the lock no longer ours: released");
                Ok((ReleaseOutcome::Released, false))
            }
            Err(read) => Err(Error::OutcomeUnknown {
                operation: operation_of(&err),
                name: s.name.clone(),
                cause: err.to_string(),
                cleanup: format!(
                    "none; the read to tell whether the release landed failed too ({read}): if \
                     it did not, the lock frees itself at its expiry"
                ),
            }),
        }
    }
}

/// Why a release whose first send, within the lease, found `found` (not ours) means a lost lease.
fn lost_reason(found: &ReleaseOutcome) -> String {
    let found = match found {
        ReleaseOutcome::HeldByOther(h) => format!("held by {h}"),
        _ => "gone".to_owned(),
    };
    format!(
        "the release's first send found the lock {found} within our lease: it was removed or \
         taken under its holder (a force-release, a foreign writer, a clock, a fault), so the \
         work ran without the lock for a while"
    )
}

/// The error of a release whose answers were lost and that a read found not landed: the lock is
/// still ours and frees itself at `expires_at`.
fn not_landed(err: Error, expires_at: Option<i64>) -> Error {
    let at = expires_at.map_or(String::new(), |t| format!(" (Unix time {t})"));
    let settled = format!(
        "a consistent read then found the lock still ours: the release did not land, and the \
         lock frees itself at its expiry{at} unless released again"
    );
    match err {
        Error::Transport {
            operation,
            endpoint,
            message,
            sent,
        } => Error::Transport {
            operation,
            endpoint,
            message: format!("{message}; {settled}"),
            sent,
        },
        Error::Throttled {
            operation,
            code,
            message,
        } => Error::Throttled {
            operation,
            code,
            message: format!("{message}; {settled}"),
        },
        Error::Service {
            operation,
            code,
            message,
        } => Error::Service {
            operation,
            code,
            message: format!("{message}; {settled}"),
        },
        other => other,
    }
}

/// The request an error is about (for [`Error::OutcomeUnknown`]).
fn operation_of(err: &Error) -> &'static str {
    match err {
        Error::Transport { operation, .. }
        | Error::Throttled { operation, .. }
        | Error::Service { operation, .. } => operation,
        _ => "the release",
    }
}
