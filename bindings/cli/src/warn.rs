//! The core's warnings on stderr. The core logs them with `tracing` (this host's clock too far
//! from DynamoDB's for the clock-skew margin, a lease lost, a clean-up that failed); with no
//! tracing subscriber installed, tracing's `log` feature hands each event to the `log` logger set
//! here, which prints those of ddblock's own crates at warning level and above.

use log::{Level, LevelFilter, Log, Metadata, Record};

/// Prints ddblock's warnings as `ddblock: warning: ...` lines.
struct Stderr;

impl Log for Stderr {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        m.level() <= Level::Warn && m.target().starts_with("ddblock")
    }

    fn log(&self, r: &Record<'_>) {
        if self.enabled(r.metadata()) {
            eprintln!("ddblock: warning: {}", r.args());
        }
    }

    fn flush(&self) {}
}

/// Installs the logger (once; a second call changes nothing).
pub fn init() {
    if log::set_logger(&Stderr).is_ok() {
        log::set_max_level(LevelFilter::Warn);
    }
}
