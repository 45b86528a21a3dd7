//! `ddblock._native.Pending`: one operation, not started yet, that the caller either waits for
//! (`.wait()`, blocking with the GIL released) or awaits (`await pending`, on the binding's
//! runtime). Each native operation is therefore written once, and the sync and asyncio APIs are
//! the same code.

use std::future::Future;
use std::sync::Mutex;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

use crate::errors::to_py;
use crate::runtime;

/// Turns an operation's Rust result into a Python object (under the GIL).
type Convert = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

/// A started-on-demand operation: `.wait()` or `await`, once.
#[pyclass(module = "ddblock._native", name = "Pending", frozen)]
pub struct Pending {
    op: Mutex<Option<BoxFuture<'static, PyResult<Convert>>>>,
    /// A lock wait of unbounded length: `.wait()` lets Ctrl-C interrupt it.
    interruptible: bool,
}

impl Pending {
    /// An operation whose result converts with `IntoPyObject`.
    pub fn new<F, T>(fut: F) -> Pending
    where
        F: Future<Output = ddblock::Result<T>> + Send + 'static,
        T: for<'py> IntoPyObject<'py> + Send + 'static,
    {
        Pending::build(fut, false)
    }

    /// [`Pending::new`] for a wait that Ctrl-C must be able to interrupt.
    pub fn interruptible<F, T>(fut: F) -> Pending
    where
        F: Future<Output = ddblock::Result<T>> + Send + 'static,
        T: for<'py> IntoPyObject<'py> + Send + 'static,
    {
        Pending::build(fut, true)
    }

    fn build<F, T>(fut: F, interruptible: bool) -> Pending
    where
        F: Future<Output = ddblock::Result<T>> + Send + 'static,
        T: for<'py> IntoPyObject<'py> + Send + 'static,
    {
        let op = async move {
            let value = fut.await.map_err(to_py)?;
            let convert: Convert = Box::new(move |py| value.into_py_any(py));
            Ok(convert)
        };
        Pending {
            op: Mutex::new(Some(op.boxed())),
            interruptible,
        }
    }

    fn take(&self) -> PyResult<BoxFuture<'static, PyResult<Convert>>> {
        self.op
            .lock()
            .ok()
            .and_then(|mut o| o.take())
            .ok_or_else(|| {
                PyRuntimeError::new_err("this ddblock operation was already waited for or awaited")
            })
    }
}

#[pymethods]
impl Pending {
    /// Runs the operation to completion, blocking with the GIL released; returns its result.
    fn wait(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let op = self.take()?;
        let convert = if self.interruptible {
            runtime::block_on_interruptible(py, op)?
        } else {
            runtime::block_on(py, op)??
        };
        convert(py)
    }

    /// `await pending`: runs the operation on the runtime without blocking the event loop;
    /// cancelling the awaiting task cancels the operation.
    fn __await__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let op = self.take()?;
        let fut = runtime::future_into_py(py, async move {
            let convert = op.await?;
            Python::attach(convert)
        })?;
        fut.call_method0("__await__")
    }
}
