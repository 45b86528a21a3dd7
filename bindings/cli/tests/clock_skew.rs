//! Clocks that disagree, across processes: one `ddblock` (or stock Laravel) process runs under
//! Debian's `faketime` two seconds ahead of or behind the others. With a clock-skew margin of 2 s
//! no contender takes a lock over before its holder's lease ends by the holder's own clock; with
//! the default margin (0, Laravel's own rule), and with stock Laravel's `add()`, one does.

mod common;

use std::process::Command as StdCommand;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::laravel::Php;
use common::{json_of, on_servers, scratch, unique, Ctx, Server};
use serde_json::Value;

/// `ddblock ARGS`, its clock `skew` off when given (`compat-tests/support/skew`).
fn ddblock(ctx: &Ctx, skew: Option<&str>, args: &[&str]) -> StdCommand {
    let mut c = ctx.skewed(skew);
    c.args(args);
    c
}

/// Runs `ddblock --json acquire NAME --ttl TTL` (no wait): the expiry written when it acquired.
fn try_acquire(
    ctx: &Ctx,
    skew: Option<&str>,
    margin: Option<&str>,
    name: &str,
    ttl: u32,
) -> Option<i64> {
    let ttl = ttl.to_string();
    let mut args = vec!["--json"];
    if let Some(m) = margin {
        args.extend(["--clock-skew-margin", m]);
    }
    args.extend(["acquire", name, "--ttl", &ttl]);
    let out = ddblock(ctx, skew, &args)
        .output()
        .expect("run ddblock (is faketime installed? compat-tests/setup.sh)");
    let (code, v) = json_of(&out, "ddblock acquire");
    match code {
        0 => Some(v["expires_at"].as_i64().expect("expires_at")),
        75 => None,
        _ => panic!("ddblock acquire exited {code}: {v}"),
    }
}

fn acquire(ctx: &Ctx, skew: Option<&str>, margin: Option<&str>, name: &str, ttl: u32) -> bool {
    try_acquire(ctx, skew, margin, name, ttl).is_some()
}

/// The wall clock in seconds.
fn wall() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

const TTL: u32 = 3;

/// A holder (its clock `holder_skew` seconds off) takes a `TTL`-second lock at .6 of a second;
/// its lease ends `TTL - 1` s after it sent the write, by its own monotonic clock (a second is
/// kept back for the whole-second expiry). The expiry is written by the holder's clock; a
/// contender whose clock is `contender_skew` off could take over, without a margin, from the true
/// time `expires_at + 1 - contender_skew` on (its whole-second `now` must pass the expiry); it
/// tries 0.1 s after that, while the holder's lease still runs (for a holder behind, or a
/// contender ahead). Returns whether the contender got the lock.
fn early_takeover(
    ctx: &Ctx,
    holder_skew: i64,
    contender_skew: i64,
    contender: impl FnOnce(&str) -> bool,
) -> bool {
    let name = unique("skew");
    let skew = |s: i64| (s != 0).then(|| format!("{s:+}s"));
    let frac = wall().fract();
    thread::sleep(Duration::from_secs_f64((1.6 - frac) % 1.0));
    let sent = Instant::now();
    let sent_wall = wall();
    let expires_at = try_acquire(ctx, skew(holder_skew).as_deref(), None, &name, TTL)
        .expect("the holder acquires a free lock");
    let lease_end = sent + Duration::from_secs(u64::from(TTL) - 1);
    let window = (expires_at + 1 - contender_skew) as f64;
    let try_at = sent + Duration::from_secs_f64(window + 0.1 - sent_wall);
    thread::sleep(try_at.saturating_duration_since(Instant::now()));
    let took = contender(&name);
    let done = Instant::now();
    assert!(
        done < lease_end,
        "the contender's try ended {:?} after the holder's lease: the machine is too loaded for \
         this test's timing",
        done - lease_end
    );
    took
}

fn a_clock_two_seconds_off_does_not_cut_a_lease_short(server: Server) {
    let ctx = Ctx::new(server);
    // A contender two seconds ahead, margin 2: held.
    assert!(!early_takeover(&ctx, 0, 2, |name| acquire(
        &ctx,
        Some("+2s"),
        Some("2"),
        name,
        TTL
    )));
    // A holder two seconds behind writes an expiry two seconds early; still held.
    assert!(!early_takeover(&ctx, -2, 0, |name| acquire(
        &ctx,
        None,
        Some("2"),
        name,
        TTL
    )));
}

fn without_the_margin_a_fast_clock_takes_over_early(server: Server) {
    // The control: the same moves with margin 0 do put two holders in, so the test above can fail.
    // Clocks three seconds off, not two: the contender's window before the holder's lease ends
    // is the skew less 1.5 s (see early_takeover), and a `ddblock` process started under
    // faketime on a loaded machine did not always fit in half a second.
    let ctx = Ctx::new(server);
    assert!(early_takeover(&ctx, 0, 3, |name| acquire(
        &ctx,
        Some("+3s"),
        Some("0"),
        name,
        TTL
    )));
    // The default margin is 0 (Laravel's own rule): the same as `--clock-skew-margin 0`.
    assert!(early_takeover(&ctx, -3, 0, |name| acquire(
        &ctx, None, None, name, TTL
    )));
}

/// Stock Laravel's `add()` has no margin: a PHP worker two seconds ahead takes a ddblock lock
/// over early. What ddblock's margin cannot fix on a shared table (docs/semantics.md).
fn stock_laravel_two_seconds_ahead_takes_over_early(server: Server) {
    let ctx = Ctx::new(server);
    let mut php = Php::start_skewed(&ctx, "laravel12", "app_", Some("+2s"));
    let host = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let php_now = php.call(serde_json::json!({"op": "now"}))["now"]
        .as_f64()
        .unwrap();
    assert!(php_now - host >= 1.0, "faketime did not skew PHP's clock");
    let took = early_takeover(&ctx, 0, 2, |name| php.acquire(name, i64::from(TTL), None).0);
    drop(php);
    assert!(
        took,
        "stock Laravel two seconds ahead did not take the lock over early"
    );
}

/// Three `ddblock run` workers loop on one lock, one of them with its clock `skew` off, each
/// holding it for 1.5 s of a 4 s ttl; the command records its start and end by the kernel's
/// uptime, which faketime does not touch. Returns the number of overlapping holds.
fn overlaps_under_load(ctx: &Ctx, skew: &str) -> usize {
    let name = unique("load");
    let dir = scratch();
    let record = dir.join("holds");
    let script = format!(
        "s=$(cut -d' ' -f1 /proc/uptime); sleep 1.5; e=$(cut -d' ' -f1 /proc/uptime); \
         echo \"$s $e\" >> '{}'",
        record.display()
    );
    let workers: Vec<_> = (0..3)
        .map(|w| {
            let mut cmds = Vec::new();
            for _ in 0..4 {
                let skewed = (w == 0).then_some(skew);
                cmds.push(ddblock(
                    ctx,
                    skewed,
                    &[
                        "run", &name, "--ttl", "4", "--wait", "60", "--", "sh", "-c", &script,
                    ],
                ));
            }
            thread::spawn(move || {
                for mut c in cmds {
                    let out = c.output().unwrap();
                    assert!(
                        out.status.success(),
                        "{}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let text = std::fs::read_to_string(&record).unwrap();
    let mut holds: Vec<(f64, f64)> = text
        .lines()
        .map(|l| {
            let (s, e) = l.split_once(' ').unwrap();
            (s.parse().unwrap(), e.parse().unwrap())
        })
        .collect();
    assert_eq!(holds.len(), 12, "every run held the lock once");
    holds.sort_by(|a, b| a.0.total_cmp(&b.0));
    holds.windows(2).filter(|w| w[1].0 < w[0].1).count()
}

fn workers_with_one_clock_two_seconds_off_never_overlap(server: Server) {
    let ctx = Ctx::new(server);
    let ahead = thread::scope(|s| {
        let ahead = s.spawn(|| overlaps_under_load(&ctx, "+2s"));
        let behind = overlaps_under_load(&ctx, "-2s");
        assert_eq!(behind, 0, "a worker 2 s behind overlapped another");
        ahead.join().unwrap()
    });
    assert_eq!(ahead, 0, "a worker 2 s ahead overlapped another");
}

/// `ddblock --json doctor --no-scan`, its clock `skew` off when given (`compat-tests/support/skew`,
/// libfaketime): the exit status and the report.
fn doctor(ctx: &Ctx, skew: Option<&str>, margin: Option<&str>) -> (i32, Value) {
    let mut args = vec!["--json"];
    if let Some(m) = margin {
        args.extend(["--clock-skew-margin", m]);
    }
    args.extend(["doctor", "--no-scan"]);
    let out = ddblock(ctx, skew, &args)
        .output()
        .expect("run ddblock doctor");
    json_of(&out, "ddblock doctor")
}

fn clock_check(report: &Value) -> (&str, &str) {
    let c = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "clock")
        .expect("a clock check");
    (c["status"].as_str().unwrap(), c["detail"].as_str().unwrap())
}

/// `doctor` measures this host's clock against the server's `Date` headers: in sync it passes; a
/// clock 5 s ahead (faketime) is proven beyond the ±0.5 s the default margin allows and fails the
/// check and the command; a clock 1 s ahead passes with a margin of 2 (±1.5 s).
fn doctor_measures_a_clock_past_the_margin(server: Server) {
    let ctx = Ctx::new(server);
    let (code, r) = doctor(&ctx, None, None);
    // In sync: ok, or warn when slow answers leave the interval wider than the allowance.
    assert!(["ok", "warn"].contains(&clock_check(&r).0), "{r}");
    assert_eq!(code, 0, "{r}");
    let low = r["clock"]["low"].as_f64().unwrap();
    let high = r["clock"]["high"].as_f64().unwrap();
    assert!(low <= 0.0 && 0.0 <= high, "in sync: {r}");
    assert_eq!(r["clock"]["allowed"], 0.5);

    let (code, r) = doctor(&ctx, Some("+5s"), None);
    let (status, detail) = clock_check(&r);
    assert_eq!(status, "fail", "{detail}");
    assert!(
        detail.contains("s ahead of DynamoDB's (between +"),
        "{detail}"
    );
    assert!(
        detail.ends_with("; allowed ±0.5 s with margin 0"),
        "{detail}"
    );
    let fix = r["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "clock")
        .unwrap()["fix"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        fix.contains("to at least 9 ") || fix.contains("to at least 10 "),
        "{fix}"
    );
    assert_ne!(code, 0, "a failed clock check fails doctor");
    let low = r["clock"]["low"].as_f64().unwrap();
    assert!((4.0..=5.1).contains(&low), "{r}");
    assert_eq!(r["healthy"], false);

    let (_, r) = doctor(&ctx, Some("-5s"), None);
    assert_eq!(clock_check(&r).0, "fail", "{r}");
    assert!(clock_check(&r).1.contains("s behind DynamoDB's"), "{r}");

    let (code, r) = doctor(&ctx, Some("+1s"), Some("2"));
    assert_eq!(clock_check(&r).0, "ok", "a margin of 2 allows ±1.5 s: {r}");
    assert_eq!(code, 0, "{r}");

    // A lock request's answer shows the same: the acquire warns once on stderr (and still works).
    let name = unique("warned");
    let out = ddblock(&ctx, Some("+5s"), &["acquire", &name, "--ttl", "5"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(
        err.matches("ddblock: warning: this host's clock is")
            .count(),
        1,
        "{err}"
    );
    assert!(
        err.contains("clock is between +") && err.contains(" s off DynamoDB's"),
        "ahead: {err}"
    );
    let out = ddblock(&ctx, None, &["acquire", &unique("in-sync"), "--ttl", "5"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("clock"), "no warning in sync: {err}");

    // `--log-format json`: the same warning as one JSON object; `--log-level off` (or
    // DDBLOCK_LOG=off): nothing; `--log-level debug`: what the lock did, never its owner.
    let name = unique("json");
    let args = ["--log-format", "json", "acquire", &name, "--ttl", "5"];
    let out = ddblock(&ctx, Some("+5s"), &args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<Value> = err
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert_eq!(lines[0]["level"], "warn", "{err}");
    assert_eq!(lines[0]["target"], "ddblock::dynamo::date", "{err}");
    assert!(lines[0]["message"]
        .as_str()
        .unwrap()
        .starts_with("this host's clock is"));
    let args = [
        "--log-level",
        "off",
        "acquire",
        &unique("quiet"),
        "--ttl",
        "5",
    ];
    let out = ddblock(&ctx, Some("+5s"), &args).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "",
        "off prints nothing"
    );
    let out = ddblock(
        &ctx,
        None,
        &["--json", "acquire", &unique("dbg"), "--ttl", "5"],
    )
    .env("DDBLOCK_LOG", "debug")
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let owner = json_of(&out, "ddblock acquire").1["owner"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(err.contains("ddblock: debug: acquired lock="), "{err}");
    assert!(!err.contains(&owner), "no owner in the events: {err}");

    // `--log-names hide` (DDBLOCK_LOG_NAMES=hide): the events say `<hidden>`, never the name.
    let secret = unique("secret-customer");
    let args = ["--log-names", "hide", "acquire", &secret, "--ttl", "5"];
    let out = ddblock(&ctx, None, &args)
        .env("DDBLOCK_LOG", "debug")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("acquired lock=<hidden>"), "{err}");
    assert!(!err.contains(&secret), "no lock name in the events: {err}");
}

on_servers!(
    sync a_clock_two_seconds_off_does_not_cut_a_lease_short,
    doctor_measures_a_clock_past_the_margin,
    without_the_margin_a_fast_clock_takes_over_early,
    stock_laravel_two_seconds_ahead_takes_over_early,
    workers_with_one_clock_two_seconds_off_never_overlap,
);
