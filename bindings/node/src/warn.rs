//! The core's warnings as Node process warnings. The core logs them with `tracing` (this host's
//! clock too far from DynamoDB's for the clock-skew margin, a lease lost, a clean-up that failed);
//! with no tracing subscriber installed, tracing's `log` feature hands each event to the `log`
//! logger set here, which passes those of ddblock's crates at warning level and above to the
//! handler `lib.js` registers (`process.emitWarning(message, 'DdblockWarning')`): Node prints them
//! on stderr unless the application listens for `'warning'` or runs with `--no-warnings`.
// Only JavaScript calls in here (through napi): nothing to use in the crate's unit-test build.
#![cfg_attr(test, allow(dead_code))]

use std::sync::OnceLock;

use log::{Level, LevelFilter, Log, Metadata, Record};
use napi::bindgen_prelude::Function;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;

/// The JavaScript handler, called on the main thread; weak, so it never keeps a process alive.
type Handler = ThreadsafeFunction<String, (), String, Status, false, true>;

/// The first environment's handler (a process has one `log` logger; a worker thread's later
/// registration changes nothing).
static HANDLER: OnceLock<Handler> = OnceLock::new();

/// Hands ddblock's warnings to [`HANDLER`].
struct Warnings;

impl Log for Warnings {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        m.level() <= Level::Warn && m.target().starts_with("ddblock")
    }

    fn log(&self, r: &Record<'_>) {
        if let (true, Some(h)) = (self.enabled(r.metadata()), HANDLER.get()) {
            // Non-blocking: a warning raised on a tokio worker never waits for the event loop.
            let _ = h.call(
                r.args().to_string(),
                ThreadsafeFunctionCallMode::NonBlocking,
            );
        }
    }

    fn flush(&self) {}
}

/// Registers the function each warning's message is passed to (lib.js, at load).
#[napi]
pub fn use_warning_handler(handler: Function<'_, String, ()>) -> napi::Result<()> {
    let tsfn = handler
        .build_threadsafe_function::<String>()
        .callee_handled::<false>()
        .weak::<true>()
        .build()?;
    if HANDLER.set(tsfn).is_ok() && log::set_logger(&Warnings).is_ok() {
        log::set_max_level(LevelFilter::Warn);
    }
    Ok(())
}
