//! The once-only guard and compare-and-set: native classes holding core objects. The `run` and
//! `update` loops are in `lib.js`, driving these (the bounds, backoff and errors are the core's).

use std::sync::Arc;

use ddblock::{CasOptions, CasOutcome, ClaimOutcome, ConflictRetry, OnceStatus, Versioned};
use napi::bindgen_prelude::Result;
use napi_derive::napi;

use crate::error::IntoNapi;
use crate::value::{Cached, JsPhp, Seconds};

/// Where an event stands.
#[napi(object, js_name = "OnceStatus")]
pub struct JsOnceStatus {
    /// `free`, `in_progress`, `done`, `given_back` or `expired`.
    pub state: String,
    /// The claim counter: how many deliveries tried since the item was created.
    pub claims: Option<i64>,
    /// When the claim ends (in progress) or the done record is forgotten (done), Unix seconds.
    pub expires_at: Option<i64>,
    /// When the handler was marked done, Unix seconds.
    pub done_at: Option<i64>,
}

fn status(s: &OnceStatus) -> JsOnceStatus {
    JsOnceStatus {
        state: s.state.as_str().to_owned(),
        claims: s.claims,
        expires_at: s.expires_at,
        done_at: s.done_at,
    }
}

/// Options of `once`.
#[napi(object, object_to_js = false)]
pub struct OnceOptions {
    /// How long a claim lasts, in seconds: longer than the handler runs.
    #[napi(ts_type = "number")]
    pub ttl: Seconds,
    /// How long a done event is remembered, in seconds (default 86400).
    #[napi(ts_type = "number")]
    pub done_ttl: Option<Seconds>,
}

// The store's methods are declared in lib.rs (napi-rs types one class per impl block and
// names a second block by its Rust name) and implemented here.

/// `Store.once`.
pub(crate) fn once(store: &ddblock::Store, event_id: &str, o: OnceOptions) -> Result<NativeOnce> {
    let mut once = store.once(event_id, o.ttl.0).napi()?;
    if let Some(d) = o.done_ttl {
        once = once.with_done_ttl(d.0).napi()?;
    }
    Ok(NativeOnce { inner: once })
}

/// `Store.getVersioned`.
pub(crate) async fn get_versioned(store: &ddblock::Store, key: &str) -> Result<NativeVersioned> {
    Ok(NativeVersioned {
        inner: store.get_versioned(key).await.napi()?,
    })
}

/// `Store.putIfVersion`.
pub(crate) async fn put_if_version(
    store: &ddblock::Store,
    key: &str,
    value: JsPhp,
    ttl: Seconds,
    version: f64,
) -> Result<Option<NativeVersioned>> {
    let version = ddblock::cas::version_from_f64(version).napi()?;
    let out = store
        .put_if_version(key, &value.0, ttl.0, version)
        .await
        .napi()?;
    written(value, out)
}

/// `Store.putIfUnchanged`.
pub(crate) async fn put_if_unchanged(
    store: &ddblock::Store,
    key: &str,
    value: JsPhp,
    ttl: Seconds,
    seen: &NativeVersioned,
) -> Result<Option<NativeVersioned>> {
    let out = store
        .put_if_unchanged(key, &seen.inner, &value.0, ttl.0)
        .await
        .napi()?;
    written(value, out)
}

/// `Store.conflictRetry`.
pub(crate) fn conflict_retry(
    store: &ddblock::Store,
    key: &str,
    attempts: Option<u32>,
) -> Result<NativeConflictRetry> {
    let mut opts = CasOptions::new();
    if let Some(n) = attempts {
        opts = opts.attempts(n);
    }
    Ok(NativeConflictRetry {
        inner: Arc::new(store.conflict_retry(key, &opts).napi()?),
    })
}

fn written(value: JsPhp, out: CasOutcome) -> Result<Option<NativeVersioned>> {
    Ok(match out {
        CasOutcome::Written { version } => Some(NativeVersioned {
            inner: Versioned::written(value.0, version).napi()?,
        }),
        CasOutcome::Conflict => None,
    })
}

/// A value read with its version.
#[napi]
pub struct NativeVersioned {
    inner: Versioned,
}

#[napi]
impl NativeVersioned {
    /// The live value; `undefined` when missing or expired.
    #[napi(getter, ts_return_type = "unknown")]
    pub fn value(&self) -> Cached {
        Cached(self.inner.value.clone())
    }

    /// The version (0: none).
    #[napi(getter)]
    pub fn version(&self) -> i64 {
        self.inner.version as i64
    }
}

/// The core's bounded retry of a read-modify-write loop.
#[napi]
pub struct NativeConflictRetry {
    inner: Arc<ConflictRetry>,
}

#[napi]
impl NativeConflictRetry {
    /// After a conflict: waits the backoff, or rejects with `CONFLICT` after the last attempt.
    #[napi]
    pub async fn after_conflict(&self) -> Result<()> {
        self.inner.after_conflict().await.napi()
    }
}

/// The once-only guard of one event id.
#[napi]
pub struct NativeOnce {
    inner: ddblock::Once,
}

#[napi]
impl NativeOnce {
    /// The event id as given.
    #[napi(getter)]
    pub fn event_id(&self) -> String {
        self.inner.event_id().to_owned()
    }
    /// The table key.
    #[napi(getter)]
    pub fn key(&self) -> String {
        self.inner.key().to_owned()
    }
    /// How long a claim lasts, in seconds.
    #[napi(getter)]
    pub fn ttl(&self) -> i64 {
        self.inner.claim_ttl_secs()
    }
    /// How long a done event is remembered, in seconds.
    #[napi(getter)]
    pub fn done_ttl(&self) -> i64 {
        self.inner.done_ttl_secs()
    }

    /// Claims the event (one UpdateItem, usually): won or not.
    #[napi]
    pub async fn claim(&self) -> Result<NativeClaim> {
        let outcome = self.inner.claim().await.napi()?;
        Ok(NativeClaim {
            once: self.inner.clone(),
            outcome: Arc::new(outcome),
        })
    }

    /// Where the event stands (one consistent GetItem).
    #[napi]
    pub async fn status(&self) -> Result<JsOnceStatus> {
        Ok(status(&self.inner.status().await.napi()?))
    }
}

/// What a claim found.
#[napi]
pub struct NativeClaim {
    once: ddblock::Once,
    outcome: Arc<ClaimOutcome>,
}

#[napi]
impl NativeClaim {
    /// True when this delivery won the claim.
    #[napi(getter)]
    pub fn won(&self) -> bool {
        self.outcome.is_claimed()
    }
    /// Why it was skipped; `null` when won.
    #[napi(getter)]
    pub fn status(&self) -> Option<JsOnceStatus> {
        self.outcome.skipped().map(status)
    }
    /// When the claim expires; `null` when not won.
    #[napi(getter)]
    pub fn expires_at(&self) -> Option<i64> {
        self.outcome.claim().map(|c| c.expires_at())
    }
    /// An earlier attempt of this claim landed but its answer was lost (still ours).
    #[napi(getter)]
    pub fn recovered(&self) -> bool {
        self.outcome.claim().is_some_and(|c| c.recovered())
    }

    /// Marks the event done; rejects with `CONFLICT` when the claim is not (or no longer) ours.
    #[napi]
    pub async fn done(&self) -> Result<()> {
        match &*self.outcome {
            ClaimOutcome::Claimed(c) => c.done().await.napi(),
            ClaimOutcome::Skipped(s) => Err(self.once.not_claimed(s)).napi(),
        }
    }

    /// Ends the handler's claim by the core's rule: done when `handlerOk`, else given back
    /// (rejects with the give-back's error, for the caller to attach to the handler's).
    #[napi]
    pub async fn finish(&self, handler_ok: bool) -> Result<()> {
        match &*self.outcome {
            ClaimOutcome::Claimed(c) => c.finish(handler_ok).await.napi(),
            ClaimOutcome::Skipped(_) if !handler_ok => Ok(()),
            ClaimOutcome::Skipped(s) => Err(self.once.not_claimed(s)).napi(),
        }
    }

    /// Gives the claim back; false when it is not (or no longer) ours.
    #[napi]
    pub async fn give_back(&self) -> Result<bool> {
        match &*self.outcome {
            ClaimOutcome::Claimed(c) => c.give_back().await.napi(),
            ClaimOutcome::Skipped(_) => Ok(false),
        }
    }
}
