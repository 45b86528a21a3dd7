//! `ddblock._native.Store`: holds a core `Store` and converts arguments and results. Every
//! operation returns a [`Pending`] (wait for it or await it): written once for both APIs.

use ddblock::config::{Front, SettingValue};
use ddblock::{CasOptions, CasOutcome, Consistency, PhpValue, Store, StoreConfig, Versioned};
use ddblock_admin::{Admin, CreateTableOptions, DoctorOptions, ScanOptions};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::cas::{PyConflictRetry, PyVersioned};
use crate::convert::{amount, to_php, ttl, version, CreateReport, Doctor, Many, OptPhp};
use crate::errors::to_py;
use crate::lock::PyLock;
use crate::once::PyOnce;
use crate::pending::Pending;

/// How a Python caller creates the table, for `TableNotFound`'s message.
const CREATE_TABLE_HINT: &str = "`store.create_table()` (or `ddblock create-table`)";

/// The native store; `ddblock.Store` and `ddblock.AsyncStore` wrap it.
#[pyclass(module = "ddblock._native", name = "Store", frozen)]
pub struct PyStore {
    inner: Store,
}

/// A Python value as a setting's value: text, a number, or a backoff's four numbers (the core's
/// table says how each setting reads it).
fn setting_value(name: &str, v: &Bound<'_, PyAny>) -> PyResult<SettingValue> {
    if let Ok(t) = v.extract::<String>() {
        return Ok(SettingValue::Text(t));
    }
    if v.is_instance_of::<pyo3::types::PyBool>() {
        return Err(crate::errors::type_error(format!(
            "{name} must be a number or a string, not bool"
        )));
    }
    if let Ok(n) = v.extract::<f64>() {
        return Ok(SettingValue::Number(n));
    }
    if let Ok((a, b, c, d)) = v.extract::<(f64, f64, f64, f64)>() {
        return Ok(SettingValue::Backoff([a, b, c, d]));
    }
    Err(crate::errors::type_error(format!(
        "{name} must be a number or a string, not {}",
        v.get_type().name()?
    )))
}

#[pymethods]
impl PyStore {
    /// Explicit settings win; Laravel's variables fill what is not given; Laravel's defaults last
    /// (the core's one rule and settings table: `StoreConfig::from_settings`). `settings` holds
    /// the ones given, by Python's names.
    #[new]
    fn new(settings: std::collections::HashMap<String, Bound<'_, PyAny>>) -> PyResult<Self> {
        let mut given = Vec::with_capacity(settings.len());
        for (name, v) in settings {
            if v.is_none() {
                continue;
            }
            let value = setting_value(&name, &v)?;
            given.push((name, value));
        }
        let cfg = StoreConfig::from_settings(Front::Python, given, |k| std::env::var(k).ok())
            .and_then(|b| b.create_table_hint(CREATE_TABLE_HINT).build())
            .map_err(to_py)?;
        Ok(PyStore {
            inner: Store::new(cfg),
        })
    }

    #[getter]
    fn table(&self) -> &str {
        self.inner.config().table()
    }
    #[getter]
    fn prefix(&self) -> &str {
        self.inner.config().prefix()
    }
    #[getter]
    fn layout(&self) -> &'static str {
        self.inner.config().layout().as_str()
    }
    #[getter]
    fn endpoint_url(&self) -> Option<&str> {
        self.inner.config().endpoint()
    }
    #[getter]
    fn region(&self) -> Option<&str> {
        self.inner.config().region()
    }
    /// `(initial, max, multiplier, jitter)` of the lock wait backoff.
    #[getter]
    fn backoff(&self) -> (f64, f64, f64, f64) {
        let b = self.inner.config().backoff();
        (
            b.initial.as_secs_f64(),
            b.max.as_secs_f64(),
            b.multiplier,
            b.jitter,
        )
    }
    #[getter]
    fn key_attribute(&self) -> &str {
        self.inner.config().key_attribute()
    }
    #[getter]
    fn value_attribute(&self) -> &str {
        self.inner.config().value_attribute()
    }
    #[getter]
    fn expiration_attribute(&self) -> &str {
        self.inner.config().expiration_attribute()
    }

    fn __repr__(&self) -> String {
        let c = self.inner.config();
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
        self.inner.cache_key(key).map_err(to_py)
    }

    fn lock_key(&self, name: &str) -> PyResult<String> {
        self.inner.lock_key(name).map_err(to_py)
    }

    /// A lock handle (sends nothing); the core checks the name, ttl and owner.
    #[pyo3(signature = (name, ttl, owner))]
    fn lock(&self, name: &str, ttl: &Bound<'_, PyAny>, owner: Option<String>) -> PyResult<PyLock> {
        let ttl = self::ttl(ttl)?;
        let lock = self.inner.make_lock(name, ttl, owner).map_err(to_py)?;
        Ok(PyLock::new(lock))
    }

    /// The once-only guard of `event_id` (sends nothing); the core checks the id and ttls.
    #[pyo3(signature = (event_id, ttl, done_ttl))]
    fn once(
        &self,
        event_id: &str,
        ttl: &Bound<'_, PyAny>,
        done_ttl: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyOnce> {
        let ttl = self::ttl(ttl)?;
        let done_ttl = done_ttl.map(self::ttl).transpose()?;
        let once = self
            .inner
            .once(event_id, ttl)
            .and_then(|o| match done_ttl {
                Some(d) => o.with_done_ttl(d),
                None => Ok(o),
            })
            .map_err(to_py)?;
        Ok(PyOnce::new(once))
    }

    /// `key`'s value and version (one consistent read): a `Versioned`.
    fn get_versioned(&self, key: String) -> Pending {
        let s = self.inner.clone();
        Pending::new(async move {
            s.get_versioned(&key)
                .await
                .map(|inner| PyVersioned { inner })
        })
    }

    /// Stores `value` if the entry is at `version` (an int), or unchanged since `version` (a
    /// `Versioned` read); the written `Versioned`, or None on a conflict.
    fn put_if_version(
        &self,
        key: String,
        value: &Bound<'_, PyAny>,
        ttl: &Bound<'_, PyAny>,
        version: &Bound<'_, PyAny>,
    ) -> PyResult<Pending> {
        let seen: Option<Versioned> = version
            .cast::<PyVersioned>()
            .ok()
            .map(|v| v.get().inner.clone());
        let expected = match &seen {
            Some(_) => 0,
            None => self::version(version)?,
        };
        let (v, t, s) = (to_php(value)?, self::ttl(ttl)?, self.inner.clone());
        Ok(Pending::new(async move {
            let out = match &seen {
                Some(seen) => s.put_if_unchanged(&key, seen, &v, t).await?,
                None => s.put_if_version(&key, &v, t, expected).await?,
            };
            match out {
                CasOutcome::Written { version } => Ok(Some(PyVersioned {
                    inner: Versioned::written(v, version)?,
                })),
                CasOutcome::Conflict => Ok(None),
            }
        }))
    }

    /// The core's bounded retry for an `update` loop on `key` (`None`: the core's attempts).
    #[pyo3(signature = (key, attempts))]
    fn conflict_retry(&self, key: &str, attempts: Option<u32>) -> PyResult<PyConflictRetry> {
        let mut opts = CasOptions::new();
        if let Some(n) = attempts {
            opts = opts.attempts(n);
        }
        let r = self.inner.conflict_retry(key, &opts).map_err(to_py)?;
        Ok(PyConflictRetry {
            inner: std::sync::Arc::new(r),
        })
    }

    fn get(&self, key: String, consistent: bool) -> Pending {
        let s = self.inner.clone();
        let c = if consistent {
            Consistency::Strong
        } else {
            Consistency::Eventual
        };
        Pending::new(async move { s.get_with(&key, c).await.map(OptPhp) })
    }

    fn many(&self, keys: Vec<String>) -> Pending {
        let s = self.inner.clone();
        Pending::new(async move {
            let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
            s.many(&refs).await.map(Many)
        })
    }

    fn put(
        &self,
        key: String,
        value: &Bound<'_, PyAny>,
        ttl: &Bound<'_, PyAny>,
    ) -> PyResult<Pending> {
        let (v, t, s) = (to_php(value)?, self::ttl(ttl)?, self.inner.clone());
        Ok(Pending::new(async move { s.put(&key, &v, t).await }))
    }

    #[pyo3(signature = (values: "dict[str, Any]", ttl))]
    fn put_many(&self, values: &Bound<'_, PyDict>, ttl: &Bound<'_, PyAny>) -> PyResult<Pending> {
        let vs = values
            .iter()
            .map(|(k, v)| Ok((k.extract::<String>()?, to_php(&v)?)))
            .collect::<PyResult<Vec<(String, PhpValue)>>>()?;
        let (t, s) = (self::ttl(ttl)?, self.inner.clone());
        Ok(Pending::new(async move {
            let refs: Vec<(&str, PhpValue)> =
                vs.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
            s.put_many(&refs, t).await
        }))
    }

    fn add(
        &self,
        key: String,
        value: &Bound<'_, PyAny>,
        ttl: &Bound<'_, PyAny>,
    ) -> PyResult<Pending> {
        let (v, t, s) = (to_php(value)?, self::ttl(ttl)?, self.inner.clone());
        Ok(Pending::new(async move { s.add(&key, &v, t).await }))
    }

    fn increment(&self, key: String, by: &Bound<'_, PyAny>) -> PyResult<Pending> {
        let (by, s) = (amount(by)?, self.inner.clone());
        Ok(Pending::new(async move { s.increment(&key, by).await }))
    }

    fn decrement(&self, key: String, by: &Bound<'_, PyAny>) -> PyResult<Pending> {
        let (by, s) = (amount(by)?, self.inner.clone());
        Ok(Pending::new(async move { s.decrement(&key, by).await }))
    }

    fn forever(&self, key: String, value: &Bound<'_, PyAny>) -> PyResult<Pending> {
        let (v, s) = (to_php(value)?, self.inner.clone());
        Ok(Pending::new(async move { s.forever(&key, &v).await }))
    }

    fn forget(&self, key: String) -> Pending {
        let s = self.inner.clone();
        Pending::new(async move { s.forget(&key).await })
    }

    fn touch(&self, key: String, ttl: &Bound<'_, PyAny>) -> PyResult<Pending> {
        let (t, s) = (self::ttl(ttl)?, self.inner.clone());
        Ok(Pending::new(async move { s.touch(&key, t).await }))
    }

    fn flush(&self) -> Pending {
        let s = self.inner.clone();
        Pending::new(async move { s.flush().await })
    }

    /// Creates the table (idempotent) and enables TTL; `wait` seconds for ACTIVE.
    fn create_table(&self, ttl: bool, wait: Option<f64>) -> PyResult<Pending> {
        let mut opts = CreateTableOptions::new().ttl(ttl);
        if let Some(w) = wait {
            opts =
                opts.wait(ddblock::format::input::timeout_from_secs_f64("wait", w).map_err(to_py)?);
        }
        let a = Admin::new(&self.inner);
        Ok(Pending::new(async move {
            a.create_table(&opts).await.map(CreateReport)
        }))
    }

    /// Checks the table (and, with `scan`, its items).
    fn doctor(&self, scan: bool) -> Pending {
        let a = Admin::new(&self.inner);
        let opts = DoctorOptions::new().scan(scan.then(ScanOptions::new));
        Pending::new(async move { a.doctor(&opts, |_| {}).await.map(Doctor) })
    }
}
