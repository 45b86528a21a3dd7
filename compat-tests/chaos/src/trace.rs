//! Trace validation: a chaos run's trace replayed through the protocol model's own transition
//! functions (`ddblock-model`: [`possible`] and [`step`]), one lock key at a time.
//!
//! The trace is recorded at the fault proxy, which sees every request a worker of any front
//! sends, and tagged by the owner token each request carries (the workers' records map an owner to
//! its front and worker): no peer records anything for it. Per lock item the proxy's journal gives
//! each write forwarded, in the order the server committed it, its request (operation, attempt
//! id, the client's clock: `:now` plus the margin, or the keep-fence release's `:expires_at` plus
//! a day), the server's answer, and whether the answer reached the client or was lost. The
//! workers' records give each outcome returned to a caller (acquired, held, an error; released,
//! not held).
//!
//! A step is one request sent (with its landing, which the model's table must answer as the
//! server did), one answer or its loss, or one outcome returned to a caller. Each must be one the
//! model allows from the state the trace has reached ([`possible`]); a rejection names the step,
//! the state and what the model allowed. Writes refused before they were forwarded (throttled,
//! injected 500s, dropped requests) never reach the journal, nor do reads: the model has no step
//! for either, and neither changes the item.

use std::collections::{BTreeMap, HashMap};

use ddblock_model::config::{self, prop, Config, Kind, ReleaseMode};
use ddblock_model::model::{holds, possible, step};
use ddblock_model::state::{
    show_item, Action, Answer, Client, ClientId, Notes, Phase, State, Tick, NOBODY,
};
use ddblock_model::table;
use serde::Serialize;
use serde_json::Value;

use crate::checker::Cycle;

/// The fronts, in the order the summary line names them.
pub const FRONTS: [&str; 5] = ["rust", "python", "node", "cli", "php"];

/// The ddblock safety properties every state the trace reaches must keep.
const SAFETY: [&str; 5] = [
    prop::ONE_HOLDER,
    prop::RELEASE_LEAVES_NONE,
    prop::UNKNOWN_LEAVES_NONE,
    prop::CLEANUP_OWN_ONLY,
    prop::RELEASE_OWN_ONLY,
];

/// How many rejections are described in full.
const DESCRIBED: usize = 5;

/// The validation's outcome.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TraceReport {
    /// Steps checked.
    pub steps: u64,
    /// Steps rejected.
    pub rejected: u64,
    /// Steps checked per front (`rust`, `python`, `node`, `cli`, `php`).
    pub by_front: BTreeMap<String, u64>,
    /// Rejections per front.
    pub rejected_by_front: BTreeMap<String, u64>,
    /// The first rejections, each with its step, the state and what the model allowed.
    pub rejections: Vec<String>,
}

impl TraceReport {
    /// `trace validation: N steps checked, M rejected (rust a, python b, node c, cli d, php e)`,
    /// the per-front figures being the steps checked of each front's workers.
    pub fn line(&self) -> String {
        let fronts: Vec<String> = FRONTS
            .iter()
            .map(|f| format!("{f} {}", self.by_front.get(*f).copied().unwrap_or(0)))
            .collect();
        format!(
            "trace validation: {} steps checked, {} rejected ({})",
            self.steps,
            self.rejected,
            fronts.join(", ")
        )
    }

    fn checked(&mut self, front: &str, n: u64) {
        self.steps += n;
        *self.by_front.entry(front.to_owned()).or_default() += n;
    }

    fn reject(&mut self, front: &str, what: String) {
        self.rejected += 1;
        *self.rejected_by_front.entry(front.to_owned()).or_default() += 1;
        if self.rejections.len() < DESCRIBED {
            self.rejections.push(what);
        }
    }
}

/// What a journaled request on a lock item is, as ddblock's requests (core/src/dynamo/request.rs).
#[derive(Debug, Clone, PartialEq)]
enum Request {
    /// The acquire's UpdateItem: `(attempt, clock, expires_at, fence_base)`.
    Acquire(String, i64, i64, i64),
    /// The release: DeleteItem if `#value = :owner`, or (`Some(clock)`) the keep-fence UpdateItem.
    Release(Option<i64>),
    /// The clean-up of an unknown outcome: `(attempt, keep-fence clock)`.
    Cleanup(String, Option<i64>),
    /// The refresh: `(clock, expires_at)`.
    Refresh(i64, i64),
}

fn s_val<'a>(r: &'a Value, name: &str) -> Option<&'a str> {
    r["ExpressionAttributeValues"][name]["S"].as_str()
}

fn n_val(r: &Value, name: &str) -> Option<i64> {
    r["ExpressionAttributeValues"][name]["N"]
        .as_str()
        .and_then(|n| n.parse().ok())
}

/// The owner token in a stored value: Laravel's `s:16:"TOKEN";`, or the token itself.
pub fn owner_token(stored: &str) -> &str {
    match (stored.find('"'), stored.rfind('"')) {
        (Some(a), Some(b)) if stored.starts_with("s:") && b > a => &stored[a + 1..b],
        _ => stored,
    }
}

const ACQUIRE_SET: &str = "SET #value = :owner, #expires_at = :expires_at, #attempt = :attempt, \
                           #fence = if_not_exists(#fence, :fence_base) + :one";
const FREE: &str = "attribute_not_exists(#key) OR #expires_at < :now";
const KEEP: &str = "SET #expires_at = :expires_at REMOVE #value, #attempt, #since";
const OWNED: &str = "#value = :owner";
const THIS_ATTEMPT: &str = "#value = :owner AND #attempt = :attempt";
const LIVE_OWNED: &str = "attribute_exists(#key) AND #value = :owner AND #expires_at > :now";

/// Reads a journaled request as one of ddblock's, with its owner token; `Err` says what it is.
fn classify(op: &str, r: &Value, margin: i64, day: i64) -> Result<(String, Request), String> {
    let cond = r["ConditionExpression"].as_str().unwrap_or("");
    let update = r["UpdateExpression"].as_str().unwrap_or("");
    let owner = s_val(r, ":owner").map(|o| owner_token(o).to_owned());
    let attempt = s_val(r, ":attempt").map(str::to_owned);
    let kept = n_val(r, ":expires_at").map(|e| e + day);
    let req = match (op, cond, owner.clone(), attempt) {
        ("UpdateItem", FREE, Some(_), Some(a)) if update.starts_with(ACQUIRE_SET) => {
            match (
                n_val(r, ":now"),
                n_val(r, ":expires_at"),
                n_val(r, ":fence_base"),
            ) {
                (Some(now), Some(e), Some(f)) => Some(Request::Acquire(a, now + margin, e, f)),
                _ => None,
            }
        }
        ("DeleteItem", OWNED, Some(_), None) => Some(Request::Release(None)),
        ("UpdateItem", OWNED, Some(_), None) if update == KEEP && kept.is_some() => {
            Some(Request::Release(kept))
        }
        ("DeleteItem", THIS_ATTEMPT, Some(_), Some(a)) => Some(Request::Cleanup(a, None)),
        ("UpdateItem", THIS_ATTEMPT, Some(_), Some(a)) if update == KEEP && kept.is_some() => {
            Some(Request::Cleanup(a, kept))
        }
        ("UpdateItem", LIVE_OWNED, Some(_), None) => {
            match (n_val(r, ":now"), n_val(r, ":expires_at")) {
                (Some(now), Some(e)) => Some(Request::Refresh(now, e)),
                _ => None,
            }
        }
        _ => None,
    };
    match (req, owner) {
        (Some(req), Some(owner)) => Ok((owner, req)),
        _ => {
            let what = if cond.is_empty() {
                "no condition".to_owned()
            } else {
                format!("condition {cond:?}")
            };
            let update = if update.is_empty() {
                String::new()
            } else {
                format!(", update {update:?}")
            };
            Err(format!("a {op} with {what}{update}"))
        }
    }
}

/// One lock key's replay.
struct Replay<'a> {
    cfg: Config,
    s: State,
    /// Seconds subtracted from real times (ticks are seconds since then).
    base: i64,
    /// Client per owner token, and back.
    ids: HashMap<String, ClientId>,
    owners: Vec<String>,
    fronts: Vec<&'a str>,
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
}

/// Why a step was rejected (its description comes with it).
type Rejection = String;

impl<'a> Replay<'a> {
    fn new(cfg: Config, base: i64) -> Self {
        let s = State {
            t: 0,
            item: None,
            stale: None,
            changed_at: 0,
            net: Vec::new(),
            clients: Vec::new(),
            sends: 0,
            max_fence: None,
            fence_back: false,
            release_deleted_other: false,
            cleanup_deleted_other: false,
            seen: 0,
        };
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
        }
    }

    fn client(&mut self, owner: &str, front: &'a str) -> ClientId {
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
        c
    }

    fn tick(&self, wall_us: i64) -> Tick {
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
    fn apply(&mut self, c: ClientId, a: Action, what: &str) -> Result<(), Rejection> {
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
    fn advance(&mut self, to: Tick) {
        while self.s.t < to {
            self.s = step(&self.cfg, &self.s, Action::Tick, &mut Notes(None)).expect("a tick");
        }
    }
}

/// The client an action is about.
fn about(a: Action) -> Option<ClientId> {
    match a {
        Action::Acquire(c)
        | Action::Land(c, _)
        | Action::Drop(c, _)
        | Action::Answer(c)
        | Action::Timeout(c)
        | Action::Resend(c)
        | Action::Finish(c)
        | Action::Refresh(c, _)
        | Action::Release(c, _)
        | Action::Delete(c) => Some(c),
        Action::Tick | Action::TtlDelete => None,
    }
}

fn short(owner: &str) -> String {
    owner.chars().take(6).collect()
}

/// Whether a journaled write landed (the server answered it), and whether its answer reached
/// the client.
fn landed_and_heard(e: &Value) -> (bool, bool) {
    let status = e["status"].as_u64().unwrap_or(0);
    let landed = status == 200 || status == 400;
    let heard = landed && matches!(e["delivery"].as_str(), Some("answered" | "delayed"));
    (landed, heard)
}

impl<'a> Replay<'a> {
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
                self.apply(c, send, &what)?;
                self.attempts[i] = Some(attempt.clone());
                let Some(w) = self.s.net.iter_mut().find(|w| w.client == c) else {
                    return Err(format!("{what}: the model sent no write"));
                };
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
                let next = if heard {
                    Action::Answer(c)
                } else {
                    Action::Timeout(c)
                };
                self.apply(c, next, &what)?;
                Ok(2)
            }
            Request::Release(_) | Request::Cleanup(..) | Request::Refresh(..) => {
                self.merged(c, req, e, &what)?;
                Ok(2)
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
            (Answer::Taken(_), Some(400)) => true,
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
            Request::Refresh(_, expires_at) => {
                if now + self.cfg.ttl != *expires_at {
                    return Err(format!(
                        "{what}: the refresh's expires_at is not the client's clock + ttl"
                    ));
                }
                self.apply(c, Action::Refresh(c, !heard), what)?;
            }
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
        if changed != (status == Some(200)) {
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
    fn outcomes(&self, c: Option<ClientId>, cycle: &Cycle) -> Vec<(u64, Option<Rejection>)> {
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

/// Replays the journal's writes on every ddblock lock key (`keys`: table key → lock name)
/// through the model configured with the run's `ttl`, `margin` and release mode, and each
/// worker's outcomes (`cycles`).
pub fn validate(
    keys: &BTreeMap<String, String>,
    journal: &[Value],
    cycles: &[Cycle],
    ttl: i64,
    margin: i64,
    release: ReleaseMode,
) -> TraceReport {
    let mut report = TraceReport::default();
    // Each owner's front, from its worker's record.
    let fronts: HashMap<&str, &str> = cycles
        .iter()
        .filter(|c| FRONTS.contains(&c.lang.as_str()))
        .map(|c| (c.owner.as_str(), front(&c.lang)))
        .collect();
    let base = journal
        .iter()
        .filter_map(|e| e["wall_us"].as_i64())
        .min()
        .unwrap_or(0)
        .div_euclid(1_000_000)
        - 1;
    let mut replays: BTreeMap<&str, Replay> = BTreeMap::new();
    let mut broken: HashMap<&str, bool> = HashMap::new();
    for e in journal {
        let r = &e["request"];
        let Some(key) = r["Key"]["key"]["S"].as_str() else {
            continue;
        };
        let Some((key, _)) = keys.get_key_value(key) else {
            continue;
        };
        let key = key.as_str();
        let cfg = config::trace(ttl, margin, release);
        let day = cfg.day;
        let replay = replays.entry(key).or_insert_with(|| Replay::new(cfg, base));
        let tick = replay.tick(e["wall_us"].as_i64().unwrap_or(0));
        replay.advance(tick);
        if broken.get(key).copied().unwrap_or(false) {
            // After a rejection the key's state is no longer the model's: stop judging it.
            continue;
        }
        let op = e["op"].as_str().unwrap_or("?");
        let seq = e["seq"].as_u64().unwrap_or(0);
        let outcome = classify(op, r, margin, day).and_then(|(owner, req)| {
            let Some(&f) = fronts.get(owner.as_str()) else {
                return Err(format!("no worker reports the owner {}", short(&owner)));
            };
            Ok((f, replay.client(&owner, f), req))
        });
        let (front, c, req) = match outcome {
            Ok(x) => x,
            Err(why) => {
                report.checked("?", 1);
                report.reject(
                    "?",
                    format!(
                        "journal #{seq} on {key}: {why}: no step of the model's clients sends it \
                     (from item {})",
                        show_item(
                            replay.s.item,
                            &replay.owners.iter().map(|o| short(o)).collect::<Vec<_>>()
                        )
                    ),
                );
                broken.insert(key, true);
                continue;
            }
        };
        match replay.entry(c, &req, e) {
            Ok(n) => report.checked(front, n),
            Err(why) => {
                report.checked(front, 1);
                report.reject(front, format!("{key}: {why}"));
                broken.insert(key, true);
            }
        }
    }
    for cycle in cycles {
        if !FRONTS.contains(&front(&cycle.lang)) || cycle.owner.is_empty() {
            continue;
        }
        let Some((key, _)) = keys.iter().find(|(_, name)| **name == cycle.name) else {
            continue;
        };
        if broken.get(key.as_str()).copied().unwrap_or(false) {
            continue;
        }
        let fallback;
        let replay = match replays.get(key.as_str()) {
            Some(r) => r,
            None => {
                fallback = Replay::new(config::trace(ttl, margin, release), base);
                &fallback
            }
        };
        let c = replay.ids.get(&cycle.owner).copied();
        for (n, rejection) in replay.outcomes(c, cycle) {
            report.checked(front(&cycle.lang), n);
            if let Some(why) = rejection {
                report.reject(front(&cycle.lang), why);
            }
        }
    }
    report
}

/// The front a record's language names (its `lang`).
fn front(lang: &str) -> &'static str {
    FRONTS.iter().find(|f| **f == lang).copied().unwrap_or("?")
}
