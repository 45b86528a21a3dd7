//! The options JavaScript passes, as the core's types: `new Store(...)`'s settings (read through
//! the core's settings table, which lib.d.ts's `StoreOptions` is generated from) and the
//! milliseconds of waits and timeouts.

use std::time::Duration;

use ddblock::config::{Front, Setting, SettingValue, Unit};
use ddblock::format::input::timeout_from_secs_f64;
use ddblock::{PhpValue, StoreConfig, Wait};

use crate::error::{Failure, IntoNapi, Result};
use crate::value::{key_name, JsPhp};

/// How a Node caller creates the table, for `TABLE_NOT_FOUND`'s message.
const CREATE_TABLE_HINT: &str = "`await store.createTable()` (or `ddblock create-table`)";

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
