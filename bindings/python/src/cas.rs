//! `ddblock._native.Versioned` and `ConflictRetry`, compare-and-set: hold core objects. The
//! `update` loop is in `ddblock/_aio.py` (fn must run on the caller's thread), driving these.

use std::sync::Arc;

use ddblock::{ConflictRetry, Versioned};
use pyo3::prelude::*;

use crate::convert::OptPhp;
use crate::pending::Pending;

/// A value read with its version (`value`, `version`); pass it back to `put_if_version` to
/// require the entry unchanged (version and value).
#[pyclass(module = "ddblock._native", name = "Versioned", frozen)]
pub struct PyVersioned {
    pub inner: Versioned,
}

#[pymethods]
impl PyVersioned {
    /// The live value; None when missing or expired.
    #[getter]
    fn value(&self) -> OptPhp {
        OptPhp(self.inner.value.clone())
    }
    /// The version (0: none).
    #[getter]
    fn version(&self) -> u64 {
        self.inner.version
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let value = self.value().into_pyobject(py)?.repr()?.to_string();
        Ok(format!(
            "Versioned(value={value}, version={})",
            self.inner.version
        ))
    }
}

/// The core's bounded retry of a read-modify-write loop.
#[pyclass(module = "ddblock._native", name = "ConflictRetry", frozen)]
pub struct PyConflictRetry {
    pub inner: Arc<ConflictRetry>,
}

#[pymethods]
impl PyConflictRetry {
    /// After a conflict: waits the backoff, or raises `ConflictError` after the last attempt.
    fn after_conflict(&self) -> Pending {
        let r = self.inner.clone();
        Pending::new(async move { r.after_conflict().await })
    }
}
