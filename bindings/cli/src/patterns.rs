//! The once-only guard (`once`, `once-status`) and compare-and-set (`get --with-version`,
//! `put --if-version`): the core's `Store::once` and `Store::get_versioned`/`put_if_version`,
//! printed and mapped to exit statuses (docs/cli.md).

use std::os::unix::process::ExitStatusExt;

use ddblock::format::input::ttl_from_str;
use ddblock::{CasOutcome, ClaimOutcome, OnceState, OnceStatus, PhpValue, Store};
use serde_json::{json, Value};

use crate::out::{self, print_json};
use crate::run::catch_signals;
use crate::{
    GetArgs, Global, OnceArgs, OnceStatusArgs, PutArgs, EXIT_CONFLICT, EXIT_FAILURE, EXIT_HELD,
    EXIT_OK,
};

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
    let mut signals = match catch_signals() {
        Ok(rx) => rx,
        Err(e) => {
            return Ok(out::fail(
                &format!("cannot install signal handlers: {e}"),
                g.json,
            ))
        }
    };
    let command = a
        .command
        .iter()
        .map(|s| s.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ");
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

    let mut child = match tokio::process::Command::new(&a.command[0])
        .args(&a.command[1..])
        .env("DDBLOCK_ONCE_EVENT", once.event_id())
        .env("DDBLOCK_ONCE_KEY", once.key())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            let _ = claim.give_back().await;
            eprintln!(
                "ddblock: cannot run `{}`: {e}; claim given back",
                a.command[0].to_string_lossy()
            );
            return Ok(match e.kind() {
                std::io::ErrorKind::NotFound => 127,
                std::io::ErrorKind::PermissionDenied => 126,
                _ => EXIT_FAILURE,
            });
        }
    };
    let pid = child.id().map(|p| p as libc::pid_t);
    let status = loop {
        tokio::select! {
            st = child.wait() => break st,
            Some(sig) = signals.recv() => {
                if let (true, Some(pid)) = (sig.forward, pid) {
                    // SAFETY: kill(2) with a pid we spawned and have not reaped yet.
                    unsafe { libc::kill(pid, sig.number) };
                }
            }
        }
    };
    let code = match status {
        Ok(st) => st
            .code()
            .or_else(|| st.signal().map(|s| 128 + s))
            .unwrap_or(EXIT_FAILURE),
        Err(e) => {
            eprintln!("ddblock: lost track of `{command}`: {e}");
            EXIT_FAILURE
        }
    };
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

/// `ddblock get KEY --with-version`: the version on the first line, then the value.
pub async fn get_versioned(store: &Store, json: bool, a: &GetArgs) -> ddblock::Result<i32> {
    let table_key = store.cache_key(&a.key)?;
    let read = store.get_versioned(&a.key).await?;
    if json {
        print_json(&json!({
            "key": a.key,
            "table_key": table_key,
            "found": read.value.is_some(),
            "value": read.value.as_ref().map_or(Value::Null, out::php_to_json),
            "version": read.version,
        }));
    } else {
        println!("{}", read.version);
    }
    Ok(match &read.value {
        Some(v) => {
            if !json {
                println!("{}", out::php_text(v));
            }
            EXIT_OK
        }
        None => {
            if !json {
                eprintln!(
                    "ddblock: `{}` (key {table_key}) is not in the cache (missing or expired); version {}",
                    a.key, read.version
                );
            }
            EXIT_FAILURE
        }
    })
}

/// `ddblock put KEY VALUE --ttl SECS --if-version V`.
pub async fn put_if_version(
    store: &Store,
    json: bool,
    a: &PutArgs,
    value: &PhpValue,
    ttl: i64,
    version: &str,
) -> ddblock::Result<i32> {
    let table_key = store.cache_key(&a.key)?;
    let expected = ddblock::cas::version_from_str(version)?;
    let outcome = store.put_if_version(&a.key, value, ttl, expected).await?;
    if json {
        print_json(&json!({
            "key": a.key,
            "table_key": table_key,
            "stored": outcome.version().is_some(),
            "ttl": ttl,
            "forever": false,
            "if_version": expected,
            "version": outcome.version(),
        }));
    }
    Ok(match outcome {
        CasOutcome::Written { version } => {
            if !json {
                println!("stored `{}` (key {table_key}), version {version}", a.key);
            }
            EXIT_OK
        }
        CasOutcome::Conflict => {
            eprintln!(
                "ddblock: `{}` (key {table_key}) is no longer at version {expected}: someone else \
                 wrote it; nothing stored (read it again with `get --with-version`)",
                a.key
            );
            EXIT_CONFLICT
        }
    })
}
