//! Lock holders crossing to Python as `ddblock.Holder`; a leaf, so that values (convert) and
//! errors (a `LockHeldError` carries the holder) can both use it.

use ddblock::Holder;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

static HOLDER: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// A lock holder as `ddblock.Holder(owner, expires_at, fence)`.
pub fn holder_to_py<'py>(py: Python<'py>, h: &Holder) -> PyResult<Bound<'py, PyAny>> {
    HOLDER.import(py, "ddblock._values", "Holder")?.call1((
        h.owner.as_deref(),
        h.expires_at,
        h.fence,
    ))
}

/// An optional holder crossing back from a future.
pub struct OptHolder(pub Option<Holder>);

impl<'py> IntoPyObject<'py> for OptHolder {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Self::Output> {
        match &self.0 {
            Some(h) => holder_to_py(py, h),
            None => Ok(py.None().into_bound(py)),
        }
    }
}
