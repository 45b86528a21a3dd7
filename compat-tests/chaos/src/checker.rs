//! The checker: judges a chaos run by what the server did (the fault proxy's journal of committed
//! writes, each item's writes in commit order, stamped with the proxy's unskewed wall clock), and
//! by what the workers say they saw (their JSON-lines records).
//!
//! A lock key's history is replayed as a state machine: an acquire that commits while another
//! holder's item is still live by the true clock is an **overlap**; a guarded-resource write that
//! commits with a fencing token below one the resource already accepted is a **stale token
//! accepted**; one that commits while another worker holds the lock is a **write by a non-holder**.
//! An acquisition no worker reports as its own is **unlearned** (its holder got an error): it must
//! have been cleaned up by the attempt's clean-up delete, or expire. Locks still held when the run
//! ends, and every error a worker saw, by kind, complete the report.

use std::collections::{BTreeMap, HashMap, HashSet};

pub use ddblock_test_support::chaos::Cycle;
pub use ddblock_test_support::metrics::Counts;
use ddblock_test_support::metrics::{count, total};
use serde::Serialize;
use serde_json::Value;

/// What the checker needs to know about the run.
#[derive(Debug, Clone)]
pub struct Keys {
    /// Table key of each lock, by lock name, and whether it belongs to the control group.
    pub locks: BTreeMap<String, LockKey>,
    /// Table key of each lock's guarded resource item, by lock name.
    pub resources: BTreeMap<String, String>,
    /// Attribute names of the lock items.
    pub value_attribute: String,
    /// Expiration attribute of the lock items.
    pub expiration_attribute: String,
}

/// One lock key.
#[derive(Debug, Clone)]
pub struct LockKey {
    /// The table key.
    pub key: String,
    /// Whether stock Laravel works on it (the control group) rather than ddblock.
    pub control: bool,
}

/// Counts for one group of keys (ddblock's, or the stock Laravel control group's).
#[derive(Debug, Clone, Default, Serialize)]
pub struct GroupReport {
    /// Acquisitions committed (journal).
    pub acquisitions: u64,
    /// Acquisitions the acquiring worker reports as its own.
    pub acquisitions_learned: u64,
    /// Acquisitions committed over another holder's live item.
    pub overlaps: u64,
    /// Examples of overlaps, at most five.
    pub overlap_examples: Vec<String>,
    /// Acquisitions no worker reports (its holder got an error), deleted again by the attempt's
    /// clean-up.
    pub unlearned_cleaned: u64,
    /// Acquisitions no worker reports, left to expire (the clean-up did not land or was not sent).
    pub unlearned_left: u64,
    /// Acquisitions of an item that existed (a takeover) whose fencing token was not above the
    /// previous one: the token must grow while the item exists.
    pub fence_regressions_in_item: u64,
    /// Acquisitions after a release deleted the item whose token (from the acquirer's clock) was
    /// not above the previous one: clocks further apart than the time between the two
    /// acquisitions (the bound in docs/semantics.md).
    pub fence_regressions_after_delete: u64,
    /// Guarded writes the resource accepted.
    pub writes_accepted: u64,
    /// Guarded writes the resource refused (the fence condition failed) from a worker that no
    /// longer held the lock: the fence doing its job.
    pub writes_refused: u64,
    /// Guarded writes the resource refused from the lock's current holder: its token was below
    /// one accepted before (a regression after a delete). Safe, but the holder's work is lost.
    pub writes_refused_holder: u64,
    /// Accepted guarded writes whose token was below one the resource had already accepted.
    pub stale_token_accepted: u64,
    /// Accepted guarded writes committed while the writer did not hold the lock (another worker
    /// held it, or nobody did).
    pub writes_by_non_holder: u64,
    /// Acquisitions whose worker reported its release done while the item stayed and expired in
    /// place: a release that lied.
    pub expired_unreleased: u64,
    /// Acquisitions whose release found the lock "not yours" and that stayed to expire: stock
    /// Laravel's stuck lock (its release read a stale owner and deleted nothing); for ddblock, a
    /// lease that ran out and was taken over before the release.
    pub expired_release_refused: u64,
    /// Acquisitions left to expire after an error their worker saw (an unknown outcome, a failed
    /// release).
    pub expired_unreleased_explained: u64,
    /// Lock items still live when the run ended, each explained by an outcome its worker never
    /// learned or a release that failed with an error the worker saw: they expire at their ttl.
    pub held_at_end_explained: u64,
    /// Lock items still live when the run ended with no such explanation: a stuck lock.
    pub held_at_end: u64,
    /// Releases answered "not yours" (`not_held`/`held_by_other`): a resend after a lost answer
    /// (the first delete landed), or a lease that had run out.
    pub releases_not_own: u64,
    /// Lease-lost reports (the core's `Held::finish`: a refresh saw the lock taken, or the body
    /// outlasted its lease).
    pub lease_lost: u64,
    /// Lease-lost reports whose lease had not run out by the holder's clock and that no refresh
    /// saw: false reports (the goal is 0).
    pub false_lease_losses: u64,
}

/// The whole verdict.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// ddblock's keys (Rust, Python, Node and the PHP driver together).
    pub ddblock: GroupReport,
    /// The stock Laravel control group's keys.
    pub control: GroupReport,
    /// Cycles per language: (cycles, acquired).
    pub cycles: BTreeMap<String, (u64, u64)>,
    /// Errors by language, operation and kind.
    pub errors: BTreeMap<String, BTreeMap<String, u64>>,
    /// Errors that were not typed, by language, with an example each.
    pub untyped: BTreeMap<String, Vec<String>>,
    /// Journal entries read.
    pub journal_entries: u64,
    /// Writes whose answer the client never got (dropped, reset) but which committed.
    pub committed_unanswered: u64,
    /// Committed acquisitions each worker reports as its own, by worker (journal).
    pub journal_learned_by_worker: BTreeMap<String, u64>,
    /// Committed acquisitions of each worker's owners that it does not report (journal).
    pub journal_unlearned_by_worker: BTreeMap<String, u64>,
    /// Rust workers whose metrics were checked ([`check_metrics`]).
    pub metric_workers: u64,
    /// Where a Rust worker's own metrics disagree with the journal or its records
    /// ([`check_metrics`]).
    pub metric_mismatches: Vec<String>,
}

impl Report {
    /// The control group's figures, or ddblock's.
    fn group(&mut self, control: bool) -> &mut GroupReport {
        if control {
            &mut self.control
        } else {
            &mut self.ddblock
        }
    }

    /// The violations that fail a run: overlaps, stale tokens accepted, writes by a non-holder
    /// and locks held at the end in ddblock's group, and untyped errors anywhere.
    pub fn violations(&self) -> Vec<String> {
        let d = &self.ddblock;
        let mut v = self.metric_mismatches.clone();
        if d.overlaps > 0 {
            v.push(format!(
                "{} overlapping holders: {:?}",
                d.overlaps, d.overlap_examples
            ));
        }
        let counted = [
            (
                d.stale_token_accepted,
                "guarded writes accepted with a stale fencing token",
            ),
            (
                d.writes_by_non_holder,
                "guarded writes accepted from a worker that no longer held the lock",
            ),
            (
                d.fence_regressions_in_item,
                "fencing tokens did not grow over an existing item",
            ),
            (
                d.expired_unreleased,
                "ddblock releases reported done while the lock stayed in place",
            ),
            (
                d.held_at_end,
                "ddblock locks still held after the run that no error explains",
            ),
            (
                d.false_lease_losses,
                "lease-lost reports whose lease had not run out by the holder's clock",
            ),
        ];
        for (count, what) in counted {
            if count > 0 {
                v.push(format!("{count} {what}"));
            }
        }
        for (lang, examples) in &self.untyped {
            v.push(format!(
                "{lang}: {} untyped errors, e.g. {:?}",
                examples.len(),
                examples.first()
            ));
        }
        v
    }
}

/// A lock key's state while replaying.
#[derive(Debug, Clone)]
enum State {
    Free,
    Held { owner: String, expires_at: i64 },
}

/// The text of a string or number attribute value (`{"S": x}` or `{"N": x}`).
fn scalar(v: &Value) -> Option<String> {
    v.get("S")
        .or_else(|| v.get("N"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// An owner as workers report it: Laravel stores a string owner PHP-serialized (`s:16:"…";`)
/// and a numeric one as `N`.
fn owner_of(v: &Value) -> Option<String> {
    if let Some(n) = v.get("N").and_then(Value::as_str) {
        return Some(n.to_owned());
    }
    let s = v.get("S").and_then(Value::as_str)?;
    let rest = s.strip_prefix("s:")?;
    let (_, quoted) = rest.split_once(':')?;
    Some(quoted.strip_prefix('"')?.strip_suffix("\";")?.to_owned())
}

fn eav<'a>(req: &'a Value, name: &str) -> Option<&'a Value> {
    req.get("ExpressionAttributeValues")?.get(name)
}

fn key_of(entry: &Value) -> Option<String> {
    let req = &entry["request"];
    let key = req.get("Key").or_else(|| req.get("Item"))?;
    // The table's key attribute is the only one in `Key`; in a PutItem `Item` it is `key`.
    let k = match req.get("Key") {
        Some(k) => k.as_object()?.values().next()?,
        None => key.get("key")?,
    };
    scalar(k)
}

/// What a committed write did to a lock item.
#[derive(Debug)]
enum LockWrite {
    Acquire {
        owner: String,
        attempt: Option<String>,
        expires_at: i64,
        fence: Option<u64>,
    },
    Refresh {
        expires_at: i64,
    },
    Release,
    CleanUp {
        attempt: String,
    },
    Delete,
    Other,
}

fn lock_write(entry: &Value, keys: &Keys) -> LockWrite {
    let req = &entry["request"];
    let cond = req["ConditionExpression"].as_str().unwrap_or("");
    let update = req["UpdateExpression"].as_str().unwrap_or("");
    let num = |v: Option<&Value>| v.and_then(scalar).and_then(|s| s.parse::<i64>().ok());
    match entry["op"].as_str().unwrap_or("") {
        // The keep-fence release (`SET #expires_at = :expires_at REMOVE #value, #attempt, #since`):
        // conditioned on the owner, a release; on `attribute_exists(#key)`, a force release.
        "UpdateItem" if update.contains("REMOVE") && cond.contains(":owner") => LockWrite::Release,
        "UpdateItem" if update.contains("REMOVE") => LockWrite::Delete,
        "UpdateItem" if update.contains("#attempt") => LockWrite::Acquire {
            owner: eav(req, ":owner").and_then(owner_of).unwrap_or_default(),
            attempt: eav(req, ":attempt").and_then(scalar),
            expires_at: num(eav(req, ":expires_at")).unwrap_or(0),
            fence: entry["response"]["Attributes"]["ddblock_fence"]["N"]
                .as_str()
                .and_then(|s| s.parse().ok()),
        },
        "UpdateItem" if cond.contains(":owner") => LockWrite::Refresh {
            expires_at: num(eav(req, ":expires_at")).unwrap_or(0),
        },
        "PutItem" => {
            let item = &req["Item"];
            LockWrite::Acquire {
                owner: item
                    .get(&keys.value_attribute)
                    .and_then(owner_of)
                    .unwrap_or_default(),
                attempt: None,
                expires_at: num(item.get(&keys.expiration_attribute)).unwrap_or(0),
                fence: None,
            }
        }
        "DeleteItem" if cond.contains(":attempt") => LockWrite::CleanUp {
            attempt: eav(req, ":attempt").and_then(scalar).unwrap_or_default(),
        },
        "DeleteItem" if cond.contains(":owner") => LockWrite::Release,
        "DeleteItem" => LockWrite::Delete,
        _ => LockWrite::Other,
    }
}

/// Judges a run. `end_items` are the lock items left in the table at the end (table key →
/// expiry), `end_now` the true time then (Unix seconds).
pub fn check(
    keys: &Keys,
    journal: &[Value],
    cycles: &[Cycle],
    end_items: &HashMap<String, i64>,
    end_now: i64,
) -> Report {
    let mut report = Report {
        journal_entries: journal.len() as u64,
        ..Report::default()
    };
    let lock_by_key: HashMap<&str, (&str, bool)> = keys
        .locks
        .iter()
        .map(|(name, k)| (k.key.as_str(), (name.as_str(), k.control)))
        .collect();
    let resource_by_key: HashMap<&str, &str> = keys
        .resources
        .iter()
        .map(|(name, k)| (k.as_str(), name.as_str()))
        .collect();
    let worker_of: HashMap<&str, &str> = cycles
        .iter()
        .map(|c| (c.owner.as_str(), c.worker.as_str()))
        .collect();
    let mut learned_by: BTreeMap<String, u64> = BTreeMap::new();
    let mut unlearned_by: BTreeMap<String, u64> = BTreeMap::new();
    let learned: HashSet<(&str, &str)> = cycles
        .iter()
        .filter(|c| c.acquire == "acquired")
        .map(|c| (c.name.as_str(), c.owner.as_str()))
        .collect();

    // Releases that failed with an error the worker saw, by (name, owner).
    let failed_release: HashSet<(&str, &str)> = cycles
        .iter()
        .filter(|c| c.release.as_deref() == Some("error"))
        .map(|c| (c.name.as_str(), c.owner.as_str()))
        .collect();
    let explained = |name: &str, owner: &str| {
        !learned.contains(&(name, owner)) || failed_release.contains(&(name, owner))
    };
    let release_of: HashMap<(&str, &str), &str> = cycles
        .iter()
        .filter_map(|c| Some(((c.name.as_str(), c.owner.as_str()), c.release.as_deref()?)))
        .collect();
    // How an acquisition that expired in place is counted.
    let expired_in_place = |g: &mut GroupReport, name: &str, owner: &str| {
        if explained(name, owner) {
            g.expired_unreleased_explained += 1;
        } else if release_of.get(&(name, owner)) == Some(&"released") {
            g.expired_unreleased += 1;
        } else {
            g.expired_release_refused += 1;
        }
    };
    let mut state: HashMap<&str, State> = HashMap::new();
    let mut last_fence: HashMap<&str, u64> = HashMap::new();
    let mut max_accepted: HashMap<&str, u64> = HashMap::new();
    // Unlearned acquisitions by (key, attempt): whether a clean-up deleted them.
    let mut unlearned: HashMap<(String, String), bool> = HashMap::new();
    let mut unlearned_no_attempt: HashMap<bool, u64> = HashMap::new();

    for entry in journal {
        if entry["status"] == 200 && entry["delivery"] != "answered" {
            report.committed_unanswered += 1;
        }
        let refused = entry["status"] == 400
            && entry["response"]["__type"]
                .as_str()
                .is_some_and(|t| t.ends_with("ConditionalCheckFailedException"));
        if refused {
            // A guarded write the fence refused: from the holder (a token regression) or not.
            if let Some(name) = key_of(entry)
                .as_deref()
                .and_then(|k| resource_by_key.get(k).copied())
            {
                let writer = eav(&entry["request"], ":owner")
                    .and_then(scalar)
                    .unwrap_or_default();
                let holds =
                    matches!(state.get(name), Some(State::Held { owner, .. }) if *owner == writer);
                let control = keys.locks.get(name).is_some_and(|k| k.control);
                let g = report.group(control);
                if holds {
                    g.writes_refused_holder += 1;
                } else {
                    g.writes_refused += 1;
                }
            }
        }
        if entry["status"] != 200 {
            continue; // a failed condition or an error: nothing changed
        }
        let Some(key) = key_of(entry) else { continue };
        let t_us = entry["wall_us"].as_i64().unwrap_or(0);
        if let Some(&(name, control)) = lock_by_key.get(key.as_str()) {
            let g = report.group(control);
            let st = state.entry(name).or_insert(State::Free);
            match lock_write(entry, keys) {
                LockWrite::Acquire {
                    owner,
                    attempt,
                    expires_at,
                    fence,
                } => {
                    g.acquisitions += 1;
                    if let State::Held {
                        owner: prev,
                        expires_at: prev_exp,
                    } = st
                    {
                        // The previous holder's item was never deleted: it expired in place.
                        expired_in_place(g, name, prev);
                        // Live until `expires_at` (Laravel: expired when now >= expires_at).
                        if t_us < *prev_exp * 1_000_000 {
                            g.overlaps += 1;
                            if g.overlap_examples.len() < 5 {
                                g.overlap_examples.push(format!(
                                    "{name}: taken by {} at {:.3} while {} held it until {}",
                                    short(&owner),
                                    t_us as f64 / 1e6,
                                    short(prev),
                                    prev_exp
                                ));
                            }
                        }
                    }
                    if let Some(f) = fence {
                        if let Some(&last) = last_fence.get(name) {
                            if f <= last {
                                if matches!(st, State::Held { .. }) {
                                    g.fence_regressions_in_item += 1;
                                } else {
                                    g.fence_regressions_after_delete += 1;
                                }
                            }
                        }
                        last_fence.insert(name, f);
                    }
                    let worker = worker_of.get(owner.as_str()).copied().unwrap_or("?");
                    if learned.contains(&(name, owner.as_str())) {
                        g.acquisitions_learned += 1;
                        *learned_by.entry(worker.to_owned()).or_default() += 1;
                    } else {
                        *unlearned_by.entry(worker.to_owned()).or_default() += 1;
                        match &attempt {
                            Some(a) => {
                                unlearned.insert((name.to_owned(), a.clone()), false);
                            }
                            None => *unlearned_no_attempt.entry(control).or_default() += 1,
                        }
                    }
                    *st = State::Held { owner, expires_at };
                }
                LockWrite::Refresh { expires_at: e } => {
                    if let State::Held { expires_at, .. } = st {
                        *expires_at = e;
                    }
                }
                LockWrite::CleanUp { attempt } => {
                    if let Some(cleaned) = unlearned.get_mut(&(name.to_owned(), attempt)) {
                        *cleaned = true;
                    }
                    *st = State::Free;
                }
                LockWrite::Release | LockWrite::Delete => *st = State::Free,
                LockWrite::Other => {}
            }
        } else if let Some(&name) = resource_by_key.get(key.as_str()) {
            let control = keys.locks.get(name).is_some_and(|k| k.control);
            let g = report.group(control);
            let req = &entry["request"];
            let writer = eav(req, ":owner").and_then(scalar).unwrap_or_default();
            let fence = eav(req, ":fence")
                .and_then(scalar)
                .and_then(|s| s.parse::<u64>().ok());
            g.writes_accepted += 1;
            if let Some(f) = fence {
                let max = max_accepted.entry(name).or_insert(0);
                if f < *max {
                    g.stale_token_accepted += 1;
                }
                *max = (*max).max(f);
            }
            // The writer must hold the lock when its write commits (not released, not taken).
            let holds =
                matches!(state.get(name), Some(State::Held { owner, .. }) if *owner == writer);
            if !holds {
                g.writes_by_non_holder += 1;
            }
        }
    }
    report.journal_learned_by_worker = learned_by;
    report.journal_unlearned_by_worker = unlearned_by;
    for ((name, _), cleaned) in &unlearned {
        let control = keys.locks.get(name).is_some_and(|k| k.control);
        let g = report.group(control);
        if *cleaned {
            g.unlearned_cleaned += 1;
        } else {
            g.unlearned_left += 1;
        }
    }
    for (control, n) in unlearned_no_attempt {
        let g = report.group(control);
        g.unlearned_left += n;
    }
    for (name, k) in &keys.locks {
        let live = end_items.get(&k.key).is_some_and(|&e| e > end_now);
        if let (false, Some(State::Held { owner, .. })) = (live, state.get(name.as_str())) {
            // Expired by the end without a release.
            let g = report.group(k.control);
            expired_in_place(g, name, owner);
        }
        if live {
            let explained = match state.get(name.as_str()) {
                Some(State::Held { owner, .. }) => explained(name, owner),
                _ => false,
            };
            let g = report.group(k.control);
            if explained {
                g.held_at_end_explained += 1;
            } else {
                g.held_at_end += 1;
            }
        }
    }
    for c in cycles {
        let e = report.cycles.entry(c.lang.clone()).or_default();
        e.0 += 1;
        e.1 += u64::from(c.acquire == "acquired");
        for (op, kind) in &c.errors {
            *report
                .errors
                .entry(c.lang.clone())
                .or_default()
                .entry(format!("{op}: {kind}"))
                .or_default() += 1;
        }
        if !c.untyped.is_empty() {
            report
                .untyped
                .entry(c.lang.clone())
                .or_default()
                .extend(c.untyped.iter().cloned());
        }
        if c.release.as_deref() == Some("lease_lost") {
            let g = report.group(keys.locks.get(&c.name).is_some_and(|k| k.control));
            g.lease_lost += 1;
            if c.lease_left_ms.unwrap_or(0) > 0 && c.lost_by_refresh != Some(true) {
                g.false_lease_losses += 1;
            }
        }
        if matches!(c.release.as_deref(), Some("not_held" | "held_by_other")) {
            let control = keys.locks.get(&c.name).is_some_and(|k| k.control);
            if control {
                report.control.releases_not_own += 1;
            } else {
                report.ddblock.releases_not_own += 1;
            }
        }
    }
    report
}

/// The first four characters of an owner token (owners are secrets: never log them whole).
fn short(owner: &str) -> String {
    let head: String = owner.chars().take(4).collect();
    format!("{head}…")
}

/// Holds each Rust worker's own metrics (`metrics`, by worker id: what its OpenTelemetry SDK
/// counted, docs/observability.md) against what the journal shows it did and what it recorded,
/// into [`Report::metric_mismatches`]: acquisitions by outcome, unknown outcomes and lost leases.
pub fn check_metrics(report: &mut Report, cycles: &[Cycle], metrics: &BTreeMap<String, Counts>) {
    report.metric_workers = metrics.len() as u64;
    for (worker, m) in metrics {
        let mine: Vec<&Cycle> = cycles
            .iter()
            .filter(|c| c.worker == *worker && c.untyped.is_empty())
            .collect();
        let records = |f: &dyn Fn(&Cycle) -> bool| mine.iter().filter(|c| f(c)).count() as u64;
        let acq = "ddblock.lock.acquisitions";
        let unknown = count(m, acq, "unknown");
        let journal = |by: &BTreeMap<String, u64>| by.get(worker).copied().unwrap_or(0);
        let lost_records = records(&|c| c.lost_by_refresh == Some(true));
        let lost_ends = records(&|c| c.release.as_deref() == Some("lease_lost"));
        let lost = count(m, "ddblock.lock.lease_lost", "");
        let not_acquired = count(m, acq, "timed_out") + count(m, acq, "held");
        let unknown_errors = records(&|c| {
            c.errors
                .iter()
                .any(|(op, k)| op == "acquire" && k == "outcome_unknown")
        });
        let unlearned = journal(&report.journal_unlearned_by_worker);
        let learned = journal(&report.journal_learned_by_worker);
        let acquired = count(m, acq, "acquired");
        let unknowns = total(m, "ddblock.lock.unknown_outcomes");
        let written = count(m, "ddblock.lock.acquire_writes", "written");
        let lost_answers = count(m, "ddblock.lock.acquire_writes", "unknown");
        let checks = [
            (
                "acquire writes answered `written` <= acquisitions it learned (journal) <= those \
                 + answers lost (a lost answer's write is learned by its resend)",
                written <= learned && learned <= written + lost_answers,
                format!("{written} <= {learned} <= {written} + {lost_answers}"),
            ),
            (
                "acquisitions counted `acquired` = acquisitions it committed and learned (journal)",
                acquired == learned,
                format!("{acquired} vs {learned}"),
            ),
            (
                "acquisitions counted = its cycles (one acquire each)",
                total(m, acq) == mine.len() as u64,
                format!("{} vs {}", total(m, acq), mine.len()),
            ),
            (
                "acquisitions counted `timed_out` or `held` = cycles it recorded as not acquired",
                not_acquired == records(&|c| c.acquire == "held"),
                format!("{not_acquired} vs {}", records(&|c| c.acquire == "held")),
            ),
            (
                "acquisitions counted `unknown` = its OutcomeUnknown errors, >= its unlearned \
                 commits (journal)",
                unknown == unknown_errors && unknown >= unlearned,
                format!("{unknown} vs {unknown_errors} errors, {unlearned} unlearned"),
            ),
            (
                "unknown outcomes counted (clean + left) = acquisitions counted `unknown`",
                unknowns == unknown,
                format!("{unknowns} vs {unknown}"),
            ),
            (
                "lost leases counted: at least those a refresh saw, at most the bodies that ended lost",
                lost_records <= lost && lost <= lost_ends,
                format!("{lost_records} <= {lost} <= {lost_ends}"),
            ),
        ];
        for (what, ok, figures) in checks {
            if !ok {
                report
                    .metric_mismatches
                    .push(format!("{worker}: metrics disagree: {what} ({figures})"));
            }
        }
    }
}

/// The counter's verdict: each critical section read the counter and wrote it back plus one,
/// unguarded (`guarded::counter_key`), so the counters sum (`counted`) to the sections that
/// counted unless two overlapped (a lost update); a section whose write failed may have counted
/// or not. The line `counter: S sections, C counted`, and the violation if any.
pub fn counter(cycles: &[Cycle], counted: i64) -> (String, Option<String>) {
    let sections = |what: &str| {
        let n = cycles
            .iter()
            .filter(|c| c.counter.as_deref() == Some(what))
            .count();
        i64::try_from(n).unwrap_or(i64::MAX)
    };
    let (sections, unsure) = (sections("counted"), sections("error"));
    let note = match unsure {
        0 => String::new(),
        n => format!(" (and {n} more whose write failed, each counted or not)"),
    };
    let line = format!("counter: {sections} sections, {counted} counted{note}");
    let violation = (counted < sections || counted > sections + unsure).then(|| {
        let why = if counted < sections {
            "updates were lost: two sections overlapped"
        } else {
            "more than the sections that ran"
        };
        format!(
            "the counter is {counted} after {sections} critical sections (+{unsure} unsure): {why}"
        )
    });
    (line, violation)
}
