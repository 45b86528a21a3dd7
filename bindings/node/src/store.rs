//! `NativeStore`, the core's `Store` (a Laravel cache table): its constructor and getters. Its
//! other methods are declared beside what they return: `cache`, `lock`, `once`, `cas`, `admin`.

use napi::Env;
use napi_derive::napi;

use crate::error::OrThrow;
use crate::options::config;
use crate::value::JsPhp;

/// A Laravel cache table (`Illuminate\Cache\DynamoDbStore`'s items). Cheap to share.
// (Named as in JavaScript: napi-rs names a class by the last `impl` block it registers, and the
// store's methods are `impl` blocks in several modules.)
#[napi]
pub struct NativeStore {
    pub(crate) inner: ddblock::Store,
}

#[napi]
impl NativeStore {
    /// A store over `options` (CONFIG error when invalid). Connects on the first call.
    #[napi(
        constructor,
        catch_unwind,
        ts_args_type = "options?: object | undefined | null"
    )]
    pub fn new(env: &Env, options: Option<JsPhp>) -> napi::Result<Self> {
        Ok(NativeStore {
            inner: ddblock::Store::new(config(options).or_throw(env)?),
        })
    }

    /// The table name.
    #[napi(getter)]
    pub fn table(&self) -> String {
        self.inner.config().table().to_owned()
    }

    /// The prefix as configured.
    #[napi(getter)]
    pub fn prefix(&self) -> String {
        self.inner.config().prefix().to_owned()
    }

    /// Where locks live: the S3 bucket with the `s3` backend, else the table (what metrics and
    /// spans call `db.collection.name`).
    #[napi(getter)]
    pub fn collection(&self) -> String {
        self.inner.config().collection().to_owned()
    }

    /// The key layout (`laravel8`, `laravel11`, `laravel12`).
    #[napi(getter)]
    pub fn layout(&self) -> String {
        self.inner.config().layout().as_str().to_owned()
    }

    /// The endpoint URL, if one is set.
    #[napi(getter)]
    pub fn endpoint(&self) -> Option<String> {
        self.inner.config().endpoint().map(str::to_owned)
    }
}
