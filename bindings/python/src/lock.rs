//! `ddblock._native.Lock`: a lock handle; every call runs on this process's connected store.

use std::sync::Arc;
use std::time::Duration;

use ddblock::lock::{lock_ttl, random_owner};
use ddblock::{codec, Error, Lock, PhpValue};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::convert::OptHolder;
use crate::errors::to_py;
use crate::runtime;
use crate::store::Shared;

/// The native lock; `ddblock.Lock` and `ddblock.AsyncLock` wrap it.
#[pyclass(module = "ddblock._native", name = "Lock", frozen)]
pub struct PyLock {
    shared: Arc<Shared>,
    spec: Spec,
}

/// Name, key, owner and ttl of a lock, validated as the core's `Lock` validates them.
struct Spec {
    name: String,
    /// The table key (prefix and layout applied).
    key: String,
    owner: String,
    /// Seconds (0 was turned into 86400).
    ttl: i64,
}

impl PyLock {
    /// A lock handle (sends nothing): the checks of the core's `Store::lock_with_owner`, in its
    /// order (name, ttl, then the owner, which must be storable as Laravel stores it).
    pub fn new(
        shared: Arc<Shared>,
        name: &str,
        ttl: i64,
        owner: Option<String>,
    ) -> ddblock::Result<PyLock> {
        let key = shared.config().lock_key(name)?;
        let ttl = lock_ttl(ttl)?;
        let owner = owner.unwrap_or_else(random_owner);
        codec::encode_stored(&PhpValue::String(owner.clone().into_bytes()))?;
        let spec = Spec {
            name: name.to_owned(),
            key,
            owner,
            ttl,
        };
        Ok(PyLock { shared, spec })
    }

    /// What a call needs, owned, to move into its future (no Python object crosses an await).
    fn parts(&self) -> (Arc<Shared>, String, i64, String) {
        (
            self.shared.clone(),
            self.spec.name.clone(),
            self.spec.ttl,
            self.spec.owner.clone(),
        )
    }
}

/// The same lock on this process's connected store.
async fn bind(shared: &Shared, name: &str, ttl: i64, owner: String) -> ddblock::Result<Lock> {
    shared.store().await?.lock_with_owner(name, ttl, owner)
}

/// A wait in seconds (`None`: no limit).
fn wait(timeout: Option<f64>) -> PyResult<Duration> {
    match timeout {
        None => Ok(Duration::MAX),
        Some(t) if t.is_finite() && t >= 0.0 => Ok(Duration::from_secs_f64(t)),
        Some(t) if t.is_infinite() && t > 0.0 => Ok(Duration::MAX),
        Some(t) => Err(PyValueError::new_err(format!(
            "timeout must be None or a number of seconds >= 0, got {t}"
        ))),
    }
}

/// `acquire(blocking, timeout)` as one future: a single attempt, or waiting up to `timeout`.
async fn acquire(lock: Lock, blocking: bool, timeout: Duration) -> ddblock::Result<bool> {
    if !blocking {
        return Ok(lock.acquire().await?.is_acquired());
    }
    match lock.block(timeout).await {
        Ok(_) => Ok(true),
        Err(Error::LockTimeout { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

fn check_blocking(blocking: bool, timeout: Option<f64>) -> PyResult<Duration> {
    if !blocking && timeout.is_some() {
        return Err(PyValueError::new_err(
            "can't specify a timeout for a non-blocking acquire",
        ));
    }
    wait(timeout)
}

macro_rules! sync_lock {
    ($self:ident, $py:ident, |$lock:ident| $body:expr) => {{
        let (shared, name, ttl, owner) = $self.parts();
        runtime::block_on($py, async move {
            let $lock = bind(&shared, &name, ttl, owner).await?;
            $body.await
        })?
        .map_err(to_py)
    }};
}

macro_rules! async_lock {
    ($self:ident, $py:ident, |$lock:ident| $body:expr) => {{
        let (shared, name, ttl, owner) = $self.parts();
        runtime::future_into_py($py, async move {
            let $lock = bind(&shared, &name, ttl, owner).await.map_err(to_py)?;
            $body.await.map_err(to_py)
        })
    }};
}

#[pymethods]
impl PyLock {
    #[getter]
    fn name(&self) -> &str {
        &self.spec.name
    }
    #[getter]
    fn key(&self) -> &str {
        &self.spec.key
    }
    #[getter]
    fn owner(&self) -> &str {
        &self.spec.owner
    }
    #[getter]
    fn ttl(&self) -> i64 {
        self.spec.ttl
    }

    fn __repr__(&self) -> String {
        // The owner releases the lock: show its first characters only, as the core does.
        let owner: String = self.spec.owner.chars().take(4).collect();
        format!(
            "Lock(name={:?}, ttl={}, owner='{}…')",
            self.spec.name, self.spec.ttl, owner
        )
    }

    // ---- blocking ----

    #[pyo3(signature = (blocking = true, timeout = None))]
    fn acquire(&self, py: Python<'_>, blocking: bool, timeout: Option<f64>) -> PyResult<bool> {
        let limit = check_blocking(blocking, timeout)?;
        let (shared, name, ttl, owner) = self.parts();
        let fut = async move {
            let lock = bind(&shared, &name, ttl, owner).await.map_err(to_py)?;
            acquire(lock, blocking, limit).await.map_err(to_py)
        };
        if blocking {
            runtime::block_on_interruptible(py, fut)
        } else {
            runtime::block_on(py, fut)?
        }
    }

    /// Waits up to `timeout` (None: no limit) and returns the expiry; raises LockTimeout.
    #[pyo3(signature = (timeout = None))]
    fn block(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<i64> {
        let limit = wait(timeout)?;
        let (shared, name, ttl, owner) = self.parts();
        runtime::block_on_interruptible(py, async move {
            let lock = bind(&shared, &name, ttl, owner).await.map_err(to_py)?;
            lock.block(limit).await.map_err(to_py)
        })
    }

    fn release(&self, py: Python<'_>) -> PyResult<bool> {
        sync_lock!(self, py, |l| async move {
            l.release().await.map(|o| o.is_released())
        })
    }

    fn force_release(&self, py: Python<'_>) -> PyResult<()> {
        sync_lock!(self, py, |l| async move { l.force_release().await })
    }

    #[pyo3(signature = (ttl = None))]
    fn refresh(&self, py: Python<'_>, ttl: Option<i64>) -> PyResult<bool> {
        sync_lock!(self, py, |l| async move { l.refresh(ttl).await })
    }

    fn locked(&self, py: Python<'_>) -> PyResult<bool> {
        sync_lock!(self, py, |l| async move { l.is_locked().await })
    }

    fn owned(&self, py: Python<'_>) -> PyResult<bool> {
        sync_lock!(self, py, |l| async move { l.is_owned().await })
    }

    fn holder(&self, py: Python<'_>) -> PyResult<OptHolder> {
        sync_lock!(self, py, |l| async move {
            l.current_holder().await.map(OptHolder)
        })
    }

    // ---- awaitables ----

    #[pyo3(signature = (blocking = true, timeout = None))]
    fn acquire_async<'py>(
        &self,
        py: Python<'py>,
        blocking: bool,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let limit = check_blocking(blocking, timeout)?;
        async_lock!(self, py, |l| acquire(l, blocking, limit))
    }

    #[pyo3(signature = (timeout = None))]
    fn block_async<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let limit = wait(timeout)?;
        async_lock!(self, py, |l| async move { l.block(limit).await })
    }

    fn release_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        async_lock!(self, py, |l| async move {
            l.release().await.map(|o| o.is_released())
        })
    }

    fn force_release_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        async_lock!(self, py, |l| async move { l.force_release().await })
    }

    #[pyo3(signature = (ttl = None))]
    fn refresh_async<'py>(&self, py: Python<'py>, ttl: Option<i64>) -> PyResult<Bound<'py, PyAny>> {
        async_lock!(self, py, |l| async move { l.refresh(ttl).await })
    }

    fn locked_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        async_lock!(self, py, |l| async move { l.is_locked().await })
    }

    fn owned_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        async_lock!(self, py, |l| async move { l.is_owned().await })
    }

    fn holder_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        async_lock!(self, py, |l| async move {
            l.current_holder().await.map(OptHolder)
        })
    }
}
