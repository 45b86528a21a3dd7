//! Node.js binding of ddblock (napi-rs). Holds core objects and converts types and errors; every
//! rule is the core's. Use it through `lib.js` (package `ddblock`), which adds `withLock`; errors
//! reach JavaScript as `DdblockError`s built here ([`error`]).
//!
//! All DynamoDB calls run on napi-rs's one tokio runtime ([`runtime`]) and return Promises
//! ([`error::promise`]: a failure is turned into its JavaScript error on the JavaScript thread).
//!
//! Modules, each using only those listed before it: [`error`] and [`value`] (conversions),
//! [`options`] (`new Store(...)`'s options, waits), [`store`] (`NativeStore`), then the store's
//! methods beside what they return: [`cache`], [`lock`], [`once`], [`cas`], [`admin`]; [`warn`]
//! hands the core's warnings to `process.emitWarning`, [`telemetry`] its metrics to `instrument()`.

mod error;
mod value;

mod options;
mod runtime;
mod store;

mod admin;
mod cache;
mod cas;
mod lock;
mod once;
mod telemetry;
mod warn;
