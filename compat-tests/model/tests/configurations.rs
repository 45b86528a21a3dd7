//! Every configuration gives its expected verdicts: the ddblock properties hold within their
//! bounds (a, b), and the known breakages are found as counterexamples (c, d, e and the others).

use ddblock_model::config::{configurations, prop, Expect};
use ddblock_model::run::{check, Report};

fn run(name: &str) -> Report {
    let cfg = configurations()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no configuration {name}"));
    let report = check(cfg);
    assert!(report.states > 0, "{name}: nothing explored");
    report
}

fn holds(name: &str) {
    let r = run(name);
    for v in &r.verdicts {
        assert!(
            v.ok(),
            "{name}: {} is {} ({:?} expected)\n{}",
            v.name,
            v.word(),
            v.expect,
            v.trace.join("\n")
        );
    }
}

fn fails(name: &str, property: &str) {
    let r = run(name);
    let v = r.verdict(property).expect("a property");
    assert_eq!(v.expect, Expect::Fails);
    assert!(
        v.found && v.always,
        "{name}: no counterexample for {property}"
    );
    assert!(v.trace.len() > 2, "{name}: a trace with steps");
    assert!(r.ok(), "{name}: every verdict as expected");
}

#[test]
fn a_ddblock_in_delete_mode_keeps_every_safety_property() {
    holds("a-delete");
}

#[test]
fn b_keep_fence_fences_never_go_back() {
    holds("b-keep-fence");
    holds("b-keep-fence-ttl-in-sync");
}

#[test]
fn b_a_clean_up_that_deletes_loses_the_kept_fence() {
    fails("b-keep-fence-cleanup-deletes", prop::FENCE_FORWARD);
}

#[test]
fn c_stock_laravel_leaves_a_lock_stuck_after_a_stale_read() {
    fails("c-laravel-stale", prop::RELEASE_LEAVES_NONE);
    let r = run("c-laravel-stale");
    let trace = &r.verdict(prop::RELEASE_LEAVES_NONE).expect("verdict").trace;
    assert!(
        trace
            .iter()
            .any(|l| l.contains("GetItem (stale)") && l.contains("skips the delete")),
        "{trace:?}"
    );
}

#[test]
fn c_stock_laravel_under_lost_answers_and_pauses() {
    fails("c-laravel-faults", prop::UNKNOWN_LEAVES_NONE);
    fails("c-laravel-faults", prop::RELEASE_OWN_ONLY);
}

#[test]
fn d_skew_beyond_the_margin_gives_two_live_holders() {
    fails("d-skew-beyond-margin", prop::ONE_HOLDER);
}

#[test]
fn e_delete_mode_with_a_clock_behind_sends_the_fence_back() {
    fails("e-delete-clock-behind", prop::FENCE_FORWARD);
}

#[test]
fn f_ttl_deletion_of_a_kept_item_with_a_clock_behind_sends_the_fence_back() {
    fails("f-keep-fence-ttl-clock-behind", prop::FENCE_FORWARD);
}

#[test]
fn g_a_write_landing_after_the_clean_up_leaves_a_lock() {
    fails("g-late-write", prop::UNKNOWN_LEAVES_NONE);
}

#[test]
fn every_configuration_is_tested() {
    let tested = [
        "a-delete",
        "b-keep-fence",
        "b-keep-fence-ttl-in-sync",
        "b-keep-fence-cleanup-deletes",
        "c-laravel-stale",
        "c-laravel-faults",
        "d-skew-beyond-margin",
        "e-delete-clock-behind",
        "f-keep-fence-ttl-clock-behind",
        "g-late-write",
    ];
    for c in configurations() {
        assert!(tested.contains(&c.name), "{} has no test", c.name);
    }
}
