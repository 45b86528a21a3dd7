//! ddblock errors → JavaScript `DdblockError`s, built as data on the JavaScript thread.
//!
//! A failure stays a Rust value ([`Failure`]) until it reaches the JavaScript thread: a
//! synchronous method converts it before returning ([`OrThrow::or_throw`]), an asynchronous one
//! resolves its future to a `Result` and converts the failure in the promise's settle callback
//! ([`promise`]). The object is `new DdblockError(code, message, serviceCode, cause, kind)` of the
//! class `lib.js` registers ([`use_error_class`]): `code` the core kind upper-cased, `kind` the
//! core's snake_case name, `serviceCode` DynamoDB's code when there is one, `message` the core's
//! Display and `cause` the error's source, if any. napi-rs throws, or rejects with, a
//! `napi::Error` made from a JavaScript value unchanged, so that object is what the caller
//! catches: no text protocol, nothing for `lib.js` to parse.

use std::error::Error as _;
use std::future::Future;
use std::ptr;

use ddblock::ErrorKind;
use napi::bindgen_prelude::{PromiseRaw, ToNapiValue};
use napi::{sys, Env, JsValue, Unknown};
use napi_derive::napi;

/// The stable JavaScript code of a core error kind: the core's snake_case name in upper case
/// (`ErrorKind::as_str` matches every kind, so no kind can silently become generic here).
pub fn code_of(kind: ErrorKind) -> String {
    kind.as_str().to_ascii_uppercase()
}

/// Every error code, in the core's order (`ErrorKind::ALL`): what `lib.js` exports as `CODES`.
// (Registered by napi-rs's module init, which a unit-test build leaves out.)
#[cfg_attr(test, allow(dead_code))]
#[napi]
pub fn error_codes() -> Vec<String> {
    ErrorKind::ALL.iter().map(|k| code_of(*k)).collect()
}

/// The code of an acquire or wait that the caller's `AbortSignal` cancelled. Not a core kind: a
/// Rust caller cancels by dropping the future, which is what the binding does on an abort.
pub const ABORTED: &str = "ABORTED";

/// The `kind` of [`ABORTED`].
const ABORTED_KIND: &str = "aborted";

/// Why a binding call failed, kept as data until it is turned into a JavaScript error on the
/// JavaScript thread ([`Failure::into_napi`]).
#[derive(Debug)]
pub enum Failure {
    /// The core's error.
    Core(ddblock::Error),
    /// An input the binding itself refused before the core saw it (a value JavaScript cannot
    /// store, a ttl that is not a number): a kind of the core's and the binding's message.
    Binding(ErrorKind, String),
    /// The caller's `AbortSignal` cancelled the acquire or wait on lock `.0`.
    Aborted(String),
    /// napi-rs's own error, passed on as it is.
    Napi(napi::Error),
}

/// The result of the binding's own functions (`?` takes core and napi-rs errors).
pub type Result<T> = std::result::Result<T, Failure>;

impl From<ddblock::Error> for Failure {
    fn from(e: ddblock::Error) -> Self {
        Failure::Core(e)
    }
}

impl From<napi::Error> for Failure {
    fn from(e: napi::Error) -> Self {
        Failure::Napi(e)
    }
}

/// An error raised by the binding itself (bad option, unconvertible value).
pub fn binding_error(kind: ErrorKind, message: impl Into<String>) -> Failure {
    Failure::Binding(kind, message.into())
}

/// The error of a cancelled acquire or wait on lock `name`.
pub fn aborted(name: &str) -> Failure {
    Failure::Aborted(name.to_owned())
}

/// `?`-friendly conversion of core results.
pub trait IntoNapi<T> {
    /// The core's error as a [`Failure`].
    fn napi(self) -> Result<T>;
}

impl<T> IntoNapi<T> for ddblock::Result<T> {
    fn napi(self) -> Result<T> {
        self.map_err(Failure::Core)
    }
}

/// Conversion of a failure on the JavaScript thread, where a synchronous method returns.
pub trait OrThrow<T> {
    /// The failure as the `napi::Error` napi-rs throws unchanged (a `DdblockError`).
    fn or_throw(self, env: &Env) -> napi::Result<T>;
}

impl<T, E: Into<Failure>> OrThrow<T> for std::result::Result<T, E> {
    fn or_throw(self, env: &Env) -> napi::Result<T> {
        self.map_err(|e| e.into().into_napi(env.raw()))
    }
}

/// Runs `fut` on napi-rs's tokio runtime: the promise resolves with its value, or rejects with
/// its failure as a `DdblockError`, built in the settle callback on the JavaScript thread.
pub fn promise<'env, T, F>(env: &'env Env, fut: F) -> napi::Result<PromiseRaw<'env, T>>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
{
    env.spawn_future_with_callback(async move { Ok(fut.await) }, |env, r: Result<T>| {
        r.map_err(|f| f.into_napi(env.raw()))
    })
}

/// [`promise`] of `op` run on a clone of `core` (a core handle: `Store`, `Lock`, `Once`, ...),
/// which the future owns.
pub fn promise_on<'env, C, T, F>(
    env: &'env Env,
    core: &C,
    op: impl FnOnce(C) -> F,
) -> napi::Result<PromiseRaw<'env, T>>
where
    C: Clone,
    T: ToNapiValue + Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
{
    promise(env, op(core.clone()))
}

/// What a `DdblockError` is built from.
struct Fields<'a> {
    code: String,
    kind: &'a str,
    message: String,
    service_code: Option<&'a str>,
    /// The source chain, outermost first (each becomes the previous one's `cause`).
    causes: Vec<String>,
}

impl Failure {
    fn fields(&self) -> Option<Fields<'_>> {
        Some(match self {
            Failure::Core(e) => {
                let message = e.to_string();
                let mut causes = Vec::new();
                let mut last = message.clone();
                let mut source = e.source();
                while let Some(s) = source {
                    let text = s.to_string();
                    // A transparent wrapper (`Codec`'s `CodecError`) repeats the message.
                    if text != last {
                        causes.push(text.clone());
                    }
                    last = text;
                    source = s.source();
                }
                Fields {
                    code: code_of(e.kind()),
                    kind: e.kind().as_str(),
                    message,
                    service_code: e.code(),
                    causes,
                }
            }
            Failure::Binding(kind, message) => Fields {
                code: code_of(*kind),
                kind: kind.as_str(),
                message: message.clone(),
                service_code: None,
                causes: Vec::new(),
            },
            Failure::Aborted(name) => Fields {
                code: ABORTED.to_owned(),
                kind: ABORTED_KIND,
                message: format!(
                    "the acquire of lock `{name}` was aborted: the lock is not held (a write of \
                     this attempt that landed is deleted again)"
                ),
                service_code: None,
                causes: Vec::new(),
            },
            Failure::Napi(_) => return None,
        })
    }

    /// The JavaScript error: a `DdblockError` (napi-rs's own `Error` for [`Failure::Napi`]).
    ///
    /// # Safety
    ///
    /// `env` must be the live environment of the current (JavaScript) thread.
    pub unsafe fn into_js(self, env: sys::napi_env) -> napi::Result<sys::napi_value> {
        let Some(f) = self.fields() else {
            let Failure::Napi(e) = self else {
                unreachable!("fields() is None only for Napi")
            };
            return napi::Error::to_napi_value(env, e);
        };
        let mut cause: sys::napi_value = ptr::null_mut();
        for text in f.causes.iter().rev() {
            let mut e = ptr::null_mut();
            check(sys::napi_create_error(
                env,
                ptr::null_mut(),
                string(env, text)?,
                &mut e,
            ))?;
            if !cause.is_null() {
                set(env, e, c"cause", cause)?;
            }
            cause = e;
        }
        let code = string(env, &f.code)?;
        let message = string(env, &f.message)?;
        let kind = string(env, f.kind)?;
        let service_code = match f.service_code {
            Some(s) => Some(string(env, s)?),
            None => None,
        };
        if let Some(class) = error_class(env) {
            let mut undefined = ptr::null_mut();
            check(sys::napi_get_undefined(env, &mut undefined))?;
            let or_undefined = |v: Option<sys::napi_value>| v.unwrap_or(undefined);
            let args = [
                code,
                message,
                or_undefined(service_code),
                or_undefined((!cause.is_null()).then_some(cause)),
                kind,
            ];
            let mut out = ptr::null_mut();
            check(sys::napi_new_instance(
                env,
                class,
                args.len(),
                args.as_ptr(),
                &mut out,
            ))?;
            return Ok(out);
        }
        // Without lib.js (the generated loader, native.js, used directly): a plain Error with the data.
        let mut out = ptr::null_mut();
        check(sys::napi_create_error(env, code, message, &mut out))?;
        set(env, out, c"kind", kind)?;
        if let Some(s) = service_code {
            set(env, out, c"serviceCode", s)?;
        }
        if !cause.is_null() {
            set(env, out, c"cause", cause)?;
        }
        Ok(out)
    }

    /// The failure as a `napi::Error` holding its JavaScript error, which napi-rs throws or
    /// rejects with unchanged.
    pub fn into_napi(self, env: sys::napi_env) -> napi::Error {
        if let Failure::Napi(e) = self {
            return e;
        }
        let fallback = self.fields().map(|f| f.message).unwrap_or_default();
        match unsafe { self.into_js(env) } {
            Ok(v) => napi::Error::from(unsafe { Unknown::from_raw_unchecked(env, v) }),
            // Only when JavaScript cannot run (an exception is pending, which napi-rs then
            // throws instead, or the environment is going away).
            Err(_) => napi::Error::from_reason(fallback),
        }
    }
}

fn check(status: sys::napi_status) -> napi::Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi::Error::new(
            napi::Status::from(status),
            "building a DdblockError failed",
        ))
    }
}

unsafe fn string(env: sys::napi_env, s: &str) -> napi::Result<sys::napi_value> {
    let mut out = ptr::null_mut();
    check(sys::napi_create_string_utf8(
        env,
        s.as_ptr().cast(),
        s.len() as isize,
        &mut out,
    ))?;
    Ok(out)
}

unsafe fn set(
    env: sys::napi_env,
    obj: sys::napi_value,
    key: &std::ffi::CStr,
    v: sys::napi_value,
) -> napi::Result<()> {
    check(sys::napi_set_named_property(env, obj, key.as_ptr(), v))
}

/// The error class `lib.js` registered, a reference held by the environment.
struct ErrorClass(sys::napi_ref);

/// The registered class of `env`, if any.
unsafe fn error_class(env: sys::napi_env) -> Option<sys::napi_value> {
    let env = Env::from_raw(env);
    let class = env.get_instance_data::<ErrorClass>().ok()??;
    let mut out = ptr::null_mut();
    let status = sys::napi_get_reference_value(env.raw(), class.0, &mut out);
    (status == sys::Status::napi_ok && !out.is_null()).then_some(out)
}

/// Makes the binding's errors instances of `errorClass` (lib.js's `DdblockError`), called as
/// `new errorClass(code, message, serviceCode, cause, kind)`.
// (Registered by napi-rs's module init, which a unit-test build leaves out.)
#[cfg_attr(test, allow(dead_code))]
#[napi(
    ts_args_type = "errorClass: new (code: string, message: string, serviceCode: string | undefined, cause: unknown, kind: string) => Error"
)]
pub fn use_error_class(env: Env, error_class: Unknown) -> napi::Result<()> {
    let mut reference = ptr::null_mut();
    check(unsafe { sys::napi_create_reference(env.raw(), error_class.raw(), 1, &mut reference) })?;
    // The environment's teardown frees the reference; nothing to do at finalization.
    env.set_instance_data(ErrorClass(reference), (), |_| {})
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind the core knows, with the code JavaScript sees (the list in docs/node.md and
    /// lib.d.ts). `code_of` goes through the core's exhaustive `ErrorKind::as_str`, so a new kind
    /// gets its own code rather than a generic one.
    #[test]
    fn every_known_kind_has_its_code() {
        let known = [
            (ErrorKind::InvalidKey, "INVALID_KEY"),
            (ErrorKind::InvalidTtl, "INVALID_TTL"),
            (ErrorKind::TableNotFound, "TABLE_NOT_FOUND"),
            (ErrorKind::Throttled, "THROTTLED"),
            (ErrorKind::LockTimeout, "LOCK_TIMEOUT"),
            (ErrorKind::OutcomeUnknown, "OUTCOME_UNKNOWN"),
            (ErrorKind::LeaseLost, "LEASE_LOST"),
            (ErrorKind::Codec, "CODEC"),
            (ErrorKind::Service, "SERVICE"),
            (ErrorKind::Transport, "TRANSPORT"),
            (ErrorKind::Credentials, "CREDENTIALS"),
            (ErrorKind::Config, "CONFIG"),
            (ErrorKind::Unsupported, "UNSUPPORTED"),
            (ErrorKind::Conflict, "CONFLICT"),
        ];
        assert_eq!(known.len(), ErrorKind::ALL.len());
        for (kind, code) in known {
            assert_eq!(code_of(kind), code);
        }
    }

    #[test]
    fn a_core_error_keeps_its_kind_service_code_and_message_as_data() {
        let e = Failure::Core(ddblock::Error::Service {
            operation: "PutItem",
            code: "ValidationException".into(),
            message: "bad".into(),
        });
        let f = e.fields().unwrap();
        assert_eq!(f.code, "SERVICE");
        assert_eq!(f.kind, "service");
        assert_eq!(f.service_code, Some("ValidationException"));
        assert!(f.message.starts_with("DynamoDB PutItem"), "{}", f.message);
        let e = Failure::Core(ddblock::Error::Config("x".into()));
        let f = e.fields().unwrap();
        assert_eq!((f.code.as_str(), f.kind), ("CONFIG", "config"));
        assert_eq!(f.message, "configuration error: x");
        assert_eq!(f.service_code, None);
    }

    #[test]
    fn a_transparent_source_is_not_repeated_as_cause() {
        let e = Failure::Core(ddblock::Error::Codec(ddblock::codec::CodecError::at(
            "bad", 3,
        )));
        let f = e.fields().unwrap();
        assert_eq!(f.message, "bad at byte 3");
        assert!(f.causes.is_empty());
    }

    #[test]
    fn an_abort_is_its_own_code() {
        let a = aborted("l");
        let f = a.fields().unwrap();
        assert_eq!((f.code.as_str(), f.kind), ("ABORTED", "aborted"));
        assert!(f.message.contains("lock `l` was aborted"), "{}", f.message);
    }
}
