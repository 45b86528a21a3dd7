//! What this process knows of each lock: who of its waiters watches it and whether one of its
//! handles holds it. Waiters on one key (same endpoint, region, table, bucket and key) take turns,
//! so only one of them watches the lock at a time however many wait; a release in this process
//! wakes the watcher at once instead of after its next pause; a waiter that knows a handle of this
//! process holds the lock sends no write to learn it; and once this process has seen the lock
//! held, its next waiters look (an eventually consistent read on DynamoDB) before they write.
//!
//! One process-wide registry keyed by the lock's identity (not by handle), so separate `Store`s
//! and `Lock` handles on the same key share it. An entry lives while someone waits on the key or a
//! handle holds it (entries of locks left to expire unreleased are swept as the map grows).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use tokio::sync::{Mutex as TurnMutex, MutexGuard as TurnGuard, Notify};

use super::fair::{Memory, Run, TUNING};

/// Entries kept before stale ones are swept (a sweep runs when the map reaches a power of two).
const SWEEP_FROM: usize = 64;
/// How many of this process's last owners of a key a look tells from someone else's.
const LOCAL_OWNERS: usize = 4;
/// How long a key counts as contended after a waiter of this process last saw it held.
const CONTENDED_FOR: Duration = Duration::from_secs(10);

/// One key's entry.
#[derive(Debug, Default)]
struct Entry {
    /// The waiters of the key, while anyone waits.
    waiters: Weak<KeyWaiters>,
    /// Until when (Unix seconds, the store's clock) a handle of this process holds the lock, as
    /// far as this process knows.
    held_until: Option<i64>,
    /// When a waiter of this process last saw the lock held by someone else.
    seen_held: Option<Instant>,
    /// The owners of this process's last acquisitions, newest last: a look whose answer was
    /// read before a local release landed shows the lock held by one of them, which is not
    /// someone else taking it.
    local_owners: VecDeque<String>,
    /// When a handle of this process last released the lock.
    released_at: Option<Instant>,
    /// What this process's waiters learnt of the waiting between processes (`fair.rs`).
    memory: Memory,
    /// This process's current run of holds (`fair.rs`: a long run leaves the lock free for a
    /// moment).
    run: Run,
}

impl Entry {
    /// Whether the entry still says anything (`now`: Unix seconds by the store's clock).
    fn live(&self, now: Option<i64>) -> bool {
        self.waiters.strong_count() > 0
            || match (self.held_until, now) {
                (Some(until), Some(now)) => until > now,
                (held, _) => held.is_some(),
            }
            || self.recently_contended()
    }

    fn recently_contended(&self) -> bool {
        self.seen_held.is_some_and(|t| t.elapsed() < CONTENDED_FOR)
    }
}

static REGISTRY: LazyLock<Mutex<HashMap<Arc<str>, Entry>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

fn registry() -> MutexGuard<'static, HashMap<Arc<str>, Entry>> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// The waiters of one key in this process.
#[derive(Debug, Default)]
pub(crate) struct KeyWaiters {
    /// Held by the one waiter that watches the lock; the others queue for it (FIFO).
    turn: TurnMutex<()>,
    /// Signalled when a lock on the key is released (or force-released) in this process.
    released: Notify,
}

/// A waiter's membership of its key's queue; the waiters go when the last member leaves.
#[derive(Debug)]
pub(crate) struct Membership {
    key: Arc<str>,
    waiters: Arc<KeyWaiters>,
}

/// Joins the waiters of `key` (the first waiter creates them).
pub(crate) fn join(key: &Arc<str>) -> Membership {
    let mut map = registry();
    let entry = map.entry(key.clone()).or_default();
    let waiters = match entry.waiters.upgrade() {
        Some(w) => w,
        None => {
            let w = Arc::new(KeyWaiters::default());
            entry.waiters = Arc::downgrade(&w);
            w
        }
    };
    Membership {
        key: key.clone(),
        waiters,
    }
}

/// A handle of this process with `owner` took the lock on `key` until `expires_at` (`now` by the
/// same clock).
pub(crate) fn acquired(key: &Arc<str>, owner: &str, expires_at: i64, now: i64) {
    let mut map = registry();
    let entry = map.entry(key.clone()).or_default();
    entry.held_until = Some(expires_at);
    if !entry.local_owners.iter().any(|o| o == owner) {
        if entry.local_owners.len() == LOCAL_OWNERS {
            entry.local_owners.pop_front();
        }
        entry.local_owners.push_back(owner.to_owned());
    }
    entry.run.acquired();
    if map.len() >= SWEEP_FROM && map.len().is_power_of_two() {
        map.retain(|_, e| e.live(Some(now)));
    }
}

/// A handle of this process released the lock on `key` (its round trip took `took`, when
/// known): wake the local watcher now.
pub(crate) fn released(key: &str, took: Option<Duration>) {
    let waiters = {
        let mut map = registry();
        let Some(entry) = map.get_mut(key) else {
            return;
        };
        if let Some(t) = took {
            entry.run.released(t);
        }
        entry.held_until = None;
        entry.released_at = Some(Instant::now());
        let waiters = entry.waiters.upgrade();
        if waiters.is_none() {
            // Nobody of this process waits: its run of holds ends here.
            entry.run.ended();
        }
        if !entry.live(None) {
            map.remove(key);
        }
        waiters
    };
    if let Some(w) = waiters {
        w.released.notify_one();
    }
}

impl Membership {
    /// Waits for this waiter's turn to watch the lock.
    pub(crate) async fn turn(&self) -> TurnGuard<'_, ()> {
        self.waiters.turn.lock().await
    }

    /// Resolves when a lock on the key is released in this process (at once if one was released
    /// since the last call and nobody took the wake-up).
    pub(crate) async fn released(&self) {
        self.waiters.released.notified().await;
    }

    /// Whether a handle of this process holds the lock at `now`, as far as this process knows.
    pub(crate) fn held_locally(&self, now: i64) -> bool {
        registry()
            .get(&self.key)
            .and_then(|e| e.held_until)
            .is_some_and(|until| until > now)
    }

    /// A waiter saw the lock held by `owner` (`now`: Unix seconds by the store's clock). Unless
    /// a handle of this process holds it or it is one of this process's last owners (an answer
    /// read just before a local release landed), someone else does: this process's run of holds
    /// has ended and others want the lock, so the next run gets the first budget. Without the
    /// owners, such a stale answer, frequent when reads are slow, restarted the run every few
    /// hand-overs, so it never left the lock free for others (`a_process_with_many_waiters_
    /// leaves_room_for_others`: the lone process waited up to 2.5 s on a loaded machine).
    pub(crate) fn seen_held(&self, owner: Option<&str>, now: i64) {
        if let Some(e) = registry().get_mut(&self.key) {
            e.seen_held = Some(Instant::now());
            let ours = owner.is_some_and(|o| e.local_owners.iter().any(|l| l == o));
            if !ours && e.held_until.is_none_or(|until| until <= now) {
                e.run.others_took_it();
            }
        }
    }

    /// Whether this process's handles have held the lock one after another for longer than
    /// their budget (then the next local hand-over leaves it free for a moment, `fair.rs`).
    pub(crate) fn long_run(&self) -> bool {
        registry().get(&self.key).is_some_and(|e| e.run.long())
    }

    /// The lock is being left free for a moment ([`Run::yielded`]; a waiter that then sees
    /// someone else take it starts over from the first budget, [`Self::seen_held`]): how long.
    pub(crate) fn yielded(&self) -> Duration {
        registry()
            .get_mut(&self.key)
            .map_or(TUNING.yield_window, |e| e.run.yielded())
    }

    /// Whether a handle of this process released the lock less than `within` ago while it was
    /// contended (then remote waiters that waited longer should get it first).
    pub(crate) fn released_lately(&self, within: Duration) -> bool {
        registry().get(&self.key).is_some_and(|e| {
            e.recently_contended() && e.released_at.is_some_and(|t| t.elapsed() < within)
        })
    }

    /// What this process remembers of the key's waiting.
    pub(crate) fn memory(&self) -> Memory {
        registry()
            .get(&self.key)
            .map(|e| e.memory)
            .unwrap_or_default()
    }

    /// Keeps what a waiter learnt for the next wait on the key.
    pub(crate) fn remember(&self, memory: Memory) {
        if let Some(e) = registry().get_mut(&self.key) {
            e.memory = memory;
        }
    }

    /// Whether a waiter of this process saw the lock held lately (then a look costs less than a
    /// write that would most likely be refused).
    pub(crate) fn recently_contended(&self) -> bool {
        registry()
            .get(&self.key)
            .is_some_and(Entry::recently_contended)
    }
}

impl Drop for Membership {
    fn drop(&mut self) {
        let mut map = registry();
        // Ours is the last strong reference (joins upgrade under this same lock).
        if Arc::strong_count(&self.waiters) != 1 {
            return;
        }
        if let Some(entry) = map.get_mut(&self.key) {
            if Weak::ptr_eq(&entry.waiters, &Arc::downgrade(&self.waiters)) {
                entry.waiters = Weak::new();
                if !entry.live(None) {
                    map.remove(&self.key);
                }
            }
        }
    }
}
