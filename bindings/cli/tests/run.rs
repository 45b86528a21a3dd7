//! `ddblock run` against the local servers (moto and dynalite): CMD's status passed through and
//! the lock released after it, a held lock (exit 75), signals passed on to CMD, heartbeats, and a
//! lease lost while CMD runs.

mod common;

use std::time::{Duration, Instant};

use common::{
    assert_fields, on_servers, scratch, script_writing, send_signal, stderr_of, wait_for,
    wait_timeout, Ctx, Server, ACQUIRE_FIELDS,
};
use serde_json::json;

fn run_propagates_status_and_releases(server: Server) {
    let ctx = Ctx::new(server);
    let (seen, script) = script_writing(
        "seen",
        "echo \"$DDBLOCK_LOCK_NAME $DDBLOCK_LOCK_KEY ${#DDBLOCK_LOCK_OWNER}\" > {file}; exit 3",
    );
    let (code, out, err) = ctx.run_sh("job", "30", &script);
    assert_eq!((code, out.as_str(), err.as_str()), (3, "", ""));
    assert_eq!(
        std::fs::read_to_string(&seen).unwrap().trim(),
        "job app_job 16"
    );
    assert_eq!(
        ctx.status("job")["held"],
        false,
        "released after a failing command"
    );
    // Success, output passed through, arguments with dashes after the command.
    let (code, out, _) = ctx.text(&["run", "job", "--ttl", "30", "echo", "-n", "hi"]);
    assert_eq!((code, out.as_str()), (0, "hi"));
    // A command that does not exist: 127, lock released.
    let (code, _, err) = ctx.text(&[
        "run",
        "job",
        "--ttl",
        "30",
        "--",
        "/nonexistent/ddblock-test",
    ]);
    assert_eq!(code, 127);
    assert!(
        err.contains("cannot run `/nonexistent/ddblock-test`"),
        "{err}"
    );
    assert_eq!(ctx.status("job")["held"], false);
    // Killed by a signal: 128+N.
    let (code, _, _) = ctx.run_sh("job", "30", "kill -KILL $$");
    assert_eq!(code, 128 + 9);
    assert_eq!(ctx.status("job")["held"], false);
    // A command running longer than the ttl without --heartbeat: warned when it ends.
    let (code, _, err) = ctx.text(&["run", "quick", "--ttl", "1", "--", "sleep", "2.2"]);
    assert_eq!(code, 0);
    assert!(
        err.contains(
            "warning: lock quick (ttl 1 s): the body outlasted the lease; nobody took the lock \
             meanwhile, and the release deleted it"
        ),
        "{err}"
    );
    assert!(
        err.trim_end()
            .ends_with("; use --heartbeat or a longer --ttl"),
        "{err}"
    );
    assert_eq!(
        ctx.status("quick")["held"],
        false,
        "still released: the expired item was ours"
    );
}

fn run_on_a_held_lock_exits_75(server: Server) {
    let ctx = Ctx::new(server);
    let owner = ctx.acquire("nightly", 30);
    let dir = scratch();
    let marker = dir.join("ran");
    let touch = format!("touch {}", marker.display());
    let (code, out, err) = ctx.run_sh("nightly", "60", &touch);
    assert_eq!((code, out.as_str()), (75, ""));
    assert!(
        err.contains(&format!(
            "lock nightly is held by owner \"{}…\" (16 chars) until",
            &owner[..4]
        )),
        "{err}"
    );
    assert!(err.contains("not running sh -c"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!marker.exists(), "the command must not run");
    let (code, v) = ctx.json(&["run", "nightly", "--ttl", "60", "--", "sh", "-c", &touch]);
    assert_eq!(code, 75);
    assert_fields(&v, ACQUIRE_FIELDS);
    assert_eq!(
        (v["acquired"].clone(), v["holder"]["owner"].clone()),
        (json!(false), json!(owner))
    );
    let start = Instant::now();
    let (code, _, _) = ctx.text(&[
        "run", "nightly", "--ttl", "60", "--wait", "1", "--", "sh", "-c", &touch,
    ]);
    assert_eq!(code, 75);
    assert!(start.elapsed() >= Duration::from_secs(1));
    assert!(!marker.exists());
    // Once the holder releases, --wait gets it.
    let releaser = ctx.spawn(&["release", "nightly", "--owner", &owner]);
    let (code, _, _) = ctx.text(&[
        "run", "nightly", "--ttl", "60", "--wait", "10", "--", "sh", "-c", &touch,
    ]);
    assert_eq!(code, 0);
    assert!(marker.exists());
    let _ = releaser.wait_with_output();
}

fn signal_test(server: Server, signal: i32, name: &str) {
    let ctx = Ctx::new(server);
    let dir = scratch();
    let (ready, got) = (dir.join("ready"), dir.join("got"));
    let script = format!(
        "trap 'echo {name} > {got}; exit 7' {name}; touch {ready}; while :; do sleep 0.05; done",
        got = got.display(),
        ready = ready.display()
    );
    let mut child = ctx.spawn(&["run", "sig", "--ttl", "30", "--", "sh", "-c", &script]);
    wait_for(&ready);
    assert_eq!(ctx.status("sig")["held"], true);
    send_signal(&child, signal);
    let status = wait_timeout(&mut child, Duration::from_secs(15));
    assert_eq!(
        status.code(),
        Some(7),
        "ddblock exits with the command's status; stderr: {}",
        stderr_of(&mut child)
    );
    assert_eq!(
        std::fs::read_to_string(&got).unwrap().trim(),
        name,
        "the command got the signal"
    );
    assert_eq!(ctx.status("sig")["held"], false, "the lock is released");
}

fn run_forwards_sigterm_and_releases(server: Server) {
    signal_test(server, libc::SIGTERM, "TERM");
}

fn run_forwards_sigint_and_releases(server: Server) {
    signal_test(server, libc::SIGINT, "INT");
}

fn run_signal_while_waiting_stops_waiting(server: Server) {
    let ctx = Ctx::new(server);
    ctx.acquire("busy", 30);
    let dir = scratch();
    let marker = dir.join("ran");
    let touch = format!("touch {}", marker.display());
    let mut child = ctx.spawn(&[
        "run", "busy", "--ttl", "30", "--wait", "20", "--", "sh", "-c", &touch,
    ]);
    std::thread::sleep(Duration::from_millis(700));
    send_signal(&child, libc::SIGTERM);
    let status = wait_timeout(&mut child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(128 + libc::SIGTERM));
    assert!(stderr_of(&mut child).contains("interrupted by signal"));
    assert!(!marker.exists());
}

fn run_heartbeat_keeps_the_lock_past_its_ttl(server: Server) {
    let ctx = Ctx::new(server);
    let start = Instant::now();
    let mut child = ctx.spawn(&["run", "hb", "--ttl", "3", "--heartbeat", "--", "sleep", "8"]);
    let owner = ctx.wait_held("hb")["owner"].clone();
    // Another acquirer fails throughout, until one of its attempts starts a second past the 3 s
    // ttl (a count of attempts would depend on the machine's load; this does not, while the
    // command's 8 s leave room for a slow attempt).
    loop {
        let sent = start.elapsed();
        let (code, v) = ctx.json(&["acquire", "hb", "--ttl", "3"]);
        assert_eq!(code, 75, "acquired by another after {sent:?}: {v}");
        assert_eq!(v["holder"]["owner"], owner);
        if sent >= Duration::from_secs(4) {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let status = wait_timeout(&mut child, Duration::from_secs(20));
    let err = stderr_of(&mut child);
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(!err.contains("LOST") && !err.contains("warning"), "{err}");
    assert_eq!(ctx.status("hb")["held"], false, "released at the end");
}

/// Runs `ddblock run NAME --ttl 30 --heartbeat --heartbeat-interval 0.3 EXTRA -- sh -c SCRIPT`
/// once SCRIPT has started (it touches `$READY`), force-releases the lock as an operator would,
/// and has another owner take it. Returns the exit status, stderr, the time from the
/// force-release to the exit, and the new holder.
fn lose_the_lease_under_run(
    ctx: &Ctx,
    name: &str,
    extra: &[&str],
    script: &str,
) -> (Option<i32>, String, Duration, String) {
    let dir = scratch();
    let ready = dir.join("ready");
    let script = format!("READY={}; {script}", ready.display());
    let mut args = vec![
        "run",
        name,
        "--ttl",
        "30",
        "--heartbeat",
        "--heartbeat-interval",
        "0.3",
    ];
    args.extend_from_slice(extra);
    args.extend(["--", "sh", "-c", &script]);
    let mut child = ctx.spawn(&args);
    wait_for(&ready);
    ctx.cmd().args(["force-release", name]).assert().success();
    let lost_at = Instant::now();
    let thief = ctx.acquire(name, 60);
    let status = wait_timeout(&mut child, Duration::from_secs(20));
    (
        status.code(),
        stderr_of(&mut child),
        lost_at.elapsed(),
        thief,
    )
}

fn run_heartbeat_stops_the_command_when_the_lease_is_lost(server: Server) {
    let ctx = Ctx::new(server);
    let (got, script) = script_writing(
        "got",
        "trap 'echo TERM > {file}; exit 9' TERM; touch \"$READY\"; while :; do sleep 0.05; done",
    );
    let (code, err, took, thief) = lose_the_lease_under_run(&ctx, "lost", &[], &script);
    assert_eq!(code, Some(76), "exit 76 (lease lost), not CMD's 9: {err}");
    assert_eq!(
        std::fs::read_to_string(&got).unwrap().trim(),
        "TERM",
        "CMD got SIGTERM"
    );
    assert!(
        err.contains("LOCK LOST: lock lost: a refresh found the lock no longer ours")
            && err.contains("Stopping the command (SIGTERM, then SIGKILL after 5.0s)"),
        "{err}"
    );
    assert!(!err.contains("did not stop"), "no SIGKILL needed: {err}");
    // --heartbeat-interval 0.3: seen at the next refresh, not at ttl/3 = 10 s.
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(
        ctx.status("lost")["owner"],
        json!(thief),
        "the new holder keeps its lock"
    );
}

fn run_heartbeat_kills_a_command_that_ignores_sigterm(server: Server) {
    let ctx = Ctx::new(server);
    let script = "trap '' TERM; touch \"$READY\"; while :; do sleep 0.05; done";
    let (code, err, took, _) =
        lose_the_lease_under_run(&ctx, "stubborn", &["--kill-after", "0.5"], script);
    assert_eq!(code, Some(76), "{err}");
    assert!(
        err.contains("the command did not stop within 500ms of SIGTERM: SIGKILL"),
        "{err}"
    );
    assert!(took < Duration::from_secs(6), "{took:?}");
}

fn run_heartbeat_warn_keeps_the_command_running(server: Server) {
    let ctx = Ctx::new(server);
    let script = "touch \"$READY\"; sleep 2; exit 3";
    let (code, err, took, thief) =
        lose_the_lease_under_run(&ctx, "warned", &["--on-lease-lost", "warn"], script);
    assert_eq!(code, Some(3), "CMD's own status: {err}");
    assert!(took >= Duration::from_millis(1500), "CMD ran on: {took:?}");
    assert!(
        err.contains("LOCK LOST") && err.contains("The command keeps running WITHOUT the lock"),
        "{err}"
    );
    assert_eq!(ctx.status("warned")["owner"], json!(thief));
    // --on-lease-lost is about the heartbeat: refused without it.
    let (code, _, err) = ctx.text(&["run", "x", "--ttl", "3", "--on-lease-lost", "warn", "true"]);
    assert_eq!(code, 2, "{err}");
}

/// CMD force-releases its own lock (as an operator, a foreign writer or a fault would) and ends
/// within its lease, before the next refresh: the release's first send finds the lock gone, so
/// the lock vanished under CMD (issue 36): LOCK LOST, exit 76 (with `--on-lease-lost warn`, the
/// command's own status and the report). Before, this was taken for a resend after a lost answer
/// and swallowed.
fn run_heartbeat_a_lock_removed_under_the_command_is_a_lost_lease(server: Server) {
    let ctx = Ctx::new(server);
    let bin = common::bin().display().to_string();
    let args = |extra: &'static [&'static str]| {
        let mut v = vec!["run", "brief", "--ttl", "30", "--heartbeat"];
        v.extend_from_slice(extra);
        v.extend(["--", bin.as_str(), "force-release", "brief"]);
        v
    };
    for (extra, exit) in [(&[][..], 76), (&["--on-lease-lost", "warn"][..], 0)] {
        let (code, out, err) = ctx.text(&args(extra));
        assert_eq!(code, exit, "{extra:?}: {out}{err}");
        assert!(err.contains("LOCK LOST"), "{err}");
        assert!(err.contains("first send found the lock gone"), "{err}");
        assert_eq!(ctx.status("brief")["held"], false);
    }
}

on_servers!(
    sync
    run_propagates_status_and_releases,
    run_on_a_held_lock_exits_75,
    run_forwards_sigterm_and_releases,
    run_forwards_sigint_and_releases,
    run_signal_while_waiting_stops_waiting,
    run_heartbeat_keeps_the_lock_past_its_ttl,
    run_heartbeat_stops_the_command_when_the_lease_is_lost,
    run_heartbeat_kills_a_command_that_ignores_sigterm,
    run_heartbeat_warn_keeps_the_command_running,
    run_heartbeat_a_lock_removed_under_the_command_is_a_lost_lease,
);
