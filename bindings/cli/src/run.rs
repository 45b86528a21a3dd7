//! `ddblock run NAME --ttl SECS [--wait SECS] [--heartbeat] -- CMD [ARGS...]`: flock(1) for a lock
//! shared with Laravel. Acquire, run CMD, release, exit with CMD's status.
//!
//! Signals: SIGINT, SIGTERM and SIGHUP sent to ddblock with kill(2) are passed on to CMD, and the
//! lock is released once CMD exits. The same signals coming from the terminal (^C, hangup) are
//! sent by the kernel to the whole foreground process group, CMD included, so they are not sent a
//! second time. A signal while waiting for the lock stops waiting (exit 128+N).

use std::os::unix::process::ExitStatusExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use ddblock::{AcquireOutcome, Lock, ReleaseOutcome, Store};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::exfiltrator::WithOrigin;
use signal_hook::iterator::SignalsInfo;
use signal_hook::low_level::siginfo::Cause;
use tokio::sync::mpsc;

use crate::cmd::{acquire_json, held_message, try_acquire};
use crate::out::{self, print_json};
use crate::{Global, RunArgs, EXIT_FAILURE, EXIT_HELD};

/// A signal for ddblock, and whether to pass it on (false: the terminal already sent it to CMD).
pub(crate) struct Signal {
    pub(crate) number: i32,
    pub(crate) forward: bool,
}

/// Catches SIGINT/SIGTERM/SIGHUP from now on (their default action, dying, would leave the lock
/// held until its ttl) and delivers them on a channel.
pub(crate) fn catch_signals() -> std::io::Result<mpsc::UnboundedReceiver<Signal>> {
    let mut signals = SignalsInfo::<WithOrigin>::new([SIGINT, SIGTERM, SIGHUP])?;
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::Builder::new()
        .name("ddblock-signals".into())
        .spawn(move || {
            for origin in signals.forever() {
                let sig = Signal {
                    number: origin.signal,
                    forward: !matches!(origin.cause, Cause::Kernel),
                };
                if tx.send(sig).is_err() {
                    break;
                }
            }
        })?;
    Ok(rx)
}

fn command_text(a: &RunArgs) -> String {
    a.command
        .iter()
        .map(|s| s.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs the command under the lock; returns the exit status.
pub async fn run(store: &Store, g: &Global, a: &RunArgs) -> ddblock::Result<i32> {
    let lock = store.lock(&a.name, ddblock::format::input::ttl_from_str(&a.ttl)?)?;
    let mut signals = match catch_signals() {
        Ok(rx) => rx,
        Err(e) => {
            return Ok(out::fail(
                &format!("cannot install signal handlers: {e}"),
                g.json,
            ))
        }
    };

    let outcome = tokio::select! {
        r = try_acquire(&lock, a.wait) => r?,
        Some(sig) = signals.recv() => {
            // Our put may have landed before the signal: a conditional release is safe either way.
            let _ = lock.release().await;
            eprintln!("ddblock: interrupted by signal {} while waiting for lock `{}`", sig.number, a.name);
            return Ok(128 + sig.number);
        }
    };
    let expires_at = match &outcome {
        AcquireOutcome::Acquired { expires_at, .. } => *expires_at,
        AcquireOutcome::Held(h) => {
            if g.json {
                print_json(&acquire_json(&lock, &outcome));
            }
            eprintln!(
                "ddblock: {}; not running {}",
                held_message(&a.name, h),
                command_text(a)
            );
            return Ok(EXIT_HELD);
        }
    };

    let mut command = tokio::process::Command::new(&a.command[0]);
    command
        .args(&a.command[1..])
        .env("DDBLOCK_LOCK_NAME", lock.name())
        .env("DDBLOCK_LOCK_KEY", lock.key())
        .env("DDBLOCK_LOCK_OWNER", lock.owner());
    // The fencing token, for the command to send with its writes to the protected resource.
    match lock.fence() {
        Some(f) => command.env("DDBLOCK_FENCE", f.to_string()),
        None => command.env_remove("DDBLOCK_FENCE"),
    };
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => {
            release(&lock, a, None, false).await;
            eprintln!(
                "ddblock: cannot run `{}`: {e}",
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

    let lost = Arc::new(AtomicBool::new(false));
    let heartbeat = a
        .heartbeat
        .then(|| tokio::spawn(watch_lease(lock.heartbeat(), lock.clone(), lost.clone())));

    let status = loop {
        tokio::select! {
            st = child.wait() => break st,
            Some(sig) = signals.recv() => {
                if let (true, Some(pid)) = (sig.forward, pid) {
                    // SAFETY: kill(2) with a pid we spawned and have not reaped yet (wait() has not returned).
                    unsafe { libc::kill(pid, sig.number) };
                }
            }
        }
    };
    if let Some(h) = heartbeat {
        h.abort();
        let _ = h.await;
    }
    let fixed_expiry = (!a.heartbeat).then_some(expires_at);
    release(&lock, a, fixed_expiry, lost.load(Ordering::SeqCst)).await;

    Ok(match status {
        Ok(st) => st
            .code()
            .or_else(|| st.signal().map(|s| 128 + s))
            .unwrap_or(EXIT_FAILURE),
        Err(e) => {
            eprintln!("ddblock: lost track of `{}`: {e}", command_text(a));
            EXIT_FAILURE
        }
    })
}

/// Keeps the core's heartbeat running until aborted; says loudly when the lease is lost.
async fn watch_lease(heartbeat: ddblock::lock::Heartbeat, lock: Lock, lost: Arc<AtomicBool>) {
    let reason = heartbeat.lost().await;
    lost.store(true, Ordering::SeqCst);
    eprintln!(
        "ddblock: LOCK LOST: lock `{}`: {reason}. The command keeps running WITHOUT the lock.",
        lock.name()
    );
}

/// Releases after CMD; warns when the lock lapsed while CMD ran (`expires_at`: the expiry taken
/// at acquire, `None` with a heartbeat, whose own messages cover that).
async fn release(lock: &Lock, a: &RunArgs, expires_at: Option<i64>, lost_reported: bool) {
    let hint = if a.heartbeat {
        ""
    } else {
        "; use --heartbeat or a longer --ttl"
    };
    let lapsed = format!(
        "ddblock: warning: lock `{}` expired (ttl {} s) while the command ran",
        a.name,
        lock.ttl_secs()
    );
    match lock.release().await {
        Ok(ReleaseOutcome::Released) => {
            if let Some(e) = expires_at.filter(|e| out::now() > *e) {
                eprintln!(
                    "{lapsed}: others could have taken it from {}{hint}",
                    ddblock::time::utc(e + 1)
                );
            }
        }
        Ok(ReleaseOutcome::NotHeld) if !lost_reported => {
            eprintln!("{lapsed} and is gone{hint}")
        }
        Ok(ReleaseOutcome::HeldByOther(h)) if !lost_reported => {
            eprintln!("{lapsed} and is now held by {}{hint}", out::holder_text(&h))
        }
        Ok(_) => {}
        Err(e) => eprintln!(
            "ddblock: could not release lock `{}`: {}; it frees itself at its expiry",
            a.name,
            e.to_string()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        ),
    }
}
