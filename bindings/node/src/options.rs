//! The options JavaScript passes, as the core's types: `new Store(...)`'s settings (read through
//! the core's settings table) and the milliseconds of waits and timeouts.

use std::time::Duration;

use ddblock::config::{Front, Setting, SettingValue, Unit};
use ddblock::format::input::timeout_from_secs_f64;
use ddblock::{PhpValue, StoreConfig, Wait};
use napi_derive::napi;

use crate::error::{Failure, IntoNapi, Result};
use crate::value::{key_name, JsPhp};

/// How a Node caller creates the table, for `TABLE_NOT_FOUND`'s message.
const CREATE_TABLE_HINT: &str = "`await store.createTable()` (or `ddblock create-table`)";

/// Options of `new Store(...)`: what is not given comes from Laravel's variables
/// (`DYNAMODB_CACHE_TABLE`, `DYNAMODB_ENDPOINT`, `AWS_DEFAULT_REGION`, `CACHE_PREFIX`,
/// `DDBLOCK_LAYOUT`, `DDBLOCK_BACKEND`, `DDBLOCK_S3_BUCKET`), then Laravel's defaults.
/// (The TypeScript type of the options; the constructor reads them through the core's settings
/// table, `StoreConfig::from_settings`.)
#[napi(object)]
#[derive(Default)]
#[allow(dead_code)]
pub struct StoreOptions {
    /// Table name (default `cache`).
    pub table: Option<String>,
    /// Laravel's `cache.prefix`, as configured (default: Laravel's own from `APP_NAME`, see docs/configuration.md).
    pub prefix: Option<String>,
    /// `laravel8` (8–10), `laravel11` or `laravel12` (12+, default).
    pub layout: Option<String>,
    /// Endpoint URL (DynamoDB Local, moto, dynalite, a proxy).
    pub endpoint: Option<String>,
    /// AWS region (default from the AWS environment, else `us-east-1`).
    pub region: Option<String>,
    /// Partition key attribute (default `key`).
    pub key_attribute: Option<String>,
    /// Value attribute (default `value`).
    pub value_attribute: Option<String>,
    /// Expiry attribute (default `expires_at`).
    pub expiration_attribute: Option<String>,
    /// TCP connect timeout in milliseconds.
    pub connect_timeout_ms: Option<f64>,
    /// Timeout of a whole operation including retries, in milliseconds.
    pub operation_timeout_ms: Option<f64>,
    /// Timeout of one attempt (one HTTP request), in milliseconds.
    pub attempt_timeout_ms: Option<f64>,
    /// Attempts per request including the first (default 3).
    pub max_attempts: Option<u32>,
    /// How long past its expiry a lock must be before it is taken over, in ms (default 0: Laravel's own rule).
    pub clock_skew_margin_ms: Option<f64>,
    /// How often `withLock`'s heartbeat refreshes the lock, in ms (default: a third of the ttl).
    pub heartbeat_interval_ms: Option<f64>,
    /// Where locks live: `dynamodb` (the table, default) or `s3` (a bucket, `bucket`; `endpoint`
    /// serves it too). Cache entries, `once` and compare-and-set stay in the table.
    pub backend: Option<String>,
    /// The bucket of the `s3` lock backend.
    pub bucket: Option<String>,
    /// How a lock in the table is released: `delete` (default) or `keep-fence` (expires the item
    /// and keeps its fencing token, so fences never go back across a release).
    pub release_mode: Option<String>,
}

/// The store configuration of `new Store(options)` (CONFIG error when invalid).
pub fn config(options: Option<JsPhp>) -> Result<StoreConfig> {
    let given = settings(options)?;
    Ok(
        StoreConfig::from_settings(Front::Node, given, |k| std::env::var(k).ok())?
            .create_table_hint(CREATE_TABLE_HINT)
            .build()?,
    )
}

/// The options of `new Store(...)` as the core's settings, by their Node names (the core's table
/// says what each holds): a string or a number each; `undefined` and `null` are not given. A value
/// of the wrong JavaScript type is a `TypeError` (napi-rs's `InvalidArg`, which `lib.js` turns
/// into one), an unknown name or a bad value the core's `CONFIG` error.
fn settings(options: Option<JsPhp>) -> Result<Vec<(String, SettingValue)>> {
    let entries = match options.map(|o| o.0) {
        None | Some(PhpValue::Null) => return Ok(Vec::new()),
        Some(PhpValue::Array(entries)) => entries,
        Some(_) => return Err(invalid_arg("the options of new Store() must be an object")),
    };
    let mut given = Vec::with_capacity(entries.len());
    for (k, v) in entries {
        let name = key_name(k);
        let wants_text = Setting::find(Front::Node, &name)
            .map(|s| matches!(s.unit, Unit::Text | Unit::Choice(_)))
            .unwrap_or(true);
        let value = match (v, wants_text) {
            (PhpValue::Null, _) => continue,
            (PhpValue::String(b), true) => SettingValue::Text(String::from_utf8_lossy(&b).into()),
            (PhpValue::Int(i), false) => SettingValue::Number(i as f64),
            (PhpValue::Float(f), false) => SettingValue::Number(f),
            (_, text) => {
                let want = if text { "a string" } else { "a number" };
                return Err(invalid_arg(&format!("options.{name} must be {want}")));
            }
        };
        given.push((name, value));
    }
    Ok(given)
}

/// napi-rs's own refusal of an argument, which `lib.js` turns into a `TypeError`.
fn invalid_arg(message: &str) -> Failure {
    napi::Error::new(napi::Status::InvalidArg, message.to_owned()).into()
}

/// Milliseconds from JS as a Duration (the core's rule for timeouts).
pub fn millis(what: &str, ms: f64) -> Result<Duration> {
    timeout_from_secs_f64(what, ms / 1000.0).napi()
}

/// A wait in milliseconds from JS as the core's [`Wait`]: 0 tries once, `Infinity` waits forever.
pub fn wait_of(ms: f64) -> Result<Wait> {
    Wait::from_secs_f64(ms / 1000.0).napi()
}
