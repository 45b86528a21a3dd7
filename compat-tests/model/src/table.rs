//! The DynamoDB table: each request's condition and effect on the lock item, as
//! `core/src/dynamo/request.rs` and Laravel's `DynamoDbStore` send them. Conditions are evaluated
//! on the latest version; only an eventually consistent read can answer an older one.

use crate::config::{Config, Kind, FENCE_SCALE};
use crate::state::{event, Answer, ClientId, Fence, Item, Nth, State, Tick, Write, NOBODY};

/// Replaces the item, remembering the old version for stale reads.
pub fn set_item(cfg: &Config, s: &mut State, item: Option<Item>) {
    if cfg.stale_ticks.is_some() {
        s.stale = Some(s.item);
    }
    s.changed_at = s.t;
    s.item = item;
}

/// A write lands. ddblock: UpdateItem `SET #value, #expires_at, #attempt, #fence =
/// if_not_exists(#fence, :fence_base) + :one` if `attribute_not_exists(#key) OR #expires_at <
/// :now` (`:now` less the margin). Laravel's `add()`: PutItem of the whole item with
/// `attribute_not_exists(#key) OR #expires_at < :now`.
pub fn land(cfg: &Config, s: &mut State, w: &Write) -> Answer {
    let laravel = cfg.clients[usize::from(w.client)] == Kind::Laravel;
    let cutoff = if laravel { w.now } else { w.now - cfg.margin };
    if let Some(old) = s.item {
        if old.expires_at >= cutoff {
            return Answer::Taken(old);
        }
        s.seen |= event::TAKEN_OVER;
    }
    let fence = if laravel || !cfg.fences {
        None
    } else {
        let f = match s.item.and_then(|i| i.fence) {
            Some(f) => f + 1,
            None => w.fence_base + 1,
        };
        if s.max_fence.is_some_and(|m| f <= m) {
            s.fence_back = true;
        }
        s.max_fence = Some(s.max_fence.map_or(f, |m| m.max(f)));
        Some(f)
    };
    // `SET #since` only when stamped: an unstamped takeover keeps the old stamp (PutItem drops it).
    let old_since = s.item.and_then(|i| i.since);
    if !laravel && w.since.is_none() && old_since.is_some() {
        s.seen |= event::STAMP_LEFT;
    }
    if w.since.is_some() {
        s.seen |= event::STAMPED_ACQUIRED;
    }
    let item = Item {
        owner: w.client,
        n: w.n,
        has_attempt: !laravel,
        expires_at: w.expires_at,
        fence,
        since: if laravel { None } else { w.since.or(old_since) },
    };
    set_item(cfg, s, Some(item));
    Answer::Written {
        fence,
        sent_at: w.sent_at,
    }
}

/// The fence base a send reads: its clock in "µs", later sends in a tick reading later.
pub fn fence_base(clock: Tick, sends: u8) -> Fence {
    clock * FENCE_SCALE + Fence::from(sends)
}

/// ddblock's clean-up: DeleteItem if `#value = :owner AND #attempt = :attempt`, or with `keep`,
/// the keep-fence release's update to that expiry under the same condition. True if it applied.
pub fn delete_attempt(
    cfg: &Config,
    s: &mut State,
    client: ClientId,
    n: Nth,
    keep: Option<Tick>,
) -> bool {
    match s.item {
        Some(i) if i.owner == client && i.has_attempt && i.n == n => {
            if (i.owner, i.n) != (client, n) {
                s.cleanup_deleted_other = true;
            }
            set_item(cfg, s, keep.map(|past| kept(i, past)));
            true
        }
        _ => false,
    }
}

/// What a keep-fence release leaves: `SET #expires_at = :past REMOVE #value, #attempt, #since`.
fn kept(i: Item, past: Tick) -> Item {
    Item {
        owner: NOBODY,
        has_attempt: false,
        expires_at: past,
        since: None,
        ..i
    }
}

/// Whether an item is someone else's than acquisition `n` of `client`.
fn others(i: Item, client: ClientId, n: Nth) -> bool {
    (i.owner, i.n) != (client, n)
}

/// ddblock's release, delete mode: DeleteItem if `#value = :owner`. True if deleted.
pub fn delete_owned(cfg: &Config, s: &mut State, client: ClientId, n: Nth) -> bool {
    match s.item {
        Some(i) if i.owner == client => {
            if others(i, client, n) {
                s.release_deleted_other = true;
            }
            set_item(cfg, s, None);
            true
        }
        _ => false,
    }
}

/// ddblock's release, keep-fence mode: UpdateItem `SET #expires_at = :past REMOVE #value,
/// #attempt` if `#value = :owner`, the fence kept. True if updated.
pub fn expire_owned(cfg: &Config, s: &mut State, client: ClientId, n: Nth, past: Tick) -> bool {
    match s.item {
        Some(i) if i.owner == client => {
            if others(i, client, n) {
                s.release_deleted_other = true;
            }
            set_item(cfg, s, Some(kept(i, past)));
            true
        }
        _ => false,
    }
}

/// Laravel's `forget()`: an unconditional DeleteItem. Notes a deleted item of another.
pub fn delete_any(cfg: &Config, s: &mut State, client: ClientId, n: Nth) {
    if let Some(i) = s.item {
        if others(i, client, n) {
            s.release_deleted_other = true;
        }
        force_delete(cfg, s);
    }
}

/// An unconditional DeleteItem (Laravel's `forget()`, `force_release`). Notes a live ddblock
/// holder's lock taken from it.
pub fn force_delete(cfg: &Config, s: &mut State) {
    if let Some(i) = s.item {
        let holder = s.clients.get(usize::from(i.owner));
        let ddblock = cfg.clients.get(usize::from(i.owner)) != Some(&Kind::Laravel);
        if ddblock && holder.is_some_and(|h| h.live(s.t) && h.current() == i.n) {
            s.ddblock_lock_taken = true;
        }
        s.forced = true;
        set_item(cfg, s, None);
    }
}

/// The refresh: UpdateItem `SET #expires_at` if `attribute_exists(#key) AND #value = :owner AND
/// #expires_at > :now`. True if updated.
pub fn refresh(cfg: &Config, s: &mut State, client: ClientId, now: Tick) -> bool {
    match s.item {
        Some(i) if i.owner == client && i.expires_at > now => {
            let item = Item {
                expires_at: now + cfg.ttl,
                ..i
            };
            set_item(cfg, s, Some(item));
            true
        }
        _ => false,
    }
}

/// The versions an eventually consistent GetItem may answer now: the latest, and the one before
/// while the staleness window lasts.
pub fn readable(s: &State) -> Vec<(Option<Item>, bool)> {
    let mut out = vec![(s.item, false)];
    if let Some(old) = s.stale {
        if old != s.item {
            out.push((old, true));
        }
    }
    out
}

/// Ends the staleness window when time moves past it.
pub fn age(cfg: &Config, s: &mut State) {
    if let Some(w) = cfg.stale_ticks {
        if s.t > s.changed_at + w {
            s.stale = None;
        }
    }
}
