//! The checker can fail: hand-made journals with an overlap, a stale-token write, a write by a
//! non-holder, an unlearned acquisition and a stuck lock are each reported; a clean journal is not.

use std::collections::{BTreeMap, HashMap};

use ddblock_chaos::checker::{check, check_metrics, Counts, Cycle, Keys, LockKey, Report};
use serde_json::{json, Value};

fn keys() -> Keys {
    let mut locks = BTreeMap::new();
    locks.insert(
        "k0".to_owned(),
        LockKey {
            key: "chaos_k0".into(),
            control: false,
        },
    );
    let mut resources = BTreeMap::new();
    resources.insert("k0".to_owned(), "res_k0".to_owned());
    Keys {
        locks,
        resources,
        value_attribute: "value".into(),
        expiration_attribute: "expires_at".into(),
    }
}

/// Seconds → the journal's microseconds.
fn us(t: f64) -> i64 {
    (t * 1e6) as i64
}

fn entry(t: f64, op: &str, request: Value, status: u16, response: Value) -> Value {
    json!({"seq": 0, "wall_us": us(t), "op": op, "request": request, "status": status,
           "response": response, "delivery": "answered"})
}

fn acquire(t: f64, owner: &str, attempt: &str, expires_at: i64, fence: u64) -> Value {
    entry(
        t,
        "UpdateItem",
        json!({
            "TableName": "chaos", "Key": {"key": {"S": "chaos_k0"}},
            "UpdateExpression": "SET #value = :owner, #expires_at = :expires_at, #attempt = :attempt, #fence = if_not_exists(#fence, :fence_base) + :one",
            "ConditionExpression": "attribute_not_exists(#key) OR #expires_at < :now",
            "ExpressionAttributeValues": {
                ":owner": {"S": format!("s:{}:\"{owner}\";", owner.len())},
                ":expires_at": {"N": expires_at.to_string()},
                ":attempt": {"S": attempt},
            }
        }),
        200,
        json!({"Attributes": {"ddblock_fence": {"N": fence.to_string()}}}),
    )
}

fn release(t: f64, owner: &str) -> Value {
    entry(
        t,
        "DeleteItem",
        json!({"TableName": "chaos", "Key": {"key": {"S": "chaos_k0"}},
               "ConditionExpression": "#value = :owner",
               "ExpressionAttributeValues": {":owner": {"S": format!("s:{}:\"{owner}\";", owner.len())}}}),
        200,
        json!({}),
    )
}

fn clean_up(t: f64, owner: &str, attempt: &str) -> Value {
    entry(
        t,
        "DeleteItem",
        json!({"TableName": "chaos", "Key": {"key": {"S": "chaos_k0"}},
               "ConditionExpression": "#value = :owner AND #attempt = :attempt",
               "ExpressionAttributeValues": {
                   ":owner": {"S": format!("s:{}:\"{owner}\";", owner.len())},
                   ":attempt": {"S": attempt}}}),
        200,
        json!({}),
    )
}

fn write(t: f64, owner: &str, fence: u64, status: u16) -> Value {
    let response = if status == 200 {
        json!({})
    } else {
        json!({"__type": "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException"})
    };
    entry(
        t,
        "UpdateItem",
        json!({"TableName": "chaos", "Key": {"key": {"S": "res_k0"}},
               "UpdateExpression": "SET #fence = :fence, #owner = :owner",
               "ConditionExpression": "attribute_not_exists(#fence) OR #fence <= :fence",
               "ExpressionAttributeValues": {":fence": {"N": fence.to_string()}, ":owner": {"S": owner}}}),
        status,
        response,
    )
}

fn cycle(owner: &str, acquire: &str, release: Option<&str>) -> Cycle {
    Cycle {
        lang: "rust".into(),
        worker: "rust-1".into(),
        name: "k0".into(),
        owner: owner.into(),
        acquire: acquire.into(),
        release: release.map(str::to_owned),
        ..Cycle::default()
    }
}

/// The report on `journal` and one worker cycle per `(owner, acquire, release)`, checked at 200
/// with no lock item left at the end.
fn checked(journal: &[Value], cycles: &[(&str, &str, Option<&str>)]) -> Report {
    let cycles: Vec<Cycle> = cycles.iter().map(|&(o, a, r)| cycle(o, a, r)).collect();
    check(&keys(), journal, &cycles, &HashMap::new(), 200)
}

/// A acquires k0 at 100 until `a_until` (fence 10), then B at `b_at` until `b_until` (fence 11).
fn a_then_b(a: &str, a_until: i64, b: &str, b_at: f64, b_until: i64) -> Vec<Value> {
    vec![
        acquire(100.0, a, "a1", a_until, 10),
        acquire(b_at, b, "b1", b_until, 11),
    ]
}

/// That `r` has `n` violations (all of them shown when not).
fn assert_violations(r: &Report, n: usize) {
    assert_eq!(r.violations().len(), n, "{:?}", r.violations());
}

#[test]
fn a_clean_history_breaks_nothing() {
    let journal = vec![
        acquire(100.0, "AAAA", "a1", 106, 10),
        write(100.1, "AAAA", 10, 200),
        write(100.2, "AAAA", 10, 200),
        release(100.3, "AAAA"),
        acquire(100.4, "BBBB", "b1", 106, 20),
        write(100.5, "BBBB", 20, 200),
        release(100.6, "BBBB"),
        // A lease that ran out: C takes over once A2's item has expired.
        acquire(101.0, "CCCC", "c1", 103, 30),
        acquire(104.5, "DDDD", "d1", 110, 31),
        release(104.6, "DDDD"),
    ];
    let cycles = [
        ("AAAA", "acquired", Some("released")),
        ("BBBB", "acquired", Some("released")),
        ("CCCC", "acquired", Some("not_held")),
        ("DDDD", "acquired", Some("released")),
    ];
    let r = checked(&journal, &cycles);
    assert_eq!(r.ddblock.acquisitions, 4);
    assert_eq!(r.ddblock.acquisitions_learned, 4);
    assert_eq!(r.ddblock.writes_accepted, 3);
    assert_eq!(r.ddblock.releases_not_own, 1);
    assert_violations(&r, 0);
}

#[test]
fn an_overlap_is_reported() {
    // B takes the lock at 102 while A's item lives until 106: two holders.
    let (a, b) = ("AAAAaaaaAAAAaaaa", "BBBBbbbbBBBBbbbb");
    let mut journal = a_then_b(a, 106, b, 102.0, 108);
    journal.push(release(102.5, b));
    let r = checked(
        &journal,
        &[
            (a, "acquired", Some("not_held")),
            (b, "acquired", Some("released")),
        ],
    );
    assert_eq!(r.ddblock.overlaps, 1);
    assert!(r.ddblock.overlap_examples[0].contains("k0"));
    assert!(
        !r.ddblock.overlap_examples[0].contains(a),
        "owners are never shown whole"
    );
    assert_violations(&r, 1);
}

#[test]
fn a_stale_token_accepted_and_a_write_by_a_non_holder_are_reported() {
    let mut journal = a_then_b("AAAA", 103, "BBBB", 104.0, 110);
    journal.extend([
        write(104.1, "BBBB", 11, 200),
        // A, paused past its lease, writes late: a resource that ignored tokens took it.
        write(104.2, "AAAA", 10, 200),
        // The fence condition refusing it is fine.
        write(104.3, "AAAA", 10, 400),
    ]);
    let cycles = [
        ("AAAA", "acquired", Some("not_held")),
        ("BBBB", "acquired", None),
    ];
    let r = checked(&journal, &cycles);
    let d = &r.ddblock;
    let counts = (
        d.stale_token_accepted,
        d.writes_by_non_holder,
        d.writes_refused,
        d.overlaps,
    );
    assert_eq!(
        counts,
        (1, 1, 1, 0),
        "stale accepted, non-holder's, refused, overlaps"
    );
    assert_violations(&r, 2);
}

#[test]
fn unlearned_acquisitions_and_stuck_locks() {
    // A's first write landed but A never heard (OutcomeUnknown); its clean-up deleted it.
    // B's write landed unheard and its clean-up did not: it holds until 130, explained.
    let journal = vec![
        acquire(100.0, "AAAA", "a1", 110, 10),
        clean_up(100.5, "AAAA", "a1"),
        acquire(101.0, "BBBB", "b1", 130, 11),
    ];
    let cycles = vec![cycle("AAAA", "error", None), cycle("BBBB", "error", None)];
    let end = HashMap::from([("chaos_k0".to_owned(), 130)]);
    let r = check(&keys(), &journal, &cycles, &end, 120);
    assert_eq!(r.ddblock.unlearned_cleaned, 1);
    assert_eq!(r.ddblock.unlearned_left, 1);
    assert_eq!(r.ddblock.held_at_end_explained, 1);
    assert_eq!(r.ddblock.held_at_end, 0);
    assert_violations(&r, 0);

    // C acquired, said so, and never released: a stuck lock nothing explains.
    let journal = vec![acquire(100.0, "CCCC", "c1", 130, 12)];
    let cycles = vec![cycle("CCCC", "acquired", Some("released"))];
    let r = check(&keys(), &journal, &cycles, &end, 120);
    assert_eq!(r.ddblock.held_at_end, 1);
    assert_violations(&r, 1);
}

#[test]
fn a_release_that_reports_success_but_leaves_the_lock_is_reported() {
    // A says it released; nothing was deleted; the lock sat until B took it over after expiry.
    let mut journal = a_then_b("AAAA", 103, "BBBB", 104.0, 110);
    journal.push(release(104.5, "BBBB"));
    let cycles = [
        ("AAAA", "acquired", Some("released")),
        ("BBBB", "acquired", Some("released")),
    ];
    let r = checked(&journal, &cycles);
    assert_eq!(r.ddblock.expired_unreleased, 1);
    assert_violations(&r, 1);
    // Laravel's stuck lock: its release said false (a stale read) and deleted nothing.
    let cycles = [
        ("AAAA", "acquired", Some("not_held")),
        ("BBBB", "acquired", Some("released")),
    ];
    let r = checked(&journal, &cycles);
    assert_eq!(r.ddblock.expired_release_refused, 1);
    assert_eq!(r.ddblock.expired_unreleased, 0);
}

#[test]
fn untyped_errors_are_violations() {
    let mut c = cycle("AAAA", "error", None);
    c.untyped = vec!["acquire: KeyError: 'x'".into()];
    let r = check(&keys(), &[], &[c], &HashMap::new(), 0);
    assert_eq!(r.untyped["rust"].len(), 1);
    assert_eq!(r.violations().len(), 1);
}

/// A Rust worker's metrics are held against the journal and its records: counts that agree pass;
/// a counter that skipped one acquisition, an unknown outcome or an acquire write left uncounted,
/// fails the run.
#[test]
fn metrics_that_skip_an_event_are_violations() {
    let journal = vec![
        acquire(100.0, "AAAA", "a1", 106, 10),
        release(100.3, "AAAA"),
        acquire(100.4, "BBBB", "b1", 106, 20),
        release(100.6, "BBBB"),
        // C's answer was lost: C reports an OutcomeUnknown, its clean-up deleted the write.
        acquire(101.0, "CCCC", "c1", 107, 30),
        clean_up(101.1, "CCCC", "c1"),
    ];
    let mut cycles: Vec<Cycle> = [
        ("AAAA", "acquired", Some("released")),
        ("BBBB", "acquired", Some("released")),
        ("CCCC", "error", None),
        ("DDDD", "held", None),
    ]
    .iter()
    .map(|&(o, a, r)| cycle(o, a, r))
    .collect();
    cycles[2].errors = vec![("acquire".into(), "outcome_unknown".into())];
    let counts = |acquired: u64, unknown_counted: u64| -> Counts {
        let mut c = Counts::new();
        let writes = c.entry("ddblock.lock.acquire_writes".into()).or_default();
        writes.insert("written".into(), 2);
        // C's write and its resend.
        writes.insert("unknown".into(), 2);
        let acq = c.entry("ddblock.lock.acquisitions".into()).or_default();
        acq.insert("acquired".into(), acquired);
        acq.insert("unknown".into(), 1);
        acq.insert("timed_out".into(), 1);
        let unknown = c.entry("ddblock.lock.unknown_outcomes".into()).or_default();
        unknown.insert("clean".into(), unknown_counted);
        c
    };
    let judged = |m: Counts| {
        let mut r = check(&keys(), &journal, &cycles, &HashMap::new(), 200);
        check_metrics(&mut r, &cycles, &BTreeMap::from([("rust-1".to_owned(), m)]));
        r
    };
    assert_violations(&judged(counts(2, 1)), 0);
    // One acquisition not counted: both the journal and the cycle count disagree.
    let r = judged(counts(1, 1));
    assert_violations(&r, 2);
    assert!(r.violations()[0].contains("rust-1: metrics disagree: acquisitions counted `acquired`"));
    assert_violations(&judged(counts(2, 0)), 1);
    // An acquire write answered `written` and not counted.
    let mut skipped_write = counts(2, 1);
    let writes = skipped_write
        .get_mut("ddblock.lock.acquire_writes")
        .unwrap();
    writes.insert("written".into(), 1);
    writes.insert("unknown".into(), 0);
    let r = judged(skipped_write);
    assert_violations(&r, 1);
    assert!(r.violations()[0].contains("acquire writes answered `written`"));
}
