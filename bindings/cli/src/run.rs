//! `ddblock run NAME --ttl SECS [--wait SECS] [--heartbeat] -- CMD [ARGS...]`: flock(1) for a lock
//! shared with Laravel. Acquire, run CMD, release, exit with CMD's status.
//!
//! Signals: SIGINT, SIGTERM and SIGHUP sent to ddblock with kill(2) are passed on to CMD, and the
//! lock is released once CMD exits. The same signals coming from the terminal (^C, hangup) are
//! sent by the kernel to the whole foreground process group, CMD included, so they are not sent a
//! second time. A signal while waiting for the lock stops waiting (exit 128+N).
//!
//! The end of the lease is the core's (`Held::finish`): a lease lost under `--heartbeat` (a
//! refresh found the lock no longer ours, or CMD outlasted the lease) stops CMD by default: SIGTERM to CMD, as a forwarded signal is sent
//! (CMD shares ddblock's process group so that the terminal's ^C reaches it, so the group itself
//! is not signalled), SIGKILL after `--kill-after`, then exit 76. `--on-lease-lost warn` only
//! says so on stderr.

use std::os::unix::process::ExitStatusExt;

use ddblock::{AcquireOutcome, Store, Wait};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::exfiltrator::WithOrigin;
use signal_hook::iterator::SignalsInfo;
use signal_hook::low_level::siginfo::Cause;
use tokio::sync::mpsc;

use crate::cmd::{acquire_json, held_message};
use crate::out::{self, print_json};
use crate::{Global, OnLeaseLost, RunArgs, EXIT_FAILURE, EXIT_HELD, EXIT_LEASE_LOST};

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

/// Runs the command under the lock (the core's `enter`, then `Held::finish`, which decides the
/// end of the lease); returns the exit status.
pub async fn run(store: &Store, g: &Global, a: &RunArgs) -> ddblock::Result<i32> {
    let lock = store.lock(&a.name, ddblock::format::input::ttl_from_str(&a.ttl)?)?;
    let wait = Wait::parse(&a.wait)?;
    let mut signals = match catch_signals() {
        Ok(rx) => rx,
        Err(e) => {
            return Ok(out::fail(
                &format!("cannot install signal handlers: {e}"),
                g.json,
            ))
        }
    };

    let entered = tokio::select! {
        r = lock.clone().enter_kept(wait, a.heartbeat) => r,
        Some(sig) = signals.recv() => {
            // Dropping the acquire deletes its write if it landed (the core's cancellation); the
            // conditional release is safe either way.
            let _ = lock.release().await;
            eprintln!("ddblock: interrupted by signal {} while waiting for lock `{}`", sig.number, a.name);
            return Ok(128 + sig.number);
        }
    };
    let held = match entered {
        Ok(held) => held,
        Err(ddblock::Error::LockTimeout {
            holder: Some(h), ..
        }) => {
            if g.json {
                print_json(&acquire_json(&lock, &AcquireOutcome::Held((*h).clone())));
            }
            eprintln!(
                "ddblock: {}; not running {}",
                held_message(&a.name, &h),
                command_text(a)
            );
            return Ok(EXIT_HELD);
        }
        Err(e) => return Err(e),
    };
    let lock = held.lock();

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
            finish(held, a, false).await;
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
    let stop_on_loss = a.on_lease_lost == OnLeaseLost::Stop;
    let mut reported = false;
    let mut kill_at: Option<tokio::time::Instant> = None;

    let status = {
        // Never resolves without --heartbeat.
        let lease_lost = held.lease().lost();
        tokio::pin!(lease_lost);
        loop {
            tokio::select! {
                st = child.wait() => break st,
                Some(sig) = signals.recv() => {
                    if sig.forward {
                        send(pid, sig.number);
                    }
                }
                reason = &mut lease_lost, if !reported => {
                    if stop_on_loss {
                        eprintln!(
                            "ddblock: LOCK LOST: lock `{}`: {reason}. Stopping the command (SIGTERM, \
                             then SIGKILL after {}).",
                            a.name,
                            ddblock::time::human(a.kill_after)
                        );
                        send(pid, libc::SIGTERM);
                        kill_at = Some(tokio::time::Instant::now() + a.kill_after);
                    } else {
                        eprintln!(
                            "ddblock: LOCK LOST: lock `{}`: {reason}. The command keeps running \
                             WITHOUT the lock.",
                            a.name
                        );
                    }
                    reported = true;
                }
                () = sleep_until(kill_at), if kill_at.is_some() => {
                    eprintln!(
                        "ddblock: the command did not stop within {} of SIGTERM: SIGKILL",
                        ddblock::time::human(a.kill_after)
                    );
                    send(pid, libc::SIGKILL);
                    kill_at = None;
                }
            }
        }
    };
    let lost = finish(held, a, reported).await;
    if lost && a.heartbeat && stop_on_loss {
        return Ok(EXIT_LEASE_LOST);
    }

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

/// Sends `signal` to CMD (nothing once CMD is gone: `pid` is `None` only if spawn gave no id).
fn send(pid: Option<libc::pid_t>, signal: i32) {
    if let Some(pid) = pid {
        // SAFETY: kill(2) with a pid we spawned and have not reaped yet: the callers run in the
        // loop that ends when `child.wait()` returns, which is what reaps it.
        unsafe { libc::kill(pid, signal) };
    }
}

/// Sleeps until `at`; never resolves for `None` (a select branch guarded by `at.is_some()`).
async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Ends the lease after CMD by the core's rule ([`ddblock::Held::finish`]) and says on stderr
/// what went wrong: a lease lost while CMD ran (unless already `reported`), a failed release.
/// True when the lease was lost.
async fn finish(held: ddblock::Held, a: &RunArgs, reported: bool) -> bool {
    match held.finish().await {
        Ok(()) => false,
        Err(ddblock::Error::LeaseLost { reason, .. }) => {
            if !reported {
                let verdict = match (a.heartbeat, a.on_lease_lost) {
                    (false, _) => "use --heartbeat or a longer --ttl",
                    (true, OnLeaseLost::Stop) => {
                        "the command ended, but not all of it under the lock"
                    }
                    (true, OnLeaseLost::Warn) => "the command ran WITHOUT the lock for a while",
                };
                let what = if a.heartbeat { "LOCK LOST" } else { "warning" };
                eprintln!(
                    "ddblock: {what}: lock `{}` (ttl {} s): {reason}; {verdict}",
                    a.name,
                    a.ttl.trim()
                );
            }
            true
        }
        Err(e) => {
            eprintln!(
                "ddblock: could not release lock `{}` ({}): {}; it frees itself at its expiry",
                a.name,
                e.kind().as_str(),
                e.to_string()
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            false
        }
    }
}
