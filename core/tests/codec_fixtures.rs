//! Checks `ddblock::codec` against real PHP 8.2 output recorded in
//! `compat-tests/conformance/php-codec.json` (regenerate with
//! `php compat-tests/conformance/gen-codec-fixtures.php > compat-tests/conformance/php-codec.json`).

use ddblock::codec::{self, numeric, StoredValue};
use serde_json::Value;

const FIXTURE: &str = include_str!("../../compat-tests/conformance/php-codec.json");

/// Values Laravel would send as `N` but DynamoDB rejects, so
/// `encode_stored` must refuse them: INF/NAN, numeric strings with
/// surrounding whitespace, and numbers beyond DynamoDB's range/precision.
const DYNAMODB_REJECTS: &[&str] = &[
    "float INF",
    "float -INF",
    "float NAN",
    "float 1e200",
    "float 1e-200",
    "float PHP_FLOAT_MAX",
    "float 5e-324",
    "string  12",
    "string 12 ",
    "string tab 5",
    "string 5 newline",
    "string formfeed 5",
    "string many digits",
    "string 1e200 text",
];

/// Inputs PHP's unserialize() accepts that this decoder rejects on purpose:
/// out-of-range ints (PHP clamps), lengths beyond u64 (PHP's `parse_uiv`
/// silently wraps them), cycles (cannot be a tree), non-UTF-8 class names.
const STRICTER_THAN_PHP: &[&[u8]] = &[
    b"s:18446744073709551617:\"a\";",
    b"i:9223372036854775808;",
    b"i:-9223372036854775809;",
    b"i:99999999999999999999;",
    b"O:1:\"\xff\":0:{}",
];

/// Inputs both accept where PHP's result differs for reasons this decoder
/// leaves alone: duplicate or numeric-string array keys and int property
/// names (PHP merges or converts them; we keep what is written), class names in another case
/// (PHP uses the declared spelling of a known class) and `C:` data for
/// classes that are not `Serializable` (PHP turns it into an `O:` object).
const KEPT_AS_WRITTEN: &[&[u8]] = &[
    b"O:8:\"stdClass\":1:{i:5;i:1;}",
    b"O:8:\"stdclass\":0:{}",
    b"a:2:{i:0;i:1;i:0;i:2;}",
    b"a:2:{s:1:\"5\";i:1;i:5;i:2;}",
    b"a:1:{s:1:\"5\";i:1;}",
    b"C:8:\"stdClass\":0:{}",
    b"C:3:\"Foo\":2:{ab}",
    b"C:3:\"Foo\":0:{}",
    b"C:3:\"Foo\"::{}",
    b"a:2:{i:0;C:3:\"Foo\":0:{}i:1;r:2;}",
];

fn fixture() -> Value {
    serde_json::from_str(FIXTURE).expect("fixture is valid JSON")
}

fn records<'a>(f: &'a Value, section: &str) -> &'a Vec<Value> {
    f[section].as_array().expect("fixture section is an array")
}

fn b64(s: &Value) -> Vec<u8> {
    let s = s.as_str().expect("base64 string");
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes().filter(|&c| c != b'=') {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("bad base64 {s}"),
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).escape_debug().to_string()
}

#[test]
fn serialize_matches_php_and_unserialize_round_trips() {
    let f = fixture();
    for r in records(&f, "values") {
        let name = r["name"].as_str().unwrap();
        let php = b64(&r["serialized"]);
        let value = codec::unserialize(&php)
            .unwrap_or_else(|e| panic!("{name}: unserialize({}) failed: {e}", show(&php)));
        // Back-references are resolved by copying, so ours re-serializes to
        // PHP's reference-free form; everything else must match byte for byte.
        let want = if r.get("expanded").is_some() {
            b64(&r["expanded"])
        } else {
            php
        };
        assert_eq!(show(&codec::serialize(&value)), show(&want), "{name}");
        let again = codec::unserialize(&want).unwrap();
        assert_eq!(codec::serialize(&again), want, "{name}: expanded form");
    }
}

#[test]
fn encode_stored_matches_laravel() {
    let f = fixture();
    let mut checked = 0;
    for r in records(&f, "values") {
        let name = r["name"].as_str().unwrap();
        let value = codec::unserialize(&b64(&r["serialized"])).unwrap();
        let text = b64(&r["stored_text"]);
        let ty = r["stored_type"].as_str().unwrap();
        let got = codec::encode_stored(&value);
        if DYNAMODB_REJECTS.contains(&name) {
            assert_eq!(ty, "N", "{name}: Laravel sends it as N");
            let err = got.expect_err(name);
            assert!(!err.message.is_empty());
            continue;
        }
        if !r["stored_text_utf8"].as_bool().unwrap() {
            let err = got.expect_err(name);
            assert!(err.message.contains("UTF-8"), "{name}: {err}");
            continue;
        }
        let got = got.unwrap_or_else(|e| panic!("{name}: {e}"));
        // Back-references come back expanded (see the round-trip test).
        let text = match (ty, r.get("expanded")) {
            ("S", Some(expanded)) => b64(expanded),
            _ => text,
        };
        let want = match ty {
            "N" => StoredValue::Number(String::from_utf8(text).unwrap()),
            _ => StoredValue::String(String::from_utf8(text).unwrap()),
        };
        assert_eq!(got, want, "{name}");
        if let Some(is_num) = r.get("is_numeric").and_then(Value::as_bool) {
            if let Some(s) = value.as_bytes() {
                assert_eq!(numeric::is_numeric(s), is_num, "{name}");
            }
        }
        checked += 1;
    }
    assert!(checked > 60, "only {checked} values checked");
}

#[test]
fn decode_stored_matches_laravel_read_back() {
    let f = fixture();
    for r in records(&f, "values") {
        let name = r["name"].as_str().unwrap();
        let Ok(text) = String::from_utf8(b64(&r["stored_text"])) else {
            continue; // cannot be stored at all
        };
        reads_back_as(&text, &r["read_back"], name);
    }
}

/// `decode_stored(text)` reads what PHP read back: `read_back` is the base64 of PHP's serialize of
/// it, or null where PHP fails to read the text (Laravel's get gives false).
fn reads_back_as(text: &str, read_back: &Value, what: &str) {
    let got = codec::decode_stored(text);
    if read_back.is_null() {
        assert!(got.is_err(), "{what}: PHP fails to read {text:?}: {got:?}");
    } else {
        let got = got.unwrap_or_else(|e| panic!("{what}: decode_stored({text:?}): {e}"));
        assert_eq!(
            show(&codec::serialize(&got)),
            show(&b64(read_back)),
            "{what}"
        );
    }
}

#[test]
fn numeric_rules_match_php_for_every_text() {
    let f = fixture();
    for r in records(&f, "texts") {
        let text = b64(&r["text"]);
        let t = show(&text);
        assert_eq!(
            numeric::is_numeric(&text),
            r["is_numeric"].as_bool().unwrap(),
            "is_numeric({t})"
        );
        let want_int = r["filter_validate_int"].as_i64();
        assert_eq!(
            numeric::filter_validate_int(&text),
            want_int,
            "filter_var({t})"
        );
        if let Some(i) = want_int {
            assert_eq!(
                Some(i),
                r["int_cast"].as_i64(),
                "(int){t} agrees with filter_var"
            );
        }
        let float = format!(
            "d:{};",
            numeric::php_float_serialize(numeric::php_string_to_float(&text))
        );
        assert_eq!(float, r["float_cast"].as_str().unwrap(), "(float){t}");

        if let Ok(s) = std::str::from_utf8(&text) {
            reads_back_as(s, &r["laravel_read"], &format!("decode_stored({t})"));
        }
    }
}

#[test]
fn float_texts_match_php() {
    let f = fixture();
    for r in records(&f, "floats") {
        let hex = r["bits"].as_str().unwrap();
        // pack('E') is big-endian.
        let mut bytes = [0u8; 8];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = u8::from_str_radix(&hex[i * 2..i * 2 + 2], 16).unwrap();
        }
        let x = f64::from_be_bytes(bytes);
        assert_eq!(
            numeric::php_float_to_string(x),
            r["string"].as_str().unwrap(),
            "(string) of {x:e} ({hex})"
        );
        let ser = r["serialized"].as_str().unwrap();
        assert_eq!(
            format!("d:{};", numeric::php_float_serialize(x)),
            ser,
            "serialize({x:e}) ({hex})"
        );
        match codec::unserialize(ser.as_bytes()).unwrap() {
            codec::PhpValue::Float(y) => {
                assert!(
                    y.to_bits() == x.to_bits() || (x.is_nan() && y.is_nan()),
                    "{ser}"
                )
            }
            other => panic!("{ser} decoded as {other:?}"),
        }
    }
}

#[test]
fn unserialize_accepts_and_rejects_like_php() {
    let f = fixture();
    let (mut accepted, mut rejected) = (0, 0);
    for r in records(&f, "unserialize") {
        let input = b64(&r["input"]);
        let t = show(&input);
        let got = codec::unserialize(&input);
        let php_accepts = r["php_accepts"].as_bool().unwrap();
        if !php_accepts {
            let err = got.expect_err(&format!("PHP rejects {t}; so must we"));
            assert!(err.offset.is_some(), "{t}: error without offset: {err}");
            rejected += 1;
        } else if r.get("cyclic").is_some() || STRICTER_THAN_PHP.contains(&input.as_slice()) {
            assert!(
                got.is_err(),
                "{t}: expected a deliberate error, got {got:?}"
            );
        } else {
            let got = got.unwrap_or_else(|e| panic!("PHP accepts {t}; we failed: {e}"));
            if !KEPT_AS_WRITTEN.contains(&input.as_slice()) {
                assert_eq!(
                    show(&codec::serialize(&got)),
                    show(&b64(&r["php_result"])),
                    "unserialize({t})"
                );
            }
            accepted += 1;
        }
    }
    assert!(
        accepted > 50 && rejected > 150,
        "{accepted} accepted, {rejected} rejected"
    );
}
