//! `ddblock once` and `once-status` against moto and dynalite: what runs, exit statuses, JSON
//! fields, signals, and concurrent processes.

mod common;

use std::fs;

use common::{on_servers, scratch, script_writing, send_signal, wait_for, Ctx, Server};

fn lines(path: &std::path::Path) -> usize {
    fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

fn once_runs_the_command_once(server: Server) {
    let ctx = Ctx::new(server);
    let (log, script) = script_writing(
        "ran",
        "echo \"$DDBLOCK_ONCE_EVENT $DDBLOCK_ONCE_KEY\" >> {file}",
    );
    let (code, out, _) = ctx.text(&["once", "evt-1", "--ttl", "30", "--", "sh", "-c", &script]);
    assert_eq!(code, 0);
    assert_eq!(out, "", "stdout is the command's");
    assert_eq!(fs::read_to_string(&log).unwrap(), "evt-1 app_evt-1\n");

    // A redelivery: nothing runs, exit 0 (done), the JSON says why.
    let (code, v) = ctx.json(&["once", "evt-1", "--ttl", "30", "--", "sh", "-c", &script]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["ran"], false);
    assert_eq!(v["state"], "done");
    assert_eq!(v["claims"], 2);
    assert!(v["done_at"].is_i64(), "{v}");
    let (_, _, err) = ctx.text(&["once", "evt-1", "--ttl", "30", "--", "true"]);
    assert!(err.contains("event `evt-1` is done at"), "{err}");
    assert_eq!(lines(&log), 1);

    let (code, v) = ctx.json(&["once-status", "evt-1"]);
    assert_eq!(code, 0);
    assert_eq!(v["state"], "done");
    assert_eq!(v["key"], "app_evt-1");
    let (_, v) = ctx.json(&["once-status", "never"]);
    assert_eq!(v["state"], "free");
    // Laravel reads the counter.
    let (_, v) = ctx.json(&["get", "evt-1", "--consistent"]);
    assert_eq!(v["value"], 3);
}

fn a_failed_command_gives_the_claim_back(server: Server) {
    let ctx = Ctx::new(server);
    let (code, _, err) = ctx.text(&["once", "evt", "--ttl", "30", "--", "sh", "-c", "exit 7"]);
    assert_eq!(code, 7, "the command's own status");
    assert!(err.contains("given back"), "{err}");
    let (_, v) = ctx.json(&["once-status", "evt"]);
    assert_eq!(v["state"], "given_back");
    let (code, _, _) = ctx.text(&["once", "evt", "--ttl", "30", "--", "true"]);
    assert_eq!(code, 0, "the next delivery runs it");
    assert_eq!(ctx.json(&["once-status", "evt"]).1["state"], "done");
    let (code, _, _) = ctx.text(&["once", "nope", "--ttl", "30", "--", "/no/such/command"]);
    assert_eq!(code, 127);
    assert_eq!(ctx.json(&["once-status", "nope"]).1["state"], "given_back");
}

fn in_progress_elsewhere_is_75_and_signals_give_back(server: Server) {
    let ctx = Ctx::new(server);
    let dir = scratch();
    let started = dir.join("started");
    let script = format!("touch {}; sleep 30", started.display());
    let mut first = ctx.spawn(&["once", "evt", "--ttl", "60", "--", "sh", "-c", &script]);
    wait_for(&started);
    let (code, v) = ctx.json(&["once", "evt", "--ttl", "60", "--", "true"]);
    assert_eq!(code, 75, "{v}");
    assert_eq!(
        (v["ran"].clone(), v["state"].clone()),
        (false.into(), "in_progress".into())
    );
    // SIGTERM to ddblock reaches the command, which dies of it: the claim is given back.
    send_signal(&first, libc::SIGTERM);
    let status = first.wait().unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM));
    assert_eq!(ctx.json(&["once-status", "evt"]).1["state"], "given_back");
}

fn a_claim_lost_before_done_exits_3(server: Server) {
    let ctx = Ctx::new(server);
    // The command replaces the counter entry (a Laravel put): the claim is gone when marking done.
    let bin = common::bin().to_str().unwrap();
    let (code, _, err) = ctx.text(&[
        "once", "evt", "--ttl", "30", "--", bin, "put", "evt", "x", "--ttl", "60",
    ]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("conflict on \"evt\""), "{err}");
    let (code, v) = ctx.json(&["once", "", "--ttl", "30", "--", "true"]);
    assert_eq!(
        (code, v["error"]["kind"].clone()),
        (1, "invalid_key".into())
    );
    let (code, v) = ctx.json(&["once", "e", "--ttl", "0", "--", "true"]);
    assert_eq!(
        (code, v["error"]["kind"].clone()),
        (1, "invalid_ttl".into())
    );
}

fn concurrent_processes_run_it_once(server: Server) {
    let ctx = Ctx::new(server);
    let dir = scratch();
    let log = dir.join("ran");
    let script = format!("echo $$ >> {}", log.display());
    for event in ["a", "b", "c"] {
        let mut children: Vec<_> = (0..10)
            .map(|_| ctx.spawn(&["once", event, "--ttl", "30", "--", "sh", "-c", &script]))
            .collect();
        let codes: Vec<i32> = children
            .iter_mut()
            .map(|c| c.wait().unwrap().code().unwrap())
            .collect();
        // 0 for the winner and for callers that came after it was done; 75 while it ran.
        assert!(codes.iter().all(|c| *c == 0 || *c == 75), "{codes:?}");
    }
    assert_eq!(lines(&log), 3, "one run per event");
}

on_servers!(
    sync once_runs_the_command_once,
    a_failed_command_gives_the_claim_back,
    in_progress_elsewhere_is_75_and_signals_give_back,
    a_claim_lost_before_done_exits_3,
    concurrent_processes_run_it_once,
);
