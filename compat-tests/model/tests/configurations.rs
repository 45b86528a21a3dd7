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

fn holds(name: &str) -> Report {
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
    r
}

fn fails(name: &str, property: &str) -> Report {
    let r = run(name);
    let v = r.verdict(property).expect("a property");
    assert_eq!(v.expect, Expect::Fails);
    assert!(
        v.found && v.always,
        "{name}: no counterexample for {property}"
    );
    assert!(v.trace.len() > 2, "{name}: a trace with steps");
    assert!(r.ok(), "{name}: every verdict as expected");
    r
}

#[test]
fn a_ddblock_in_delete_mode_keeps_every_safety_property() {
    holds("a-delete");
}

#[test]
fn a3_three_clients_keep_every_safety_property() {
    holds("a3-delete-three-clients");
}

#[test]
fn j_writes_refused_before_landing_keep_every_safety_property() {
    holds("j-replicated-write-conflict");
}

#[test]
fn k_a_refresh_racing_expiry_keeps_every_safety_property() {
    holds("k-refresh-racing-expiry");
}

#[test]
fn b_keep_fence_fences_never_go_back() {
    holds("b-keep-fence");
    holds("b-keep-fence-ttl-in-sync");
}

/// The keep-fence release whose answer is lost, resent: the example shows the resend answered
/// `not_held` while another holds, and no resend changes an item.
#[test]
fn b_a_resent_keep_fence_release_changes_nothing_and_answers_not_held() {
    let name = "b-keep-fence-lost-release-answer";
    let r = holds(name);
    let trace = &r.verdict(prop::EX_RESENT_NOT_HELD).expect("verdict").trace;
    assert!(
        trace.iter().any(|l| l.contains("answers not_held")),
        "{trace:?}"
    );
}

#[test]
fn l_a_handed_over_restored_handle_keeps_every_safety_property() {
    holds("l-restore-lock-handed-over");
}

#[test]
fn m_fairness_stamps_decide_nothing() {
    holds("m-fair-wait-stamps");
}

/// A test per known breakage, `test: "configuration" => PROPERTY, …;`: each property named (a
/// constant of `prop`) must have a counterexample there. `BROKEN` lists the configurations.
macro_rules! breakages {
    ($($test:ident: $config:literal => $($property:ident),+;)*) => {
        $(
            #[test]
            fn $test() {
                $(fails($config, prop::$property);)+
            }
        )*
        const BROKEN: &[&str] = &[$($config),*];
    };
}

breakages! {
    b_a_clean_up_that_deletes_loses_the_kept_fence: "b-keep-fence-cleanup-deletes" => FENCE_FORWARD;
    c_stock_laravel_under_lost_answers_and_pauses:
        "c-laravel-faults" => UNKNOWN_LEAVES_NONE, RELEASE_OWN_ONLY;
    d_skew_beyond_the_margin_gives_two_live_holders: "d-skew-beyond-margin" => ONE_HOLDER;
    e_delete_mode_with_a_clock_behind_sends_the_fence_back: "e-delete-clock-behind" => FENCE_FORWARD;
    f_ttl_deletion_of_a_kept_item_with_a_clock_behind_sends_the_fence_back:
        "f-keep-fence-ttl-clock-behind" => FENCE_FORWARD;
    g_a_write_landing_after_the_clean_up_leaves_a_lock: "g-late-write" => UNKNOWN_LEAVES_NONE;
    h_stock_laravel_on_a_ddblock_key_sticks_and_deletes_a_ddblock_holders_lock:
        "h-mixed-laravel-stale" => RELEASE_LEAVES_NONE, RELEASE_OWN_ONLY, DDBLOCK_LOCK_KEPT;
    i_force_release_takes_a_live_holders_lock: "i-force-release" => ONE_HOLDER, DDBLOCK_LOCK_KEPT;
    l_a_restorers_release_lets_another_in_while_the_first_process_believes_it_holds:
        "l-restore-lock" => ONE_HOLDER;
}

/// Also a breakage, whose counterexample must show the stale read that causes it.
#[test]
fn c_stock_laravel_leaves_a_lock_stuck_after_a_stale_read() {
    let r = fails("c-laravel-stale", prop::RELEASE_LEAVES_NONE);
    let trace = &r.verdict(prop::RELEASE_LEAVES_NONE).expect("verdict").trace;
    assert!(
        trace
            .iter()
            .any(|l| l.contains("GetItem (stale)") && l.contains("skips the delete")),
        "{trace:?}"
    );
}

#[test]
fn every_configuration_is_tested() {
    // The configurations of the tests written out above, and those of `breakages!`.
    let written = [
        "a-delete",
        "a3-delete-three-clients",
        "j-replicated-write-conflict",
        "k-refresh-racing-expiry",
        "b-keep-fence",
        "b-keep-fence-ttl-in-sync",
        "b-keep-fence-lost-release-answer",
        "c-laravel-stale",
        "l-restore-lock-handed-over",
        "m-fair-wait-stamps",
    ];
    for c in configurations() {
        let tested = written.contains(&c.name) || BROKEN.contains(&c.name);
        assert!(tested, "{} has no test", c.name);
    }
}
