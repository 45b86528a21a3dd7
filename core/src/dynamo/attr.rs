//! Attribute values ↔ the format layer's types.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

use crate::config::StoreConfig;
use crate::format::item::{
    parse_timestamp, Expiry, ItemView, Value, ATTEMPT_ATTRIBUTE, FENCE_ATTRIBUTE, SINCE_ATTRIBUTE,
};
use crate::holder::StoredValue;

/// A DynamoDB item as the SDK hands it over.
pub type Item = HashMap<String, AttributeValue>;

/// The DynamoDB attribute for a stored value (`N` or `S`, as Laravel's `type()` chose).
pub(super) fn stored(v: &StoredValue) -> AttributeValue {
    match v {
        StoredValue::Number(n) => AttributeValue::N(n.clone()),
        StoredValue::String(s) => AttributeValue::S(s.clone()),
    }
}

/// A DynamoDB number attribute.
pub(super) fn num(n: i64) -> AttributeValue {
    AttributeValue::N(n.to_string())
}

/// The `Key` map of table key `k`.
pub(super) fn key(cfg: &StoreConfig, k: &str) -> Item {
    HashMap::from([(
        cfg.key_attribute().to_owned(),
        AttributeValue::S(k.to_owned()),
    )])
}

/// A full item as Laravel writes it: key, stored value, expiry.
pub(super) fn full_item(cfg: &StoreConfig, k: &str, value: &StoredValue, expires_at: i64) -> Item {
    HashMap::from([
        (
            cfg.key_attribute().to_owned(),
            AttributeValue::S(k.to_owned()),
        ),
        (cfg.value_attribute().to_owned(), stored(value)),
        (cfg.expiration_attribute().to_owned(), num(expires_at)),
    ])
}

/// An item as the format layer reads it.
pub(crate) fn view(cfg: &StoreConfig, item: &Item) -> ItemView {
    let key = match item.get(cfg.key_attribute()) {
        Some(AttributeValue::S(k)) => Some(k.clone()),
        _ => None,
    };
    let value = match item.get(cfg.value_attribute()) {
        None => Value::Missing,
        Some(AttributeValue::S(s)) => Value::Stored(StoredValue::String(s.clone())),
        Some(AttributeValue::N(n)) => Value::Stored(StoredValue::Number(n.clone())),
        Some(other) => Value::Other(type_name(other)),
    };
    let expiry = match item.get(cfg.expiration_attribute()) {
        None => Expiry::Never,
        Some(AttributeValue::N(n)) => match parse_timestamp(n) {
            Some(t) => Expiry::At(t),
            None => Expiry::Invalid(format!("N {n:?}")),
        },
        Some(AttributeValue::S(s)) => Expiry::Invalid(format!("S {s:?}")),
        Some(other) => Expiry::Invalid(format!("a value of type {}", type_name(other))),
    };
    let fence = match item.get(FENCE_ATTRIBUTE) {
        Some(AttributeValue::N(n)) => n.trim().parse::<u64>().ok(),
        _ => None,
    };
    let attempt = match item.get(ATTEMPT_ATTRIBUTE) {
        Some(AttributeValue::S(a)) => Some(a.clone()),
        _ => None,
    };
    let since = match item.get(SINCE_ATTRIBUTE) {
        Some(AttributeValue::N(n)) => n.trim().parse::<i64>().ok(),
        _ => None,
    };
    ItemView {
        key,
        value,
        expiry,
        fence,
        attempt,
        since,
    }
}

/// The DynamoDB type descriptor of an attribute value.
fn type_name(av: &AttributeValue) -> &'static str {
    match av {
        AttributeValue::B(_) => "B",
        AttributeValue::Bool(_) => "BOOL",
        AttributeValue::Bs(_) => "BS",
        AttributeValue::L(_) => "L",
        AttributeValue::M(_) => "M",
        AttributeValue::N(_) => "N",
        AttributeValue::Ns(_) => "NS",
        AttributeValue::Null(_) => "NULL",
        AttributeValue::S(_) => "S",
        AttributeValue::Ss(_) => "SS",
        // AttributeValue is non-exhaustive: a type added after this SDK version.
        _ => "unknown",
    }
}
