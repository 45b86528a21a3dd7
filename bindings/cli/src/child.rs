//! The user's command (CMD) under `run` and `once`: the signals ddblock catches and passes on, the
//! child process (spawn, wait, stop), and CMD's end as ddblock's exit status (127 not found, 126
//! not executable, 128+N killed by signal N).
//!
//! CMD shares ddblock's process group so that the terminal's ^C reaches it; a signal the terminal
//! sent (to the whole group) is therefore not sent to CMD a second time.

use std::ffi::{OsStr, OsString};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::exfiltrator::WithOrigin;
use signal_hook::iterator::SignalsInfo;
use signal_hook::low_level::siginfo::Cause;
use tokio::sync::mpsc;

use crate::out::{self, EXIT_FAILURE};

/// A signal for ddblock, and whether to pass it on (false: the terminal already sent it to CMD).
pub struct Signal {
    pub number: i32,
    pub forward: bool,
}

/// The signals caught since [`catch_signals`], in the order they came.
pub type Signals = mpsc::UnboundedReceiver<Signal>;

/// Catches SIGINT/SIGTERM/SIGHUP from now on (their default action, dying, would leave the lock
/// or the claim held until its ttl) and delivers them on a channel.
fn catch_signals() -> std::io::Result<Signals> {
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

/// [`catch_signals`], or the exit status after saying why it could not (as `--json` asks).
pub fn signals(json: bool) -> Result<Signals, i32> {
    catch_signals().map_err(|e| out::fail(&format!("cannot install signal handlers: {e}"), json))
}

/// CMD and its arguments, as one line for messages.
pub fn command_text(command: &[OsString]) -> String {
    command
        .iter()
        .map(|s| s.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

/// CMD (`command[0]`) with its arguments, to add its environment to before [`spawn`].
pub fn command(command: &[OsString]) -> tokio::process::Command {
    let mut c = tokio::process::Command::new(&command[0]);
    c.args(&command[1..]);
    c
}

/// Starts CMD.
pub fn spawn(command: &mut tokio::process::Command) -> Result<Child, NotStarted> {
    let process = command.spawn().map_err(NotStarted)?;
    let pid = Pid(process.id().map(|p| p as libc::pid_t));
    Ok(Child { process, pid })
}

/// Why CMD could not be started.
pub struct NotStarted(std::io::Error);

impl NotStarted {
    /// Says so on stderr (`then`: what the caller did about it, e.g. "; claim given back") and
    /// returns the exit status: 127 when CMD is not found, 126 when it cannot be executed, else 1.
    pub fn report(&self, program: &OsStr, then: &str) -> i32 {
        let e = &self.0;
        eprintln!(
            "ddblock: cannot run `{}`: {e}{then}",
            program.to_string_lossy()
        );
        match e.kind() {
            std::io::ErrorKind::NotFound => 127,
            std::io::ErrorKind::PermissionDenied => 126,
            _ => EXIT_FAILURE,
        }
    }
}

/// CMD, running.
pub struct Child {
    process: tokio::process::Child,
    pid: Pid,
}

impl Child {
    /// Where to send CMD signals while it runs.
    pub fn pid(&self) -> Pid {
        self.pid
    }

    /// Waits for CMD to end (this reaps it: signal it only until then).
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.process.wait().await
    }

    /// Waits for CMD to end, passing on the signals meant for it meanwhile.
    pub async fn wait_forwarding(&mut self, signals: &mut Signals) -> std::io::Result<ExitStatus> {
        let pid = self.pid;
        loop {
            tokio::select! {
                st = self.process.wait() => break st,
                Some(sig) = signals.recv() => pid.forward(&sig),
            }
        }
    }
}

/// CMD's process id, for kill(2) while it has not been waited for.
#[derive(Debug, Clone, Copy)]
pub struct Pid(Option<libc::pid_t>);

impl Pid {
    /// Sends `signal` to CMD (nothing once CMD is gone: the id is `None` only if spawn gave none).
    pub fn send(self, signal: i32) {
        if let Some(pid) = self.0 {
            // SAFETY: kill(2) with a pid we spawned and have not reaped yet: the callers run in
            // the loop that ends when `Child::wait` returns, which is what reaps it.
            unsafe { libc::kill(pid, signal) };
        }
    }

    /// Passes a signal for ddblock on to CMD, unless the terminal already sent it there.
    pub fn forward(self, sig: &Signal) {
        if sig.forward {
            self.send(sig.number);
        }
    }
}

/// Sleeps until `at`; never resolves for `None` (a select branch guarded by `at.is_some()`).
pub async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// CMD's end as an exit status: its own, or 128+N when killed by signal N; 1 (said on stderr)
/// when waiting for it failed.
pub fn exit_code(status: std::io::Result<ExitStatus>, command: &[OsString]) -> i32 {
    match status {
        Ok(st) => st
            .code()
            .or_else(|| st.signal().map(|s| 128 + s))
            .unwrap_or(EXIT_FAILURE),
        Err(e) => {
            eprintln!("ddblock: lost track of `{}`: {e}", command_text(command));
            EXIT_FAILURE
        }
    }
}
