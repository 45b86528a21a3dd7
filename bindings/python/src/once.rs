//! `ddblock._native.Once` and `Claim`, the once-only guard: hold core objects; every operation
//! returns a [`Pending`]. The `run`/`with` loops are in `ddblock/_aio.py`, driving these (the
//! rules, bounds and errors stay the core's).

use std::sync::Arc;

use ddblock::{ClaimOutcome, Once, OnceStatus};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

use crate::pending::Pending;

static ONCE_STATUS: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// A status as `ddblock.OnceStatus(state, claims, expires_at, done_at)`.
pub struct Status(pub OnceStatus);

impl<'py> IntoPyObject<'py> for Status {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;
    const OUTPUT_TYPE: pyo3::inspect::PyStaticExpr =
        pyo3::type_hint_identifier!("ddblock._values", "OnceStatus");

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Self::Output> {
        let s = self.0;
        ONCE_STATUS
            .import(py, "ddblock._values", "OnceStatus")?
            .call1((s.state.as_str(), s.claims, s.expires_at, s.done_at))
    }
}

/// The once-only guard of one event id; `ddblock.Once` and `ddblock.AsyncOnce` wrap it.
#[pyclass(module = "ddblock._native", name = "Once", frozen)]
pub struct PyOnce {
    inner: Once,
}

impl PyOnce {
    pub fn new(inner: Once) -> PyOnce {
        PyOnce { inner }
    }
}

#[pymethods]
impl PyOnce {
    #[getter]
    fn event_id(&self) -> &str {
        self.inner.event_id()
    }
    #[getter]
    fn key(&self) -> &str {
        self.inner.key()
    }
    #[getter]
    fn ttl(&self) -> i64 {
        self.inner.claim_ttl_secs()
    }
    #[getter]
    fn done_ttl(&self) -> i64 {
        self.inner.done_ttl_secs()
    }

    fn __repr__(&self) -> String {
        format!(
            "Once(event_id={:?}, key={:?}, ttl={}, done_ttl={})",
            self.inner.event_id(),
            self.inner.key(),
            self.inner.claim_ttl_secs(),
            self.inner.done_ttl_secs()
        )
    }

    /// Claims the event (one UpdateItem, usually); a `Claim`, won or not.
    fn claim(&self) -> Pending {
        let once = self.inner.clone();
        Pending::new(async move {
            let outcome = once.claim().await?;
            Ok(PyClaim {
                once,
                outcome: Arc::new(outcome),
            })
        })
    }

    /// Where the event stands (one consistent GetItem).
    fn status(&self) -> Pending {
        let once = self.inner.clone();
        Pending::new(async move { once.status().await.map(Status) })
    }
}

/// What a claim found: won (then `done`/`give_back`) or skipped (then `status` says why).
#[pyclass(module = "ddblock._native", name = "Claim", frozen)]
pub struct PyClaim {
    once: Once,
    outcome: Arc<ClaimOutcome>,
}

#[pymethods]
impl PyClaim {
    /// True when this delivery won the claim.
    #[getter]
    fn won(&self) -> bool {
        self.outcome.is_claimed()
    }
    /// Why it was skipped (`in_progress` or `done`); None when won.
    #[getter]
    fn status(&self) -> Option<Status> {
        self.outcome.skipped().cloned().map(Status)
    }
    /// When the claim expires; None when not won.
    #[getter]
    fn expires_at(&self) -> Option<i64> {
        self.outcome.claim().map(|c| c.expires_at())
    }
    /// An earlier attempt of this claim landed but its answer was lost.
    #[getter]
    fn recovered(&self) -> bool {
        self.outcome.claim().is_some_and(|c| c.recovered())
    }

    fn __repr__(&self) -> String {
        match &*self.outcome {
            ClaimOutcome::Claimed(c) => format!(
                "Claim(event_id={:?}, won=True, expires_at={})",
                c.event_id(),
                c.expires_at()
            ),
            ClaimOutcome::Skipped(s) => format!(
                "Claim(event_id={:?}, won=False, state={:?})",
                self.once.event_id(),
                s.state.as_str()
            ),
        }
    }

    /// Marks the event done; `ConflictError` when the claim is not (or no longer) ours.
    fn done(&self) -> Pending {
        let (once, outcome) = (self.once.clone(), self.outcome.clone());
        Pending::new(async move {
            match &*outcome {
                ClaimOutcome::Claimed(c) => c.done().await,
                ClaimOutcome::Skipped(s) => Err(once.not_claimed(s)),
            }
        })
    }

    /// Ends the handler's claim by the core's rule: done when `handler_ok`, else given back
    /// (raises the give-back's error, for the caller to attach to the handler's).
    fn finish(&self, handler_ok: bool) -> Pending {
        let (once, outcome) = (self.once.clone(), self.outcome.clone());
        Pending::new(async move {
            match &*outcome {
                ClaimOutcome::Claimed(c) => c.finish(handler_ok).await,
                ClaimOutcome::Skipped(_) if !handler_ok => Ok(()),
                ClaimOutcome::Skipped(s) => Err(once.not_claimed(s)),
            }
        })
    }

    /// Gives the claim back; False when it is not (or no longer) ours.
    fn give_back(&self) -> Pending {
        let outcome = self.outcome.clone();
        Pending::new(async move {
            match &*outcome {
                ClaimOutcome::Claimed(c) => c.give_back().await,
                ClaimOutcome::Skipped(_) => Ok(false),
            }
        })
    }
}
