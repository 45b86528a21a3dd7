//! Fair waiting between processes: the longest waiting goes first, without a request of its own.
//!
//! Waiters of one process on one key already queue (`waiters.rs`). Between processes nothing is
//! shared but the lock item, so the order comes from what the item carries anyway: an acquisition
//! that waited stamps `ddblock_since` (when its holder began waiting, Unix ms) in the very write
//! that takes the lock. A waiter compares its own `since` with the holder's (`gap`):
//! - its turn comes about `gap` after that holder took the lock (in a steady queue the holders'
//!   `since` advances as fast as time does), so it sleeps toward its turn (a fraction of what is
//!   left, never longer than the backoff's cap) and looks often only when the turn is near, or
//!   past (`gap <= 0`: a younger waiter got the lock, so this one is overdue);
//! - when it finds the lock free while older waiters exist (a large `gap`), it holds back for a
//!   moment that grows with its `gap` and looks again, so the oldest waiter, who looks often,
//!   writes first and later ones do not collide with it;
//! - a process that has just released a contended lock looks again only after a pause that grows
//!   with its own last wait ([`yield_after_release`]), so remote waiters that waited longer take
//!   the lock; its own local waiters get it through the local queue.
//!
//! - a process whose waiters have handed the lock over among themselves for a while (a run of
//!   holds with nobody else seen holding it, [`RUN_BUDGET`]) leaves it free for [`YIELD_WINDOW`]
//!   at the next hand-over, then looks: a local queue hands over in a millisecond, so without
//!   this, waiters of other processes, who cannot be told of a release, would only ever find the
//!   lock held (stock Laravel's `block()`, which tries every 250 ms, included). The budget doubles
//!   each time nobody else took the lock in the window, and starts over when someone did;
//! - a holder without a stamp (stock Laravel, the PHP driver, an acquire that did not wait) is
//!   watched with the backoff capped at [`UNSTAMPED_CAP`], Laravel's own retry period, so that
//!   ddblock's waiters see the lock free as soon as Laravel's do (with reads, a fifth of the cost
//!   of Laravel's writes).
//!
//! A process remembers, per key, the last holder's `since`, the usual spacing between the
//! `since` of one holder and the next, and its own last wait (`waiters::Memory`), so a new wait
//! starts knowing where it stands.
//!
//! None of this decides who may hold the lock: the conditional write does. A wrong or stale
//! `since` (clocks apart, a crashed waiter, an acquire that did not wait) costs time, never safety,
//! and every pause stays within the backoff's cap. Holders without `since` (stock Laravel, a plain
//! acquire, S3) are watched with the plain backoff.

use std::time::{Duration, Instant};

use super::waiters::Memory;
use crate::config::Backoff;
use crate::holder::Holder;

/// How often a waiter looks when its turn is near or past (at most the backoff's first pause).
const FAST: Duration = Duration::from_millis(30);
/// How close to its expected turn a waiter starts looking every [`FAST`].
const NEAR_MS: i64 = 100;
/// The share of the time left until its turn a waiter sleeps before looking again.
const SLEEP_SHARE: f64 = 0.6;
/// Fast looks at one holder, after which the plain backoff takes over (a holder that keeps the
/// lock long, or a `since` that misleads, costs at most this many quick reads per holder).
const FAST_LOOKS_PER_HOLDER: u32 = 12;
/// How long a waiter that sees the lock free holds back, per ms of `gap` beyond [`NEAR_MS`].
const HOLD_BACK_PER_GAP: f64 = 0.5;
/// The longest hold-back.
const HOLD_BACK_MAX: Duration = Duration::from_millis(100);
/// A waiter holds back only if it began waiting more than this many usual spacings after the last
/// holder (with one spacing it is likely next itself).
const HOLD_BACK_SPACINGS: f64 = 1.5;
/// Two looks at most this far apart that see two holders see consecutive ones: their `since`
/// difference is a spacing sample.
const SPACING_LOOKS: Duration = Duration::from_millis(100);
/// Weight of a new spacing sample.
const SPACING_WEIGHT: f64 = 0.3;
/// The share of its last wait (less [`YIELD_SPACINGS`]) a process that has just released a
/// contended lock waits before it looks again. Well below 1: the pause feeds the next wait, so a
/// larger share can lock a few processes into long waits (seen with 4 processes at 0.9).
const YIELD_SHARE: f64 = 0.6;
/// The spacings of its last wait a process that has just released does not yield: with one or two
/// waiters ahead it looks at once.
const YIELD_SPACINGS: f64 = 2.5;
/// What counts as "just released" for [`yield_after_release`].
pub(crate) const JUST_RELEASED: Duration = Duration::from_secs(1);
/// How long one process's waiters may hand the lock over among themselves before the next
/// hand-over leaves it free for [`YIELD_WINDOW`] (when nobody else is seen holding it).
pub(crate) const RUN_BUDGET: Duration = Duration::from_secs(1);
/// The longest budget, reached by doubling while nobody else takes the lock in the windows: the
/// longest a waiter of another process waits for a window, and what the windows cost a process
/// alone on its key (0.3 s in 8.3 s, under 4 %).
pub(crate) const RUN_BUDGET_MAX: Duration = Duration::from_secs(8);
/// How long a long run leaves the lock free: more than stock Laravel's 250 ms between tries
/// (`block()`'s default sleep), so each Laravel waiter tries at least once in it; ddblock waiters
/// of other processes that are overdue look every [`FAST`].
pub(crate) const YIELD_WINDOW: Duration = Duration::from_millis(300);
/// The longest pause between looks at a holder without a stamp: stock Laravel's `block()` tries
/// every 250 ms, so ddblock's waiters look as often.
const UNSTAMPED_CAP: Duration = Duration::from_millis(250);

/// How long a process that has just released a contended lock waits before it looks at it again:
/// part of its last wait beyond 2.5 spacings (so that with one or two others it looks at once, and
/// with many it lets the older ones go first), at most the backoff's cap; `None`: look now
/// (nothing known yet).
pub(crate) fn yield_after_release(memory: &Memory, backoff: &Backoff) -> Option<Duration> {
    let spacing = memory.spacing_ms?;
    let waited = memory.last_wait?.as_secs_f64() * 1000.0;
    let ms = YIELD_SHARE * (waited - YIELD_SPACINGS * spacing);
    (ms >= 1.0).then(|| Duration::from_millis(ms.min(1e9) as u64).min(backoff.max))
}

/// One waiter's place among the waiters of all processes, as far as the lock item tells.
#[derive(Debug)]
pub(crate) struct Place {
    /// When this waiter began waiting (Unix ms by the store's clock): what its write stamps.
    since_ms: i64,
    /// The holder watched now: its identity, when first seen, fast looks spent on it.
    watched: Option<Watched>,
    /// The `since` of the last holder seen, when it had one.
    last_since: Option<i64>,
    /// The usual spacing between consecutive holders' `since`, ms.
    spacing_ms: Option<f64>,
    /// The last look that saw a `since`: when, and which.
    last_look: Option<(Instant, i64)>,
    /// Whether this waiter already held back once since it last saw the lock held.
    held_back: bool,
    /// Whether stock Laravel can share the lock (then a holder without a stamp is watched at
    /// Laravel's pace, [`UNSTAMPED_CAP`]).
    laravel: bool,
}

#[derive(Debug)]
struct Watched {
    id: (Option<u64>, Option<i64>, Option<String>),
    first_seen: Instant,
    fast_looks: u32,
}

impl Place {
    /// A waiter that began waiting at `since_ms`, starting from what its process remembers;
    /// `laravel`: stock Laravel can share the lock (DynamoDB, not S3).
    pub(crate) fn new(since_ms: i64, memory: &Memory, laravel: bool) -> Place {
        Place {
            since_ms,
            watched: None,
            last_since: memory.last_since,
            spacing_ms: memory.spacing_ms,
            last_look: None,
            held_back: false,
            laravel,
        }
    }

    /// What the process keeps for its next wait: after an acquisition that took `waited`, this
    /// waiter's own `since` is the last holder's.
    pub(crate) fn memory(&self, acquired_after: Option<Duration>) -> Memory {
        Memory {
            last_since: match acquired_after {
                Some(_) => Some(self.since_ms),
                None => self.last_since,
            },
            spacing_ms: self.spacing_ms,
            last_wait: acquired_after,
        }
    }

    /// When this waiter began waiting (Unix ms): written with its acquisition.
    pub(crate) fn since_ms(&self) -> i64 {
        self.since_ms
    }

    /// The pause before the next look at a lock `holder` holds (`look`: looks so far, for the
    /// plain backoff; `rand01` in `[0, 1)` for jitter).
    pub(crate) fn pause(
        &mut self,
        holder: &Holder,
        look: u32,
        backoff: &Backoff,
        rand01: f64,
    ) -> Duration {
        self.held_back = false;
        let Some(holder_since) = holder.since_ms else {
            self.last_since = None;
            let pause = backoff.delay(look, rand01);
            return if self.laravel {
                pause.min(UNSTAMPED_CAP)
            } else {
                pause
            };
        };
        self.last_since = Some(holder_since);
        if let Some((at, since)) = self.last_look {
            if holder_since > since && at.elapsed() <= SPACING_LOOKS {
                let sample = (holder_since - since) as f64;
                self.spacing_ms = Some(match self.spacing_ms {
                    Some(s) => s + SPACING_WEIGHT * (sample - s),
                    None => sample,
                });
            }
        }
        self.last_look = Some((Instant::now(), holder_since));
        let id = (holder.fence, holder.since_ms, holder.owner.clone());
        let watched = match &mut self.watched {
            Some(w) if w.id == id => w,
            slot => slot.insert(Watched {
                id,
                first_seen: Instant::now(),
                fast_looks: 0,
            }),
        };
        let fast = FAST.min(backoff.initial);
        let gap = self.since_ms.saturating_sub(holder_since);
        let held_for = i64::try_from(watched.first_seen.elapsed().as_millis()).unwrap_or(i64::MAX);
        let left = gap.saturating_sub(held_for);
        let pause = if gap <= 0 || left <= NEAR_MS {
            if watched.fast_looks >= FAST_LOOKS_PER_HOLDER {
                return backoff.delay(look, rand01);
            }
            watched.fast_looks += 1;
            fast
        } else {
            let ms = (left as f64 * SLEEP_SHARE).min(backoff.max.as_secs_f64() * 1000.0);
            Duration::from_millis(ms as u64).clamp(fast, backoff.max.max(fast))
        };
        // A little jitter, so waiters that expect the same turn do not look in step.
        pause.mul_f64(1.0 - 0.3 * rand01.clamp(0.0, 1.0))
    }

    /// The lock looks free: how long to hold back before looking again, when older waiters are
    /// likely (this waiter began waiting well after the last holder did); `None`: write now.
    /// At most once per free spell: after holding back, the next free look writes.
    pub(crate) fn hold_back(&mut self) -> Option<Duration> {
        if std::mem::replace(&mut self.held_back, false) {
            return None;
        }
        let gap = self.since_ms.saturating_sub(self.last_since?) as f64;
        let next = (NEAR_MS as f64).max(HOLD_BACK_SPACINGS * self.spacing_ms.unwrap_or(0.0));
        if gap <= next {
            return None;
        }
        self.held_back = true;
        let ms = ((gap - next) * HOLD_BACK_PER_GAP).min(1e9);
        Some(Duration::from_millis(ms as u64).min(HOLD_BACK_MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(fence: u64, since_ms: Option<i64>) -> Holder {
        Holder {
            owner: Some("o".into()),
            value: None,
            expires_at: Some(100),
            fence: Some(fence),
            since_ms,
        }
    }

    #[test]
    fn a_waiter_far_back_sleeps_toward_its_turn_and_the_overdue_look_often() {
        let b = Backoff::default();
        // Began 2 s after the holder: sleeps 60 % of the 2 s, capped by the backoff's 1 s.
        let mut far = Place::new(12_000, &Memory::default(), true);
        assert_eq!(far.pause(&holder(1, Some(10_000)), 0, &b, 0.0), b.max);
        // Began 300 ms after the holder: 60 % of 300 ms.
        let mut mid = Place::new(10_300, &Memory::default(), true);
        let p = mid.pause(&holder(1, Some(10_000)), 0, &b, 0.0);
        assert!(
            p > Duration::from_millis(150) && p <= Duration::from_millis(180),
            "{p:?}"
        );
        // Older than the holder (a younger waiter got it): looks every 30 ms.
        let mut overdue = Place::new(9_000, &Memory::default(), true);
        assert_eq!(overdue.pause(&holder(1, Some(10_000)), 5, &b, 0.0), FAST);
    }

    #[test]
    fn fast_looks_are_bounded_per_holder_then_the_backoff_rules() {
        let b = Backoff::default();
        let mut p = Place::new(9_000, &Memory::default(), true);
        let h = holder(1, Some(10_000));
        for _ in 0..FAST_LOOKS_PER_HOLDER {
            assert_eq!(p.pause(&h, 10, &b, 0.0), FAST);
        }
        assert_eq!(p.pause(&h, 10, &b, 0.0), b.max);
        // The next holder gets fresh fast looks.
        assert_eq!(p.pause(&holder(2, Some(10_050)), 10, &b, 0.0), FAST);
    }

    #[test]
    fn holders_without_since_get_the_backoff_up_to_laravels_period_and_no_hold_back() {
        let b = Backoff::default();
        let mut p = Place::new(12_000, &Memory::default(), true);
        assert_eq!(p.pause(&holder(1, None), 0, &b, 0.0), b.delay(0, 0.0));
        assert_eq!(p.pause(&holder(1, None), 10, &b, 0.0), UNSTAMPED_CAP);
        assert_eq!(p.hold_back(), None);
        // S3: no Laravel, the plain backoff.
        let mut s3 = Place::new(12_000, &Memory::default(), false);
        assert_eq!(s3.pause(&holder(1, None), 10, &b, 0.0), b.max);
    }

    #[test]
    fn the_younger_hold_back_once_per_free_spell_the_head_does_not() {
        let b = Backoff::default();
        let mut head = Place::new(10_080, &Memory::default(), true);
        head.pause(&holder(1, Some(10_000)), 0, &b, 0.0);
        assert_eq!(head.hold_back(), None);
        let mut young = Place::new(10_300, &Memory::default(), true);
        young.pause(&holder(1, Some(10_000)), 0, &b, 0.0);
        assert_eq!(young.hold_back(), Some(Duration::from_millis(100)));
        assert_eq!(young.hold_back(), None, "after holding back, it writes");
        // The next holder, seen right after: their `since` differ by 100 ms, the usual spacing
        // now, so "likely next" reaches 150 ms of gap: 200 - 150 = 50 ms, halved.
        young.pause(&holder(2, Some(10_100)), 0, &b, 0.0);
        assert_eq!(young.hold_back(), Some(Duration::from_millis(25)));
        let kept = young.memory(None);
        assert_eq!(kept.last_since, Some(10_100));
        assert_eq!(kept.spacing_ms, Some(100.0));
        assert_eq!(
            young.memory(Some(Duration::from_millis(700))).last_since,
            Some(10_300)
        );
    }

    #[test]
    fn a_process_that_just_released_yields_most_of_its_last_wait_beyond_its_turn() {
        let b = Backoff::default();
        let memory = |wait_ms: u64, spacing: Option<f64>| Memory {
            last_since: Some(1),
            spacing_ms: spacing,
            last_wait: Some(Duration::from_millis(wait_ms)),
        };
        // Waited 700 ms behind holders 100 ms apart: 60 % of (700 - 250).
        assert_eq!(
            yield_after_release(&memory(700, Some(100.0)), &b),
            Some(Duration::from_millis(270))
        );
        // Next in line last time (one other waiter): looks at once.
        assert_eq!(yield_after_release(&memory(120, Some(100.0)), &b), None);
        // A long wait: at most the backoff's cap.
        assert_eq!(
            yield_after_release(&memory(9_000, Some(100.0)), &b),
            Some(b.max)
        );
        // Nothing learnt yet: looks at once.
        assert_eq!(yield_after_release(&memory(700, None), &b), None);
    }
}
