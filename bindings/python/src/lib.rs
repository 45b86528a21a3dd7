//! `ddblock._native`: the Python binding of the ddblock core. It holds core objects and
//! converts types and errors, nothing else; every operation returns a `Pending` that the
//! pure-Python package (bindings/python/python/ddblock/) waits for (`Store`) or awaits
//! (`AsyncStore`).

mod cas;
mod convert;
mod errors;
mod holder;
mod lock;
mod logs;
mod metrics;
mod once;
mod pending;
mod runtime;
mod store;

use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// PHP `serialize()` of a Python value (see the value mapping in docs/python.md).
#[pyfunction]
fn serialize<'py>(py: Python<'py>, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let v = convert::to_php(value)?;
    Ok(PyBytes::new(py, &ddblock::codec::serialize(&v)))
}

/// PHP `unserialize()` into a Python value (objects become `PhpObject`, nothing is instantiated).
#[pyfunction]
fn unserialize<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let bytes: Vec<u8> = match data.extract::<String>() {
        Ok(s) => s.into_bytes(),
        Err(_) => data.extract::<Vec<u8>>()?,
    };
    let v = ddblock::codec::unserialize(&bytes).map_err(|e| errors::to_py(e.into()))?;
    convert::to_py(py, &v)
}

/// `(kind, exception class)` for every error kind of the core.
#[pyfunction]
fn _error_kinds() -> Vec<(&'static str, &'static str)> {
    ddblock::ErrorKind::ALL
        .iter()
        .map(|k| (k.as_str(), errors::class_name(*k)))
        .collect()
}

/// The exception a sample core error of `kind` becomes (tests of the mapping).
#[pyfunction]
fn _sample_error(py: Python<'_>, kind: &str) -> PyResult<Py<PyAny>> {
    let k = ddblock::ErrorKind::ALL
        .iter()
        .find(|k| k.as_str() == kind)
        .ok_or_else(|| PyValueError::new_err(format!("no error kind {kind:?}")))?;
    Ok(errors::to_py(errors::sample(*k)).into_value(py).into_any())
}

/// `(initial, max, multiplier, jitter)` of the core's default lock-wait backoff, in seconds.
#[pyfunction]
fn _default_backoff() -> (f64, f64, f64, f64) {
    let b = ddblock::Backoff::default();
    (
        b.initial.as_secs_f64(),
        b.max.as_secs_f64(),
        b.multiplier,
        b.jitter,
    )
}

/// How messages and reprs show a lock owner: its first four characters and its length (the
/// core's `redact_owner`, one rule for every front), since an owner is what releases a lock.
#[pyfunction]
#[pyo3(signature = (owner, /))]
fn _redact_owner(owner: Option<&str>) -> String {
    ddblock::redact_owner(owner)
}

/// Stops the binding's runtime (registered with `atexit` by the package; see runtime.rs).
#[pyfunction]
fn _shutdown(py: Python<'_>, timeout: f64) {
    runtime::shutdown(py, Duration::from_secs_f64(timeout.clamp(0.0, 60.0)));
}

/// The extension module, declared so that its stubs can be generated (`maturin generate-stubs`).
#[pymodule]
mod _native {
    #[allow(non_upper_case_globals)]
    #[pymodule_export]
    const __version__: &str = env!("CARGO_PKG_VERSION");
    #[pymodule_export]
    use super::cas::{PyConflictRetry, PyVersioned};
    #[pymodule_export]
    use super::lock::{PyHeartbeat, PyHeld, PyLock};
    #[pymodule_export]
    use super::logs::{_install_logging, _refresh_logging};
    #[pymodule_export]
    use super::metrics::{_listen, instruments};
    #[pymodule_export]
    use super::once::{PyClaim, PyOnce};
    #[pymodule_export]
    use super::pending::Pending;
    #[pymodule_export]
    use super::store::PyStore;
    #[pymodule_export]
    use super::{
        _default_backoff, _error_kinds, _redact_owner, _sample_error, _shutdown, serialize,
        unserialize,
    };
}
