//! The once-only guard: `once` (claim, run CMD, mark done or give back) and `once-status`, the
//! core's `Store::once`, printed and mapped to exit statuses (docs/cli.md).

use std::ffi::OsString;

use clap::Args;
use ddblock::format::input::ttl_from_str;
use ddblock::{ClaimOutcome, OnceState, OnceStatus, Store};
use serde_json::{json, Value};

use crate::child::{self, command_text};
use crate::global::Global;
use crate::out::{self, print_json, EXIT_HELD, EXIT_OK};

/// `once`.
#[derive(Debug, Args)]
pub struct OnceArgs {
    /// Event id: a cache key (the claim counter is that cache entry), e.g. once:MESSAGE_ID
    pub event: String,
    /// How long the claim lasts, in whole seconds: longer than CMD runs (then another caller takes over)
    #[arg(long, value_name = "SECS", allow_negative_numbers = true)]
    pub ttl: String,
    /// How long a done event is remembered (redeliveries within it are skipped) [default: 86400, the core's]
    #[arg(long, value_name = "SECS", allow_negative_numbers = true)]
    pub done_ttl: Option<String>,
    /// The command and its arguments (use -- before a command starting with -)
    #[arg(required = true, trailing_var_arg = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// `once-status`.
#[derive(Debug, Args)]
pub struct OnceStatusArgs {
    /// Event id
    pub event: String,
}

fn status_json(event: &str, key: &str, st: &OnceStatus) -> Value {
    json!({
        "event": event,
        "key": key,
        "state": st.state.as_str(),
        "claims": st.claims,
        "expires_at": st.expires_at,
        "done_at": st.done_at,
    })
}

/// "is done (at 2026-… UTC), remembered until …" and the like.
fn status_text(st: &OnceStatus) -> String {
    let at = |t: Option<i64>| t.map_or("?".to_owned(), ddblock::time::utc);
    match st.state {
        OnceState::Free => "free: never claimed (or forgotten)".into(),
        OnceState::InProgress => format!(
            "in progress: claimed ({} callers so far), {}",
            st.claims.map_or("?".into(), |c| c.to_string()),
            out::until(st.expires_at)
        ),
        OnceState::Done => format!(
            "done at {}, remembered {}",
            at(st.done_at),
            out::until(st.expires_at)
        ),
        OnceState::GivenBack => {
            "given back by a failed handler: the next delivery claims it".into()
        }
        OnceState::Expired => format!(
            "expired at {}: the claim or done record lapsed; the next delivery claims it",
            at(st.expires_at)
        ),
    }
}

/// `ddblock once EVENT --ttl SECS [--done-ttl SECS] -- CMD`.
pub async fn once(store: &Store, g: &Global, a: &OnceArgs) -> ddblock::Result<i32> {
    let mut once = store.once(&a.event, ttl_from_str(&a.ttl)?)?;
    if let Some(t) = &a.done_ttl {
        once = once.with_done_ttl(ttl_from_str(t)?)?;
    }
    let mut signals = match child::signals(g.json) {
        Ok(rx) => rx,
        Err(code) => return Ok(code),
    };
    let command = command_text(&a.command);
    let claim = match once.claim().await? {
        ClaimOutcome::Claimed(c) => c,
        ClaimOutcome::Skipped(st) => {
            if g.json {
                let mut v = status_json(once.event_id(), once.key(), &st);
                v["ran"] = json!(false);
                print_json(&v);
            }
            eprintln!(
                "ddblock: event `{}` is {}; not running {command}",
                a.event,
                status_text(&st)
            );
            return Ok(match st.state {
                OnceState::Done => EXIT_OK,
                _ => EXIT_HELD,
            });
        }
    };
    // A signal that came while claiming: give the claim back rather than run.
    if let Ok(sig) = signals.try_recv() {
        let _ = claim.give_back().await;
        eprintln!(
            "ddblock: interrupted by signal {}; claim given back",
            sig.number
        );
        return Ok(128 + sig.number);
    }

    let mut child = match child::spawn(
        child::command(&a.command)
            .env("DDBLOCK_ONCE_EVENT", once.event_id())
            .env("DDBLOCK_ONCE_KEY", once.key()),
    ) {
        Ok(c) => c,
        Err(e) => {
            let _ = claim.give_back().await;
            return Ok(e.report(&a.command[0], "; claim given back"));
        }
    };
    let status = child.wait_forwarding(&mut signals).await;
    let code = child::exit_code(status, &a.command);
    // The core's rule: done after a command that succeeded, given back after one that failed.
    match (code == EXIT_OK, claim.finish(code == EXIT_OK).await) {
        (true, Ok(())) => Ok(EXIT_OK),
        (true, Err(e)) => Ok(out::error(&e, false)),
        (false, Ok(())) => {
            eprintln!(
                "ddblock: the command failed (exit {code}); the claim on event `{}` is given back \
                 to the next delivery",
                a.event
            );
            Ok(code)
        }
        (false, Err(e)) => {
            eprintln!(
                "ddblock: the command failed (exit {code}) and giving the claim back failed too \
                 ({}): {e}; it frees itself at its expiry",
                e.kind().as_str()
            );
            Ok(code)
        }
    }
}

/// `ddblock once-status EVENT`.
pub async fn once_status(store: &Store, json: bool, a: &OnceStatusArgs) -> ddblock::Result<i32> {
    // The ttl does not matter for reading.
    let once = store.once(&a.event, 1)?;
    let st = once.status().await?;
    if json {
        print_json(&status_json(once.event_id(), once.key(), &st));
    } else {
        println!(
            "event `{}` (key {}) is {}",
            a.event,
            once.key(),
            status_text(&st)
        );
    }
    Ok(EXIT_OK)
}
