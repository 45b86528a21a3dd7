//! Trace validation on journals written out step by step (the requests ddblock sends, as the
//! fault proxy journals them): a correct trace passes, and each wrong step is rejected where it
//! happens (a release without its owner condition, stock Laravel's unconditional delete, a write
//! the model's table would refuse, an outcome the model's client never reached).

use std::collections::BTreeMap;

use ddblock_chaos::checker::Cycle;
use ddblock_chaos::trace::{validate, TraceReport};
use ddblock_model::config::ReleaseMode;
use serde_json::{json, Value};

const KEY: &str = "chaos_k0";
const T0: i64 = 1_800_000_000;
const TTL: i64 = 6;
const MARGIN: i64 = 4;

fn stored(owner: &str) -> Value {
    json!({"S": format!("s:{}:\"{owner}\";", owner.len())})
}

/// A journal entry at second `at` of the run.
fn entry(at: i64, op: &str, request: Value, status: u16, response: Value, delivery: &str) -> Value {
    let mut request = request;
    request["Key"] = json!({"key": {"S": KEY}});
    request["TableName"] = json!("chaos");
    json!({
        "seq": at, "wall_us": (T0 + at) * 1_000_000 + 500_000, "op": op, "request": request,
        "status": status, "response": response, "delivery": delivery,
    })
}

/// ddblock's acquire write by `owner` (attempt `attempt`) with its clock at second `at`.
fn acquire(at: i64, owner: &str, attempt: &str, status: u16, fence: i64, delivery: &str) -> Value {
    let clock = T0 + at;
    let request = json!({
        "ConditionExpression": "attribute_not_exists(#key) OR #expires_at < :now",
        "UpdateExpression": "SET #value = :owner, #expires_at = :expires_at, #attempt = :attempt, #fence = if_not_exists(#fence, :fence_base) + :one",
        "ExpressionAttributeValues": {
            ":owner": stored(owner), ":attempt": {"S": attempt},
            ":expires_at": {"N": (clock + TTL).to_string()}, ":now": {"N": (clock - MARGIN).to_string()},
            ":fence_base": {"N": (clock * 1_000_000).to_string()}, ":one": {"N": "1"},
        },
    });
    let response = match status {
        200 => json!({"Attributes": {"ddblock_fence": {"N": fence.to_string()}}}),
        _ => json!({"__type": "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException"}),
    };
    entry(at, "UpdateItem", request, status, response, delivery)
}

/// ddblock's release (delete mode): DeleteItem if `#value = :owner`.
fn release(at: i64, owner: &str, status: u16) -> Value {
    let request = json!({
        "ConditionExpression": "#value = :owner",
        "ExpressionAttributeValues": {":owner": stored(owner)},
    });
    entry(at, "DeleteItem", request, status, json!({}), "answered")
}

/// A DeleteItem without a condition (a worker releasing without its owner condition, or stock
/// Laravel's `forget()` after its read).
fn unconditional_delete(at: i64) -> Value {
    entry(at, "DeleteItem", json!({}), 200, json!({}), "answered")
}

fn cycle(owner: &str, lang: &str, acquire: &str, release: Option<&str>) -> Cycle {
    Cycle {
        lang: lang.into(),
        worker: format!("{lang}-1"),
        name: "k0".into(),
        owner: owner.into(),
        acquire: acquire.into(),
        release: release.map(Into::into),
        ..Cycle::default()
    }
}

fn run(journal: &[Value], cycles: &[Cycle]) -> TraceReport {
    let keys = BTreeMap::from([(KEY.to_owned(), "k0".to_owned())]);
    validate(&keys, journal, cycles, TTL, MARGIN, ReleaseMode::Delete)
}

fn fence(at: i64) -> i64 {
    (T0 + at) * 1_000_000 + 1
}

#[test]
fn a_correct_trace_passes_with_every_step_counted_by_front() {
    let journal = [
        acquire(0, "alice", "a1", 200, fence(0), "answered"),
        acquire(1, "bob", "b1", 400, 0, "answered"),
        release(2, "alice", 200),
        // Bob's wait: a new attempt once the lock is free.
        acquire(3, "bob", "b2", 200, fence(3), "answered"),
        release(4, "bob", 200),
    ];
    let cycles = [
        cycle("alice", "python", "acquired", Some("released")),
        cycle("bob", "php", "acquired", Some("released")),
    ];
    let r = run(&journal, &cycles);
    assert_eq!(r.rejected, 0, "{:?}", r.rejections);
    // Five requests sent and answered (2 steps each), four outcomes.
    assert_eq!(r.steps, 14);
    assert_eq!(
        r.line(),
        "trace validation: 14 steps checked, 0 rejected (rust 0, python 6, node 0, cli 0, php 8)"
    );
}

#[test]
fn a_lost_answer_recovered_by_the_resend_passes() {
    let journal = [
        acquire(0, "alice", "a1", 200, fence(0), "dropped"),
        acquire(1, "alice", "a1", 400, 0, "answered"),
        release(2, "alice", 200),
    ];
    let r = run(
        &journal,
        &[cycle("alice", "node", "acquired", Some("released"))],
    );
    assert_eq!(r.rejected, 0, "{:?}", r.rejections);
}

#[test]
fn a_release_without_its_owner_condition_is_rejected_at_that_step() {
    let journal = [
        acquire(0, "alice", "a1", 200, fence(0), "answered"),
        unconditional_delete(1),
        acquire(2, "bob", "b1", 200, fence(2), "answered"),
    ];
    let cycles = [
        cycle("alice", "rust", "acquired", Some("released")),
        cycle("bob", "rust", "acquired", None),
    ];
    let r = run(&journal, &cycles);
    assert_eq!(r.rejected, 1, "{:?}", r.rejections);
    assert!(
        r.rejections[0].contains("journal #1")
            && r.rejections[0].contains("DeleteItem with no condition"),
        "{:?}",
        r.rejections
    );
}

#[test]
fn an_item_removed_behind_the_protocol_is_rejected_at_the_next_write() {
    // Alice's live item vanishes (nothing in the journal removes it): Bob's write lands where the
    // model's table refuses it.
    let journal = [
        acquire(0, "alice", "a1", 200, fence(0), "answered"),
        acquire(1, "bob", "b1", 200, fence(1), "answered"),
    ];
    let cycles = [
        cycle("alice", "php", "acquired", None),
        cycle("bob", "cli", "acquired", None),
    ];
    let r = run(&journal, &cycles);
    assert_eq!(r.rejected, 1, "{:?}", r.rejections);
    assert!(r.rejections[0].contains("journal #1"), "{:?}", r.rejections);
    assert!(r.rejections[0].contains("Taken"), "{:?}", r.rejections);
}

#[test]
fn an_outcome_the_model_never_reached_is_rejected() {
    let journal = [
        acquire(0, "alice", "a1", 200, fence(0), "answered"),
        acquire(1, "bob", "b1", 400, 0, "answered"),
    ];
    let cycles = [
        cycle("alice", "python", "acquired", None),
        // Bob's write was refused and answered: he cannot have acquired.
        cycle("bob", "node", "acquired", None),
    ];
    let r = run(&journal, &cycles);
    assert_eq!(r.rejected, 1, "{:?}", r.rejections);
    assert!(r.rejections[0].contains("never held"), "{:?}", r.rejections);
}

#[test]
fn a_release_from_a_client_that_never_held_is_rejected() {
    let journal = [
        acquire(0, "bob", "b1", 200, fence(0), "answered"),
        acquire(1, "alice", "a1", 400, 0, "answered"),
        release(2, "alice", 400),
    ];
    let cycles = [
        cycle("bob", "rust", "acquired", None),
        cycle("alice", "rust", "held", Some("not_held")),
    ];
    let r = run(&journal, &cycles);
    assert_eq!(r.rejected, 1, "{:?}", r.rejections);
    assert!(r.rejections[0].contains("journal #2"), "{:?}", r.rejections);
}

#[test]
fn stock_laravels_release_under_a_stale_read_is_rejected_at_its_delete() {
    // Alice's lease ran out and Bob took the lock; Alice releases as stock Laravel does: her read
    // (eventually consistent, not journaled) is stale and shows her own item, and her delete,
    // unconditional, removes Bob's. The first wrong step is that delete.
    let journal = [
        acquire(0, "alice", "a1", 200, fence(0), "answered"),
        acquire(12, "bob", "b1", 200, fence(0) + 1, "answered"),
        unconditional_delete(13),
        acquire(14, "carol", "c1", 200, fence(14), "answered"),
    ];
    let cycles = [
        cycle("alice", "rust", "acquired", Some("released")),
        cycle("bob", "python", "acquired", None),
        cycle("carol", "node", "acquired", None),
    ];
    let r = run(&journal, &cycles);
    assert_eq!(r.rejected, 1, "{:?}", r.rejections);
    assert!(
        r.rejections[0].contains("journal #13")
            && r.rejections[0].contains("DeleteItem with no condition"),
        "{:?}",
        r.rejections
    );
}

/// The heartbeat's refresh (UpdateItem if ours and live), with the client's clock at `at`.
fn refresh(at: i64, owner: &str, status: u16) -> Value {
    let clock = T0 + at;
    let request = json!({
        "ConditionExpression": "attribute_exists(#key) AND #value = :owner AND #expires_at > :now",
        "UpdateExpression": "SET #expires_at = :expires_at",
        "ExpressionAttributeValues": {
            ":owner": stored(owner), ":now": {"N": clock.to_string()},
            ":expires_at": {"N": (clock + TTL).to_string()},
        },
    });
    entry(at, "UpdateItem", request, status, json!({}), "answered")
}

#[test]
fn a_refresh_landing_after_the_release_passes_only_if_it_changes_nothing() {
    let journal = |status| {
        [
            acquire(0, "alice", "a1", 200, fence(0), "answered"),
            refresh(2, "alice", 200),
            release(3, "alice", 200),
            // Sent by the heartbeat while Alice held, landing after her release.
            refresh(3, "alice", status),
        ]
    };
    let cycles = [cycle("alice", "rust", "acquired", Some("released"))];
    let r = run(&journal(400), &cycles);
    assert_eq!(r.rejected, 0, "{:?}", r.rejections);
    // A refresh that the server applied after the release: the item was not released.
    let r = run(&journal(200), &cycles);
    assert_eq!(r.rejected, 1, "{:?}", r.rejections);
    assert!(r.rejections[0].contains("journal #3"), "{:?}", r.rejections);
}

#[test]
fn a_second_refresh_within_the_same_second_passes() {
    // Both refreshes set the same expiry: the second writes the item as it was, answered 200
    // (the long profile's first run rejected 11 such, before the validator allowed it).
    let mut second = refresh(2, "alice", 200);
    second["seq"] = json!(3);
    let journal = [
        acquire(0, "alice", "a1", 200, fence(0), "answered"),
        refresh(2, "alice", 200),
        second,
        release(4, "alice", 200),
    ];
    let cycles = [cycle("alice", "rust", "acquired", Some("released"))];
    let r = run(&journal, &cycles);
    assert_eq!(r.rejected, 0, "{:?}", r.rejections);
}

#[test]
fn an_acquire_whose_expiry_was_read_a_second_later_passes_and_two_seconds_do_not() {
    let with_expiry = |later: i64| {
        let mut a = acquire(0, "alice", "a1", 200, fence(0), "answered");
        a["request"]["ExpressionAttributeValues"][":expires_at"] =
            json!({"N": (T0 + TTL + later).to_string()});
        [a, release(2, "alice", 200)]
    };
    let cycles = [cycle("alice", "php", "acquired", Some("released"))];
    let r = run(&with_expiry(1), &cycles);
    assert_eq!(r.rejected, 0, "{:?}", r.rejections);
    let r = run(&with_expiry(2), &cycles);
    assert_eq!(r.rejected, 1, "{:?}", r.rejections);
    assert!(r.rejections[0].contains("expires_at"), "{:?}", r.rejections);
}
