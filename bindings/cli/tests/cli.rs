//! The `ddblock` binary against the local servers (moto and dynalite): every command, its JSON
//! fields and exit statuses, `run` with failing commands, signals, held locks and heartbeats, and
//! the error cases.

mod common;

use std::time::{Duration, Instant};

use common::{assert_fields, now, on_servers, scratch, stderr_of, wait_timeout, Ctx, Server};
use ddblock::aws_sdk_dynamodb::types::AttributeValue;
use serde_json::json;

const ACQUIRE_FIELDS: &[&str] = &[
    "acquired",
    "name",
    "key",
    "owner",
    "expires_at",
    "holder",
    "recovered",
    "fence",
];
const RELEASE_FIELDS: &[&str] = &["released", "outcome", "name", "key", "holder"];
const STATUS_FIELDS: &[&str] = &[
    "name",
    "key",
    "held",
    "owner",
    "expires_at",
    "expires_in",
    "fence",
];
const ITEM_FIELDS: &[&str] = &[
    "key",
    "kind",
    "name",
    "owner",
    "expires_at",
    "expires_in",
    "expired_but_present",
];

fn create_table_is_idempotent(server: Server) {
    let ctx = Ctx::with_table(server, &common::unique("ct"), false);
    let (code, v) = ctx.json(&["create-table"]);
    assert_eq!(code, 0, "{v}");
    assert_fields(
        &v,
        &[
            "table",
            "created",
            "status",
            "ready",
            "key_schema_problem",
            "ttl",
            "ttl_changed",
        ],
    );
    assert_eq!(
        (
            v["created"].clone(),
            v["ready"].clone(),
            v["status"].clone()
        ),
        (json!(true), json!(true), json!("ACTIVE"))
    );
    match server {
        Server::Moto => assert_eq!(
            v["ttl"],
            json!({"status": "enabled", "attribute": "expires_at"})
        ),
        Server::Dynalite => assert_eq!(v["ttl"]["status"], "unknown"),
    }
    let (code, v) = ctx.json(&["create-table"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        (v["created"].clone(), v["ttl_changed"].clone()),
        (json!(false), json!(false))
    );
    let (code, out, _) = ctx.text(&["create-table"]);
    assert_eq!(code, 0);
    assert!(out.contains("already exists"), "{out}");
    // Another TTL attribute on a new table; --no-ttl leaves TTL alone.
    let other = Ctx::with_table(server, &common::unique("ct"), false);
    let (code, v) = other.json(&["create-table", "--no-ttl"]);
    assert_eq!((code, v["ttl"].clone()), (0, json!(null)));
}

fn acquire_status_release(server: Server) {
    let ctx = Ctx::new(server);
    let t = now();
    let (code, a) = ctx.json(&["acquire", "orders", "--ttl", "30"]);
    assert_eq!(code, 0, "{a}");
    assert_fields(&a, ACQUIRE_FIELDS);
    assert_eq!(a["acquired"], true);
    assert_eq!(
        (a["name"].clone(), a["key"].clone()),
        (json!("orders"), json!("app_orders"))
    );
    assert_eq!(a["holder"], json!(null));
    let owner = a["owner"].as_str().unwrap().to_owned();
    assert_eq!(owner.len(), 16);
    let expires = a["expires_at"].as_i64().unwrap();
    assert!((t + 30..=t + 32).contains(&expires));

    let s = ctx.status("orders");
    assert_fields(&s, STATUS_FIELDS);
    assert_eq!(
        (
            s["held"].clone(),
            s["owner"].clone(),
            s["expires_at"].clone()
        ),
        (json!(true), json!(owner), json!(expires))
    );
    assert!(
        (25..=31).contains(&s["expires_in"].as_i64().unwrap()),
        "{s}"
    );
    let (_, human, _) = ctx.text(&["status", "orders"]);
    assert!(
        human.contains(&owner) && human.contains("held by"),
        "{human}"
    );

    // Someone else: exit 75, the holder named.
    let (code, b) = ctx.json(&["acquire", "orders", "--ttl", "30"]);
    assert_eq!(code, 75, "{b}");
    assert_fields(&b, ACQUIRE_FIELDS);
    assert_eq!(b["acquired"], false);
    assert_eq!(
        b["holder"],
        json!({"owner": owner, "expires_at": expires, "fence": a["fence"]})
    );
    let (code, out, err) = ctx.text(&["acquire", "orders", "--ttl", "30"]);
    assert_eq!((code, out.as_str()), (75, ""));
    assert!(
        err.contains(&format!("held by owner \"{}…\"", &owner[..4])),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");

    // Release by the wrong owner, then the right one, then again.
    let (code, r) = ctx.json(&["release", "orders", "--owner", "not-the-owner"]);
    assert_eq!(code, 1);
    assert_fields(&r, RELEASE_FIELDS);
    assert_eq!(
        (r["released"].clone(), r["outcome"].clone()),
        (json!(false), json!("held_by_other"))
    );
    assert_eq!(r["holder"]["owner"], json!(owner));
    let (code, r) = ctx.json(&["release", "orders", "--owner", &owner]);
    assert_eq!(code, 0, "{r}");
    assert_eq!(
        (
            r["released"].clone(),
            r["outcome"].clone(),
            r["holder"].clone()
        ),
        (json!(true), json!("released"), json!(null))
    );
    let (code, r) = ctx.json(&["release", "orders", "--owner", &owner]);
    assert_eq!((code, r["outcome"].clone()), (1, json!("not_held")));
    let s = ctx.status("orders");
    assert_eq!(
        s,
        json!({"name": "orders", "key": "app_orders", "held": false, "owner": null, "expires_at": null, "expires_in": null, "fence": null})
    );

    // Human output: the owner alone on stdout.
    let (code, out, _) = ctx.text(&["acquire", "orders", "--ttl", "30"]);
    assert_eq!(code, 0);
    let owner2 = out.trim();
    assert_eq!(owner2.len(), 16);
    let (code, out, _) = ctx.text(&["release", "orders", "--owner", owner2]);
    assert_eq!(code, 0);
    assert!(out.contains("released"), "{out}");
    let (code, _, err) = ctx.text(&["release", "orders", "--owner", owner2]);
    assert_eq!(code, 1);
    assert!(err.contains("not held"), "{err}");
}

fn acquire_with_owner_and_wait(server: Server) {
    let ctx = Ctx::new(server);
    // Taken first: it frees itself (ttl 1) while the steps below run.
    ctx.acquire("short", 1);
    // A numeric owner is stored as N and shown as a JSON number.
    let (code, a) = ctx.json(&["acquire", "num", "--ttl", "30", "--owner", "12345"]);
    assert_eq!(code, 0, "{a}");
    assert_eq!(a["owner"], json!(12345));
    assert_eq!(ctx.status("num")["owner"], json!(12345));
    // The same owner from another process: refused, as Laravel refuses it (only an attempt's
    // own write is recovered).
    let (code, again) = ctx.json(&["acquire", "num", "--ttl", "30", "--owner", "12345"]);
    assert_eq!(
        (code, again["acquired"].clone()),
        (75, json!(false)),
        "{again}"
    );
    assert!(a["fence"].as_u64().is_some(), "{a}");
    assert_eq!(ctx.status("num")["fence"], a["fence"]);
    // Waiting for a held lock gives up after --wait.
    let start = Instant::now();
    let (code, b) = ctx.json(&["acquire", "num", "--ttl", "30", "--wait", "1"]);
    assert_eq!(code, 75, "{b}");
    assert!(start.elapsed() >= Duration::from_secs(1));
    assert_eq!(b["holder"]["owner"], json!(12345));
    let (code, r) = ctx.json(&["release", "num", "--owner", "12345"]);
    assert_eq!((code, r["outcome"].clone()), (0, json!("released")));
    // Waiting for a lock that frees itself succeeds.
    let (code, c) = ctx.json(&["acquire", "short", "--ttl", "30", "--wait", "5"]);
    assert_eq!((code, c["acquired"].clone()), (0, json!(true)), "{c}");
    // Bad ttl.
    let (code, _, err) = ctx.text(&["acquire", "x", "--ttl=-5"]);
    assert_eq!(code, 1);
    assert!(err.contains("invalid ttl -5"), "{err}");
}

fn force_release_and_raw_keys(server: Server) {
    let ctx = Ctx::new(server);
    ctx.acquire("stuck", 0);
    let (code, v) = ctx.json(&["force-release", "stuck"]);
    assert_eq!(code, 0);
    assert_eq!(
        v,
        json!({"force_released": true, "name": "stuck", "key": "app_stuck"})
    );
    assert_eq!(ctx.status("stuck")["held"], false);

    // Laravel 8's double prefix, then the same lock by its literal table key.
    let (code, a) = ctx.json(&["--layout", "laravel8", "acquire", "report", "--ttl", "30"]);
    assert_eq!(code, 0);
    assert_eq!(a["key"], "app_:app_:report");
    let owner = a["owner"].as_str().unwrap();
    let (_, s) = ctx.json(&["status", "--raw-key", "app_:app_:report"]);
    assert_eq!(
        (s["held"].clone(), s["key"].clone(), s["owner"].clone()),
        (json!(true), json!("app_:app_:report"), json!(owner))
    );
    // Flags override the environment: another prefix sees another key.
    let (_, s) = ctx.json(&[
        "status", "report", "--layout", "laravel8", "--prefix", "other_",
    ]);
    assert_eq!(
        (s["held"].clone(), s["key"].clone()),
        (json!(false), json!("other_:other_:report"))
    );
    let (code, r) = ctx.json(&["release", "--raw-key", "app_:app_:report", "--owner", owner]);
    assert_eq!((code, r["outcome"].clone()), (0, json!("released")));
    let (code, _, _) = ctx.text(&["force-release", "--raw-key", "app_:app_:report"]);
    assert_eq!(code, 0, "force-release of a free lock is fine");
}

fn run_propagates_status_and_releases(server: Server) {
    let ctx = Ctx::new(server);
    let dir = scratch();
    let seen = dir.join("seen");
    let script = format!(
        "echo \"$DDBLOCK_LOCK_NAME $DDBLOCK_LOCK_KEY ${{#DDBLOCK_LOCK_OWNER}}\" > {}; exit 3",
        seen.display()
    );
    let (code, out, err) = ctx.text(&["run", "job", "--ttl", "30", "--", "sh", "-c", &script]);
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
    let (code, _, _) = ctx.text(&[
        "run",
        "job",
        "--ttl",
        "30",
        "--",
        "sh",
        "-c",
        "kill -KILL $$",
    ]);
    assert_eq!(code, 128 + 9);
    assert_eq!(ctx.status("job")["held"], false);
    // A command running longer than the ttl without --heartbeat: warned when it ends.
    let (code, _, err) = ctx.text(&["run", "quick", "--ttl", "1", "--", "sleep", "2.2"]);
    assert_eq!(code, 0);
    assert!(
        err.contains(
            "warning: lock `quick` (ttl 1 s): the body outlasted the lease; nobody took the lock \
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
    let (code, out, err) = ctx.text(&["run", "nightly", "--ttl", "60", "--", "sh", "-c", &touch]);
    assert_eq!((code, out.as_str()), (75, ""));
    assert!(
        err.contains(&format!(
            "lock `nightly` is held by owner \"{}…\" (16 chars) until",
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
    let start = Instant::now();
    while !ready.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "the command never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(ctx.status("sig")["held"], true);
    // SAFETY: kill(2) on the pid of our own child, not yet waited for.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
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
    // SAFETY: as above.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
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
    let start = Instant::now();
    while !ready.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "the command never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
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
    let got = scratch().join("got");
    let script = format!(
        "trap 'echo TERM > {}; exit 9' TERM; touch \"$READY\"; while :; do sleep 0.05; done",
        got.display()
    );
    let (code, err, took, thief) = lose_the_lease_under_run(&ctx, "lost", &[], &script);
    assert_eq!(code, Some(76), "exit 76 (lease lost), not CMD's 9: {err}");
    assert_eq!(
        std::fs::read_to_string(&got).unwrap().trim(),
        "TERM",
        "CMD got SIGTERM"
    );
    assert!(
        err.contains("LOCK LOST: lock `lost`: a refresh found the lock no longer ours")
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

/// CMD force-releases its own lock and ends within its lease, before the next refresh: the
/// release finds the lock gone, as a resend after a lost answer would. A release is a release
/// (the core's `Held::finish`): nothing of ours is left, so no lost lease is reported.
fn run_heartbeat_a_release_that_finds_the_lock_gone_is_a_release(server: Server) {
    let ctx = Ctx::new(server);
    let bin = common::bin().display().to_string();
    let args = |extra: &'static [&'static str]| {
        let mut v = vec!["run", "brief", "--ttl", "30", "--heartbeat"];
        v.extend_from_slice(extra);
        v.extend(["--", bin.as_str(), "force-release", "brief"]);
        v
    };
    for extra in [&[][..], &["--on-lease-lost", "warn"][..]] {
        let (code, out, err) = ctx.text(&args(extra));
        assert_eq!(code, 0, "{out}{err}");
        assert!(!err.contains("LOCK LOST"), "{err}");
        assert_eq!(ctx.status("brief")["held"], false);
    }
}

fn list_shows_items_and_expired_ones(server: Server) {
    let ctx = Ctx::new(server);
    let t = now();
    let owner = ctx.acquire("orders", 30);
    ctx.cmd()
        .args(["put", "greeting", "hello", "--ttl", "60"])
        .assert()
        .success();
    ctx.put_raw(
        "app_old",
        Some(AttributeValue::S("s:16:\"AAAAbbbbCCCCdddd\";".into())),
        Some(t - 500),
    );
    ctx.put_raw(
        "elsewhere",
        Some(AttributeValue::N("1".into())),
        Some(t + 60),
    );

    let (code, v) = ctx.json(&["list"]);
    assert_eq!(code, 0, "{v}");
    assert_fields(
        &v,
        &[
            "table",
            "scanned",
            "count",
            "locks",
            "expired_but_present",
            "items",
        ],
    );
    assert_eq!(
        (
            v["count"].clone(),
            v["locks"].clone(),
            v["expired_but_present"].clone()
        ),
        (json!(3), json!(2), json!(1))
    );
    let items = v["items"].as_array().unwrap();
    for i in items {
        assert_fields(i, ITEM_FIELDS);
    }
    assert_eq!(items[0]["key"], "app_greeting");
    assert_eq!(
        (
            items[0]["kind"].clone(),
            items[0]["name"].clone(),
            items[0]["owner"].clone()
        ),
        (json!("cache"), json!("greeting"), json!(null))
    );
    assert_eq!(items[1]["key"], "app_old");
    assert_eq!(
        (
            items[1]["kind"].clone(),
            items[1]["expired_but_present"].clone()
        ),
        (json!("lock"), json!(true))
    );
    assert!(items[1]["expires_in"].as_i64().unwrap() <= -500);
    assert_eq!(
        items[2],
        json!({
            "key": "app_orders", "kind": "lock", "name": "orders", "owner": owner,
            "expires_at": items[2]["expires_at"], "expires_in": items[2]["expires_in"], "expired_but_present": false,
        })
    );
    let (_, v) = ctx.json(&["list", "--locks"]);
    assert_eq!(v["count"], 2);
    let (_, v) = ctx.json(&["list", "--expired"]);
    assert_eq!(
        (v["count"].clone(), v["items"][0]["key"].clone()),
        (json!(1), json!("app_old"))
    );
    let (_, v) = ctx.json(&["list", "--all", "--segments", "3"]);
    assert_eq!(v["count"], 4);
    assert_eq!(
        v["items"][3],
        json!({"key": "elsewhere", "kind": "other", "name": null, "owner": null,
        "expires_at": t + 60, "expires_in": v["items"][3]["expires_in"], "expired_but_present": false})
    );

    let (code, out, err) = ctx.text(&["list", "--progress", "always"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("KEY "), "{out}");
    assert!(
        out.contains("expired") && out.contains("(still present)"),
        "{out}"
    );
    assert!(out.contains(&owner));
    assert!(
        out.contains("3 items (2 locks, 1 expired but still present)"),
        "{out}"
    );
    assert!(
        err.contains("list: ") && err.contains("items scanned"),
        "progress: {err}"
    );
    let (_, _, err) = ctx.text(&["list"]);
    assert_eq!(err, "", "no progress when stderr is not a terminal");
}

fn sweep_deletes_only_expired_items(server: Server) {
    let ctx = Ctx::new(server);
    let t = now();
    let owner = ctx.acquire("live", 60);
    for k in ["app_a", "app_b", "app_c"] {
        ctx.put_raw(k, Some(AttributeValue::S("b:1;".into())), Some(t - 1000));
    }
    ctx.put_raw(
        "app_recent",
        Some(AttributeValue::S("b:1;".into())),
        Some(t - 10),
    );
    ctx.put_raw("app_forever", Some(AttributeValue::S("b:1;".into())), None);
    ctx.put_raw(
        "other_old",
        Some(AttributeValue::S("b:1;".into())),
        Some(t - 1000),
    );

    let (code, v) = ctx.json(&["sweep", "--dry-run"]);
    assert_eq!(code, 0, "{v}");
    assert_fields(
        &v,
        &[
            "table", "dry_run", "scanned", "expired", "deleted", "skipped", "cutoff",
        ],
    );
    assert_eq!(
        (
            v["dry_run"].clone(),
            v["expired"].clone(),
            v["deleted"].clone()
        ),
        (json!(true), json!(3), json!(0))
    );
    assert!(ctx.raw_exists("app_a"));
    let (code, v) = ctx.json(&["sweep"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        (
            v["expired"].clone(),
            v["deleted"].clone(),
            v["skipped"].clone()
        ),
        (json!(3), json!(3), json!(0))
    );
    assert!(!ctx.raw_exists("app_a") && !ctx.raw_exists("app_c"));
    assert!(ctx.raw_exists("app_recent"), "inside the 60 s grace");
    assert!(ctx.raw_exists("other_old"), "outside the prefix");
    let (code, out, _) = ctx.text(&["sweep", "--grace", "0", "--all"]);
    assert_eq!(code, 0);
    assert!(out.contains("deleted 2 expired items"), "{out}");
    assert!(!ctx.raw_exists("app_recent") && !ctx.raw_exists("other_old"));
    assert!(ctx.raw_exists("app_forever") && ctx.raw_exists("app_live"));
    assert_eq!(
        ctx.status("live")["owner"],
        json!(owner),
        "the live lock is untouched"
    );
    let (code, out, _) = ctx.text(&["sweep", "--dry-run"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("dry run: would delete 0 expired items"),
        "{out}"
    );
}

fn doctor_checks_and_fixes(server: Server) {
    let ctx = Ctx::with_table(server, &common::unique("doc"), false);
    ctx.cmd()
        .args(["create-table", "--no-ttl"])
        .assert()
        .success();
    let t = now();
    ctx.acquire("nightly", 0); // the 86400 s default: what a stuck Laravel lock looks like
    ctx.acquire("short", 30);
    ctx.put_raw(
        "app_old",
        Some(AttributeValue::N("1".into())),
        Some(t - 100),
    );
    let (code, v) = ctx.json(&["doctor"]);
    assert_eq!(code, 0, "warnings only: {v}");
    assert_fields(
        &v,
        &[
            "table",
            "endpoint",
            "healthy",
            "table_status",
            "billing_mode",
            "ttl",
            "checks",
            "counts",
            "default_ttl_locks",
            "clock",
        ],
    );
    assert_eq!(
        (v["healthy"].clone(), v["table_status"].clone()),
        (json!(true), json!("ACTIVE"))
    );
    assert_eq!(v["ttl"], json!({"status": "disabled", "attribute": null}));
    let checks = v["checks"].as_array().unwrap();
    let ids: Vec<&str> = checks.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "table",
            "key_schema",
            "ttl",
            "expired_items",
            "default_ttl_locks",
            "invalid_items",
            "layout",
            "clock"
        ]
    );
    for c in checks {
        assert_fields(c, &["id", "status", "detail", "fix"]);
    }
    let check = |id: &str| checks.iter().find(|c| c["id"] == id).unwrap().clone();
    assert_eq!(check("table")["status"], "ok");
    assert_eq!(check("ttl")["status"], "warn");
    assert!(check("ttl")["fix"]
        .as_str()
        .unwrap()
        .contains("ddblock create-table"));
    assert_eq!(check("expired_items")["status"], "warn");
    assert_eq!(check("default_ttl_locks")["status"], "warn");
    assert!(check("default_ttl_locks")["fix"]
        .as_str()
        .unwrap()
        .contains("force-release"));
    assert_eq!(check("invalid_items")["status"], "ok");
    assert_eq!(check("layout")["status"], "ok", "{}", check("layout"));
    assert_eq!(v["counts"]["default_ttl_locks"], 1);
    assert_eq!(v["counts"]["expired_but_present"], 1);
    assert_eq!(v["counts"]["locks"], 2);
    assert_eq!(v["default_ttl_locks"][0]["name"], "nightly");

    let (code, out, _) = ctx.text(&["doctor"]);
    assert_eq!(code, 0);
    assert!(out.contains("warn    default_ttl_locks"), "{out}");
    assert!(out.contains("ttl-0 lock `nightly`"), "{out}");
    assert!(out.contains("fix: "), "{out}");

    // create-table turns TTL on where the server can.
    ctx.cmd().args(["create-table"]).assert().success();
    let (_, v) = ctx.json(&["doctor", "--no-scan"]);
    assert_eq!(v["counts"], json!(null));
    if server == Server::Moto {
        assert_eq!(
            v["ttl"],
            json!({"status": "enabled", "attribute": "expires_at"})
        );
    }

    // A missing table: failure, exit 1, says to run create-table.
    let missing = Ctx::with_table(server, "no-such-table-here", false);
    let (code, v) = missing.json(&["doctor"]);
    assert_eq!(code, 1);
    assert_eq!(v["healthy"], false);
    assert_eq!(v["checks"][0]["status"], "fail");
    assert!(v["checks"][0]["fix"]
        .as_str()
        .unwrap()
        .contains("ddblock create-table"));
    let (code, out, _) = missing.text(&["doctor"]);
    assert_eq!(code, 1);
    assert!(out.contains("FAILED"), "{out}");
}

fn get_and_put_values(server: Server) {
    let ctx = Ctx::new(server);
    let ok = |args: &[&str]| {
        let (code, v) = ctx.json(args);
        assert_eq!(code, 0, "{args:?}: {v}");
        v
    };
    let v = ok(&["put", "s", "hello", "--ttl", "60"]);
    assert_fields(&v, &["key", "table_key", "stored", "ttl", "forever"]);
    assert_eq!(
        (v["table_key"].clone(), v["stored"].clone()),
        (json!("app_s"), json!(true))
    );
    let g = ok(&["get", "s"]);
    assert_fields(&g, &["key", "table_key", "found", "value"]);
    assert_eq!(
        g,
        json!({"key": "s", "table_key": "app_s", "found": true, "value": "hello"})
    );
    let (_, out, _) = ctx.text(&["get", "s"]);
    assert_eq!(out, "hello\n");
    // Numeric strings become numbers, as in Laravel.
    ok(&["put", "n", "12345", "--ttl", "60"]);
    assert_eq!(ok(&["get", "n", "--consistent"])["value"], json!(12345));
    ok(&[
        "put",
        "j",
        r#"{"a":[1,2.5,null,true],"b":"x"}"#,
        "--ttl",
        "60",
        "--as",
        "json",
    ]);
    assert_eq!(
        ok(&["get", "j"])["value"],
        json!({"a": [1, 2.5, null, true], "b": "x"})
    );
    ok(&[
        "put",
        "p",
        r#"O:8:"stdClass":1:{s:1:"a";i:1;}"#,
        "--as",
        "serialized",
        "--forever",
    ]);
    assert_eq!(
        ok(&["get", "p"])["value"],
        json!({"__class": "stdClass", "a": 1})
    );
    let (_, out, _) = ctx.text(&["get", "j"]);
    assert_eq!(out, "{\"a\":[1,2.5,null,true],\"b\":\"x\"}\n");
    // Missing and expired: exit 1.
    let (code, v) = ctx.json(&["get", "nope"]);
    assert_eq!(
        (code, v["found"].clone(), v["value"].clone()),
        (1, json!(false), json!(null))
    );
    ok(&["put", "gone", "x", "--ttl", "0"]);
    let (code, _, err) = ctx.text(&["get", "gone"]);
    assert_eq!(code, 1);
    assert!(err.contains("not in the cache"), "{err}");
    // Bad input.
    let (code, _, err) = ctx.text(&["put", "bad", "{", "--ttl", "60", "--as", "json"]);
    assert_eq!(code, 1);
    assert!(err.contains("not JSON"), "{err}");
    let (code, _, err) = ctx.text(&["put", "bad", "x"]);
    assert_eq!(code, 2, "--ttl or --forever is required");
    assert!(err.contains("--forever"), "{err}");
}

fn refresh_and_fence(server: Server) {
    let ctx = Ctx::new(server);
    let (code, a) = ctx.json(&["acquire", "job", "--ttl", "30"]);
    assert_eq!(code, 0, "{a}");
    let owner = a["owner"].as_str().unwrap().to_owned();
    let (code, r) = ctx.json(&["refresh", "job", "--owner", &owner, "--ttl", "600"]);
    assert_eq!((code, r["refreshed"].clone()), (0, json!(true)), "{r}");
    let left = r["expires_at"].as_i64().unwrap() - now();
    assert!((590..=601).contains(&left), "{r}");
    let (code, r) = ctx.json(&["refresh", "job", "--owner", "someone-else", "--ttl", "600"]);
    assert_eq!((code, r["refreshed"].clone()), (1, json!(false)), "{r}");
    let (code, _) = ctx.json(&["release", "job", "--owner", &owner]);
    assert_eq!(code, 0);
    // `run` hands the fencing token to the command.
    let (code, out, err) = ctx.text(&[
        "run",
        "job",
        "--ttl",
        "30",
        "--",
        "sh",
        "-c",
        "echo $DDBLOCK_FENCE",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.trim().parse::<u64>().is_ok(), "a fence: {out:?}");
}

fn negative_numbers_are_values(server: Server) {
    let ctx = Ctx::new(server);
    // A negative VALUE is a value, not an unknown option (clap used to suggest `-- -42`).
    let (code, v) = ctx.json(&["put", "neg", "-42", "--ttl", "60"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(ctx.json(&["get", "neg"]).1["value"], json!(-42));
    // A negative ttl is the core's answer (an already expired item for put, refused for a lock).
    let (code, v) = ctx.json(&["put", "old", "x", "--ttl", "-1"]);
    assert_eq!(code, 0, "{v}");
    let (code, _, err) = ctx.text(&["acquire", "l", "--ttl", "-1"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("invalid ttl -1"), "{err}");
    assert!(!err.contains("-- -1"), "no clap tip: {err}");
    // A negative wait is the core's one wait rule: a configuration error (exit 1), as in every
    // front (compat-tests/bad-input.json), not a usage error.
    let (code, _, err) = ctx.text(&["acquire", "l", "--ttl", "5", "--wait", "-1"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("0 or more seconds"), "{err}");
    // Without --ttl, put names both ways to say how long.
    let (code, _, err) = ctx.text(&["put", "k", "--", "-42"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--ttl") && err.contains("--forever"), "{err}");
    // One item is "1 item".
    let (_, out, _) = ctx.text(&["list"]);
    assert!(out.contains("\n2 items ("), "{out}");
    let one = Ctx::new(server);
    one.json(&["put", "solo", "x", "--ttl", "60"]);
    let (_, out, _) = one.text(&["list"]);
    assert!(out.contains("\n1 item ("), "{out}");
}

fn errors_are_one_clear_line(server: Server) {
    let missing = Ctx::with_table(server, "no-such-table-here", false);
    for args in [
        &["status", "x"][..],
        &["acquire", "x", "--ttl", "5"],
        &["list"],
        &["run", "x", "--ttl", "5", "true"],
    ] {
        let (code, out, err) = missing.text(args);
        assert_eq!((code, out.as_str()), (1, ""), "{args:?}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("ddblock: table `no-such-table-here` not found"),
            "{err}"
        );
        assert!(
            err.contains("create it with `ddblock create-table`"),
            "{err}"
        );
    }
    let (code, v) = missing.json(&["status", "x"]);
    assert_eq!(code, 1);
    assert_eq!(v["error"]["kind"], "table_not_found");
    assert!(v["error"]["message"]
        .as_str()
        .unwrap()
        .contains("create-table"));

    let ctx = Ctx::new(server);
    for args in [
        &["status", ""][..],
        &["acquire", "", "--ttl", "5"],
        &["get", ""],
        &["run", "", "--ttl", "5", "true"],
    ] {
        let (code, _, err) = ctx.text(args);
        assert_eq!(code, 1, "{args:?}");
        assert_eq!(
            err.trim(),
            "ddblock: invalid key \"\": it is empty; give a non-empty key or lock name"
        );
    }
    let (code, _, err) = ctx.text(&["status", "x", "--layout", "laravel99"]);
    assert_eq!(code, 1);
    assert!(err.contains("unknown key layout \"laravel99\""), "{err}");
    let (code, _, err) = ctx.text(&["status", "x", "--table", "a"]);
    assert_eq!(code, 1);
    assert!(err.contains("not a valid DynamoDB table name"), "{err}");
    let (code, _, _) = ctx.text(&["frobnicate"]);
    assert_eq!(code, 2);
    let (code, _, _) = ctx.text(&["run", "x", "--ttl", "5"]);
    assert_eq!(code, 2, "CMD is required");
}

/// No server needed: nothing listens on port 1.
/// The shared bad-input table (compat-tests/bad-input.json) through the CLI: each case gets the
/// kind every other front gets, in `--json`'s `error.kind`, with exit 1.
#[test]
fn bad_input_gets_the_same_kinds() {
    let table: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(common::root().join("compat-tests/bad-input.json")).unwrap(),
    )
    .unwrap();
    let base = Ctx::new(Server::Moto);
    let rt = tokio::runtime::Runtime::new().unwrap();
    for c in table["cases"].as_array().unwrap() {
        let mut ctx = Ctx {
            server: base.server,
            endpoint: base.endpoint.clone(),
            table: base.table.clone(),
        };
        // Keep the proxy alive until the case has run.
        let mut _proxy = None;
        match c["server"].as_str() {
            None | Some("no_credentials") => {}
            Some("unreachable") => ctx.endpoint = ddblock_test_support::closed_endpoint(),
            Some("throttling") => {
                let p = rt
                    .block_on(ddblock_fault_proxy::start(
                        ddblock_fault_proxy::ProxyConfig {
                            upstream: base.endpoint.clone(),
                            listen: "127.0.0.1:0".into(),
                            faults: ddblock_fault_proxy::FaultConfig {
                                throttle_rate: 1.0,
                                ..Default::default()
                            },
                        },
                    ))
                    .expect("proxy");
                ctx.endpoint = p.url();
                _proxy = Some(p);
            }
            Some(other) => panic!("unknown server {other}"),
        }
        if let Some(text) = c["stored"].as_str() {
            rt.block_on(
                ddblock_test_support::client_for(&base.endpoint)
                    .put_item()
                    .table_name(&base.table)
                    .item("key", AttributeValue::S(c["key"].as_str().unwrap().into()))
                    .item("value", AttributeValue::S(text.into()))
                    .send(),
            )
            .expect("raw PutItem");
        }
        let name = match c.get("name_repeat") {
            Some(r) => r[0]
                .as_str()
                .unwrap()
                .repeat(r[1].as_u64().unwrap() as usize),
            None => c["name"].as_str().unwrap_or_default().to_owned(),
        };
        let ttl = c["ttl"].to_string();
        let mut args: Vec<String> = Vec::new();
        match c["op"].as_str().unwrap() {
            "config" => {
                for flag in ["layout", "endpoint", "table"] {
                    if let Some(v) = c[flag].as_str() {
                        args.extend([format!("--{flag}"), v.to_owned()]);
                    }
                }
                if let Some(m) = c.get("clock_skew_margin") {
                    args.extend(["--clock-skew-margin".into(), m.to_string()]);
                }
                args.extend(["status".into(), "x".into()]);
            }
            op => {
                if c["table"] == "missing" {
                    args.extend(["--table".into(), "ddblock_no_such_table".into()]);
                }
                args.extend([
                    "--prefix".into(),
                    String::new(),
                    "--max-attempts".into(),
                    "2".into(),
                ]);
                match op {
                    // The CLI has no lock handle without a request: `acquire` checks the name
                    // and ttl first, as constructing a lock does in the other fronts.
                    "lock" | "acquire" => {
                        args.extend(["acquire".into(), name, "--ttl".into(), ttl])
                    }
                    "get" => args.extend(["get".into(), c["key"].as_str().unwrap().into()]),
                    "put" => args.extend([
                        "put".into(),
                        c["key"].as_str().unwrap().into(),
                        c["value"].as_str().unwrap().into(),
                        "--ttl".into(),
                        ttl,
                    ]),
                    "once" => args.extend([
                        "once".into(),
                        name,
                        "--ttl".into(),
                        ttl,
                        "--".into(),
                        "true".into(),
                    ]),
                    "put_if_version" => args.extend([
                        "put".into(),
                        c["key"].as_str().unwrap().into(),
                        c["value"].as_str().unwrap().into(),
                        "--ttl".into(),
                        ttl,
                        "--if-version".into(),
                        c["version"].to_string(),
                    ]),
                    other => panic!("unknown op {other}"),
                }
            }
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, v) = if c["server"] == "no_credentials" {
            // No AWS credentials anywhere: none in the environment, an empty HOME.
            let home = scratch();
            let mut cmd = std::process::Command::new(common::bin());
            ctx.env(&mut cmd);
            for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("AWS_")) {
                cmd.env_remove(k);
            }
            cmd.env_remove("AWS_ACCESS_KEY_ID")
                .env_remove("AWS_SECRET_ACCESS_KEY")
                .env("AWS_DEFAULT_REGION", "us-east-1")
                .env("AWS_EC2_METADATA_DISABLED", "true")
                .env("HOME", &home);
            let out = cmd.arg("--json").args(&refs).output().unwrap();
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            (out.status.code().unwrap(), v)
        } else {
            ctx.json(&refs)
        };
        assert_eq!(code, 1, "{}: {v}", c["case"]);
        assert_eq!(v["error"]["kind"], c["kind"], "{}: {v}", c["case"]);
    }
}

#[test]
fn unreachable_endpoint_names_the_endpoint() {
    let ctx = Ctx {
        server: Server::Moto,
        endpoint: "http://127.0.0.1:1".into(),
        table: "cache".into(),
    };
    let start = Instant::now();
    let (code, out, err) = ctx.text(&[
        "status",
        "x",
        "--connect-timeout",
        "1",
        "--operation-timeout",
        "5",
    ]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("ddblock: could not reach DynamoDB at http://127.0.0.1:1 for GetItem"),
        "{err}"
    );
    assert!(start.elapsed() < Duration::from_secs(8));
    let (code, v) = ctx.json(&["doctor", "--max-attempts", "1"]);
    assert_eq!((code, v["error"]["kind"].clone()), (1, json!("transport")));
    let (code, _, err) = ctx.text(&["status", "x", "--endpoint", "localhost:8000"]);
    assert_eq!(code, 1);
    assert!(err.contains("must be a URL starting with http://"), "{err}");
}

/// `--attempt-timeout` reaches the core: against an endpoint that accepts connections and never
/// answers, one attempt ends after it (the default is 3 s); 0 is refused by the core's rule.
#[test]
fn attempt_timeout_flag_bounds_each_request() {
    // The kernel completes the handshake of a listener that never accepts: requests hang.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let ctx = Ctx {
        server: Server::Moto,
        endpoint: format!("http://{}", silent.local_addr().unwrap()),
        table: "cache".into(),
    };
    let timed = |extra: &[&str]| {
        let mut args = vec![
            "status",
            "x",
            "--max-attempts",
            "1",
            "--operation-timeout",
            "20",
        ];
        args.extend_from_slice(extra);
        let start = Instant::now();
        let (code, v) = ctx.json(&args);
        assert_eq!((code, v["error"]["kind"].clone()), (1, json!("transport")));
        start.elapsed()
    };
    let short = timed(&["--attempt-timeout", "0.3"]);
    assert!(short < Duration::from_secs(2), "{short:?}");
    let default = timed(&[]);
    assert!(default >= Duration::from_millis(2900), "{default:?}");
    for flag in ["--attempt-timeout", "--heartbeat-interval"] {
        let (code, v) = ctx.json(&["status", "x", flag, "0"]);
        assert_eq!(
            (code, v["error"]["kind"].clone()),
            (1, json!("config")),
            "{flag}"
        );
    }
}

#[test]
fn help_lists_every_command_and_exit_status() {
    let out = assert_cmd::Command::new(common::bin())
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    for c in [
        "run",
        "acquire",
        "release",
        "force-release",
        "status",
        "list",
        "sweep",
        "doctor",
        "create-table",
        "get",
        "put",
    ] {
        assert!(
            help.contains(&format!("\n  {c} ")),
            "{c} missing from --help"
        );
    }
    for s in [
        "DYNAMODB_CACHE_TABLE",
        "DYNAMODB_ENDPOINT",
        "AWS_DEFAULT_REGION",
        "CACHE_PREFIX",
        "DDBLOCK_LAYOUT",
        "75  the lock is held",
    ] {
        assert!(help.contains(s), "{s} missing from --help");
    }
    // docs/cli.md documents the same commands and exit statuses.
    let doc = std::fs::read_to_string(common::root().join("docs/cli.md")).unwrap();
    for c in [
        "run",
        "acquire",
        "release",
        "force-release",
        "status",
        "list",
        "sweep",
        "doctor",
        "create-table",
        "get",
        "put",
    ] {
        assert!(
            doc.contains(&format!("### `ddblock {c}")),
            "docs/cli.md lacks a section for {c}"
        );
    }
    for s in [
        "| 75 |",
        "| 76 |",
        "--on-lease-lost",
        "--attempt-timeout",
        "--heartbeat-interval",
        "| 0 |",
        "| 1 |",
        "| 2 |",
        "--json",
        "--raw-key",
        "--heartbeat",
    ] {
        assert!(doc.contains(s), "docs/cli.md lacks {s}");
    }
}

on_servers!(
    sync
    refresh_and_fence,
    negative_numbers_are_values,
    create_table_is_idempotent,
    acquire_status_release,
    acquire_with_owner_and_wait,
    force_release_and_raw_keys,
    run_propagates_status_and_releases,
    run_on_a_held_lock_exits_75,
    run_forwards_sigterm_and_releases,
    run_forwards_sigint_and_releases,
    run_signal_while_waiting_stops_waiting,
    run_heartbeat_keeps_the_lock_past_its_ttl,
    run_heartbeat_stops_the_command_when_the_lease_is_lost,
    run_heartbeat_kills_a_command_that_ignores_sigterm,
    run_heartbeat_warn_keeps_the_command_running,
    run_heartbeat_a_release_that_finds_the_lock_gone_is_a_release,
    list_shows_items_and_expired_ones,
    sweep_deletes_only_expired_items,
    doctor_checks_and_fixes,
    get_and_put_values,
    errors_are_one_clear_line,
);

/// The wait and lease cases of the shared table (compat-tests/bad-input.json, `outcomes`)
/// through the CLI: `acquire --wait`, `run --heartbeat -- sh -c BODY` and `once -- sh -c BODY`
/// get the outcome every other front gets. Exit 0: acquired or ok; 75: held; 76: lease lost;
/// 1: an error (its kind in `--json`); 3: the body's own failure, with the clean-up's error
/// and its kind on stderr.
#[test]
fn wait_and_lease_cases_have_their_outcomes() {
    let table: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(common::root().join("compat-tests/bad-input.json")).unwrap(),
    )
    .unwrap();
    let base = Ctx::new(Server::Moto);
    let rt = tokio::runtime::Runtime::new().unwrap();
    for (i, c) in table["outcomes"].as_array().unwrap().iter().enumerate() {
        let case = c["case"].as_str().unwrap();
        let faults: ddblock_fault_proxy::FaultConfig = c
            .get("faults")
            .map(|f| serde_json::from_value(f.clone()).expect("the case's faults"))
            .unwrap_or_default();
        let sequence = faults.sequence.clone();
        let proxy = rt
            .block_on(ddblock_fault_proxy::start(
                ddblock_fault_proxy::ProxyConfig {
                    upstream: base.endpoint.clone(),
                    listen: "127.0.0.1:0".into(),
                    faults,
                },
            ))
            .expect("proxy");
        let ctx = Ctx {
            server: base.server,
            endpoint: proxy.url(),
            table: base.table.clone(),
        };
        // One table for every case: a name of its own for each.
        let name = &format!("{}-{i}", c["name"].as_str().unwrap());
        let ttl = c["ttl"].to_string();
        let wait = match &c["wait"] {
            serde_json::Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        let body = match c["body"].as_str().unwrap_or_default() {
            "raise" => "exit 3".to_owned(),
            // The heartbeat (ttl 3: a refresh each second) sees the lock gone and stops CMD.
            "lose_lease" => format!(
                "'{}' --prefix '' force-release {name}; sleep 10",
                common::bin().display()
            ),
            _ => "true".to_owned(),
        };
        let mut args = vec!["--prefix", ""];
        match c["op"].as_str().unwrap() {
            "acquire" => {
                if c["held_by_other"] == true {
                    let (code, _, err) =
                        base.text(&["--prefix", "", "acquire", name, "--ttl", "60"]);
                    assert_eq!(code, 0, "{err}");
                }
                args.extend(["--json", "acquire", name, "--ttl", &ttl, "--wait", &wait]);
            }
            "with_lock" => args.extend([
                "run",
                name,
                "--ttl",
                &ttl,
                "--wait",
                &wait,
                "--heartbeat",
                "--",
                "sh",
                "-c",
                &body,
            ]),
            "once_run" => args.extend(["once", name, "--ttl", &ttl, "--", "sh", "-c", &body]),
            other => panic!("unknown op {other}"),
        }
        let (code, out, err) = ctx.text(&args);
        let got = match code {
            0 if c["op"] == "acquire" => json!({"acquired": true}),
            0 => json!({"ok": true}),
            75 => json!({"acquired": false}),
            76 => json!({"error": "lease_lost"}),
            1 => {
                let v: serde_json::Value = serde_json::from_str(&out).expect(&err);
                json!({"error": v["error"]["kind"]})
            }
            3 => json!({"body_error": true, "attached": attached_kind(&err)}),
            other => panic!("{case}: exit {other}: {out}{err}"),
        };
        // The scripted faults happened (a case that passes without them proves nothing).
        let unseen = proxy
            .stats()
            .unseen_scripted(&sequence)
            .map(|(op, f)| (op.to_owned(), f.to_owned()));
        assert_eq!(unseen, None, "{case}: a scripted fault never happened");
        assert_eq!(got, c["expect"], "{case}: {err}");
        if c["free_after"] == true {
            let (_, status) = base.json(&["--prefix", "", "status", name]);
            assert_eq!(status["held"], false, "{case}");
        }
        rt.block_on(proxy.shutdown());
    }
}

/// The kind the CLI names in parentheses on stderr after a failed clean-up: "could not release
/// lock `x` (throttled): ..." or "giving the claim back failed too (throttled): ...".
fn attached_kind(err: &str) -> Option<String> {
    ["could not release lock `", "failed too ("]
        .iter()
        .find_map(|start| {
            let rest = &err[err.find(start)?..];
            let open = rest.find('(')? + 1;
            let close = open + rest[open..].find(')')?;
            Some(rest[open..close].to_owned())
        })
}
