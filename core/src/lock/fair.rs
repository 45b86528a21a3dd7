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
//!   holds with nobody else seen holding it, [`Run`]) leaves it free for a moment at the next
//!   hand-over, then looks: a local queue hands over in a millisecond, so without
//!   this, waiters of other processes, who cannot be told of a release, would only ever find the
//!   lock held (stock Laravel's `block()`, which tries every 250 ms, included). The budget doubles
//!   from the second window in a row that nobody else took the lock in, and starts over when
//!   someone did;
//! - a holder without a stamp (stock Laravel, the PHP driver, an acquire that did not wait) is
//!   watched with the backoff capped at Laravel's own retry period, so that ddblock's waiters
//!   see the lock free as soon as Laravel's do (with looks, a tenth of the cost of Laravel's
//!   writes).
//!
//! - a process that waits once (a new `ddblock run --wait` from cron, a short-lived worker)
//!   remembers nothing of the key, and its first request is a write (the uncontended path stays
//!   one request), so a process that arrives at a free lock takes it ahead of the waiters. A waiter
//!   passed over by such a younger holder compares itself with the queue's last place (the latest
//!   holder no younger than itself): the one next after it looks often, the others at Laravel's
//!   pace, and more often the longer they have waited past [`Tuning::old_wait`], so that they
//!   neither look and write all at once when the lock frees nor wait behind arrivals for long.
//!
//! A process remembers, per key, the last holder's `since`, the usual spacing between the
//! `since` of one holder and the next, and its own last wait ([`Memory`]), so a new wait
//! starts knowing where it stands.
//!
//! None of this decides who may hold the lock: the conditional write does. A wrong or stale
//! `since` (clocks apart, a crashed waiter, an acquire that did not wait) costs time, never safety,
//! and every pause stays within the backoff's cap. Holders without `since` (stock Laravel, a plain
//! acquire, S3) are watched with the plain backoff.

use std::time::{Duration, Instant};

use crate::config::Backoff;
use crate::holder::Holder;

/// Fair waiting's tuning in one place: what each value is, and the figure it was tuned against
/// (docs/benchmarks.md §3 "Contention", and the fairness tests of `core/tests/fair_wait.rs`).
#[derive(Debug)]
pub(crate) struct Tuning {
    /// How often a waiter looks when its turn is near or past: the hand-off median (8 workers).
    pub(crate) fast: Duration,
    /// How close to its expected turn (ms) a waiter looks every `fast`: p99 wait (8, 32 workers).
    pub(crate) near_ms: i64,
    /// The share of the time left until its turn a waiter sleeps: reads/acq (32 workers).
    pub(crate) sleep_share: f64,
    /// Fast looks per holder, then the backoff: `a_misleading_stamp_costs_bounded_looks_and_time`.
    pub(crate) fast_looks_per_holder: u32,
    /// Hold-back per ms of `gap` beyond `near_ms` on a free lock: refused writes/acq (8 workers).
    pub(crate) hold_back_per_gap: f64,
    /// The longest hold-back: refused writes/acq and hand-off median (8 workers).
    pub(crate) hold_back_max: Duration,
    /// Holding back needs a gap of more than this many spacings: max/min per worker (8 workers).
    pub(crate) hold_back_spacings: f64,
    /// Two looks this close that see two holders see consecutive ones (a spacing sample).
    pub(crate) spacing_looks: Duration,
    /// Weight of a new spacing sample.
    pub(crate) spacing_weight: f64,
    /// The share of its last wait a releaser yields (0.9 locked processes in long waits, 4
    /// workers): `processes_take_turns`' Jain >= 0.97.
    pub(crate) yield_share: f64,
    /// Spacings of its last wait a releaser does not yield: the hand-off median at 2 workers.
    pub(crate) yield_spacings: f64,
    /// What counts as "just released" for [`yield_after_release`].
    pub(crate) just_released: Duration,
    /// A local run's first budget: `a_process_with_many_waiters_leaves_room_for_others`.
    pub(crate) run_budget: Duration,
    /// The longest budget (windows cost a lone process under 4 %): the one-process rows.
    pub(crate) run_budget_max: Duration,
    /// A fresh waiter passed over paces by its age past this: the one-shot row's max wait.
    pub(crate) old_wait: Duration,
    /// How long a long run leaves the lock free (> Laravel's 250 ms poll): the mixed row.
    pub(crate) yield_window: Duration,
    /// The window is at least this many of the last release's round trips (a remote waiter's
    /// look and write at the server's pace): `a_process_with_many_waiters_leaves_room_for_others`.
    pub(crate) window_per_round_trip: f64,
    /// The longest window, however slow the server.
    pub(crate) yield_window_max: Duration,
    /// The longest pause at a holder without a stamp, Laravel's poll: `fair_with_laravel`.
    pub(crate) unstamped_cap: Duration,
}

/// The tuning in use.
pub(crate) const TUNING: Tuning = Tuning {
    fast: Duration::from_millis(30),
    near_ms: 100,
    sleep_share: 0.6,
    fast_looks_per_holder: 12,
    hold_back_per_gap: 0.5,
    hold_back_max: Duration::from_millis(100),
    hold_back_spacings: 1.5,
    spacing_looks: Duration::from_millis(100),
    spacing_weight: 0.3,
    yield_share: 0.6,
    yield_spacings: 2.5,
    just_released: Duration::from_secs(1),
    run_budget: Duration::from_secs(1),
    run_budget_max: Duration::from_secs(8),
    old_wait: Duration::from_millis(500),
    yield_window: Duration::from_millis(300),
    window_per_round_trip: 3.0,
    yield_window_max: Duration::from_secs(2),
    unstamped_cap: Duration::from_millis(250),
};

/// What a process remembers of a contended key between its waits, so that a new wait starts
/// with it.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(crate) struct Memory {
    /// The `ddblock_since` of the last holder seen, or of this process's own last acquisition.
    pub(crate) last_since: Option<i64>,
    /// The usual spacing, in ms, between the `since` of one holder and the next.
    pub(crate) spacing_ms: Option<f64>,
    /// How long this process's last wait on the key lasted.
    pub(crate) last_wait: Option<Duration>,
}

/// A process's run of holds on one key: acquisitions by its handles one after another (its
/// waiters handing the lock over locally), with nobody else seen holding it in between; and the
/// budget before a run leaves the lock free for a moment ([`Tuning::run_budget`]).
#[derive(Debug, Default)]
pub(crate) struct Run {
    /// When the current run began.
    started: Option<Instant>,
    /// Moments left free in a row that nobody else took the lock in: from the second, each
    /// doubles the budget ([`Run::budget`]).
    unused: u32,
    /// How long this process's last release took (its round trip to the server).
    release_took: Option<Duration>,
}

impl Run {
    /// A handle of this process took the lock: a run goes on, or begins.
    pub(crate) fn acquired(&mut self) {
        self.started.get_or_insert_with(Instant::now);
    }

    /// A release with nobody of this process waiting: the run ends.
    pub(crate) fn ended(&mut self) {
        self.started = None;
    }

    /// A handle of this process released the lock in `took` (its round trip).
    pub(crate) fn released(&mut self, took: Duration) {
        self.release_took = Some(took);
    }

    /// Someone else was seen holding the lock: the run ends, and the next gets the first budget.
    pub(crate) fn others_took_it(&mut self) {
        self.started = None;
        self.unused = 0;
    }

    /// The current run's budget: the first, doubled for each unused moment in a row after the
    /// first (up to [`Tuning::run_budget_max`]). One unused moment does not double it: a waiter
    /// of another process that looked a little late (its look's answer slow under load) would
    /// otherwise wait twice as long for the next (`a_process_with_many_waiters_leaves_room_for_
    /// others` on a loaded machine: 2.7 to 4.2 s instead of about 1).
    fn budget(&self) -> Duration {
        let doublings = self.unused.saturating_sub(1).min(16);
        TUNING
            .run_budget
            .saturating_mul(1 << doublings)
            .min(TUNING.run_budget_max)
    }

    /// Whether the run has lasted its budget (then the next local hand-over leaves the lock free
    /// for [`Tuning::yield_window`]).
    pub(crate) fn long(&self) -> bool {
        self.started.is_some_and(|t| t.elapsed() >= self.budget())
    }

    /// The lock is being left free for a moment: the run ends, and counts as unused unless
    /// someone else then takes the lock ([`Run::others_took_it`]). Returns the moment's length:
    /// [`Tuning::yield_window`], or longer when the server answers slowly, since a waiter of
    /// another process must look and write within it (on a loaded server a 300 ms window was
    /// missed run after run).
    pub(crate) fn yielded(&mut self) -> Duration {
        self.started = None;
        self.unused = self.unused.saturating_add(1);
        let slow = self
            .release_took
            .map_or(Duration::ZERO, |t| t.mul_f64(TUNING.window_per_round_trip));
        TUNING.yield_window.max(slow).min(TUNING.yield_window_max)
    }
}

/// How long a process that has just released a contended lock waits before it looks at it again:
/// part of its last wait beyond 2.5 spacings (so that with one or two others it looks at once, and
/// with many it lets the older ones go first), at most the backoff's cap and the time to another
/// process's first window; `None`: look now (nothing known yet).
pub(crate) fn yield_after_release(memory: &Memory, backoff: &Backoff) -> Option<Duration> {
    let spacing = memory.spacing_ms?;
    let waited = memory.last_wait?.as_secs_f64() * 1000.0;
    let ms = TUNING.yield_share * (waited - TUNING.yield_spacings * spacing);
    // Never past another process's first window ([`Run`]): a releaser that slept through it
    // waited longer for the next, so yielded longer after it, and missed the next as well
    // (`a_process_with_many_waiters_leaves_room_for_others`: lone waits of 1, 2.2, then 4.1 s).
    let cap = TUNING.run_budget.saturating_sub(TUNING.yield_window);
    (ms >= 1.0).then(|| {
        Duration::from_millis(ms.min(1e9) as u64)
            .min(backoff.max)
            .min(cap)
    })
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
    /// The latest `since` seen of a holder no younger than this waiter: where the queue of
    /// waiters stood last. A younger holder (an arrival that found the lock free, a waiter that
    /// jumped the queue) does not move it.
    served: Option<i64>,
    /// When this waiter began waiting, by this process's clock.
    started: Instant,
    /// Whether its process remembers nothing of the key's waiting (a process that waits once).
    fresh: bool,
    /// The usual spacing between consecutive holders' `since`, ms.
    spacing_ms: Option<f64>,
    /// The last look that saw a `since`: when, and which.
    last_look: Option<(Instant, i64)>,
    /// Whether this waiter already held back once since it last saw the lock held.
    held_back: bool,
    /// Whether stock Laravel can share the lock (then a holder without a stamp is watched at
    /// Laravel's pace, [`TUNING.unstamped_cap`]).
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
            served: None,
            started: Instant::now(),
            fresh: *memory == Memory::default(),
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
                pause.min(TUNING.unstamped_cap)
            } else {
                pause
            };
        };
        self.last_since = Some(holder_since);
        if let Some((at, since)) = self.last_look {
            // Consecutive holders are a spacing sample. For a process that waits once, only
            // those of the queue: a holder younger than it jumped it (an arrival at a free lock)
            // and says nothing of the queue's spacing. A long-lived process keeps every sample:
            // without those of another process's run of younger holders its waiters' spacing
            // went stale, and a lone waiter beside a busy process waited up to 4 s instead of 1
            // (`a_process_with_many_waiters_leaves_room_for_others`).
            let queued = !self.fresh || holder_since <= self.since_ms;
            if queued && holder_since > since && at.elapsed() <= TUNING.spacing_looks {
                let sample = (holder_since - since) as f64;
                self.spacing_ms = Some(match self.spacing_ms {
                    Some(s) => s + TUNING.spacing_weight * (sample - s),
                    None => sample,
                });
            }
        }
        self.last_look = Some((Instant::now(), holder_since));
        let gap = self.since_ms.saturating_sub(holder_since);
        if gap >= 0 {
            self.served = Some(self.served.map_or(holder_since, |s| s.max(holder_since)));
        }
        let head = self.head();
        let id = (holder.fence, holder.since_ms, holder.owner.clone());
        let watched = match &mut self.watched {
            Some(w) if w.id == id => w,
            slot => slot.insert(Watched {
                id,
                first_seen: Instant::now(),
                fast_looks: 0,
            }),
        };
        let fast = TUNING.fast.min(backoff.initial);
        if gap < 0 && !head && self.fresh {
            // A younger holder (an arrival that found the lock free, a waiter that jumped the
            // queue) passed this waiter over, and maybe others older than it: the waiter next
            // after the queue's last place looks often, the others the more often the longer they
            // have waited, so that they do not all look, and write, at once when the lock frees.
            let pause = TUNING.unstamped_cap.mul_f64(self.aged()).max(fast);
            return pause.mul_f64(1.0 - 0.3 * rand01.clamp(0.0, 1.0));
        }
        let held_for = i64::try_from(watched.first_seen.elapsed().as_millis()).unwrap_or(i64::MAX);
        let left = gap.saturating_sub(held_for);
        let pause = if gap <= 0 || left <= TUNING.near_ms {
            if watched.fast_looks >= TUNING.fast_looks_per_holder {
                return backoff.delay(look, rand01);
            }
            watched.fast_looks += 1;
            fast
        } else {
            let ms = (left as f64 * TUNING.sleep_share).min(backoff.max.as_secs_f64() * 1000.0);
            Duration::from_millis(ms as u64).clamp(fast, backoff.max.max(fast))
        };
        // A little jitter, so waiters that expect the same turn do not look in step.
        pause.mul_f64(1.0 - 0.3 * rand01.clamp(0.0, 1.0))
    }

    /// 1 until this waiter has waited [`Tuning::old_wait`], then less the longer it waits.
    fn aged(&self) -> f64 {
        (TUNING.old_wait.as_secs_f64() / self.started.elapsed().as_secs_f64()).min(1.0)
    }

    /// The gap (ms) within which a waiter is likely next: one and a half usual spacings, at
    /// least [`Tuning::near_ms`].
    fn next(&self) -> f64 {
        (TUNING.near_ms as f64).max(TUNING.hold_back_spacings * self.spacing_ms.unwrap_or(0.0))
    }

    /// Whether this waiter is likely next after the queue's last place.
    fn head(&self) -> bool {
        self.served
            .is_none_or(|s| (self.since_ms.saturating_sub(s) as f64) <= self.next())
    }

    /// The lock looks free: how long to hold back before looking again, when older waiters are
    /// likely (this waiter began waiting well after the last holder did); `None`: write now.
    /// At most once per free spell: after holding back, the next free look writes.
    pub(crate) fn hold_back(&mut self) -> Option<Duration> {
        if std::mem::replace(&mut self.held_back, false) {
            return None;
        }
        let gap = self.since_ms.saturating_sub(self.last_since?) as f64;
        let next = self.next();
        if gap <= next {
            return None;
        }
        self.held_back = true;
        let ms = ((gap - next) * TUNING.hold_back_per_gap).min(1e9);
        Some(Duration::from_millis(ms as u64).min(TUNING.hold_back_max))
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
        assert_eq!(
            overdue.pause(&holder(1, Some(10_000)), 5, &b, 0.0),
            TUNING.fast
        );
    }

    #[test]
    fn fast_looks_are_bounded_per_holder_then_the_backoff_rules() {
        let b = Backoff::default();
        let mut p = Place::new(9_000, &Memory::default(), true);
        let h = holder(1, Some(10_000));
        for _ in 0..TUNING.fast_looks_per_holder {
            assert_eq!(p.pause(&h, 10, &b, 0.0), TUNING.fast);
        }
        assert_eq!(p.pause(&h, 10, &b, 0.0), b.max);
        // The next holder gets fresh fast looks.
        assert_eq!(p.pause(&holder(2, Some(10_050)), 10, &b, 0.0), TUNING.fast);
    }

    #[test]
    fn a_fresh_waiter_passed_over_paces_by_its_age_and_the_head_looks_often() {
        let b = Backoff::default();
        // A process that waits once: it saw the queue at 10 000 (a holder older than itself),
        // then an arrival younger than every waiter took the lock.
        let mut behind = Place::new(10_500, &Memory::default(), true);
        behind.pause(&holder(1, Some(10_000)), 0, &b, 0.0);
        let arrival = holder(2, Some(12_000));
        // 500 ms behind the queue's last place, and waiting less than `old_wait`: Laravel's pace.
        assert_eq!(behind.pause(&arrival, 1, &b, 0.0), TUNING.unstamped_cap);
        // After twice `old_wait`, twice as often.
        behind.started = Instant::now() - TUNING.old_wait * 2;
        let p = behind.pause(&arrival, 2, &b, 0.0);
        assert!(
            p <= TUNING.unstamped_cap / 2 && p > TUNING.unstamped_cap / 3,
            "{p:?}"
        );
        // Much older still: every `fast`, no faster.
        behind.started = Instant::now() - TUNING.old_wait * 100;
        assert_eq!(behind.pause(&arrival, 3, &b, 0.0), TUNING.fast);
        // The waiter next after the queue's last place looks often at once.
        let mut head = Place::new(10_050, &Memory::default(), true);
        head.pause(&holder(1, Some(10_000)), 0, &b, 0.0);
        assert_eq!(head.pause(&arrival, 1, &b, 0.0), TUNING.fast);
        // A process that remembers the key (a long-lived one) looks often when passed over, as
        // before: its memory keeps its waiters in order.
        let memory = Memory {
            last_since: Some(9_000),
            spacing_ms: Some(70.0),
            last_wait: Some(Duration::from_millis(500)),
        };
        let mut remembers = Place::new(10_500, &memory, true);
        remembers.pause(&holder(1, Some(10_000)), 0, &b, 0.0);
        assert_eq!(remembers.pause(&arrival, 1, &b, 0.0), TUNING.fast);
    }

    #[test]
    fn holders_without_since_get_the_backoff_up_to_laravels_period_and_no_hold_back() {
        let b = Backoff::default();
        let mut p = Place::new(12_000, &Memory::default(), true);
        assert_eq!(p.pause(&holder(1, None), 0, &b, 0.0), b.delay(0, 0.0));
        assert_eq!(p.pause(&holder(1, None), 10, &b, 0.0), TUNING.unstamped_cap);
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
        // A long wait: at most the time to another process's first window (under the backoff's
        // cap), so that it is looking again when that window comes.
        let cap = TUNING.run_budget - TUNING.yield_window;
        assert!(cap < b.max);
        assert_eq!(
            yield_after_release(&memory(9_000, Some(100.0)), &b),
            Some(cap)
        );
        // Nothing learnt yet: looks at once.
        assert_eq!(yield_after_release(&memory(700, None), &b), None);
    }
}
