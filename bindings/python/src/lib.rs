//! `ddblock._native`: the Python binding of the ddblock core. It converts types and errors and
//! nothing else; the pure-Python package `ddblock` adds the exceptions, context managers and
//! `AsyncStore` on top (bindings/python/ddblock/).

mod convert;
mod errors;
mod lock;
mod runtime;
mod store;

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

/// `(core kind, exception class)` for every error kind the binding maps.
#[pyfunction]
fn _error_kinds() -> Vec<(String, &'static str)> {
    ddblock::ErrorKind::ALL
        .iter()
        .map(|k| (errors::kind_name(*k), errors::class_name(*k)))
        .collect()
}

/// The exception a sample core error of `kind` becomes (tests of the mapping).
#[pyfunction]
fn _sample_error(py: Python<'_>, kind: &str) -> PyResult<Py<PyAny>> {
    let e = errors::sample(kind)
        .ok_or_else(|| PyValueError::new_err(format!("no sample error of kind {kind:?}")))?;
    Ok(errors::to_py(e).into_value(py).into_any())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<store::PyStore>()?;
    m.add_class::<lock::PyLock>()?;
    m.add_function(wrap_pyfunction!(serialize, m)?)?;
    m.add_function(wrap_pyfunction!(unserialize, m)?)?;
    m.add_function(wrap_pyfunction!(_error_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(_sample_error, m)?)?;
    Ok(())
}
