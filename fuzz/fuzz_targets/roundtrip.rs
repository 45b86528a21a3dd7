//! What the decoder accepts, ddblock writes back and reads again unchanged.
//!
//! decode → `serialize` → decode gives the same value (floats by bits) and the same bytes again;
//! the re-serialized text decodes within the default limits whenever it fits in `max_bytes`;
//! `encode_stored` (Laravel's write) never panics, writes `N` only for numbers DynamoDB accepts
//! and `S` only for text that `decode_stored` (Laravel's read) turns back into the same value,
//! and fails only for the values the docs list; the serde bridge reaches a fixed point after one
//! pass through `serde_json::Value`, and typed reads never panic.
#![no_main]

use std::collections::BTreeMap;

use ddblock::codec::{
    decode_stored, decode_stored_with, encode_stored, from_php, numeric, serialize, to_php,
    unserialize, unserialize_prefix, Limits, PhpValue, StoredValue,
};
use ddblock_fuzz::{same, UNLIMITED};
use libfuzzer_sys::fuzz_target;

/// A typed read target with the shapes serde users write.
#[derive(Debug, serde::Deserialize)]
#[allow(dead_code)]
struct Typed {
    id: Option<u64>,
    name: Option<String>,
    tags: Option<Vec<String>>,
    score: Option<f64>,
    flag: Option<bool>,
    nested: Option<BTreeMap<String, i32>>,
    kind: Option<Kind>,
}

#[derive(Debug, serde::Deserialize)]
#[allow(dead_code)]
enum Kind {
    Unit,
    Newtype(i64),
    Tuple(u8, String),
    Struct { a: Option<i16> },
}

/// `json` to a PHP value and back.
fn through_php(json: &serde_json::Value) -> serde_json::Value {
    let php = to_php(json).unwrap_or_else(|e| panic!("to_php({json}) failed: {e}"));
    from_php(&php).unwrap_or_else(|e| panic!("from_php(to_php({json})) failed: {e}"))
}

fuzz_target!(|data: &[u8]| {
    let Ok(v) = unserialize(data) else { return };

    let bytes = serialize(&v);
    let (back, used) = unserialize_prefix(&bytes, &UNLIMITED)
        .unwrap_or_else(|e| panic!("our own serialize() output does not decode: {e}"));
    assert_eq!(used, bytes.len(), "re-serialized text has trailing bytes");
    assert!(
        same(&back, &v),
        "decode → serialize → decode changed the value"
    );
    assert_eq!(serialize(&back), bytes, "serialize is not stable");
    if bytes.len() <= Limits::default().max_bytes {
        let again = unserialize(&bytes)
            .unwrap_or_else(|e| panic!("re-serialized value refused by the default limits: {e}"));
        assert!(same(&again, &v));
    }

    match encode_stored(&v) {
        Ok(StoredValue::Number(text)) => {
            numeric::check_dynamodb_number(&text).unwrap_or_else(|e| {
                panic!("encode_stored wrote N {text:?}, not a DynamoDB number: {e}")
            });
            let read = decode_stored(&text).expect("a stored number reads back");
            assert!(
                matches!(read, PhpValue::Int(_) | PhpValue::Float(_)),
                "N {text:?} read as {read:?}"
            );
            match &v {
                PhpValue::Int(i) => assert!(
                    same(&read, &PhpValue::Int(*i)),
                    "int {i} came back as {read:?}"
                ),
                PhpValue::String(s) => assert_eq!(
                    text.as_bytes(),
                    &s[..],
                    "a numeric string is sent as written"
                ),
                PhpValue::Float(f) => assert!(f.is_finite()),
                other => panic!("{other:?} was stored as N {text:?}"),
            }
        }
        Ok(StoredValue::String(text)) => {
            assert_eq!(text.as_bytes(), &bytes[..], "S holds serialize() output");
            let read = decode_stored_with(&text, &UNLIMITED)
                .unwrap_or_else(|e| panic!("S {text:?} does not read back: {e}"));
            assert!(same(&read, &v), "S {text:?} read back as {read:?}");
        }
        Err(e) => {
            let expected = match &v {
                PhpValue::Float(_) => true,
                PhpValue::String(s) => {
                    numeric::is_numeric(s) || std::str::from_utf8(&bytes).is_err()
                }
                _ => std::str::from_utf8(&bytes).is_err(),
            };
            assert!(expected, "encode_stored refused {v:?}: {e}");
        }
    }

    if let Ok(json) = from_php::<serde_json::Value>(&v) {
        // One pass may normalise (an empty map comes back as an empty list: PHP has one `[]`
        // for both); the second must change nothing.
        let once = through_php(&json);
        assert_eq!(
            through_php(&once),
            once,
            "serde bridge: no fixed point for {json}"
        );
    }
    let _ = from_php::<Typed>(&v);
    let _ = from_php::<Vec<Kind>>(&v);
    let _ = from_php::<BTreeMap<i64, Option<String>>>(&v);
});
