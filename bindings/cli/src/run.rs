//! `ddblock run NAME --ttl SECS [--wait SECS] [--heartbeat] -- CMD [ARGS...]`: flock(1) for a lock
//! shared with Laravel. Acquire, run CMD, release, exit with CMD's status.
//!
//! Signals: SIGINT, SIGTERM and SIGHUP sent to ddblock with kill(2) are passed on to CMD, and the
//! lock is released once CMD exits. The same signals coming from the terminal (^C, hangup) are
//! sent by the kernel to the whole foreground process group, CMD included, so they are not sent a
//! second time. A signal while waiting for the lock stops waiting (exit 128+N).
//!
//! The end of the lease is the core's (`Held::finish`): a lease lost under `--heartbeat` (a
//! refresh found the lock no longer ours, or CMD outlasted the lease) stops CMD by default:
//! SIGTERM to CMD, as a forwarded signal is sent (CMD shares ddblock's process group so that the
//! terminal's ^C reaches it, so the group itself is not signalled), SIGKILL after `--kill-after`,
//! then exit 76. `--on-lease-lost warn` only says so on stderr. The child process itself is
//! `child.rs`'s.

use std::ffi::OsString;
use std::time::Duration;

use clap::{Args, ValueEnum};
use ddblock::format::input::ttl_from_str;
use ddblock::{AcquireOutcome, Store};

use crate::child::{self, command_text};
use crate::global::{parse_secs, Global, WaitArg};
use crate::out::{acquire_json, held_message, print_json, shell, EXIT_HELD, EXIT_LEASE_LOST};

/// `run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Lock name (as given to Laravel's Cache::lock)
    pub name: String,
    /// Lock ttl in whole seconds (0 means Laravel's default of 86400)
    #[arg(long, value_name = "SECS", allow_negative_numbers = true)]
    pub ttl: String,
    #[command(flatten)]
    pub wait: WaitArg,
    /// Refresh the lock every ttl/3 (--heartbeat-interval) while CMD runs; if the lease is lost, stop CMD and exit 76
    #[arg(long)]
    pub heartbeat: bool,
    /// What a lost lease does under --heartbeat: stop (SIGTERM to CMD, SIGKILL after --kill-after; exit 76) or warn (a line on stderr; CMD keeps running, exit with its status)
    #[arg(
        long,
        value_name = "WHAT",
        default_value = "stop",
        requires = "heartbeat"
    )]
    pub on_lease_lost: OnLeaseLost,
    /// Seconds between the SIGTERM and the SIGKILL that stop CMD after a lost lease
    #[arg(long, value_name = "SECS", default_value = "5", value_parser = parse_secs, allow_negative_numbers = true)]
    pub kill_after: Duration,
    /// The command and its arguments (use -- before a command starting with -)
    #[arg(required = true, trailing_var_arg = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// What `run --heartbeat` does when the lease is lost while CMD runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnLeaseLost {
    /// SIGTERM to CMD, SIGKILL after --kill-after, exit 76.
    Stop,
    /// One line on stderr; CMD keeps running without the lock; exit with CMD's status.
    Warn,
}

/// Runs the command under the lock (the core's `enter`, then `Held::finish`, which decides the
/// end of the lease); returns the exit status.
pub async fn run(store: &Store, g: &Global, a: &RunArgs) -> ddblock::Result<i32> {
    let lock = store.lock(&a.name, ttl_from_str(&a.ttl)?)?;
    let wait = a.wait.parse()?;
    let mut signals = match child::signals(g.json) {
        Ok(rx) => rx,
        Err(code) => return Ok(code),
    };

    let entered = tokio::select! {
        r = lock.clone().enter_kept(wait, a.heartbeat) => r,
        Some(sig) = signals.recv() => {
            // Dropping the acquire deletes its write if it landed (the core's cancellation); the
            // conditional release is safe either way.
            let _ = lock.release().await;
            eprintln!("ddblock: interrupted by signal {} while waiting for lock {}", sig.number, shell(&a.name));
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
                command_text(&a.command)
            );
            return Ok(EXIT_HELD);
        }
        Err(e) => return Err(e),
    };
    let lock = held.lock();

    let mut command = child::command(&a.command);
    command
        .env("DDBLOCK_LOCK_NAME", lock.name())
        .env("DDBLOCK_LOCK_KEY", lock.key())
        .env("DDBLOCK_LOCK_OWNER", lock.owner());
    // The fencing token, for the command to send with its writes to the protected resource.
    match lock.fence() {
        Some(f) => command.env("DDBLOCK_FENCE", f.to_string()),
        None => command.env_remove("DDBLOCK_FENCE"),
    };
    let mut child = match child::spawn(&mut command) {
        Ok(c) => c,
        Err(e) => {
            finish(held, a, false).await;
            return Ok(e.report(&a.command[0], ""));
        }
    };
    let pid = child.pid();
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
                Some(sig) = signals.recv() => pid.forward(&sig),
                reason = &mut lease_lost, if !reported => {
                    if stop_on_loss {
                        eprintln!(
                            "ddblock: LOCK LOST: lock {}: {reason}. Stopping the command (SIGTERM, \
                             then SIGKILL after {}).",
                            shell(&a.name),
                            ddblock::time::human(a.kill_after)
                        );
                        pid.send(libc::SIGTERM);
                        kill_at = Some(tokio::time::Instant::now() + a.kill_after);
                    } else {
                        eprintln!(
                            "ddblock: LOCK LOST: lock {}: {reason}. The command keeps running \
                             WITHOUT the lock.",
                            shell(&a.name)
                        );
                    }
                    reported = true;
                }
                () = child::sleep_until(kill_at), if kill_at.is_some() => {
                    eprintln!(
                        "ddblock: the command did not stop within {} of SIGTERM: SIGKILL",
                        ddblock::time::human(a.kill_after)
                    );
                    pid.send(libc::SIGKILL);
                    kill_at = None;
                }
            }
        }
    };
    let lost = finish(held, a, reported).await;
    if lost && a.heartbeat && stop_on_loss {
        return Ok(EXIT_LEASE_LOST);
    }

    Ok(child::exit_code(status, &a.command))
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
                    "ddblock: {what}: lock {} (ttl {} s): {reason}; {verdict}",
                    shell(&a.name),
                    a.ttl.trim()
                );
            }
            true
        }
        Err(e) => {
            eprintln!(
                "ddblock: could not release lock {} ({}): {}; it frees itself at its expiry",
                shell(&a.name),
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
