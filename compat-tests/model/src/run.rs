//! Checks one configuration (breadth first, so a counterexample is a shortest one) and reports
//! the states explored, each property's verdict against its expectation, and the traces.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use stateright::{Checker, Expectation, Model};

use crate::config::{Config, Expect};
use std::collections::{HashMap, VecDeque};

use crate::model::{initial, possible, step, ProtocolModel};
use crate::state::{show_item, Action, Notes, Phase, State};

/// One property's outcome in one configuration.
pub struct Verdict {
    pub name: &'static str,
    /// `always` (a discovery is a counterexample) or `sometimes` (a discovery is an example).
    pub always: bool,
    pub expect: Expect,
    /// A discovery was made.
    pub found: bool,
    /// The discovery's steps, one line each.
    pub trace: Vec<String>,
}

impl Verdict {
    /// Whether the outcome is the expected one.
    pub fn ok(&self) -> bool {
        match self.expect {
            Expect::Info => true,
            Expect::Holds => self.found != self.always,
            Expect::Fails => self.found && self.always,
        }
    }

    /// The verdict in words.
    pub fn word(&self) -> &'static str {
        match (self.always, self.found) {
            (true, false) => "holds",
            (true, true) => "FAILS (counterexample)",
            (false, true) => "example found",
            (false, false) => "NO EXAMPLE",
        }
    }
}

/// One configuration's run.
pub struct Report {
    pub name: &'static str,
    pub title: &'static str,
    /// Distinct states explored.
    pub states: usize,
    /// States generated (with repeats).
    pub generated: usize,
    pub max_depth: usize,
    pub elapsed: Duration,
    pub verdicts: Vec<Verdict>,
}

impl Report {
    /// Every property as expected.
    pub fn ok(&self) -> bool {
        self.verdicts.iter().all(Verdict::ok)
    }

    /// The verdict of property `name`.
    pub fn verdict(&self, name: &str) -> Option<&Verdict> {
        self.verdicts.iter().find(|v| v.name == name)
    }
}

/// Explores `cfg` to the end of its bounds.
pub fn check(cfg: Config) -> Report {
    let model = ProtocolModel { cfg };
    let started = Instant::now();
    let checker = model.checker().spawn_bfs().join();
    let elapsed = started.elapsed();
    let model = checker.model();
    let cfg = &model.cfg;
    let verdicts = model
        .properties()
        .into_iter()
        .map(|p| {
            let always = matches!(p.expectation, Expectation::Always);
            // The checker's path is not always a shortest one (its threads take jobs in batches),
            // so a trace is searched again, breadth first, to the first state that shows it.
            let trace = checker
                .discovery(p.name)
                .map(|_| describe(cfg, shortest(model, |s| (p.condition)(model, s) != always)))
                .unwrap_or_default();
            Verdict {
                name: p.name,
                always,
                expect: cfg.expectation(p.name),
                found: !trace.is_empty(),
                trace,
            }
        })
        .collect();
    Report {
        name: cfg.name,
        title: cfg.title,
        states: checker.unique_state_count(),
        generated: checker.state_count(),
        max_depth: checker.max_depth(),
        elapsed,
        verdicts,
    }
}

/// A shortest path from an initial state to one where `shows` is true.
fn shortest(model: &ProtocolModel, shows: impl Fn(&State) -> bool) -> Vec<(State, Option<Action>)> {
    let cfg = &model.cfg;
    let mut seen: HashMap<State, Option<(State, Action)>> = HashMap::new();
    let mut queue = VecDeque::new();
    for s in initial(cfg) {
        seen.insert(s.clone(), None);
        queue.push_back(s);
    }
    let mut actions = Vec::new();
    while let Some(s) = queue.pop_front() {
        if shows(&s) {
            let mut path = vec![(s.clone(), None)];
            let mut at = s;
            while let Some(Some((prev, a))) = seen.get(&at) {
                path.push((prev.clone(), Some(*a)));
                at = prev.clone();
            }
            path.reverse();
            return path;
        }
        possible(cfg, &s, &mut actions);
        for a in actions.drain(..) {
            if let Some(next) = step(cfg, &s, a, &mut Notes(None)) {
                if !seen.contains_key(&next) {
                    seen.insert(next.clone(), Some((s.clone(), a)));
                    queue.push_back(next);
                }
            }
        }
    }
    Vec::new()
}

/// A path as lines: the start, each step's notes, the end.
pub fn describe(cfg: &Config, path: Vec<(State, Option<Action>)>) -> Vec<String> {
    let names = cfg.names();
    let mut lines = Vec::new();
    if let Some((first, _)) = path.first() {
        let clocks: Vec<String> = first
            .clients
            .iter()
            .zip(&names)
            .map(|(c, n)| format!("{n} clock {:+}", c.offset))
            .collect();
        lines.push(format!(
            "start: t=0, no item; ttl={} margin={}; {}",
            cfg.ttl,
            cfg.margin,
            clocks.join(", ")
        ));
    }
    for (s, a) in &path {
        if let Some(a) = a {
            let mut notes = Notes(Some(Vec::new()));
            step(cfg, s, *a, &mut notes);
            lines.extend(notes.0.unwrap_or_default());
        }
    }
    if let Some((last, _)) = path.last() {
        let holders: Vec<String> = last
            .clients
            .iter()
            .zip(&names)
            .filter_map(|(c, n)| match c.phase {
                Phase::Holding { deadline, fence } => Some(format!(
                    "{n} holds (lease until t={deadline}{}, fence={})",
                    if c.live(last.t) { ", live" } else { ", over" },
                    fence.map_or(String::from("none"), |f| f.to_string())
                )),
                _ => None,
            })
            .collect();
        let holders = if holders.is_empty() {
            String::from("nobody holds it")
        } else {
            holders.join("; ")
        };
        lines.push(format!(
            "end: t={}, the table holds {}; {holders}",
            last.t,
            show_item(last.item, &names)
        ));
    }
    lines
}

/// The report as text.
pub fn render(r: &Report) -> String {
    let mut out = String::new();
    let status = if r.ok() {
        "as expected"
    } else {
        "NOT AS EXPECTED"
    };
    let _ = writeln!(out, "== {}: {}", r.name, r.title);
    let _ = writeln!(
        out,
        "   {} states explored ({} generated), depth {}, {:.1} s: {status}",
        r.states,
        r.generated,
        r.max_depth,
        r.elapsed.as_secs_f64()
    );
    for v in &r.verdicts {
        let expect = match v.expect {
            Expect::Holds if v.always => "expected to hold",
            Expect::Holds => "expected",
            Expect::Fails => "counterexample expected",
            Expect::Info => "not judged",
        };
        let mark = if v.ok() { "  " } else { "!!" };
        let _ = writeln!(out, "   {mark} {:<24} {} ({expect})", v.word(), v.name);
    }
    for v in r.verdicts.iter().filter(|v| v.always && v.found) {
        let _ = writeln!(out, "   counterexample: {}", v.name);
        for line in &v.trace {
            let _ = writeln!(out, "     {line}");
        }
    }
    out
}
