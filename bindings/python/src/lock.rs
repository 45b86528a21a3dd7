//! `ddblock._native.Lock`: holds a core `Lock`; every operation returns a [`Pending`].

use std::sync::Mutex;

use ddblock::{Heartbeat, Held, Lease, LeaseSignal, Lock, Wait};
use pyo3::prelude::*;

use crate::holder::OptHolder;
use crate::pending::Pending;
use crate::runtime;

/// The native lock; `ddblock.Lock` and `ddblock.AsyncLock` wrap it.
#[pyclass(module = "ddblock._native", name = "Lock", frozen)]
pub struct PyLock {
    inner: Lock,
}

impl PyLock {
    pub fn new(inner: Lock) -> PyLock {
        PyLock { inner }
    }
}

#[pymethods]
impl PyLock {
    #[getter]
    fn name(&self) -> &str {
        self.inner.name()
    }
    #[getter]
    fn key(&self) -> &str {
        self.inner.key()
    }
    #[getter]
    fn owner(&self) -> &str {
        self.inner.owner()
    }
    #[getter]
    fn ttl(&self) -> i64 {
        self.inner.ttl_secs()
    }
    /// The fencing token of this handle's current acquisition (`None` when it holds none).
    #[getter]
    fn fence(&self) -> Option<u64> {
        self.inner.fence()
    }
    /// The attributes of its spans: the table (or bucket) and the key layout.
    #[getter]
    fn _attributes(&self) -> Vec<(&'static str, String)> {
        let attrs = self.inner.telemetry_attributes();
        attrs.iter().map(|(k, v)| (*k, v.to_string())).collect()
    }
    /// Seconds this handle's lease still lasts by the local monotonic clock (`None`: no lease).
    fn remaining(&self) -> Option<f64> {
        self.inner.remaining().map(|d| d.as_secs_f64())
    }

    /// Starts refreshing the held lock in the background (the core's heartbeat); see `Heartbeat`.
    fn heartbeat(&self) -> PyHeartbeat {
        let _in_runtime = runtime::get().enter();
        let heartbeat = self.inner.heartbeat();
        PyHeartbeat {
            signal: heartbeat.signal(),
            inner: Mutex::new(Some(heartbeat)),
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "Lock(name={:?}, key={:?}, owner={}, ttl={})",
            self.inner.name(),
            self.inner.key(),
            ddblock::redact_owner(Some(self.inner.owner())),
            self.inner.ttl_secs()
        )
    }

    /// Takes the lock, waiting `wait` seconds (0: one attempt; `inf`: no limit); True when ours.
    fn acquire(&self, wait: f64) -> PyResult<Pending> {
        let wait = Wait::from_secs_f64(wait).map_err(crate::errors::to_py)?;
        let l = self.inner.clone();
        Ok(Pending::interruptible(async move {
            l.acquire_within(wait).await.map(|o| o.is_acquired())
        }))
    }

    /// Waits `wait` seconds (0: one attempt; `inf`: no limit) or raises `LockTimeout`; the expiry.
    fn block(&self, wait: f64) -> PyResult<Pending> {
        let wait = Wait::from_secs_f64(wait).map_err(crate::errors::to_py)?;
        let l = self.inner.clone();
        Ok(Pending::interruptible(async move { l.block(wait).await }))
    }

    /// Takes the lock as `block` does and starts its heartbeat: the start of `with` (see `Held`).
    fn enter(&self, wait: f64) -> PyResult<Pending> {
        let wait = Wait::from_secs_f64(wait).map_err(crate::errors::to_py)?;
        let l = self.inner.clone();
        Ok(Pending::interruptible(async move {
            let held = l.enter(wait).await?;
            Ok(PyHeld {
                lease: held.lease().clone(),
                inner: Mutex::new(Some(held)),
            })
        }))
    }

    fn release(&self) -> Pending {
        let l = self.inner.clone();
        // The outcome's name (`released`, `not_held`, `other_owner`): the facade's bool and its
        // span's outcome.
        Pending::new(async move { l.release().await.map(|o| o.as_str()) })
    }

    fn force_release(&self) -> Pending {
        let l = self.inner.clone();
        Pending::new(async move { l.force_release().await })
    }

    #[pyo3(signature = (ttl))]
    fn refresh(&self, ttl: Option<&Bound<'_, PyAny>>) -> PyResult<Pending> {
        let ttl = ttl.map(crate::convert::ttl).transpose()?;
        let l = self.inner.clone();
        Ok(Pending::new(async move { l.refresh(ttl).await }))
    }

    fn locked(&self) -> Pending {
        let l = self.inner.clone();
        Pending::new(async move { l.is_locked().await })
    }

    fn owned(&self) -> Pending {
        let l = self.inner.clone();
        Pending::new(async move { l.is_owned().await })
    }

    fn holder(&self) -> Pending {
        let l = self.inner.clone();
        Pending::new(async move { l.current_holder().await.map(OptHolder) })
    }
}

/// A running heartbeat (the core's): refreshes the lock until stopped; `lost` turns true when the
/// lease is lost (and stays so after `stop`).
#[pyclass(module = "ddblock._native", name = "Heartbeat", frozen)]
pub struct PyHeartbeat {
    inner: Mutex<Option<Heartbeat>>,
    /// The loss signal; it keeps its last value once the heartbeat is stopped.
    signal: LeaseSignal,
}

#[pymethods]
impl PyHeartbeat {
    /// Whether the lease has been lost.
    #[getter]
    fn lost(&self) -> bool {
        self.reason().is_some()
    }

    /// Why the lease was lost, if it was.
    #[getter]
    fn reason(&self) -> Option<String> {
        self.signal.reason()
    }

    /// Stops refreshing (again: nothing more); raises `LeaseLost` if the lease was lost.
    fn finish(&self) -> Pending {
        let hb = self.inner.lock().ok().and_then(|mut h| h.take());
        let signal = self.signal.clone();
        Pending::new(async move {
            match hb {
                Some(hb) => hb.finish().await,
                // Stopped before: the loss it saw, if any, is still the answer.
                None => signal.check(),
            }
        })
    }

    /// Stops refreshing (again: nothing more); the reason the lease was lost, or `None`.
    fn stop(&self) -> Pending {
        let hb = self.inner.lock().ok().and_then(|mut h| h.take());
        let signal = self.signal.clone();
        Pending::new(async move {
            Ok::<_, ddblock::Error>(match hb {
                Some(hb) => hb.stop().await,
                None => signal.reason(),
            })
        })
    }
}

/// A lock entered by `with` (the core's `Held`): its heartbeat runs until `finish`, which ends
/// the lease by the core's one rule (raises `LeaseLost`, or the release's error).
#[pyclass(module = "ddblock._native", name = "Held", frozen)]
pub struct PyHeld {
    inner: Mutex<Option<Held>>,
    lease: Lease,
}

#[pymethods]
impl PyHeld {
    /// Whether the heartbeat has seen the lease lost.
    #[getter]
    fn lost(&self) -> bool {
        self.lease.is_lost()
    }

    /// Stops the heartbeat and releases (again: nothing more).
    fn finish(&self) -> Pending {
        let held = self.inner.lock().ok().and_then(|mut h| h.take());
        Pending::new(async move {
            match held {
                Some(held) => held.finish().await,
                None => Ok(()),
            }
        })
    }
}
