//! The core's events in Python's `logging`. The core logs with `tracing`; with no tracing
//! subscriber installed, tracing's `log` feature hands each event to the `log` logger, which
//! pyo3-log forwards to the Python logger named after the event's module (`ddblock.dynamo.date`,
//! a child of `ddblock`, so a handler or level on `ddblock` takes them all).
//!
//! pyo3-log caches each Python logger and its effective level at the logger's first record, so
//! a disabled level costs no GIL afterwards; after changing the levels of ddblock's loggers at
//! run time, [`_refresh_logging`] (Python: `ddblock.refresh_logging()`) drops that cache.

use std::sync::OnceLock;

use pyo3::prelude::*;
use pyo3_log::{Caching, Logger, ResetHandle};

/// The installed logger's cache handle (none if another extension installed a `log` logger first).
static HANDLE: OnceLock<ResetHandle> = OnceLock::new();

/// Installs the bridge for ddblock's own crates (the package calls it at import; a second call
/// changes nothing).
#[pyfunction]
pub fn _install_logging(py: Python<'_>) -> PyResult<()> {
    if HANDLE.get().is_some() {
        return Ok(());
    }
    // Only ddblock's crates: the SDK's and hyper's own `log` records stay out of the application's
    // logs (their `tracing` spans are not ddblock's to forward).
    let logger = Logger::new(py, Caching::LoggersAndLevels)?
        .filter(log::LevelFilter::Off)
        .filter_target("ddblock".to_owned(), log::LevelFilter::Debug)
        .filter_target("ddblock_admin".to_owned(), log::LevelFilter::Debug);
    if let Ok(handle) = logger.install() {
        let _ = HANDLE.set(handle);
    }
    Ok(())
}

/// Forgets the cached Python loggers and levels: call after changing ddblock's log levels.
#[pyfunction]
pub fn _refresh_logging() {
    if let Some(h) = HANDLE.get() {
        h.reset();
    }
}
