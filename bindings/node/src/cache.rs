//! The store's cache methods (Laravel's `Repository` calls: get, put, add, increment, ...): each
//! converts its arguments and runs the core's one request as a Promise.

use ddblock::format::input::Amount;
use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;

use crate::error::{promise_on, Result};
use crate::store::NativeStore;
use crate::value::{Cached, Entries, JsPhp, Many, Seconds};

#[napi]
impl NativeStore {
    /// The value of `key`, or `undefined` when missing or expired.
    #[napi(ts_return_type = "Promise<unknown>")]
    pub fn get<'env>(&self, env: &'env Env, key: String) -> napi::Result<PromiseRaw<'env, Cached>> {
        promise_on(env, &self.inner, |s| async move {
            Ok(Cached(s.get(&key).await?))
        })
    }

    /// Values of `keys` (an object in the order asked; missing → `undefined`; an item that is
    /// not a Laravel value → a `DdblockError` with code CODEC).
    #[napi(ts_return_type = "Promise<Record<string, unknown>>")]
    pub fn many<'env>(
        &self,
        env: &'env Env,
        keys: Vec<String>,
    ) -> napi::Result<PromiseRaw<'env, Many>> {
        promise_on(env, &self.inner, |s| async move {
            let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
            Ok(Many(s.many(&refs).await?))
        })
    }

    /// Stores `value` for `ttl` seconds.
    #[napi(
        ts_args_type = "key: string, value: unknown, ttl: number",
        ts_return_type = "Promise<void>"
    )]
    pub fn put<'env>(
        &self,
        env: &'env Env,
        key: String,
        value: JsPhp,
        ttl: Seconds,
    ) -> napi::Result<PromiseRaw<'env, ()>> {
        promise_on(env, &self.inner, |s| async move {
            Ok(s.put(&key, &value.0, ttl.0).await?)
        })
    }

    /// Stores many values with one expiry.
    #[napi(
        ts_args_type = "values: Record<string, unknown>, ttl: number",
        ts_return_type = "Promise<void>"
    )]
    pub fn put_many<'env>(
        &self,
        env: &'env Env,
        values: Entries,
        ttl: Seconds,
    ) -> napi::Result<PromiseRaw<'env, ()>> {
        promise_on(env, &self.inner, |s| async move {
            let pairs: Vec<(&str, ddblock::PhpValue)> = values
                .0
                .iter()
                .map(|(k, v)| (k.as_str(), v.clone()))
                .collect();
            Ok(s.put_many(&pairs, ttl.0).await?)
        })
    }

    /// Stores `value` only if `key` is missing or expired; true when stored.
    #[napi(
        ts_args_type = "key: string, value: unknown, ttl: number",
        ts_return_type = "Promise<boolean>"
    )]
    pub fn add<'env>(
        &self,
        env: &'env Env,
        key: String,
        value: JsPhp,
        ttl: Seconds,
    ) -> napi::Result<PromiseRaw<'env, bool>> {
        promise_on(env, &self.inner, |s| async move {
            Ok(s.add(&key, &value.0, ttl.0).await?)
        })
    }

    /// Adds `by` (default 1; fractions too, as Laravel) to a live numeric entry; the new value
    /// cast to int as Laravel does, or `null` when missing.
    #[napi(ts_return_type = "Promise<number | bigint | null>")]
    pub fn increment<'env>(
        &self,
        env: &'env Env,
        key: String,
        by: Option<f64>,
    ) -> napi::Result<PromiseRaw<'env, JsPhp>> {
        promise_on(env, &self.inner, |s| async move {
            Ok(JsPhp(s.increment(&key, amount(by)?).await?.into()))
        })
    }

    /// Subtracts `by` (default 1) from a live numeric entry; the new value, or `null` when missing.
    #[napi(ts_return_type = "Promise<number | bigint | null>")]
    pub fn decrement<'env>(
        &self,
        env: &'env Env,
        key: String,
        by: Option<f64>,
    ) -> napi::Result<PromiseRaw<'env, JsPhp>> {
        promise_on(env, &self.inner, |s| async move {
            Ok(JsPhp(s.decrement(&key, amount(by)?).await?.into()))
        })
    }

    /// Stores `value` for 5 years (Laravel's `forever`).
    #[napi(
        ts_args_type = "key: string, value: unknown",
        ts_return_type = "Promise<void>"
    )]
    pub fn forever<'env>(
        &self,
        env: &'env Env,
        key: String,
        value: JsPhp,
    ) -> napi::Result<PromiseRaw<'env, ()>> {
        promise_on(env, &self.inner, |s| async move {
            Ok(s.forever(&key, &value.0).await?)
        })
    }

    /// Deletes `key`.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn forget<'env>(&self, env: &'env Env, key: String) -> napi::Result<PromiseRaw<'env, ()>> {
        promise_on(
            env,
            &self.inner,
            |s| async move { Ok(s.forget(&key).await?) },
        )
    }

    /// Sets a live entry's expiry to now + `ttl`; false when missing or expired.
    #[napi(
        ts_args_type = "key: string, ttl: number",
        ts_return_type = "Promise<boolean>"
    )]
    pub fn touch<'env>(
        &self,
        env: &'env Env,
        key: String,
        ttl: Seconds,
    ) -> napi::Result<PromiseRaw<'env, bool>> {
        promise_on(env, &self.inner, |s| async move {
            Ok(s.touch(&key, ttl.0).await?)
        })
    }

    /// Always rejects with `UNSUPPORTED` (a DynamoDB table cannot be flushed, as in Laravel).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn flush<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        promise_on(env, &self.inner, |s| async move { Ok(s.flush().await?) })
    }
}

/// The amount of `increment`/`decrement` (default 1), by the core's rule.
fn amount(by: Option<f64>) -> Result<Amount> {
    Ok(Amount::from_f64(by.unwrap_or(1.0))?)
}
