//! What Laravel writes, stated independently of ddblock's code (docs/format.md,
//! laravel-format.md), for the tests to hold ddblock's items against.

use aws_sdk_dynamodb::types::AttributeValue;
use ddblock::KeyLayout;

use crate::{Interop, Item};

/// The table key Laravel writes for cache key `key`.
pub fn laravel_cache_key(t: &Interop, key: &str) -> String {
    match (t.layout, t.prefix.as_str()) {
        (_, "") => key.to_owned(),
        (KeyLayout::Laravel8, p) => format!("{p}:{key}"),
        (_, p) => format!("{p}{key}"),
    }
}

/// The table key Laravel writes for lock `name`.
pub fn laravel_lock_key(t: &Interop, name: &str) -> String {
    match (t.layout, t.prefix.as_str()) {
        (_, "") => name.to_owned(),
        (KeyLayout::Laravel8, p) => format!("{p}:{p}:{name}"),
        (KeyLayout::Laravel11, p) => format!("{p}{p}{name}"),
        (KeyLayout::Laravel12, p) => format!("{p}{name}"),
    }
}

/// The `S` text Laravel stores for a string owner.
pub fn serialized_owner(owner: &str) -> String {
    format!("s:{}:\"{owner}\";", owner.len())
}

/// Asserts `lo <= v <= hi`, naming `what`.
pub fn in_range(what: &str, v: i64, lo: i64, hi: i64) {
    assert!(
        (lo..=hi).contains(&v),
        "{what} = {v}, expected within [{lo}, {hi}]"
    );
}

/// An item's `value` attribute, which it must have.
pub fn value_attr(item: &Item) -> &AttributeValue {
    item.get("value").expect("item has a value attribute")
}
