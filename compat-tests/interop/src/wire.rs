//! Values across the harness protocol: PHP values as `base64(serialize(value))`, DynamoDB items
//! as the wire JSON PHP's client answers with.

use aws_sdk_dynamodb::types::AttributeValue;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use ddblock::codec::{serialize, unserialize};
use ddblock::PhpValue;
use serde_json::Value;

use crate::Item;

/// `base64(serialize(value))`, how values go to the harness.
pub fn to_b64(value: &PhpValue) -> String {
    B64.encode(serialize(value))
}

/// The value of a `base64(serialize(value))` text from the harness; panics on bad input.
pub fn from_b64(text: &str) -> PhpValue {
    let bytes = B64
        .decode(text)
        .unwrap_or_else(|e| panic!("harness sent bad base64 {text:?}: {e}"));
    unserialize(&bytes).unwrap_or_else(|e| {
        panic!(
            "harness sent serialize() text ddblock cannot decode ({e}): {:?}",
            String::from_utf8_lossy(&bytes)
        )
    })
}

/// A PHP string value.
pub fn php_str(s: &str) -> PhpValue {
    PhpValue::String(s.as_bytes().to_vec())
}

/// DynamoDB's wire JSON of an item (`{"key": {"S": "k"}, ...}`) as SDK attribute values.
pub fn item_from_wire(wire: &Value) -> Item {
    let obj = wire
        .as_object()
        .unwrap_or_else(|| panic!("an item must be a JSON object: {wire}"));
    obj.iter()
        .map(|(k, v)| (k.clone(), attr_from_wire(v)))
        .collect()
}

/// One attribute value from DynamoDB's wire JSON (`{"S": ".."}`, `{"N": ".."}`, ...).
pub fn attr_from_wire(wire: &Value) -> AttributeValue {
    let obj = wire
        .as_object()
        .filter(|o| o.len() == 1)
        .unwrap_or_else(|| panic!("an attribute value must have exactly one type: {wire}"));
    let (ty, v) = obj.iter().next().expect("one entry");
    let text = || {
        v.as_str()
            .unwrap_or_else(|| panic!("{ty} must be a string: {wire}"))
            .to_owned()
    };
    let texts = || -> Vec<String> {
        v.as_array()
            .unwrap_or_else(|| panic!("{ty} must be a list: {wire}"))
            .iter()
            .map(|s| s.as_str().expect("set member").to_owned())
            .collect()
    };
    match ty.as_str() {
        "S" => AttributeValue::S(text()),
        "N" => AttributeValue::N(text()),
        "BOOL" => AttributeValue::Bool(v.as_bool().expect("BOOL")),
        "NULL" => AttributeValue::Null(true),
        "SS" => AttributeValue::Ss(texts()),
        "NS" => AttributeValue::Ns(texts()),
        "B" => AttributeValue::B(aws_sdk_dynamodb::primitives::Blob::new(
            B64.decode(text()).expect("B is base64"),
        )),
        "L" => AttributeValue::L(
            v.as_array()
                .expect("L is a list")
                .iter()
                .map(attr_from_wire)
                .collect(),
        ),
        "M" => AttributeValue::M(item_from_wire(v)),
        other => panic!("unsupported attribute type {other}: {wire}"),
    }
}

/// The `expires_at` of an item as an integer; panics if missing or not an integer `N`.
pub fn expires_at(item: &Item) -> i64 {
    match item.get("expires_at") {
        Some(AttributeValue::N(n)) => n
            .parse()
            .unwrap_or_else(|_| panic!("expires_at {n:?} is not an integer")),
        other => panic!("item has no numeric expires_at: {other:?}"),
    }
}
