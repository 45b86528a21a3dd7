//! The lock commands against the local servers (moto and dynalite): `acquire`, `release`,
//! `refresh`, `force-release` and `status`, their JSON fields, exit statuses and text; owners,
//! waits, fences, layouts and raw keys.

mod common;

use std::process::Command as StdCommand;
use std::time::{Duration, Instant};

use common::{assert_fields, now, on_servers, pick, Ctx, Server, ACQUIRE_FIELDS};
use ddblock::aws_sdk_dynamodb::types::AttributeValue;
use serde_json::json;

const RELEASE_FIELDS: &str = "released outcome name key holder";
const STATUS_FIELDS: &str = "name key held owner expires_at expires_in fence";

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
        pick(&s, &["held", "owner", "expires_at"]),
        json!([true, owner, expires])
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
        pick(&r, &["released", "outcome", "holder"]),
        json!([true, "released", null])
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
        json!({"released": true, "force_released": true, "name": "stuck", "key": "app_stuck"})
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
    let (code, _, err) = ctx.text(&["force-release", "--raw-key", "app_:app_:report"]);
    assert_eq!(code, 1, "nothing to release: {err}");
}

/// A Laravel ttl-0 lock named after a job class, as stock Laravel wrote it (`Cache::lock($name,
/// 0)->get()`: the owner, a day); its table key.
const JOB_LOCK: &str = r"laravel-queue-overlap:App\Jobs\SyncAccount:0";

fn stuck_by_laravel(ctx: &Ctx) -> String {
    let key = format!("app_{JOB_LOCK}");
    let owner = AttributeValue::S(r#"s:16:"EEEEffffGGGGhhhh";"#.into());
    ctx.put_raw(&key, Some(owner), Some(now() + 86_400));
    key
}

/// `sh -c LINE` with `ddblock` on the PATH and `ctx`'s environment: a line pasted into a shell.
fn in_a_shell(ctx: &Ctx, line: &str) -> (i32, String, String) {
    let mut c = StdCommand::new("sh");
    ctx.env(&mut c);
    let dir = common::bin().parent().unwrap().display().to_string();
    let path = format!("{dir}:{}", std::env::var("PATH").unwrap_or_default());
    let out = c.args(["-c", line]).env("PATH", path).output().unwrap();
    (
        out.status.code().expect("exit status"),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// The name pasted unquoted (the shell drops its backslashes) names no lock: exit 1 and a line
/// saying so, `{"released": false, "reason": "not_found", ...}` with --json, never
/// "force-released"; the real lock stays held. In both release modes.
fn force_release_of_a_name_with_no_lock_exits_1(server: Server) {
    let broken = JOB_LOCK.replace('\\', "");
    for mode in ["delete", "keep-fence"] {
        let ctx = Ctx::new(server);
        let key = stuck_by_laravel(&ctx);
        let pasted = format!("DDBLOCK_RELEASE_MODE={mode} ddblock force-release {JOB_LOCK}");
        let (code, out, err) = in_a_shell(&ctx, &pasted);
        let said = format!(
            "ddblock: no lock named '{broken}' in table `{}` (key app_{broken}); names are \
             exact: quote names that hold backslashes\n",
            ctx.table
        );
        assert_eq!((code, out.as_str(), err), (1, "", said), "{mode}");
        let (code, out, _) = in_a_shell(&ctx, &format!("{pasted} --json"));
        assert_eq!(code, 1);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            v,
            json!({"released": false, "force_released": false, "name": broken,
                   "key": format!("app_{broken}"), "reason": "not_found", "table": ctx.table}),
            "{mode}"
        );
        assert!(ctx.raw_exists(&key), "{mode}: the real lock is still there");
        assert_eq!(ctx.status(JOB_LOCK)["held"], true, "{mode}");
    }
}

/// `doctor` lists the stuck lock with its name shell-quoted and prints one `force-release` line
/// for it (with the settings doctor was given); pasted into a shell as shown, it releases that
/// very lock, and the next job takes it.
fn the_doctors_fix_line_pasted_into_a_shell_releases_the_lock(server: Server) {
    for flags in ["", " --release-mode keep-fence"] {
        let ctx = Ctx::new(server);
        let key = stuck_by_laravel(&ctx);
        let mut args: Vec<&str> = flags.split_whitespace().collect();
        args.push("doctor");
        let (code, out, err) = ctx.text(&args);
        assert_eq!(code, 0, "{out}{err}");
        let listed = format!("\n          ttl-0 lock '{JOB_LOCK}' (key '{key}'), until ");
        assert!(out.contains(&listed), "{out}");
        let commands: Vec<&str> = out
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("ddblock") && l.contains(" force-release "))
            .collect();
        assert_eq!(
            commands,
            [format!("ddblock{flags} force-release '{JOB_LOCK}'")],
            "{out}"
        );
        let (code, out, err) = in_a_shell(&ctx, commands[0]);
        assert_eq!(
            (code, out, err),
            (
                0,
                format!("force-released lock '{JOB_LOCK}' (key '{key}')\n"),
                String::new()
            )
        );
        assert_eq!(ctx.status(JOB_LOCK)["held"], false, "released");
        let (code, a) = ctx.json(&["acquire", JOB_LOCK, "--ttl", "10"]);
        assert_eq!((code, a["acquired"].clone()), (0, json!(true)), "free: {a}");
    }
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
    let (code, out, err) = ctx.run_sh("job", "30", "echo $DDBLOCK_FENCE");
    assert_eq!(code, 0, "{err}");
    assert!(out.trim().parse::<u64>().is_ok(), "a fence: {out:?}");
}

/// `--release-mode keep-fence` (and `DDBLOCK_RELEASE_MODE`): the release expires the item and
/// keeps its fencing token; `list` shows it; the next acquisition continues the fence.
fn keep_fence_release(server: Server) {
    let ctx = Ctx::new(server);
    let kf = ["--json", "--release-mode", "keep-fence"];
    let (code, a) = ctx.json(&["acquire", "kf", "--ttl", "30"]);
    assert_eq!(code, 0, "{a}");
    let owner = a["owner"].as_str().unwrap().to_owned();
    let fence = a["fence"].as_u64().unwrap();
    let run = |args: &[&str]| {
        let out = ctx.cmd().args(kf).args(args).output().unwrap();
        common::json_of(&out, "ddblock --release-mode keep-fence")
    };
    let (code, r) = run(&["release", "kf", "--owner", &owner]);
    assert_eq!((code, r["outcome"].clone()), (0, json!("released")), "{r}");
    let (code, r) = run(&["release", "kf", "--owner", &owner]);
    assert_eq!((code, r["outcome"].clone()), (1, json!("not_held")), "{r}");
    assert!(ctx.raw_exists("app_kf"), "the item stays");
    assert_eq!(ctx.status("kf")["held"], json!(false));
    let (_, list) = ctx.json(&["list", "--locks"]);
    let item = &list["items"][0];
    assert_eq!(
        pick(item, &["kind", "owner", "released_fence_kept"]),
        json!(["lock", null, true]),
        "{list}"
    );
    let (_, human, _) = ctx.text(&["list"]);
    assert!(human.contains("released, fence kept"), "{human}");
    // The environment's setting, as Laravel's variables are read.
    let out = ctx
        .cmd()
        .env("DDBLOCK_RELEASE_MODE", "keep-fence")
        .args(["--json", "acquire", "kf", "--ttl", "30"])
        .output()
        .unwrap();
    let (code, b) = common::json_of(&out, "acquire");
    assert_eq!((code, b["fence"].as_u64()), (0, Some(fence + 1)), "{b}");
    let (code, _) = run(&["force-release", "kf"]);
    assert_eq!(code, 0);
    let (code, c) = ctx.json(&["acquire", "kf", "--ttl", "30"]);
    assert_eq!((code, c["fence"].as_u64()), (0, Some(fence + 2)), "{c}");
}

on_servers!(
    sync
    keep_fence_release,
    acquire_status_release,
    acquire_with_owner_and_wait,
    force_release_and_raw_keys,
    force_release_of_a_name_with_no_lock_exits_1,
    the_doctors_fix_line_pasted_into_a_shell_releases_the_lock,
    refresh_and_fence,
);
