//! The once-only guard and compare-and-set: native classes holding core objects. The `run` and
//! `update` loops are in `lib.js`, driving these (the bounds, backoff and errors are the core's).

use std::future::Future;
use std::sync::Arc;

use ddblock::{CasOptions, CasOutcome, ClaimOutcome, ConflictRetry, OnceStatus, Versioned};
use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;

use crate::error::{promise, IntoNapi, Result};
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
pub(crate) async fn get_versioned(store: ddblock::Store, key: String) -> Result<NativeVersioned> {
    Ok(NativeVersioned {
        inner: Arc::new(store.get_versioned(&key).await?),
    })
}

/// `Store.putIfVersion`.
pub(crate) async fn put_if_version(
    store: ddblock::Store,
    key: String,
    value: JsPhp,
    ttl: Seconds,
    version: f64,
) -> Result<Option<NativeVersioned>> {
    let version = ddblock::cas::version_from_f64(version)?;
    let out = store.put_if_version(&key, &value.0, ttl.0, version).await?;
    written(value, out)
}

/// `Store.putIfUnchanged`.
pub(crate) fn put_if_unchanged(
    store: ddblock::Store,
    key: String,
    value: JsPhp,
    ttl: Seconds,
    seen: &NativeVersioned,
) -> impl Future<Output = Result<Option<NativeVersioned>>> + Send + 'static {
    let seen = seen.inner.clone();
    async move {
        let out = store.put_if_unchanged(&key, &seen, &value.0, ttl.0).await?;
        written(value, out)
    }
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
            inner: Arc::new(Versioned::written(value.0, version)?),
        }),
        CasOutcome::Conflict => None,
    })
}

/// A value read with its version.
#[napi]
pub struct NativeVersioned {
    inner: Arc<Versioned>,
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
    #[napi(ts_return_type = "Promise<void>")]
    pub fn after_conflict<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let retry = self.inner.clone();
        promise(env, async move { Ok(retry.after_conflict().await?) })
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
    #[napi(ts_return_type = "Promise<NativeClaim>")]
    pub fn claim<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, NativeClaim>> {
        let once = self.inner.clone();
        promise(env, async move {
            let outcome = once.claim().await?;
            Ok(NativeClaim {
                once,
                outcome: Arc::new(outcome),
            })
        })
    }

    /// Where the event stands (one consistent GetItem).
    #[napi(ts_return_type = "Promise<OnceStatus>")]
    pub fn status<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, JsOnceStatus>> {
        let once = self.inner.clone();
        promise(env, async move { Ok(status(&once.status().await?)) })
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
    #[napi(ts_return_type = "Promise<void>")]
    pub fn done<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let (once, outcome) = (self.once.clone(), self.outcome.clone());
        promise(env, async move {
            match &*outcome {
                ClaimOutcome::Claimed(c) => c.done().await.napi(),
                ClaimOutcome::Skipped(s) => Err(once.not_claimed(s)).napi(),
            }
        })
    }

    /// Ends the handler's claim by the core's rule: done when `handlerOk`, else given back
    /// (rejects with the give-back's error, for the caller to attach to the handler's).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn finish<'env>(
        &self,
        env: &'env Env,
        handler_ok: bool,
    ) -> napi::Result<PromiseRaw<'env, ()>> {
        let (once, outcome) = (self.once.clone(), self.outcome.clone());
        promise(env, async move {
            match &*outcome {
                ClaimOutcome::Claimed(c) => c.finish(handler_ok).await.napi(),
                ClaimOutcome::Skipped(_) if !handler_ok => Ok(()),
                ClaimOutcome::Skipped(s) => Err(once.not_claimed(s)).napi(),
            }
        })
    }

    /// Gives the claim back; false when it is not (or no longer) ours.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn give_back<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, bool>> {
        let outcome = self.outcome.clone();
        promise(env, async move {
            match &*outcome {
                ClaimOutcome::Claimed(c) => c.give_back().await.napi(),
                ClaimOutcome::Skipped(_) => Ok(false),
            }
        })
    }
}
