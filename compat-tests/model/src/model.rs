//! The stateright model: which steps are possible in a state, what each does, and the properties.

use stateright::{Model, Property};

use crate::config::{prop, Config, Kind};
use crate::protocol;
use crate::state::{event, Action, Client, ClientId, Ended, Item, Notes, Phase, State};
use crate::table;

/// The protocol under one configuration.
pub struct ProtocolModel {
    pub cfg: Config,
}

/// Applies `a` to `s`, saying what happened into `notes`. `None` if `a` does not apply.
pub fn step(cfg: &Config, s: &State, a: Action, notes: &mut Notes) -> Option<State> {
    let mut s = s.clone();
    match a {
        Action::Tick => {
            s.t += 1;
            table::age(cfg, &mut s);
            notes.say(|| format!("t={}: time passes", s.t));
        }
        Action::Acquire(c) => {
            wait(cfg, &mut s, c);
            s.clients[usize::from(c)].n += 1;
            protocol::send(cfg, &mut s, c, 1, false, notes);
        }
        Action::Land(c, seq) => protocol::land(cfg, &mut s, c, seq, notes),
        Action::Drop(c, seq) => {
            s.net.retain(|w| !(w.client == c && w.seq == seq));
            let name = cfg.client_name(c);
            notes.say(|| {
                format!(
                    "t={} {name}: write #{seq} is lost on the way; it never lands",
                    s.t
                )
            });
        }
        Action::Refuse(c, seq) => protocol::refuse(cfg, &mut s, c, seq, notes),
        Action::Answer(c) => protocol::answer(cfg, &mut s, c, notes),
        Action::Timeout(c) => protocol::timeout(cfg, &mut s, c, notes),
        Action::Resend(c) => protocol::resend(cfg, &mut s, c, notes),
        Action::Finish(c) => protocol::finish(cfg, &mut s, c, notes),
        Action::Refresh(c, lost) => {
            restore(cfg, &mut s, c, notes);
            protocol::refresh(cfg, &mut s, c, lost, notes);
        }
        Action::Release(c, stale) => {
            restore(cfg, &mut s, c, notes);
            protocol::release(cfg, &mut s, c, stale, notes);
        }
        Action::Delete(c) => protocol::delete(cfg, &mut s, c, notes),
        Action::ForceRelease => {
            let names = cfg.names();
            let before = crate::state::show_item(s.item, &names);
            table::force_delete(cfg, &mut s);
            notes.say(|| {
                format!(
                    "t={}: force_release DeleteItem (unconditional) deletes {before}",
                    s.t
                )
            });
        }
        Action::TtlDelete => {
            let names = cfg.names();
            let before = crate::state::show_item(s.item, &names);
            table::set_item(cfg, &mut s, None);
            s.seen |= event::TTL_DELETED;
            notes.say(|| format!("t={}: DynamoDB TTL deletes the expired item {before}", s.t));
        }
    }
    Some(s)
}

/// Sets client `c`'s fairness stamp for the acquisition it starts: kept when it waits on after
/// being told held, its clock now when a wait begins, none when it does not wait.
fn wait(cfg: &Config, s: &mut State, c: ClientId) {
    let Some(&from) = cfg.waits_from.get(usize::from(c)) else {
        return;
    };
    let i = usize::from(c);
    if s.since.len() <= i {
        s.since.resize(i + 1, None);
    }
    let cl = s.clients[i];
    s.since[i] = if cl.n < from {
        None
    } else if cl.ended == Some(Ended::Held) && s.since[i].is_some() {
        s.since[i]
    } else {
        Some(s.t + cl.offset)
    };
}

/// A restorer's first request is the `restore_lock` handle's first use: counted, so it makes one
/// (`acquisitions` bounds them). With `handover`, the first process has just handed its owner
/// over and stopped using the lock (one step with the restorer's request: the first one's belief
/// lasts until then, the stronger case for one live holder).
fn restore(cfg: &Config, s: &mut State, c: ClientId, notes: &mut Notes) {
    let Kind::Restorer(of) = cfg.clients[usize::from(c)] else {
        return;
    };
    if s.clients[usize::from(c)].phase != Phase::Idle {
        return;
    }
    s.clients[usize::from(c)].n += 1;
    if cfg.handover {
        let first = &mut s.clients[usize::from(of)];
        first.phase = Phase::Idle;
        first.ended = Some(Ended::HandedOver);
        let name = cfg.client_name(of);
        notes.say(|| {
            format!(
                "t={} {name}: hands its owner over to another process and stops using the lock",
                s.t
            )
        });
    }
}

fn in_flight(s: &State, c: ClientId) -> bool {
    s.net.iter().any(|w| w.client == c)
}

/// The steps possible in `s`.
pub fn possible(cfg: &Config, s: &State, out: &mut Vec<Action>) {
    if s.t < cfg.horizon {
        out.push(Action::Tick);
    }
    if cfg.ttl_deletion && s.item.is_some_and(|i| i.expires_at < s.t) {
        out.push(Action::TtlDelete);
    }
    if cfg.force_release && !s.forced && s.item.is_some() {
        out.push(Action::ForceRelease);
    }
    for w in &s.net {
        out.push(Action::Land(w.client, w.seq));
        if cfg.lost_answers {
            out.push(Action::Drop(w.client, w.seq));
        }
        if cfg.refused_writes {
            out.push(Action::Refuse(w.client, w.seq));
        }
    }
    for (i, cl) in s.clients.iter().enumerate() {
        let c = ClientId::try_from(i).expect("few clients");
        // Under the stated assumption, an attempt ends only once none of its writes is in flight.
        let may_end = cfg.late_writes || !in_flight(s, c);
        let laravel = cfg.clients[i] == Kind::Laravel;
        if let Kind::Restorer(of) = cfg.clients[i] {
            let first = &s.clients[usize::from(of)];
            // The owner is handed over once the first process holds the lock (Laravel's
            // `restoreLock` use: an owner passed to a queued job).
            let handed = matches!(first.phase, Phase::Holding { .. })
                || !cfg.handover && first.ended == Some(Ended::Released);
            if cl.phase == Phase::Idle && cl.n < cfg.acquisitions && handed {
                out.push(Action::Release(c, false));
                out.push(Action::Refresh(c, false));
                if cfg.lost_answers {
                    out.push(Action::Refresh(c, true));
                }
            }
        }
        match cl.phase {
            Phase::Idle if matches!(cfg.clients[i], Kind::Restorer(_)) => {}
            Phase::Idle if cl.n < cfg.acquisitions => out.push(Action::Acquire(c)),
            Phase::Idle => {}
            Phase::Acquiring {
                writes,
                waiting,
                answer,
                ..
            } => {
                if let Some(a) = answer {
                    if may_end || !protocol::answer_ends(cfg, s, c, a) {
                        out.push(Action::Answer(c));
                    }
                }
                if waiting.is_some() && cfg.lost_answers {
                    out.push(Action::Timeout(c));
                }
                if waiting.is_none() && answer.is_none() && cfg.deadlines && writes < cfg.max_writes
                {
                    out.push(Action::Resend(c));
                }
                if waiting.is_none() && may_end {
                    out.push(Action::Finish(c));
                }
            }
            Phase::Holding { deadline, .. } => {
                out.push(Action::Release(c, false));
                let lost = !laravel && cfg.lost_release_answers;
                if lost || laravel && table::readable(s).len() > 1 {
                    out.push(Action::Release(c, true));
                }
                if cfg.refresh && !laravel && s.t < deadline {
                    out.push(Action::Refresh(c, false));
                    if cfg.lost_answers {
                        out.push(Action::Refresh(c, true));
                    }
                }
            }
            Phase::Deleting => out.push(Action::Delete(c)),
            Phase::Releasing => out.push(Action::Release(c, false)),
        }
    }
}

/// Every combination of the configured clock offsets.
pub fn initial(cfg: &Config) -> Vec<State> {
    let mut states = vec![Vec::<Client>::new()];
    for choices in &cfg.offsets {
        states = states
            .into_iter()
            .flat_map(|cs| {
                choices.iter().map(move |&offset| {
                    let mut cs = cs.clone();
                    cs.push(Client {
                        offset,
                        n: 0,
                        phase: Phase::Idle,
                        ended: None,
                    });
                    cs
                })
            })
            .collect();
    }
    states.into_iter().map(State::new).collect()
}

/// At most one client believes it holds the lock (by its own monotonic clock).
pub fn one_holder(s: &State) -> bool {
    s.clients.iter().filter(|c| c.live(s.t)).count() <= 1
}

/// Whether the item is the current acquisition of owner `o` and still live (`expires_at > now`
/// by DynamoDB's clock: not merely the second at which it expires, which frees itself).
fn blocks_as(s: &State, o: usize, item: Option<Item>) -> bool {
    let n = s.clients[o].current();
    item.is_some_and(|i| usize::from(i.owner) == o && i.n == n && i.expires_at > s.t)
}

/// No client whose acquisition ended in `how` left its owner's item in place (`owner`: the
/// owner a client writes, [`Config::owner`]).
fn none_left_by(s: &State, how: Ended, owner: impl Fn(usize) -> usize) -> bool {
    (0..s.clients.len()).all(|c| {
        let cl = &s.clients[c];
        !(cl.phase == Phase::Idle && cl.ended == Some(how) && blocks_as(s, owner(c), s.item))
    })
}

/// No client whose acquisition ended in `how` left its item in place.
fn none_left(s: &State, how: Ended) -> bool {
    none_left_by(s, how, |c| c)
}

/// The `always` property `name`'s condition, those about ddblock's clients only included.
pub fn holds_in(cfg: &Config, name: &str, s: &State) -> bool {
    let ddblock = |c: usize| cfg.clients.get(c).is_some_and(|k| *k != Kind::Laravel);
    let owner = |c: usize| usize::from(cfg.owner(ClientId::try_from(c).expect("few clients")));
    match name {
        // Handles of one owner (a restorer and the first process) count as one holder.
        prop::ONE_HOLDER => {
            let mut live = (0..s.clients.len())
                .filter(|&c| s.clients[c].live(s.t))
                .map(owner);
            live.next().is_none_or(|first| live.all(|o| o == first))
        }
        prop::RELEASE_LEAVES_NONE => none_left_by(s, Ended::Released, owner),
        prop::UNKNOWN_LEAVES_NONE => none_left_by(s, Ended::Unknown, owner),
        prop::DDBLOCK_RELEASE_LEAVES_NONE => (0..s.clients.len()).all(|c| {
            let cl = &s.clients[c];
            !(ddblock(c)
                && cl.phase == Phase::Idle
                && cl.ended == Some(Ended::Released)
                && blocks_as(s, owner(c), s.item))
        }),
        prop::DDBLOCK_LOCK_KEPT => !s.ddblock_lock_taken,
        _ => holds(name, s),
    }
}

/// The `always` property `name`'s condition.
pub fn holds(name: &str, s: &State) -> bool {
    match name {
        prop::ONE_HOLDER => one_holder(s),
        prop::RELEASE_LEAVES_NONE => none_left(s, Ended::Released),
        prop::UNKNOWN_LEAVES_NONE => none_left(s, Ended::Unknown),
        prop::CLEANUP_OWN_ONLY => !s.cleanup_deleted_other,
        prop::RELEASE_OWN_ONLY => !s.release_deleted_other,
        prop::FENCE_FORWARD => !s.fence_back,
        prop::RESENT_RELEASE_CHANGES_NOTHING => !s.resend_changed,
        _ => true,
    }
}

/// The `always` properties named (constants of [`prop`]), each checked by [`holds`]. A macro:
/// stateright takes a property's condition as a function pointer, which cannot capture its name.
macro_rules! always {
    ($($name:ident),* $(,)?) => {
        [$(Property::always(prop::$name, |m: &ProtocolModel, s| holds_in(&m.cfg, prop::$name, s))),*]
    };
}

/// The `sometimes` properties named (constants of [`prop`]), each an example of a state that
/// has seen its event (a flag of [`event`]).
macro_rules! sometimes {
    ($($name:ident: $event:ident),* $(,)?) => {
        [$(Property::sometimes(prop::$name, |_, s: &State| s.seen & event::$event != 0)),*]
    };
}

impl Model for ProtocolModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        initial(&self.cfg)
    }

    fn actions(&self, s: &State, out: &mut Vec<Action>) {
        possible(&self.cfg, s, out);
    }

    fn next_state(&self, s: &State, a: Action) -> Option<State> {
        step(&self.cfg, s, a, &mut Notes(None))
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let mut properties = Vec::from(always![
            ONE_HOLDER,
            RELEASE_LEAVES_NONE,
            UNKNOWN_LEAVES_NONE,
            CLEANUP_OWN_ONLY,
            RELEASE_OWN_ONLY,
            FENCE_FORWARD,
            DDBLOCK_RELEASE_LEAVES_NONE,
            DDBLOCK_LOCK_KEPT,
            RESENT_RELEASE_CHANGES_NOTHING,
        ]);
        properties.extend(sometimes![
            EX_ACQUIRED: ACQUIRED,
            EX_RECOVERED: RECOVERED,
            EX_CLEANED_UP: CLEANED_UP,
            EX_TAKEN_OVER: TAKEN_OVER,
            EX_REFRESHED: REFRESHED,
            EX_TTL_DELETED: TTL_DELETED,
            EX_STALE_READ: STALE_READ,
            EX_RELEASED: RELEASED,
            EX_RESENT_NOT_HELD: RESENT_NOT_HELD,
            EX_RESTORED_RELEASED: RESTORED_RELEASED,
            EX_RESTORED_REFRESHED: RESTORED_REFRESHED,
            EX_STAMP_READ: STAMP_READ,
            EX_STAMP_LEFT: STAMP_LEFT,
            EX_STAMPED_ACQUIRED: STAMPED_ACQUIRED,
        ]);
        properties
    }
}
