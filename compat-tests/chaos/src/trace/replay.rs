//! One lock key's replay through the model's step functions: each journaled write, each
//! refused write answered without the item, each worker's outcomes.

use std::collections::HashMap;

use ddblock_model::config::{prop, Config, Kind, ReleaseMode};
use ddblock_model::model::{holds, possible, step};
use ddblock_model::state::{
    show_item, Action, Answer, Client, ClientId, Ended, Item, Notes, Phase, State, Tick, NOBODY,
};
use ddblock_model::table;
use serde_json::Value;

use super::request::{about, landed_and_heard, owner_token, short, Request};
use crate::checker::Cycle;

/// The ddblock safety properties every state the trace reaches must keep.
const SAFETY: [&str; 5] = [
    prop::ONE_HOLDER,
    prop::RELEASE_LEAVES_NONE,
    prop::UNKNOWN_LEAVES_NONE,
    prop::CLEANUP_OWN_ONLY,
    prop::RELEASE_OWN_ONLY,
];

/// The versions of the item since a write landed, each with the second it became current.
type Versions = Vec<(Tick, Option<Item>)>;

/// One lock key's replay.
#[derive(Clone)]
pub(super) struct Replay<'a> {
    cfg: Config,
    pub(super) s: State,
    /// Seconds subtracted from real times (ticks are seconds since then).
    base: i64,
    /// Client per owner token, and back.
    pub(super) ids: HashMap<String, ClientId>,
    pub(super) owners: Vec<String>,
    pub(super) fronts: Vec<&'a str>,
    /// The current acquire attempt's id, per client.
    attempts: Vec<Option<String>>,
    /// The client's last release, clean-up or refresh had its answer lost (a resend may follow).
    lost: Vec<bool>,
    /// The client held the lock (by the model) at some point.
    held: Vec<bool>,
    /// A release of the client's landed and was answered.
    released: Vec<bool>,
    /// A release of the client's had its answer lost.
    release_lost: Vec<bool>,
    /// A refused acquire write answered without the item (dynalite ignores `ALL_OLD`): the
    /// client read the item afterwards, so its answer is one of the versions the item had since
    /// the write landed (kept until its next step shows which).
    pub(super) pending: Vec<Option<Versions>>,
    /// The pending answer came without the item (`ALL_OLD` ignored): later versions may be it.
    read_later: Vec<bool>,
}

/// Why a step was rejected (its description comes with it).
pub(super) type Rejection = String;

impl<'a> Replay<'a> {
    pub(super) fn new(cfg: Config, base: i64) -> Self {
        let s = State::new(Vec::new());
        Replay {
            cfg,
            s,
            base,
            ids: HashMap::new(),
            owners: Vec::new(),
            fronts: Vec::new(),
            attempts: Vec::new(),
            lost: Vec::new(),
            held: Vec::new(),
            released: Vec::new(),
            release_lost: Vec::new(),
            pending: Vec::new(),
            read_later: Vec::new(),
        }
    }

    pub(super) fn client(&mut self, owner: &str, front: &'a str) -> ClientId {
        if let Some(&c) = self.ids.get(owner) {
            return c;
        }
        let c = ClientId::try_from(self.owners.len()).unwrap_or(NOBODY - 1);
        self.ids.insert(owner.to_owned(), c);
        self.owners.push(owner.to_owned());
        self.fronts.push(front);
        self.cfg.clients.push(if front == "php" {
            Kind::Php
        } else {
            Kind::Core
        });
        self.s.clients.push(Client {
            offset: 0,
            n: 0,
            phase: Phase::Idle,
            ended: None,
        });
        self.attempts.push(None);
        self.lost.push(false);
        self.held.push(false);
        self.released.push(false);
        self.release_lost.push(false);
        self.pending.push(None);
        self.read_later.push(false);
        c
    }

    pub(super) fn tick(&self, wall_us: i64) -> Tick {
        wall_us.div_euclid(1_000_000) - self.base
    }

    /// The state as a rejection shows it.
    fn show(&self, c: ClientId) -> String {
        let names: Vec<String> = self.owners.iter().map(|o| short(o)).collect();
        let cl = &self.s.clients[usize::from(c)];
        format!(
            "t={} (run second), item {}, client {} (clock {:+}) {:?}",
            self.s.t,
            show_item(self.s.item, &names),
            names[usize::from(c)],
            cl.offset,
            cl.phase
        )
    }

    /// Applies `a` if the model allows it, else says what it allowed.
    fn step_to(&mut self, c: ClientId, a: Action, what: &str) -> Result<(), Rejection> {
        let mut allowed = Vec::new();
        possible(&self.cfg, &self.s, &mut allowed);
        if !allowed.contains(&a) {
            let mine: Vec<String> = allowed
                .iter()
                .filter(|x| about(**x) == Some(c))
                .map(|x| format!("{x:?}"))
                .collect();
            return Err(format!(
                "{what}: the model does not allow {a:?} from {}; it allows {} for this client",
                self.show(c),
                if mine.is_empty() {
                    "nothing".to_owned()
                } else {
                    mine.join(", ")
                }
            ));
        }
        self.s = step(&self.cfg, &self.s, a, &mut Notes(None)).expect("a step applies");
        Ok(())
    }

    /// Applies `a` as [`Self::step_to`] does, then checks the state reached.
    fn apply(&mut self, c: ClientId, a: Action, what: &str) -> Result<(), Rejection> {
        self.step_to(c, a, what)?;
        self.after(c, what)
    }

    /// The properties every reached state keeps, and what the client now holds.
    fn after(&mut self, c: ClientId, what: &str) -> Result<(), Rejection> {
        if matches!(self.s.clients[usize::from(c)].phase, Phase::Holding { .. }) {
            self.held[usize::from(c)] = true;
        }
        match SAFETY.iter().find(|p| !holds(p, &self.s)) {
            Some(p) => Err(format!(
                "{what}: the state reached breaks \"{p}\": {}",
                self.show(c)
            )),
            None => Ok(()),
        }
    }

    /// Time passes to the entry's second (the model's `Tick`, always allowed).
    pub(super) fn advance(&mut self, to: Tick) {
        while self.s.t < to {
            self.s = step(&self.cfg, &self.s, Action::Tick, &mut Notes(None)).expect("a tick");
        }
    }
}

impl<'a> Replay<'a> {
    /// One journaled write, checked; if the model rejects it while DynamoDB TTL may have deleted
    /// the expired item first (the model's `TtlDelete`, which no journal shows: DynamoDB Local
    /// runs TTL), with that deletion before it.
    pub(super) fn write(
        &mut self,
        c: ClientId,
        req: &Request,
        e: &Value,
    ) -> Result<u64, Rejection> {
        let mut allowed = Vec::new();
        possible(&self.cfg, &self.s, &mut allowed);
        if !allowed.contains(&Action::TtlDelete) {
            return self.entry(c, req, e);
        }
        let before = self.clone();
        match self.entry(c, req, e) {
            Ok(n) => Ok(n),
            Err(why) => {
                *self = before;
                self.s = step(&self.cfg, &self.s, Action::TtlDelete, &mut Notes(None))
                    .expect("TTL deletes");
                self.entry(c, req, e).map_err(|_| why)
            }
        }
    }

    /// One journaled write: its steps (sent and landed, answered or lost), checked.
    fn entry(&mut self, c: ClientId, req: &Request, e: &Value) -> Result<u64, Rejection> {
        let (landed, heard) = landed_and_heard(e);
        let status = e["status"].as_u64().unwrap_or(0);
        let seq = e["seq"].as_u64().unwrap_or(0);
        let what = format!(
            "journal #{seq} ({req:?}, status {status}, {})",
            e["delivery"]
        );
        let i = usize::from(c);
        match req {
            Request::Acquire(attempt, clock, expires_at, fence_base) => {
                self.s.clients[i].offset = clock - self.s.t;
                let resend = self.attempts[i].as_deref() == Some(attempt.as_str());
                let send = if resend {
                    Action::Resend(c)
                } else {
                    Action::Acquire(c)
                };
                self.resolve(c, Some(send), &what)?;
                self.apply(c, send, &what)?;
                self.attempts[i] = Some(attempt.clone());
                let Some(w) = self.s.net.iter_mut().find(|w| w.client == c) else {
                    return Err(format!("{what}: the model sent no write"));
                };
                // A client that reads its clock for the condition and again for the expiry may
                // cross a second between the two (the long profile: 1 in 138,955 steps): the
                // later reading, one second on, is the same client's clock.
                if *expires_at == w.expires_at + 1 {
                    w.expires_at = *expires_at;
                }
                if w.expires_at != *expires_at {
                    return Err(format!(
                        "{what}: the request's expires_at is {expires_at}, the model's client \
                         sends {} (clock + ttl)",
                        w.expires_at
                    ));
                }
                // The fence base is the client's clock in µs (the model's, in ticks × 16).
                w.fence_base = *fence_base;
                let w_seq = w.seq;
                let land = if landed {
                    Action::Land(c, w_seq)
                } else {
                    Action::Drop(c, w_seq)
                };
                self.apply(c, land, &what)?;
                if landed {
                    self.compare_answer(c, e, &what)?;
                }
                if heard && status == 400 {
                    // A refusal is acted on once the client's next step shows how (below).
                    self.pending[i] = Some(vec![(self.s.t, self.s.item)]);
                    self.read_later[i] = e["response"].get("Item").is_none();
                } else {
                    let next = if heard {
                        Action::Answer(c)
                    } else {
                        Action::Timeout(c)
                    };
                    self.apply(c, next, &what)?;
                }
                Ok(2)
            }
            Request::Release(_) | Request::Cleanup(..) | Request::Refresh(..) => {
                let next = match req {
                    Request::Cleanup(..) => Some(Action::Finish(c)),
                    _ => None,
                };
                self.resolve(c, next, &what)?;
                self.merged(c, req, e, &what)?;
                Ok(2)
            }
        }
    }

    /// Settles client `c`'s refused write: its answer is the item the server returned, or
    /// (without it) the version the client's read found, one of those the item had since the
    /// write landed, read at a second it was current, or lost if the read failed; the client's
    /// clock then reads the second its send showed or the next; the one taken is the first after which the model allows the client's `next`
    /// step (the landing's own version when none does, or when there is no next step: the step
    /// is then rejected).
    pub(super) fn resolve(
        &mut self,
        c: ClientId,
        next: Option<Action>,
        what: &str,
    ) -> Result<(), Rejection> {
        let Some(versions) = self.pending[usize::from(c)].take() else {
            return Ok(());
        };
        // The answer as the client read it: at second `t`, the item `v`, its clock `tick` seconds
        // past the one its send showed (a clock known to the second may turn over in between).
        let answered = |s: &State, t: Tick, v: Option<Item>, tick: Tick| {
            let mut s = s.clone();
            s.t = t;
            s.clients[usize::from(c)].offset += tick;
            if let Phase::Acquiring { answer, .. } = &mut s.clients[usize::from(c)].phase {
                *answer = Some(v.map_or(Answer::Gone, Answer::Taken));
            }
            s
        };
        // Each version read, or the read itself failed (throttled, a 500): the answer is lost.
        let now = self.s.t;
        // A version may have been read at any second it was current.
        let mut choices: Vec<(State, Action)> = Vec::new();
        for (k, (from, v)) in versions.iter().enumerate() {
            let until = versions.get(k + 1).map_or(now, |(t, _)| *t);
            for t in *from..=until {
                for tick in [0, 1] {
                    choices.push((answered(&self.s, t, *v, tick), Action::Answer(c)));
                }
            }
        }
        choices.push((self.s.clone(), Action::Timeout(c)));
        let mut chosen = 0;
        if let Some(next) = next {
            let allows = |(s, a): &(State, Action)| {
                let Some(mut after) = step(&self.cfg, s, *a, &mut Notes(None)) else {
                    return false;
                };
                after.t = now;
                let mut allowed = Vec::new();
                possible(&self.cfg, &after, &mut allowed);
                allowed.contains(&next)
            };
            chosen = choices.iter().position(allows).unwrap_or(0);
        }
        let offset = self.s.clients[usize::from(c)].offset;
        let (s, a) = choices.swap_remove(chosen);
        self.s = s;
        let applied = self.step_to(c, a, what);
        self.s.t = now;
        self.s.clients[usize::from(c)].offset = offset;
        applied?;
        self.after(c, what)
    }

    /// Every refused write still waiting to be settled may have read the item as it is now.
    pub(super) fn seen_by_pending(&mut self) {
        let (t, item) = (self.s.t, self.s.item);
        let later = self.pending.iter_mut().zip(&self.read_later);
        for p in later.filter_map(|(p, later)| p.as_mut().filter(|_| *later)) {
            if p.last().map(|(_, i)| *i) != Some(item) {
                p.push((t, item));
            }
        }
    }

    /// The model's table answered as the server did: written (with the same fence) or refused.
    fn compare_answer(&self, c: ClientId, e: &Value, what: &str) -> Result<(), Rejection> {
        let Phase::Acquiring {
            answer: Some(a), ..
        } = self.s.clients[usize::from(c)].phase
        else {
            return Err(format!("{what}: the model's client got no answer"));
        };
        let server_fence = e["response"]["Attributes"]["ddblock_fence"]["N"]
            .as_str()
            .and_then(|n| n.parse::<i64>().ok());
        let ok = match (a, e["status"].as_u64()) {
            (Answer::Written { fence, .. }, Some(200)) => fence == server_fence,
            (Answer::Taken(i), Some(400)) => match e["response"].get("Item") {
                // `ALL_OLD`: the item the server refused on is the model's.
                Some(old) => {
                    let owner = old["value"]["S"].as_str().map(owner_token);
                    let owner = owner.and_then(|o| self.ids.get(o).copied());
                    owner.unwrap_or(NOBODY) == i.owner
                }
                None => true,
            },
            _ => false,
        };
        if ok {
            return Ok(());
        }
        Err(format!(
            "{what}: the server answered {} {}, the model's table answers {a:?} from {}",
            e["status"],
            e["response"],
            self.show(c)
        ))
    }

    /// A release, clean-up or refresh: one step in the model (request, landing, answer). A send
    /// that did not land changes nothing and is followed by its resend; a resend after a lost
    /// answer is the same request on the item as it now is.
    fn merged(
        &mut self,
        c: ClientId,
        req: &Request,
        e: &Value,
        what: &str,
    ) -> Result<(), Rejection> {
        let (landed, heard) = landed_and_heard(e);
        let i = usize::from(c);
        let before = self.s.item;
        let resend = self.lost[i];
        let phase = self.s.clients[i].phase;
        if let Request::Release(Some(clock))
        | Request::Cleanup(_, Some(clock))
        | Request::Refresh(clock, _) = req
        {
            self.s.clients[i].offset = clock - self.s.t;
        }
        let keep = |k: &Option<i64>| k.is_some() == (self.cfg.release == ReleaseMode::KeepFence);
        match req {
            Request::Release(k) if !keep(k) => {
                return Err(format!("{what}: a release of the other release mode"));
            }
            Request::Cleanup(_, k) if !keep(k) => {
                return Err(format!("{what}: a clean-up of the other release mode"));
            }
            Request::Cleanup(a, _) if self.attempts[i].as_deref() != Some(a.as_str()) => {
                return Err(format!(
                    "{what}: a clean-up of an attempt other than the client's last"
                ));
            }
            _ => {}
        }
        if !landed {
            // Nothing changed; the client learns nothing and sends again (or gives up).
            self.lost[i] = true;
            return Ok(());
        }
        let n = self.s.clients[i].current();
        let now = self.s.t + self.s.clients[i].offset;
        let holding = matches!(phase, Phase::Holding { .. });
        // A refresh whose condition holds writes the item; when it sets the expiry the item
        // already has (a second refresh within the same second of the client's clock), the item
        // stays as it was though the server answered 200 (the long profile: 11 such in 84,722
        // steps, all rejected before this).
        let refresh_applies = matches!(req, Request::Refresh(..))
            && table::refresh(&self.cfg, &mut self.s.clone(), c, now);
        let cleaning = matches!(
            phase,
            Phase::Acquiring {
                unknown: true,
                waiting: None,
                answer: None,
                ..
            }
        );
        match req {
            Request::Release(_) if holding => self.apply(c, Action::Release(c, false), what)?,
            Request::Cleanup(..) if cleaning => self.apply(c, Action::Finish(c), what)?,
            Request::Refresh(_, expires_at) if now + self.cfg.ttl != *expires_at => {
                return Err(format!(
                    "{what}: the refresh's expires_at is not the client's clock + ttl"
                ));
            }
            // The heartbeat's refresh sent while the client held, landing after its release (the
            // model merges a refresh into one step; the journal orders writes by landing): it
            // must change nothing, its condition failing on the released item.
            Request::Refresh(..)
                if self.s.clients[i].ended == Some(Ended::Released) && !holding =>
            {
                if table::refresh(&self.cfg, &mut self.s.clone(), c, now) {
                    return Err(format!(
                        "{what}: a refresh after the client's release, which the model's table \
                         would apply"
                    ));
                }
            }
            Request::Refresh(..) => self.apply(c, Action::Refresh(c, !heard), what)?,
            Request::Release(_) if resend => {
                match self.cfg.release {
                    ReleaseMode::Delete => table::delete_owned(&self.cfg, &mut self.s, c, n),
                    ReleaseMode::KeepFence => {
                        let past = now - self.cfg.day;
                        table::expire_owned(&self.cfg, &mut self.s, c, n, past)
                    }
                };
                self.after(c, what)?;
            }
            Request::Cleanup(..) if resend => {
                let keep = (self.cfg.release == ReleaseMode::KeepFence).then(|| now - self.cfg.day);
                table::delete_attempt(&self.cfg, &mut self.s, c, n, keep);
                self.after(c, what)?;
            }
            _ => {
                let mut allowed = Vec::new();
                possible(&self.cfg, &self.s, &mut allowed);
                allowed.retain(|a| about(*a) == Some(c));
                return Err(format!(
                    "{what}: not a step the model's client takes from {} (not a resend after a \
                     lost answer either); it allows {allowed:?}",
                    self.show(c)
                ));
            }
        }
        let changed = self.s.item != before;
        let status = e["status"].as_u64();
        let same_refresh = refresh_applies && !changed && status == Some(200);
        if changed != (status == Some(200)) && !same_refresh {
            return Err(format!(
                "{what}: the server answered {} {}, the model's table {} the item ({} before)",
                e["status"],
                e["response"],
                if changed { "changed" } else { "did not change" },
                show_item(
                    before,
                    &self.owners.iter().map(|o| short(o)).collect::<Vec<_>>()
                )
            ));
        }
        self.lost[i] = !heard;
        if matches!(req, Request::Release(_)) {
            self.released[i] |= changed && heard;
            self.release_lost[i] |= !heard;
        }
        Ok(())
    }

    /// The outcomes the worker returned to its caller for this owner's cycle: each one the model's
    /// client reached.
    pub(super) fn outcomes(
        &self,
        c: Option<ClientId>,
        cycle: &Cycle,
    ) -> Vec<(u64, Option<Rejection>)> {
        let held = c.is_some_and(|c| self.held[usize::from(c)]);
        let what = |x: &str| {
            format!(
                "{} {} on {}: {x}",
                cycle.worker,
                short(&cycle.owner),
                cycle.name
            )
        };
        let mut out = Vec::new();
        let acquire_ok = match cycle.acquire.as_str() {
            "acquired" => held,
            _ => !held,
        };
        out.push((
            1,
            (!acquire_ok).then(|| {
                what(&format!(
                    "the worker says its acquire returned {:?}; the model's client {} the lock",
                    cycle.acquire,
                    if held { "held" } else { "never held" }
                ))
            }),
        ));
        if let (Some(release), Some(c)) = (&cycle.release, c) {
            let (done, lost) = (
                self.released[usize::from(c)],
                self.release_lost[usize::from(c)],
            );
            let ok = match release.as_str() {
                "released" => done || lost,
                "not_held" | "held_by_other" => !done,
                _ => true,
            };
            out.push((
                1,
                (!ok).then(|| {
                    what(&format!(
                    "the worker says its release returned {release:?}; in the model its release \
                     {} (answer lost: {lost})",
                    if done { "ended the lock" } else { "found it not its own" }
                ))
                }),
            ));
        }
        out
    }
}
