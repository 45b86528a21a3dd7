//! Each client as a state machine. ddblock (the core, and the PHP driver, which sends the same
//! requests): acquire with an attempt id and a fence, resent after a lost answer, a clean-up of
//! an unknown outcome (`core/src/lock/attempt.rs`); release as one owner-conditioned request;
//! refresh (the heartbeat's step). Stock Laravel: `add()`, its SDK's resend, and a release that
//! reads (eventually consistent) before it deletes unconditionally.

use crate::config::{Config, Kind, ReleaseMode};
use crate::state::{
    event, show_item, Answer, Client, ClientId, Ended, Notes, Phase, State, Tick, Write, NOBODY,
};
use crate::table;

fn client(s: &State, c: ClientId) -> Client {
    s.clients[usize::from(c)]
}

fn clock(s: &State, c: ClientId) -> Tick {
    s.t + client(s, c).offset
}

fn set_phase(s: &mut State, c: ClientId, phase: Phase) {
    s.clients[usize::from(c)].phase = phase;
}

fn end(s: &mut State, c: ClientId, how: Ended) {
    let cl = &mut s.clients[usize::from(c)];
    cl.phase = Phase::Idle;
    cl.ended = Some(how);
}

/// The owner client `c` conditions on and the acquisition it means: its own current one, or,
/// for a restorer, the restored owner's.
fn handle(cfg: &Config, s: &State, c: ClientId) -> (ClientId, crate::state::Nth) {
    let owner = cfg.owner(c);
    (owner, client(s, owner).current())
}

fn is_restorer(cfg: &Config, c: ClientId) -> bool {
    matches!(cfg.clients[usize::from(c)], Kind::Restorer(_))
}

fn is_laravel(cfg: &Config, c: ClientId) -> bool {
    cfg.clients[usize::from(c)] == Kind::Laravel
}

/// Sends write `seq` of the current acquisition, at the client's clock now.
pub fn send(cfg: &Config, s: &mut State, c: ClientId, seq: u8, unknown: bool, notes: &mut Notes) {
    let now = clock(s, c);
    let w = Write {
        client: c,
        n: client(s, c).current(),
        seq,
        now,
        sent_at: s.t,
        expires_at: now + cfg.ttl,
        fence_base: if cfg.fences {
            table::fence_base(now, s.sends)
        } else {
            0
        },
        since: s.since.get(usize::from(c)).copied().flatten(),
    };
    if cfg.fences {
        s.sends = s.sends.saturating_add(1);
    }
    let name = cfg.client_name(c);
    notes.say(|| {
        let what = if is_laravel(cfg, c) {
            format!("add() PutItem sent (clock {now}: expires_at={}, condition expires_at < {now})", w.expires_at)
        } else {
            format!(
                "acquire UpdateItem #{seq} sent (clock {now}: expires_at={}, condition expires_at < {}, fence_base={})",
                w.expires_at,
                now - cfg.margin,
                w.fence_base
            )
        };
        format!("t={} {name}: {what}", s.t)
    });
    let mut answer = None;
    if cfg.delayed_writes {
        s.net.push(w);
        s.net.sort();
    } else {
        let a = table::land(cfg, s, &w);
        notes.say(|| {
            format!(
                "t={} table: the write lands at once: {}",
                s.t,
                show_answer(cfg, a)
            )
        });
        answer = Some(a);
    }
    set_phase(
        s,
        c,
        Phase::Acquiring {
            writes: seq,
            unknown,
            waiting: Some(seq),
            answer,
        },
    );
}

fn show_answer(cfg: &Config, a: Answer) -> String {
    let names = cfg.names();
    match a {
        Answer::Written { fence, .. } => format!(
            "condition holds, written (fence={})",
            fence.map_or(String::from("none"), |f| f.to_string())
        ),
        Answer::Taken(i) => format!(
            "condition fails, the item is {}",
            show_item(Some(i), &names)
        ),
        Answer::Gone => "condition fails, and the item is gone when the client reads it".into(),
    }
}

/// A write in flight reaches the table; its answer goes to the sender if it still waits for it.
pub fn land(cfg: &Config, s: &mut State, c: ClientId, seq: u8, notes: &mut Notes) {
    let Some(pos) = s.net.iter().position(|w| w.client == c && w.seq == seq) else {
        return;
    };
    let w = s.net.remove(pos);
    let a = table::land(cfg, s, &w);
    let name = cfg.client_name(c);
    let mut heard = false;
    if let Phase::Acquiring {
        writes,
        unknown,
        waiting: Some(x),
        answer: None,
    } = client(s, c).phase
    {
        if x == seq && w.n == client(s, c).current() {
            heard = true;
            let phase = Phase::Acquiring {
                writes,
                unknown,
                waiting: Some(x),
                answer: Some(a),
            };
            set_phase(s, c, phase);
        }
    }
    notes.say(|| {
        let late = if heard {
            ""
        } else {
            " (nobody waits for its answer)"
        };
        format!(
            "t={} {name}: write #{seq} lands: {}{late}",
            s.t,
            show_answer(cfg, a)
        )
    });
}

/// A write refused before it landed (`ReplicatedWriteConflictException`, throttling): nothing
/// changed, and the client, told so, sends the same write again (core/src/lock/attempt.rs: not
/// counted as a write, the outcome as known as before).
pub fn refuse(cfg: &Config, s: &mut State, c: ClientId, seq: u8, notes: &mut Notes) {
    let Some(pos) = s.net.iter().position(|w| w.client == c && w.seq == seq) else {
        return;
    };
    let w = s.net.remove(pos);
    notes.say(|| {
        format!(
            "t={} {}: write #{seq} refused before it lands (ReplicatedWriteConflictException)",
            s.t,
            cfg.client_name(c)
        )
    });
    if let Phase::Acquiring {
        unknown,
        waiting: Some(x),
        answer: None,
        ..
    } = client(s, c).phase
    {
        if x == seq && w.n == client(s, c).current() {
            send(cfg, s, c, seq, unknown, notes);
        }
    }
}

/// Whether reading answer `a` ends the acquisition (acquired or told it is held).
pub fn answer_ends(cfg: &Config, s: &State, c: ClientId, a: Answer) -> bool {
    if is_laravel(cfg, c) {
        return true;
    }
    let now = clock(s, c);
    match a {
        Answer::Written { .. } => true,
        Answer::Taken(i) if mine(s, c, i) => i.expires_at > now,
        Answer::Taken(i) => i.expires_at >= now - cfg.margin,
        Answer::Gone => false,
    }
}

/// The item carries this attempt's id (owner and `ddblock_attempt`).
fn mine(s: &State, c: ClientId, i: crate::state::Item) -> bool {
    i.owner == c && i.has_attempt && i.n == client(s, c).current()
}

/// The client reads its answer: ddblock's loop in `acquire_by`, or Laravel's `acquire()`.
pub fn answer(cfg: &Config, s: &mut State, c: ClientId, notes: &mut Notes) {
    let Phase::Acquiring {
        writes,
        unknown,
        answer: Some(a),
        ..
    } = client(s, c).phase
    else {
        return;
    };
    let name = cfg.client_name(c);
    let now = clock(s, c);
    let t = s.t;
    match a {
        Answer::Written { fence, sent_at } => {
            let deadline = sent_at + cfg.ttl;
            set_phase(s, c, Phase::Holding { deadline, fence });
            s.seen |= event::ACQUIRED;
            notes.say(|| {
                format!(
                    "t={t} {name}: acquired; its lease runs until t={deadline} by its own clock"
                )
            });
        }
        Answer::Taken(_) | Answer::Gone if is_laravel(cfg, c) => {
            end(s, c, Ended::Held);
            notes.say(|| format!("t={t} {name}: add() returned false: held"));
        }
        Answer::Taken(i) if mine(s, c, i) && i.expires_at > now => {
            let deadline = t + (i.expires_at - now);
            set_phase(
                s,
                c,
                Phase::Holding {
                    deadline,
                    fence: i.fence,
                },
            );
            s.seen |= event::ACQUIRED | event::RECOVERED;
            notes.say(|| format!("t={t} {name}: the item carries this attempt's id: acquired (recovered), lease until t={deadline}"));
        }
        Answer::Taken(i) if !mine(s, c, i) && i.expires_at >= now - cfg.margin => {
            // A waiter reads the holder's stamp to time its next look and write (core/src/lock/
            // fair.rs); the model explores every timing, skipping or delaying included.
            if i.since.is_some() && s.since.get(usize::from(c)).copied().flatten().is_some() {
                s.seen |= event::STAMP_READ;
            }
            end(s, c, Ended::Held);
            notes.say(|| format!("t={t} {name}: held by another: acquire returns Held"));
        }
        Answer::Taken(_) | Answer::Gone => again(cfg, s, c, writes, unknown, notes),
    }
}

/// Sends again if the attempt allows another write, else stops sending (to finish). With a
/// deadline (`cfg.deadlines`), the choice is a step of its own: [`resend`] or [`finish`].
fn again(cfg: &Config, s: &mut State, c: ClientId, writes: u8, unknown: bool, notes: &mut Notes) {
    if writes < cfg.max_writes && !cfg.deadlines {
        send(cfg, s, c, writes + 1, unknown, notes);
    } else {
        let phase = Phase::Acquiring {
            writes,
            unknown,
            waiting: None,
            answer: None,
        };
        set_phase(s, c, phase);
    }
}

/// An acquire with a deadline sends its attempt's next write (the deadline still allows it).
pub fn resend(cfg: &Config, s: &mut State, c: ClientId, notes: &mut Notes) {
    if let Phase::Acquiring {
        writes,
        unknown,
        waiting: None,
        answer: None,
    } = client(s, c).phase
    {
        send(cfg, s, c, writes + 1, unknown, notes);
    }
}

/// The client stops waiting: the answer was lost, or is late past the per-request timeout.
pub fn timeout(cfg: &Config, s: &mut State, c: ClientId, notes: &mut Notes) {
    let Phase::Acquiring {
        writes,
        waiting: Some(seq),
        ..
    } = client(s, c).phase
    else {
        return;
    };
    notes.say(|| {
        format!(
            "t={} {}: no answer to write #{seq} (lost or late): outcome unknown",
            s.t,
            cfg.client_name(c)
        )
    });
    again(cfg, s, c, writes, true, notes);
}

/// The acquisition ends once done sending: after an unknown outcome ddblock deletes this
/// attempt's write if it landed (`#value = :owner AND #attempt = :attempt`) and fails with
/// `OutcomeUnknown`; Laravel throws.
pub fn finish(cfg: &Config, s: &mut State, c: ClientId, notes: &mut Notes) {
    let Phase::Acquiring { unknown, .. } = client(s, c).phase else {
        return;
    };
    let name = cfg.client_name(c);
    let n = client(s, c).current();
    let t = s.t;
    if !unknown {
        end(s, c, Ended::Held);
        notes.say(|| format!("t={t} {name}: the lock kept changing hands: Held"));
    } else if is_laravel(cfg, c) {
        end(s, c, Ended::Unknown);
        notes.say(|| format!("t={t} {name}: add() fails with an error; no clean-up"));
    } else {
        let keep = (cfg.release == ReleaseMode::KeepFence && cfg.cleanup_keeps_fence)
            .then(|| clock(s, c) - cfg.day);
        let deleted = table::delete_attempt(cfg, s, c, n, keep);
        if deleted {
            s.seen |= event::CLEANED_UP;
        }
        end(s, c, Ended::Unknown);
        notes.say(|| {
            let found = if deleted {
                "deletes this attempt's landed write"
            } else {
                "finds nothing of this attempt's"
            };
            format!(
                "t={t} {name}: OutcomeUnknown; the clean-up DeleteItem (owner AND attempt) {found}"
            )
        });
    }
}

/// The heartbeat's refresh: `expires_at = now + ttl` if ours and live by our clock; on an answer,
/// the lease runs `ttl` from the send.
/// A restorer (not yet holding) refreshes with the restored owner: on an answer it holds.
pub fn refresh(cfg: &Config, s: &mut State, c: ClientId, lost: bool, notes: &mut Notes) {
    let fence = match client(s, c).phase {
        Phase::Holding { fence, .. } => fence,
        Phase::Idle if is_restorer(cfg, c) => s.item.and_then(|i| i.fence),
        _ => return,
    };
    let now = clock(s, c);
    let ok = table::refresh(cfg, s, cfg.owner(c), now);
    let t = s.t;
    if ok {
        s.seen |= event::REFRESHED;
        if is_restorer(cfg, c) {
            s.seen |= event::RESTORED_REFRESHED;
        }
        if !lost {
            let deadline = t + cfg.ttl;
            set_phase(s, c, Phase::Holding { deadline, fence });
        }
    }
    let name = cfg.client_name(c);
    notes.say(|| {
        let lost = if lost { ", its answer lost" } else { "" };
        format!(
            "t={t} {name}: refresh UpdateItem (clock {now}) {}{lost}",
            if ok { "extends the lock" } else { "fails" }
        )
    });
}

/// A holder releases. ddblock: one request conditioned on the owner (delete, or keep-fence's
/// update to a past expiry; a restorer's with the restored owner); with `stale` its answer is
/// lost after it applied and the client sends it again (a later step, [`Phase::Releasing`]),
/// going by the resend's answer. Laravel: GetItem (eventually consistent; `stale` reads the
/// version before the last change), and the delete only if it saw its own owner on a live item.
pub fn release(cfg: &Config, s: &mut State, c: ClientId, stale: bool, notes: &mut Notes) {
    let name = cfg.client_name(c);
    let now = clock(s, c);
    let t = s.t;
    if is_laravel(cfg, c) {
        let seen = if stale { s.stale.flatten() } else { s.item };
        if stale {
            s.seen |= event::STALE_READ;
        }
        // Laravel's get(): an expired item (expires_at <= now) reads as null.
        let owner = seen.filter(|i| i.expires_at > now).map(|i| i.owner);
        let names = cfg.names();
        let read = if stale { "GetItem (stale)" } else { "GetItem" };
        if owner == Some(c) {
            set_phase(s, c, Phase::Deleting);
            notes.say(|| {
                format!(
                    "t={t} {name}: release: {read} sees {}: ours, delete next",
                    show_item(seen, &names)
                )
            });
        } else {
            end(s, c, Ended::Released);
            notes.say(|| {
                format!(
                    "t={t} {name}: release: {read} sees {} -> not ours, skips the delete; the table holds {}",
                    show_item(seen, &names),
                    show_item(s.item, &names)
                )
            });
        }
        return;
    }
    let resend = client(s, c).phase == Phase::Releasing;
    let (owner, n) = handle(cfg, s, c);
    let changed = match cfg.release {
        ReleaseMode::Delete => table::delete_owned(cfg, s, owner, n),
        ReleaseMode::KeepFence => table::expire_owned(cfg, s, owner, n, now - cfg.day),
    };
    if changed {
        s.seen |= event::RELEASED;
        if is_restorer(cfg, c) {
            s.seen |= event::RESTORED_RELEASED;
        }
    }
    if resend && changed {
        s.resend_changed = true;
    }
    // The core answers a resend that finds the owner gone `not_held` (conformance vector
    // keep-fence-lost-answer); another's live item there is the race the resend must not touch.
    if resend
        && !changed
        && s.item
            .is_some_and(|i| i.owner != NOBODY && i.expires_at > s.t)
    {
        s.seen |= event::RESENT_NOT_HELD;
    }
    let lost = stale;
    if lost {
        set_phase(s, c, Phase::Releasing);
    } else {
        end(s, c, Ended::Released);
    }
    notes.say(|| {
        let req = match cfg.release {
            ReleaseMode::Delete => "DeleteItem if owner",
            ReleaseMode::KeepFence => {
                "UpdateItem expires_at=now-1day REMOVE value, attempt if owner"
            }
        };
        let found = match (changed, resend) {
            (true, _) => "done",
            (false, false) => "not ours: nothing changed",
            (false, true) => "not ours: nothing changed; answers not_held",
        };
        let again = if resend { " (resent)" } else { "" };
        let lost = if lost {
            "; its answer is lost, to resend"
        } else {
            ""
        };
        format!("t={t} {name}: release{again} {req}: {found}{lost}")
    });
}

/// Laravel's delete after its read: unconditional.
pub fn delete(cfg: &Config, s: &mut State, c: ClientId, notes: &mut Notes) {
    let n = client(s, c).current();
    let names = cfg.names();
    let before = s.item;
    table::delete_any(cfg, s, c, n);
    s.seen |= event::RELEASED;
    end(s, c, Ended::Released);
    let name = &names[usize::from(c)];
    notes.say(|| {
        format!(
            "t={} {name}: forget() DeleteItem (unconditional) deletes {}",
            s.t,
            show_item(before, &names)
        )
    });
}
