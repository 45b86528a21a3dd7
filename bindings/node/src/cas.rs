//! Compare-and-set (the core's `cas`): the store's versioned reads and conditional writes,
//! `NativeVersioned` and `NativeConflictRetry`. The `update` loop is in `lib.js`, driving these;
//! its bounds and backoff are the core's.

use std::sync::Arc;

use ddblock::{CasOptions, CasOutcome, ConflictRetry, Versioned};
use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;

use crate::error::{promise_on, OrThrow, Result};
use crate::store::NativeStore;
use crate::value::{Cached, JsPhp, Seconds};

#[napi]
impl NativeStore {
    /// `key`'s value and version: one strongly consistent GetItem.
    #[napi(ts_return_type = "Promise<NativeVersioned>")]
    pub fn get_versioned<'env>(
        &self,
        env: &'env Env,
        key: String,
    ) -> napi::Result<PromiseRaw<'env, NativeVersioned>> {
        promise_on(env, &self.inner, |s| async move {
            Ok(NativeVersioned {
                inner: Arc::new(s.get_versioned(&key).await?),
            })
        })
    }

    /// Stores `value` for `ttl` only if the entry is at `version`; the written value and
    /// version, or `null` on a conflict.
    #[napi(
        ts_args_type = "key: string, value: unknown, ttl: number, version: number",
        ts_return_type = "Promise<NativeVersioned | null>"
    )]
    pub fn put_if_version<'env>(
        &self,
        env: &'env Env,
        key: String,
        value: JsPhp,
        ttl: Seconds,
        version: f64,
    ) -> napi::Result<PromiseRaw<'env, Option<NativeVersioned>>> {
        promise_on(env, &self.inner, |s| async move {
            let version = ddblock::cas::version_from_f64(version)?;
            let out = s.put_if_version(&key, &value.0, ttl.0, version).await?;
            written(value, out)
        })
    }

    /// Stores `value` only if the entry is as `seen` read it (version and value).
    #[napi(
        ts_args_type = "key: string, value: unknown, ttl: number, seen: NativeVersioned",
        ts_return_type = "Promise<NativeVersioned | null>"
    )]
    pub fn put_if_unchanged<'env>(
        &self,
        env: &'env Env,
        key: String,
        value: JsPhp,
        ttl: Seconds,
        seen: &NativeVersioned,
    ) -> napi::Result<PromiseRaw<'env, Option<NativeVersioned>>> {
        let seen = seen.inner.clone();
        promise_on(env, &self.inner, |s| async move {
            let out = s.put_if_unchanged(&key, &seen, &value.0, ttl.0).await?;
            written(value, out)
        })
    }

    /// The core's bounded retry of an `update` loop on `key` (default 10 attempts).
    #[napi(catch_unwind)]
    pub fn conflict_retry(
        &self,
        env: &Env,
        key: String,
        attempts: Option<u32>,
    ) -> napi::Result<NativeConflictRetry> {
        let opts = match attempts {
            Some(n) => CasOptions::new().attempts(n),
            None => CasOptions::new(),
        };
        let retry = self.inner.conflict_retry(&key, &opts).or_throw(env)?;
        Ok(NativeConflictRetry {
            inner: Arc::new(retry),
        })
    }
}

/// The written value and version of a put, or `None` on a conflict.
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
        promise_on(env, &self.inner, |retry| async move {
            Ok(retry.after_conflict().await?)
        })
    }
}
