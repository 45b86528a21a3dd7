//! The once-only guard (the core's `Once`): `store.once(...)`, `NativeOnce` and the claim it
//! hands out (`NativeClaim`). The `run` loop is in `lib.js`, driving these; its rules are the
//! core's.

use std::sync::Arc;

use ddblock::{ClaimOutcome, OnceStatus};
use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;

use crate::error::{promise_on, IntoNapi, OrThrow};
use crate::store::NativeStore;
use crate::value::Seconds;

#[napi]
impl NativeStore {
    /// The once-only guard of `eventId` (a cache key); sends nothing. Bad ids or ttls throw here.
    #[napi(catch_unwind)]
    pub fn once(
        &self,
        env: &Env,
        event_id: String,
        options: OnceOptions,
    ) -> napi::Result<NativeOnce> {
        let mut once = self.inner.once(&event_id, options.ttl.0).or_throw(env)?;
        if let Some(d) = options.done_ttl {
            once = once.with_done_ttl(d.0).or_throw(env)?;
        }
        Ok(NativeOnce { inner: once })
    }
}

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
        promise_on(env, &self.inner, |once| async move {
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
        promise_on(env, &self.inner, |once| async move {
            Ok(status(&once.status().await?))
        })
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
        // The core's `finish(true)` is `done`; a skipped claim is not ours either way.
        self.finish(env, true)
    }

    /// Ends the handler's claim by the core's rule: done when `handlerOk`, else given back
    /// (rejects with the give-back's error, for the caller to attach to the handler's).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn finish<'env>(
        &self,
        env: &'env Env,
        handler_ok: bool,
    ) -> napi::Result<PromiseRaw<'env, ()>> {
        let once = self.once.clone();
        promise_on(env, &self.outcome, |outcome| async move {
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
        promise_on(env, &self.outcome, |outcome| async move {
            match &*outcome {
                ClaimOutcome::Claimed(c) => c.give_back().await.napi(),
                ClaimOutcome::Skipped(_) => Ok(false),
            }
        })
    }
}
