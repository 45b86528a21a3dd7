//! The plan: which faults apply to one request, drawn at arrival from the seeded RNG (or taken
//! from the operation's scripted fault sequence).

use std::collections::HashMap;
use std::sync::Mutex;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;

use crate::config::FaultConfig;
use crate::history::Item;

/// The random decisions for one request, all drawn at arrival under one lock.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    pub(crate) extra_latency_ms: u64,
    pub(crate) latency: bool,
    pub(crate) throttle: bool,
    pub(crate) error500: bool,
    pub(crate) drop: bool,
    pub(crate) drop_request: bool,
    pub(crate) reset: bool,
    pub(crate) delay_response: bool,
    /// Answered 400 `ReplicatedWriteConflictException` (scripted only).
    pub(crate) replicated_conflict: bool,
    /// Answered 400 `AccessDeniedException` (`deny_ops`).
    pub(crate) access_denied: bool,
    /// One entry per eventually consistent key read, in request order: the staleness in µs, if stale.
    pub(crate) stale: Vec<Option<i64>>,
}

/// Where plans come from: the seeded RNG and how far each operation's scripted fault sequence
/// has been used.
pub(crate) struct Planner {
    rng: Mutex<StdRng>,
    sequence_pos: Mutex<HashMap<String, usize>>,
}

fn op_selected(ops: &[String], op: &str) -> bool {
    ops.is_empty() || ops.iter().any(|o| o == op)
}

impl Planner {
    pub(crate) fn new(seed: u64) -> Planner {
        Planner {
            rng: Mutex::new(StdRng::seed_from_u64(seed)),
            sequence_pos: Mutex::new(HashMap::new()),
        }
    }

    /// Re-seeds the RNG and restarts every scripted sequence.
    pub(crate) fn reseed(&self, seed: u64) {
        let mut rng = self.rng.lock().unwrap_or_else(|e| e.into_inner());
        *rng = StdRng::seed_from_u64(seed);
        self.sequence_pos
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// The next scripted fault for `op`, if its sequence is not used up.
    fn scripted(&self, cfg: &FaultConfig, op: &str) -> Option<String> {
        let faults = cfg.sequence.get(op)?;
        let mut pos = self.sequence_pos.lock().unwrap_or_else(|e| e.into_inner());
        let i = pos.entry(op.to_owned()).or_insert(0);
        let fault = faults.get(*i)?.clone();
        *i += 1;
        Some(fault)
    }

    /// The plan for one `op` request making `eventual_reads` eventually consistent key reads.
    pub(crate) fn draw(&self, cfg: &FaultConfig, op: &str, eventual_reads: usize) -> Plan {
        if let Some(fault) = self.scripted(cfg, op) {
            return Plan {
                latency: op_selected(&cfg.latency_ops, op),
                drop: fault == "drop",
                reset: fault == "reset",
                drop_request: fault == "drop_request",
                throttle: fault == "throttle",
                error500: fault == "error500",
                delay_response: fault == "delay",
                replicated_conflict: fault == "replicated_conflict",
                access_denied: cfg.deny_ops.iter().any(|o| o == op),
                stale: vec![None; eventual_reads],
                ..Plan::default()
            };
        }
        let mut rng = self.rng.lock().unwrap_or_else(|e| e.into_inner());
        let mut plan = Plan::default();
        if cfg.latency_jitter_ms > 0 {
            plan.extra_latency_ms = rng.random_range(0..=cfg.latency_jitter_ms);
        }
        plan.latency = op_selected(&cfg.latency_ops, op);
        plan.access_denied = cfg.deny_ops.iter().any(|o| o == op);
        let mut chance =
            |rate: f64, ops: &[String]| rate > 0.0 && op_selected(ops, op) && rng.random_bool(rate);
        plan.drop_request = chance(cfg.drop_request_rate, &cfg.drop_request_ops);
        plan.reset = chance(cfg.reset_response_rate, &cfg.reset_ops);
        plan.delay_response = cfg.delay_response_ms > 0 && op_selected(&cfg.delay_response_ops, op);
        plan.throttle = chance(cfg.throttle_rate, &cfg.throttle_ops);
        plan.error500 = chance(cfg.error_500_rate, &cfg.error_500_ops);
        plan.drop = chance(cfg.drop_response_rate, &cfg.drop_ops);
        let (min_us, max_us) = (cfg.stale_min_ms as i64 * 1000, cfg.stale_ms as i64 * 1000);
        plan.stale = (0..eventual_reads)
            .map(|_| {
                if cfg.stale_enabled() && rng.random_bool(cfg.stale_probability) {
                    Some(rng.random_range(min_us..=max_us))
                } else {
                    None
                }
            })
            .collect();
        plan
    }
}

/// Whether a request (or a BatchGetItem table entry) asks for `ConsistentRead: true`.
pub(crate) fn is_consistent(v: &Item) -> bool {
    v.get("ConsistentRead").and_then(Value::as_bool) == Some(true)
}

/// How many eventually consistent key reads the request makes (GetItem, BatchGetItem).
pub(crate) fn count_eventual_reads(op: &str, body: &Item) -> usize {
    match op {
        "GetItem" if !is_consistent(body) && body.get("Key").is_some_and(Value::is_object) => 1,
        "BatchGetItem" => body
            .get("RequestItems")
            .and_then(Value::as_object)
            .map(|tables| {
                tables
                    .values()
                    .filter_map(Value::as_object)
                    .filter(|t| !is_consistent(t))
                    .map(|t| t.get("Keys").and_then(Value::as_array).map_or(0, Vec::len))
                    .sum()
            })
            .unwrap_or(0),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eventual_read_counting() {
        let get: Item =
            serde_json::from_str(r#"{"TableName":"t","Key":{"key":{"S":"a"}}}"#).unwrap();
        assert_eq!(count_eventual_reads("GetItem", &get), 1);
        let get: Item = serde_json::from_str(
            r#"{"TableName":"t","Key":{"key":{"S":"a"}},"ConsistentRead":true}"#,
        )
        .unwrap();
        assert_eq!(count_eventual_reads("GetItem", &get), 0);
        let batch: Item = serde_json::from_str(
            r#"{"RequestItems":{"a":{"Keys":[{"k":{"S":"1"}},{"k":{"S":"2"}}]},
                "b":{"Keys":[{"k":{"S":"1"}}],"ConsistentRead":true}}}"#,
        )
        .unwrap();
        assert_eq!(count_eventual_reads("BatchGetItem", &batch), 2);
        assert_eq!(count_eventual_reads("PutItem", &batch), 0);
    }

    #[test]
    fn plans_are_deterministic_per_seed() {
        let cfg = FaultConfig {
            seed: 42,
            throttle_rate: 0.5,
            drop_response_rate: 0.5,
            drop_ops: vec!["PutItem".into()],
            stale_ms: 100,
            stale_probability: 0.5,
            latency_jitter_ms: 10,
            ..FaultConfig::default()
        };
        let run = || {
            let planner = Planner::new(cfg.seed);
            (0..50)
                .map(|i| {
                    let op = if i % 2 == 0 { "PutItem" } else { "GetItem" };
                    let p = planner.draw(&cfg, op, i % 3);
                    (p.extra_latency_ms, p.throttle, p.drop, p.stale)
                })
                .collect::<Vec<_>>()
        };
        let a = run();
        assert_eq!(a, run());
        assert!(a.iter().any(|p| p.1) && a.iter().any(|p| !p.1));
        // The drop filter: GetItem (odd i) never drops.
        assert!(a.iter().skip(1).step_by(2).all(|p| !p.2));
        assert!(a.iter().step_by(2).any(|p| p.2));
        assert!(a
            .iter()
            .flat_map(|p| &p.3)
            .flatten()
            .all(|d| (0..=100_000).contains(d)));
    }
}
