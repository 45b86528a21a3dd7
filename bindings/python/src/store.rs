//! `ddblock._native.Store`: a core `Store` per process, rebuilt after `os.fork()`.

use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ddblock::{Backoff, Consistency, Error, KeyLayout, PhpValue, Store, StoreConfig};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::{to_php, Many, OptPhp};
use crate::errors::to_py;
use crate::lock::PyLock;
use crate::runtime;

/// What a Python `Store` shares with its locks and with the futures of its async calls.
pub struct Shared {
    cfg: StoreConfig,
    /// The connected store of the process that built it; another pid means we are in a forked
    /// child, whose copy of the client (its connection pool lives on the parent's runtime) is dead.
    connected: AtomicPtr<Connected>,
}

struct Connected {
    pid: u32,
    store: Store,
}

impl Shared {
    fn new(cfg: StoreConfig) -> Arc<Shared> {
        Arc::new(Shared {
            cfg,
            connected: AtomicPtr::new(ptr::null_mut()),
        })
    }

    /// This process's connected store, connecting on first use (and again in a forked child).
    pub async fn store(&self) -> ddblock::Result<Store> {
        if let Some(s) = self.current() {
            return Ok(s);
        }
        let store = Store::connect(self.cfg.clone()).await?;
        Ok(self.publish(store))
    }

    fn current(&self) -> Option<Store> {
        let p = self.connected.load(Ordering::Acquire);
        // SAFETY: a published pointer is freed only by Drop, when no one else can read it.
        unsafe { p.as_ref() }
            .filter(|c| c.pid == std::process::id())
            .map(|c| c.store.clone())
    }

    /// Publishes `store` for this process, unless another caller did first (then returns theirs).
    fn publish(&self, store: Store) -> Store {
        let pid = std::process::id();
        let fresh = Box::into_raw(Box::new(Connected {
            pid,
            store: store.clone(),
        }));
        loop {
            let current = self.connected.load(Ordering::Acquire);
            // SAFETY: as in `current`.
            if let Some(c) = unsafe { current.as_ref() } {
                if c.pid == pid {
                    // SAFETY: `fresh` was never published.
                    drop(unsafe { Box::from_raw(fresh) });
                    return c.store.clone();
                }
            }
            // A replaced pointer belongs to a parent process: leaked, never dropped here.
            if self
                .connected
                .compare_exchange(current, fresh, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return store;
            }
        }
    }

    /// The configuration: key checks and lock specs need nothing else (they send nothing).
    pub fn config(&self) -> &StoreConfig {
        &self.cfg
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let p = *self.connected.get_mut();
        // SAFETY: we are the last owner; the pointer came from Box::into_raw.
        if let Some(c) = unsafe { p.as_ref() } {
            // A parent's client is not dropped in a child (its tasks live on a dead runtime).
            if c.pid == std::process::id() {
                drop(unsafe { Box::from_raw(p) });
            }
        }
    }
}

/// Seconds as a Duration for the client timeouts.
fn secs(what: &str, s: Option<f64>) -> PyResult<Option<Duration>> {
    match s {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 => Ok(Some(Duration::from_secs_f64(s))),
        Some(s) => Err(to_py(Error::Config(format!(
            "{what} must be a positive number of seconds, got {s}"
        )))),
    }
}

/// The native store; `ddblock.Store` and `ddblock.AsyncStore` wrap it.
#[pyclass(module = "ddblock._native", name = "Store", frozen)]
pub struct PyStore {
    shared: Arc<Shared>,
}

/// Runs `op` on this process's store, blocking with the GIL released.
macro_rules! sync_op {
    ($self:ident, $py:ident, |$store:ident| $body:expr) => {{
        let shared = $self.shared.clone();
        runtime::block_on($py, async move {
            let $store = shared.store().await?;
            $body.await
        })?
        .map_err(to_py)
    }};
}

/// Runs `op` on this process's store as a Python awaitable.
macro_rules! async_op {
    ($self:ident, $py:ident, |$store:ident| $body:expr) => {{
        let shared = $self.shared.clone();
        runtime::future_into_py($py, async move {
            let $store = shared.store().await.map_err(to_py)?;
            $body.await.map_err(to_py)
        })
    }};
}

#[pymethods]
impl PyStore {
    #[new]
    #[pyo3(signature = (
        *, from_env = false, table = None, prefix = None, layout = None, endpoint_url = None,
        region = None, key_attribute = None, value_attribute = None, expiration_attribute = None,
        connect_timeout = None, operation_timeout = None, max_attempts = None, backoff = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        from_env: bool,
        table: Option<String>,
        prefix: Option<String>,
        layout: Option<&str>,
        endpoint_url: Option<String>,
        region: Option<String>,
        key_attribute: Option<String>,
        value_attribute: Option<String>,
        expiration_attribute: Option<String>,
        connect_timeout: Option<f64>,
        operation_timeout: Option<f64>,
        max_attempts: Option<u32>,
        backoff: Option<(f64, f64, f64, f64)>,
    ) -> PyResult<Self> {
        let mut b = if from_env {
            StoreConfig::from_env().map_err(to_py)?
        } else {
            StoreConfig::builder()
        };
        if let Some(v) = table {
            b = b.table(v);
        }
        if let Some(v) = prefix {
            b = b.prefix(v);
        }
        if let Some(v) = layout {
            b = b.layout(v.parse::<KeyLayout>().map_err(to_py)?);
        }
        if let Some(v) = endpoint_url {
            b = b.endpoint(v);
        }
        if let Some(v) = region {
            b = b.region(v);
        }
        if let Some(v) = key_attribute {
            b = b.key_attribute(v);
        }
        if let Some(v) = value_attribute {
            b = b.value_attribute(v);
        }
        if let Some(v) = expiration_attribute {
            b = b.expiration_attribute(v);
        }
        if let Some(d) = secs("connect_timeout", connect_timeout)? {
            b = b.connect_timeout(d);
        }
        if let Some(d) = secs("operation_timeout", operation_timeout)? {
            b = b.operation_timeout(d);
        }
        if let Some(n) = max_attempts {
            b = b.max_attempts(n);
        }
        if let Some((initial, max, multiplier, jitter)) = backoff {
            // The core's build() checks the rest; a NaN jitter would panic in Backoff::delay.
            if !jitter.is_finite() {
                return Err(to_py(Error::Config(format!(
                    "backoff jitter must be a number from 0 to 1, got {jitter}"
                ))));
            }
            b = b.backoff(Backoff {
                initial: secs("backoff initial", Some(initial))?.unwrap_or_default(),
                max: secs("backoff max", Some(max))?.unwrap_or_default(),
                multiplier,
                jitter,
            });
        }
        let cfg = b.build().map_err(to_py)?;
        Ok(PyStore {
            shared: Shared::new(cfg),
        })
    }

    #[getter]
    fn table(&self) -> &str {
        self.shared.cfg.table()
    }
    #[getter]
    fn prefix(&self) -> &str {
        self.shared.cfg.prefix()
    }
    #[getter]
    fn layout(&self) -> &'static str {
        self.shared.cfg.layout().as_str()
    }
    #[getter]
    fn endpoint_url(&self) -> Option<&str> {
        self.shared.cfg.endpoint()
    }
    #[getter]
    fn region(&self) -> Option<&str> {
        self.shared.cfg.region()
    }
    /// `(initial, max, multiplier, jitter)` of the lock wait backoff.
    #[getter]
    fn backoff(&self) -> (f64, f64, f64, f64) {
        let b = self.shared.cfg.backoff();
        (
            b.initial.as_secs_f64(),
            b.max.as_secs_f64(),
            b.multiplier,
            b.jitter,
        )
    }
    #[getter]
    fn key_attribute(&self) -> &str {
        self.shared.cfg.key_attribute()
    }
    #[getter]
    fn value_attribute(&self) -> &str {
        self.shared.cfg.value_attribute()
    }
    #[getter]
    fn expiration_attribute(&self) -> &str {
        self.shared.cfg.expiration_attribute()
    }

    fn __repr__(&self) -> String {
        let c = &self.shared.cfg;
        let opt = |v: Option<&str>| v.map_or("None".to_owned(), |s| format!("{s:?}"));
        format!(
            "Store(table={:?}, prefix={:?}, layout={:?}, endpoint_url={}, region={})",
            c.table(),
            c.prefix(),
            c.layout().as_str(),
            opt(c.endpoint()),
            opt(c.region())
        )
    }

    fn cache_key(&self, key: &str) -> PyResult<String> {
        self.shared.cfg.cache_key(key).map_err(to_py)
    }

    fn lock_key(&self, name: &str) -> PyResult<String> {
        self.shared.cfg.lock_key(name).map_err(to_py)
    }

    #[pyo3(signature = (name, ttl = 0, owner = None))]
    fn lock(&self, name: &str, ttl: i64, owner: Option<String>) -> PyResult<PyLock> {
        PyLock::new(self.shared.clone(), name, ttl, owner).map_err(to_py)
    }

    fn restore_lock(&self, name: &str, owner: String) -> PyResult<PyLock> {
        // As the core's restore_lock: ttl 0, i.e. 86400.
        PyLock::new(self.shared.clone(), name, 0, Some(owner)).map_err(to_py)
    }

    // ---- cache, blocking ----

    #[pyo3(signature = (key, consistent = false))]
    fn get<'py>(&self, py: Python<'py>, key: String, consistent: bool) -> PyResult<OptPhp> {
        let c = consistency(consistent);
        sync_op!(self, py, |s| async move {
            s.get_with(&key, c).await.map(OptPhp)
        })
    }

    fn many(&self, py: Python<'_>, keys: Vec<String>) -> PyResult<Many> {
        sync_op!(self, py, |s| async move {
            let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
            s.many(&refs).await.map(Many)
        })
    }

    fn put(&self, py: Python<'_>, key: String, value: &Bound<'_, PyAny>, ttl: i64) -> PyResult<()> {
        let v = to_php(value)?;
        sync_op!(self, py, |s| async move { s.put(&key, &v, ttl).await })
    }

    fn put_many(&self, py: Python<'_>, values: &Bound<'_, PyDict>, ttl: i64) -> PyResult<()> {
        let vs = values_of(values)?;
        sync_op!(self, py, |s| async move {
            let (keys, vals): (Vec<String>, Vec<PhpValue>) = vs.into_iter().unzip();
            let refs: Vec<(&str, PhpValue)> = keys.iter().map(String::as_str).zip(vals).collect();
            s.put_many(&refs, ttl).await
        })
    }

    fn add(
        &self,
        py: Python<'_>,
        key: String,
        value: &Bound<'_, PyAny>,
        ttl: i64,
    ) -> PyResult<bool> {
        let v = to_php(value)?;
        sync_op!(self, py, |s| async move { s.add(&key, &v, ttl).await })
    }

    #[pyo3(signature = (key, by = 1))]
    fn increment(&self, py: Python<'_>, key: String, by: i64) -> PyResult<Option<i64>> {
        sync_op!(self, py, |s| async move { s.increment(&key, by).await })
    }

    #[pyo3(signature = (key, by = 1))]
    fn decrement(&self, py: Python<'_>, key: String, by: i64) -> PyResult<Option<i64>> {
        sync_op!(self, py, |s| async move { s.decrement(&key, by).await })
    }

    fn forever(&self, py: Python<'_>, key: String, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let v = to_php(value)?;
        sync_op!(self, py, |s| async move { s.forever(&key, &v).await })
    }

    fn forget(&self, py: Python<'_>, key: String) -> PyResult<()> {
        sync_op!(self, py, |s| async move { s.forget(&key).await })
    }

    fn touch(&self, py: Python<'_>, key: String, ttl: i64) -> PyResult<bool> {
        sync_op!(self, py, |s| async move { s.touch(&key, ttl).await })
    }

    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        sync_op!(self, py, |s| async move { s.flush().await })
    }

    // ---- cache, awaitables ----

    #[pyo3(signature = (key, consistent = false))]
    fn get_async<'py>(
        &self,
        py: Python<'py>,
        key: String,
        consistent: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let c = consistency(consistent);
        async_op!(self, py, |s| async move {
            s.get_with(&key, c).await.map(OptPhp)
        })
    }

    fn many_async<'py>(&self, py: Python<'py>, keys: Vec<String>) -> PyResult<Bound<'py, PyAny>> {
        async_op!(self, py, |s| async move {
            let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
            s.many(&refs).await.map(Many)
        })
    }

    fn put_async<'py>(
        &self,
        py: Python<'py>,
        key: String,
        value: &Bound<'py, PyAny>,
        ttl: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let v = to_php(value)?;
        async_op!(self, py, |s| async move { s.put(&key, &v, ttl).await })
    }

    fn put_many_async<'py>(
        &self,
        py: Python<'py>,
        values: &Bound<'py, PyDict>,
        ttl: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let vs = values_of(values)?;
        async_op!(self, py, |s| async move {
            let (keys, vals): (Vec<String>, Vec<PhpValue>) = vs.into_iter().unzip();
            let refs: Vec<(&str, PhpValue)> = keys.iter().map(String::as_str).zip(vals).collect();
            s.put_many(&refs, ttl).await
        })
    }

    fn add_async<'py>(
        &self,
        py: Python<'py>,
        key: String,
        value: &Bound<'py, PyAny>,
        ttl: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let v = to_php(value)?;
        async_op!(self, py, |s| async move { s.add(&key, &v, ttl).await })
    }

    #[pyo3(signature = (key, by = 1))]
    fn increment_async<'py>(
        &self,
        py: Python<'py>,
        key: String,
        by: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        async_op!(self, py, |s| async move { s.increment(&key, by).await })
    }

    #[pyo3(signature = (key, by = 1))]
    fn decrement_async<'py>(
        &self,
        py: Python<'py>,
        key: String,
        by: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        async_op!(self, py, |s| async move { s.decrement(&key, by).await })
    }

    fn forever_async<'py>(
        &self,
        py: Python<'py>,
        key: String,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let v = to_php(value)?;
        async_op!(self, py, |s| async move { s.forever(&key, &v).await })
    }

    fn forget_async<'py>(&self, py: Python<'py>, key: String) -> PyResult<Bound<'py, PyAny>> {
        async_op!(self, py, |s| async move { s.forget(&key).await })
    }

    fn touch_async<'py>(
        &self,
        py: Python<'py>,
        key: String,
        ttl: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        async_op!(self, py, |s| async move { s.touch(&key, ttl).await })
    }

    fn flush_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        async_op!(self, py, |s| async move { s.flush().await })
    }
}

fn consistency(strong: bool) -> Consistency {
    if strong {
        Consistency::Strong
    } else {
        Consistency::Eventual
    }
}

fn values_of(d: &Bound<'_, PyDict>) -> PyResult<Vec<(String, PhpValue)>> {
    d.iter()
        .map(|(k, v)| Ok((k.extract::<String>()?, to_php(&v)?)))
        .collect()
}
