//! Compare-and-set on cache values: `get --with-version` and `put --if-version`, the core's
//! `Store::get_versioned` and `Store::put_if_version`, printed and mapped to exit statuses.

use ddblock::{CasOutcome, PhpValue, Store};
use serde_json::{json, Value};

use crate::out::{self, print_json, EXIT_CONFLICT, EXIT_FAILURE, EXIT_OK};

/// `ddblock get KEY --with-version`: the version on the first line, then the value.
pub async fn get_versioned(store: &Store, json: bool, key: &str) -> ddblock::Result<i32> {
    let table_key = store.cache_key(key)?;
    let read = store.get_versioned(key).await?;
    if json {
        print_json(&json!({
            "key": key,
            "table_key": table_key,
            "found": read.value.is_some(),
            "value": read.value.as_ref().map_or(Value::Null, out::php_to_json),
            "version": read.version,
        }));
    } else {
        println!("{}", read.version);
    }
    Ok(match &read.value {
        Some(v) => {
            if !json {
                println!("{}", out::php_text(v));
            }
            EXIT_OK
        }
        None => {
            if !json {
                eprintln!(
                    "ddblock: `{}` (key {table_key}) is not in the cache (missing or expired); version {}",
                    key, read.version
                );
            }
            EXIT_FAILURE
        }
    })
}

/// `ddblock put KEY VALUE --ttl SECS --if-version V`.
pub async fn put_if_version(
    store: &Store,
    json: bool,
    key: &str,
    value: &PhpValue,
    ttl: i64,
    version: &str,
) -> ddblock::Result<i32> {
    let table_key = store.cache_key(key)?;
    let expected = ddblock::cas::version_from_str(version)?;
    let outcome = store.put_if_version(key, value, ttl, expected).await?;
    if json {
        print_json(&json!({
            "key": key,
            "table_key": table_key,
            "stored": outcome.version().is_some(),
            "ttl": ttl,
            "forever": false,
            "if_version": expected,
            "version": outcome.version(),
        }));
    }
    Ok(match outcome {
        CasOutcome::Written { version } => {
            if !json {
                println!("stored `{}` (key {table_key}), version {version}", key);
            }
            EXIT_OK
        }
        CasOutcome::Conflict => {
            eprintln!(
                "ddblock: `{}` (key {table_key}) is no longer at version {expected}: someone else \
                 wrote it; nothing stored (read it again with `get --with-version`)",
                key
            );
            EXIT_CONFLICT
        }
    })
}
