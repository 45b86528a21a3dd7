//! The cache commands: `get` and `put`, as Laravel's `Cache::get` and `Cache::put` read and write
//! (their compare-and-set forms, `--with-version` and `--if-version`, are cas.rs's).

use clap::{Args, ValueEnum};
use ddblock::format::input::ttl_from_str;
use ddblock::{Consistency, PhpValue, Store};
use serde_json::{json, Value};

use crate::cas;
use crate::out::{self, print_json, EXIT_FAILURE, EXIT_OK, EXIT_USAGE};

/// `get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// Cache key (as given to Laravel's Cache::get)
    pub key: String,
    /// Strongly consistent read (Laravel reads eventually consistent)
    #[arg(long)]
    pub consistent: bool,
    /// Also print the version for `put --if-version` (first line; `version` in --json); a consistent read
    #[arg(long)]
    pub with_version: bool,
}

/// `put`.
#[derive(Debug, Args)]
pub struct PutArgs {
    /// Cache key
    pub key: String,
    /// The value (see --as); a negative number is a value, not an option
    #[arg(allow_negative_numbers = true)]
    pub value: String,
    /// Whole seconds to keep it (<= 0 writes an already expired item, as Laravel); or --forever
    #[arg(long, value_name = "SECS", allow_negative_numbers = true)]
    pub ttl: Option<String>,
    /// Keep it 5 years (Laravel's Cache::forever)
    #[arg(long, conflicts_with = "ttl")]
    pub forever: bool,
    /// Store only if the entry is still at version V (from `get --with-version`; 0: no version); exit 3 if not
    #[arg(
        long,
        value_name = "V",
        conflicts_with = "forever",
        requires = "ttl",
        allow_negative_numbers = true
    )]
    pub if_version: Option<String>,
    /// How to read VALUE
    #[arg(long = "as", value_name = "TYPE", default_value = "string")]
    pub value_type: ValueType,
}

/// How `put` reads its VALUE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ValueType {
    /// A PHP string (numeric strings are stored as numbers, as Laravel does)
    String,
    /// JSON: objects become associative arrays, arrays lists
    Json,
    /// PHP serialize() text
    Serialized,
}

/// `ddblock get KEY`: the value, PHP-decoded; exit 1 when missing or expired.
pub async fn get(store: &Store, json: bool, a: &GetArgs) -> ddblock::Result<i32> {
    if a.with_version {
        return cas::get_versioned(store, json, &a.key).await;
    }
    let consistency = if a.consistent {
        Consistency::Strong
    } else {
        Consistency::Eventual
    };
    let table_key = store.cache_key(&a.key)?;
    let value = store.get_with(&a.key, consistency).await?;
    if json {
        print_json(&json!({
            "key": a.key,
            "table_key": table_key,
            "found": value.is_some(),
            "value": value.as_ref().map_or(Value::Null, out::php_to_json),
        }));
    }
    Ok(match value {
        Some(v) => {
            if !json {
                println!("{}", out::php_text(&v));
            }
            EXIT_OK
        }
        None => {
            if !json {
                eprintln!(
                    "ddblock: `{}` (key {table_key}) is not in the cache (missing or expired)",
                    a.key
                );
            }
            EXIT_FAILURE
        }
    })
}

/// `ddblock put KEY VALUE (--ttl SECS | --forever)`: stores it as Laravel's `Cache::put` does.
pub async fn put(store: &Store, json: bool, a: &PutArgs) -> ddblock::Result<i32> {
    let value = match a.value_type {
        ValueType::String => PhpValue::String(a.value.clone().into_bytes()),
        ValueType::Json => {
            let v: Value = match serde_json::from_str(&a.value) {
                Ok(v) => v,
                Err(e) => return Ok(out::fail(&format!("VALUE is not JSON: {e}"), json)),
            };
            ddblock::codec::to_php(&v)?
        }
        ValueType::Serialized => ddblock::codec::unserialize(a.value.as_bytes())?,
    };
    let table_key = store.cache_key(&a.key)?;
    let ttl = a.ttl.as_deref().map(ttl_from_str).transpose()?;
    if let (Some(v), Some(ttl)) = (&a.if_version, ttl) {
        return cas::put_if_version(store, json, &a.key, &value, ttl, v).await;
    }
    match (ttl, a.forever) {
        (Some(ttl), false) => store.put(&a.key, &value, ttl).await?,
        (None, true) => store.forever(&a.key, &value).await?,
        // clap refuses both together; neither is a usage error that names both ways.
        _ => {
            eprintln!("ddblock: put needs --ttl SECS (how long to keep the value) or --forever (5 years, as Laravel's Cache::forever)");
            return Ok(EXIT_USAGE);
        }
    }
    if json {
        print_json(&json!({
            "key": a.key,
            "table_key": table_key,
            "stored": true,
            "ttl": ttl,
            "forever": a.forever,
        }));
    } else {
        println!("stored `{}` (key {table_key})", a.key);
    }
    Ok(EXIT_OK)
}
