//! What the binary says when something is wrong, and its help: one clear line on stderr (and the
//! error's kind in `--json`), exit 1 for an error and 2 for a bad command line, negative numbers
//! taken as values, unreachable and silent endpoints, and `--help` against docs/cli.md.

mod common;

use std::time::{Duration, Instant};

use common::{on_servers, Ctx, Server};
use ddblock::config::Front;
use serde_json::json;

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
    // front (compat-tests/conformance/bad-input.json), not a usage error.
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

/// No server needed: nothing listens on port 1.
#[test]
fn unreachable_endpoint_names_the_endpoint() {
    let ctx = Ctx::unserved("http://127.0.0.1:1");
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

/// A system without root certificates (a scratch container with the static musl CLI): an
/// `https://` endpoint is a `config` error, before any request, that says what to install (the
/// SDK's HTTPS client panicked while being built: "no valid root certificates parsed", exit 101
/// and a backtrace); an `http://` endpoint needs none and is served (before, the same panic).
#[test]
fn a_system_without_root_certificates_is_a_config_error() {
    let run = |endpoint: &str| {
        let out = Ctx::unserved(endpoint)
            .cmd()
            .args(["--json", "status", "x", "--max-attempts", "1"])
            .env("SSL_CERT_FILE", "/nonexistent/ca.pem")
            .env("SSL_CERT_DIR", "/nonexistent")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{stderr}");
        let (code, v) = common::json_of(&out, "ddblock --json status x");
        (
            code,
            v["error"]["kind"].clone(),
            v["error"]["message"].clone(),
        )
    };
    let (code, kind, msg) = run("https://127.0.0.1:1");
    assert_eq!((code, kind), (1, json!("config")));
    let msg = msg.as_str().unwrap();
    assert!(
        msg.contains("no root certificates") && msg.contains("SSL_CERT_FILE"),
        "{msg}"
    );
    // Plain HTTP reads no certificates: the request is sent (nothing listens: a transport error).
    let (code, kind, msg) = run("http://127.0.0.1:1");
    assert_eq!((code, kind), (1, json!("transport")), "{msg}");
}

/// `--attempt-timeout` reaches the core: against an endpoint that accepts connections and never
/// answers, one attempt ends after it (the default is 3 s); 0 is refused by the core's rule.
#[test]
fn attempt_timeout_flag_bounds_each_request() {
    // The kernel completes the handshake of a listener that never accepts: requests hang.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let ctx = Ctx::unserved(format!("http://{}", silent.local_addr().unwrap()));
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

/// `--help` names every command, the environment variable of every setting and the exit
/// statuses; docs/cli.md has a section for each command, a row for each exit status, and the
/// flags that change what a command does.
#[test]
fn help_lists_every_command_and_exit_status() {
    let out = assert_cmd::Command::new(common::bin())
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    // The first word of each indented line under "TITLE:" ("  run   Run CMD ...", "  75  the ...").
    let first_words = |title: &str| -> Vec<String> {
        let (_, section) = help
            .split_once(&format!("\n{title}:\n"))
            .unwrap_or_else(|| panic!("no {title} in --help: {help}"));
        section
            .lines()
            .take_while(|l| l.starts_with("  "))
            .filter_map(|l| l.split_whitespace().next())
            .map(String::from)
            .collect()
    };
    let commands: Vec<String> = first_words("Commands")
        .into_iter()
        .filter(|c| c != "help")
        .collect();
    assert_eq!(
        commands.join(" "),
        "run acquire release refresh force-release status list sweep doctor create-table get put \
         once once-status"
    );
    let statuses: Vec<String> = first_words("Exit status")
        .into_iter()
        .filter(|w| w.parse::<u8>().is_ok())
        .collect();
    assert_eq!(statuses, ["0", "1", "2", "3", "75", "76"]);
    for s in ddblock::config::SETTINGS {
        if let (Some(_), Some(env)) = (s.name_in(Front::Cli), s.env) {
            assert!(help.contains(env), "{env} missing from --help");
        }
    }
    // docs/cli.md documents the same commands and exit statuses.
    let doc = std::fs::read_to_string(common::root().join("docs/cli.md")).unwrap();
    for c in &commands {
        assert!(
            doc.contains(&format!("### `ddblock {c} ")),
            "docs/cli.md lacks a section for {c}"
        );
    }
    for n in &statuses {
        assert!(
            doc.contains(&format!("| {n} |")),
            "docs/cli.md lacks exit status {n}"
        );
    }
    for s in "--on-lease-lost --attempt-timeout --heartbeat-interval --json --raw-key --heartbeat"
        .split(' ')
    {
        assert!(doc.contains(s), "docs/cli.md lacks {s}");
    }
}

on_servers!(
    sync
    errors_are_one_clear_line,
    negative_numbers_are_values,
);
