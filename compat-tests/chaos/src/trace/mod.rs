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

mod replay;
mod request;

use std::collections::{BTreeMap, HashMap};

use ddblock_model::config::{self, ReleaseMode};
use ddblock_model::state::{show_item, ClientId, NOBODY};
use serde::Serialize;
use serde_json::Value;

use crate::checker::Cycle;
use crate::peers::PREFIX;
use crate::profile::Profile;
use replay::Replay;
pub use request::owner_token;
use request::{classify, short};

/// The fronts, in the order the summary line names them.
pub const FRONTS: [&str; 5] = ["rust", "python", "node", "cli", "php"];

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
        let outcome = classify(op, r, margin, day, base).and_then(|(owner, req)| {
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
        let result = replay.write(c, &req, e);
        replay.seen_by_pending();
        match result {
            Ok(n) => report.checked(front, n),
            Err(why) => {
                report.checked(front, 1);
                report.reject(front, format!("{key}: {why}"));
                broken.insert(key, true);
            }
        }
    }
    // Refused writes still unsettled at the end: the client's read found the landing's version.
    for (key, replay) in &mut replays {
        for c in 0..replay.pending.len() {
            let c = ClientId::try_from(c).unwrap_or(NOBODY);
            if let Err(why) = replay.resolve(c, None, "the end of the run") {
                let front = replay.fronts[usize::from(c)];
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

/// The trace of a run of profile `p` against the model: ddblock's keys (the control group's stock
/// Laravel is not the protocol the model's ddblock clients follow).
pub fn validate_run(p: &Profile, journal: &[Value], cycles: &[Cycle]) -> TraceReport {
    let lock_keys = (0..p.keys)
        .map(|i| (format!("{PREFIX}k{i}"), format!("k{i}")))
        .collect();
    let release = match p.release_mode {
        "keep-fence" => ReleaseMode::KeepFence,
        _ => ReleaseMode::Delete,
    };
    let secs = |s: u64| i64::try_from(s).unwrap_or(i64::MAX);
    validate(
        &lock_keys,
        journal,
        cycles,
        secs(p.ttl_secs),
        secs(p.margin_secs),
        release,
    )
}
