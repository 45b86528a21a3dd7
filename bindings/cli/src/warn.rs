//! The core's events on stderr. The core logs with `tracing` (warnings: this host's clock too far
//! from DynamoDB's for the clock-skew margin, a lease lost, a clean-up that failed; debug events:
//! what each lock did); with no tracing subscriber installed, tracing's `log` feature hands each
//! event to the `log` logger set here, which prints those of ddblock's own crates from
//! `--log-level` (`DDBLOCK_LOG`, default `warn`) up, as text or as one JSON object a line
//! (`--log-format json`: `level`, `target`, `message`).

use std::sync::OnceLock;

use log::{Level, LevelFilter, Log, Metadata, Record};

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// `ddblock: warning: MESSAGE` lines.
    Text,
    /// One JSON object a line: `{"level", "target", "message"}`.
    Json,
}

/// `--log-level`: the least severe event printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[allow(missing_docs)]
pub enum Threshold {
    Off,
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

impl Threshold {
    fn filter(self) -> LevelFilter {
        match self {
            Threshold::Off => LevelFilter::Off,
            Threshold::Error => LevelFilter::Error,
            Threshold::Warn => LevelFilter::Warn,
            Threshold::Info => LevelFilter::Info,
            Threshold::Debug => LevelFilter::Debug,
            Threshold::Trace => LevelFilter::Trace,
        }
    }
}

/// Prints ddblock's events on stderr.
struct Stderr {
    level: LevelFilter,
    format: Format,
}

impl Log for Stderr {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        m.level() <= self.level && m.target().starts_with("ddblock")
    }

    fn log(&self, r: &Record<'_>) {
        if !self.enabled(r.metadata()) {
            return;
        }
        match self.format {
            Format::Text => {
                let word = match r.level() {
                    Level::Error => "error",
                    Level::Warn => "warning",
                    Level::Info => "info",
                    Level::Debug => "debug",
                    Level::Trace => "trace",
                };
                eprintln!("ddblock: {word}: {}", r.args());
            }
            Format::Json => eprintln!(
                "{}",
                serde_json::json!({
                    "level": r.level().as_str().to_ascii_lowercase(),
                    "target": r.target(),
                    "message": r.args().to_string(),
                })
            ),
        }
    }

    fn flush(&self) {}
}

/// Installs the logger (once; a second call changes nothing).
pub fn init(level: Threshold, format: Format) {
    static LOGGER: OnceLock<Stderr> = OnceLock::new();
    let logger = LOGGER.get_or_init(|| Stderr {
        level: level.filter(),
        format,
    });
    if log::set_logger(logger).is_ok() {
        log::set_max_level(logger.level);
    }
}
