//! The peer's configuration: the `DDB_*` environment of PROTOCOL.md, read once at start, mapped
//! onto the core's [`StoreConfig`] builder. Unset settings keep the core's defaults except where
//! the protocol names its own (layout `laravel8`, region `us-east-1`, 10 s per HTTP call).
//! The lock backend also follows the core's own `DDBLOCK_BACKEND`, `DDBLOCK_S3_BUCKET` and
//! `DDBLOCK_S3_RELEASE` (the S3 lock race of compat-tests/patterns/concurrency.py).

use std::time::Duration;

use ddblock::config::{Front, SettingValue, SETTINGS};
use ddblock::{Backoff, KeyLayout, StoreConfig};

/// A set, non-empty variable.
fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// A required variable.
fn required(name: &str) -> Result<String, String> {
    var(name).ok_or_else(|| format!("{name} is required (see PROTOCOL.md)"))
}

/// A number of seconds (fractions allowed, more than 0).
fn seconds(name: &str, text: &str) -> Result<Duration, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| format!("{name} must be a number of seconds above 0, not {text:?}"))
}

/// A whole number.
fn whole(name: &str, text: &str) -> Result<u64, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("{name} must be a whole number, not {text:?}"))
}

/// The store configuration from the environment.
pub fn from_env() -> Result<StoreConfig, String> {
    let layout: KeyLayout = var("DDB_LAYOUT")
        .unwrap_or_else(|| "laravel8".into())
        .parse()
        .map_err(|e: ddblock::Error| format!("DDB_LAYOUT: {e}"))?;
    let timeout = seconds(
        "DDB_TIMEOUT",
        &var("DDB_TIMEOUT").unwrap_or_else(|| "10".into()),
    )?;
    let mut b = StoreConfig::builder()
        .endpoint(required("DDB_ENDPOINT")?)
        .table(required("DDB_TABLE")?)
        .layout(layout)
        .prefix(std::env::var("DDB_PREFIX").unwrap_or_default())
        .region(var("DDB_REGION").unwrap_or_else(|| "us-east-1".into()))
        .connect_timeout(timeout)
        .attempt_timeout(timeout);
    if let Some(r) = var("DDB_RETRIES") {
        let retries = whole("DDB_RETRIES", &r)?;
        let attempts = u32::try_from(retries.saturating_add(1)).unwrap_or(u32::MAX);
        b = b.max_attempts(attempts);
    }
    if let Some(m) = var("DDB_MARGIN") {
        b = b.clock_skew_margin(Duration::from_secs(whole("DDB_MARGIN", &m)?));
    }
    if let Some(text) = var("DDB_BACKOFF_MS") {
        let parts: Vec<&str> = text.split(',').collect();
        let [initial, max] = parts[..] else {
            return Err(format!(
                "DDB_BACKOFF_MS must be INITIAL,MAX in ms, not {text:?}"
            ));
        };
        b = b.backoff(Backoff {
            initial: Duration::from_millis(whole("DDB_BACKOFF_MS", initial)?),
            max: Duration::from_millis(whole("DDB_BACKOFF_MS", max)?),
            jitter: 1.0,
            ..Backoff::default()
        });
    }
    for s in SETTINGS {
        let Some(name) = s.env else { continue };
        let fronts_own = [
            "DDBLOCK_BACKEND",
            "DDBLOCK_S3_BUCKET",
            "DDBLOCK_S3_RELEASE",
            "DDBLOCK_RELEASE_MODE",
        ];
        if !fronts_own.contains(&name) {
            continue;
        }
        if let Some(v) = var(name) {
            b = s
                .apply(Front::Env, b, SettingValue::Text(v))
                .map_err(|e| format!("{name}: {e}"))?;
        }
    }
    b.build().map_err(|e| e.to_string())
}
