//! PHP value codec: the `value` attribute format of Laravel's DynamoDB cache
//! store (`Illuminate\Cache\DynamoDbStore`), so Rust and PHP can share items.
//!
//! Laravel writes a value as a DynamoDB `N` when PHP's `is_numeric($value)`
//! holds (text `(string)$value`), otherwise as an `S` holding
//! `serialize($value)`. It reads the text back with
//! `filter_var($v, FILTER_VALIDATE_INT) !== false ? (int)$v
//!  : (is_numeric($v) ? (float)$v : unserialize($v))`.
//! [`encode_stored`] and [`decode_stored`] reproduce exactly that; the
//! building blocks are [`serialize`], [`unserialize`] and [`numeric`].
//!
//! Consequences worth knowing (all checked against PHP 8.2):
//! - Numeric strings do not survive as strings: `"12345"` is stored as
//!   `N 12345` and read back as int 12345; `"007"` and `"1e5"` come back as
//!   floats 7.0 and 100000.0 (real DynamoDB also normalises `007` to `7`,
//!   which then reads back as int 7).
//! - Floats are written with PHP's 14-digit `(string)` cast, so
//!   `0.1 + 0.2` is stored as `0.3` and 1e25 as `1.0E+25`; integral floats
//!   (`100.0` → `"100"`) come back as ints.
//! - `true`/`false`/`null` are `S` (`b:1;`, `b:0;`, `N;`).

pub mod numeric;
mod read;
pub mod serde;
mod value;
mod write;

pub use crate::error::CodecError;
pub use crate::holder::StoredValue;

pub use self::read::{unserialize, unserialize_prefix, unserialize_with, Limits};
pub use self::serde::{from_php, to_php};
pub use self::value::{ObjectKind, PhpKey, PhpObject, PhpValue};
pub use self::write::serialize;

/// Encodes a value the way Laravel's `DynamoDbStore::type()` and
/// `serialize()` do: ints and floats, and strings PHP's `is_numeric()`
/// accepts, become `N` with PHP's `(string)` text; everything else becomes
/// `S` with `serialize()` output.
///
/// Errors where Laravel's own write would fail at DynamoDB:
/// - INF/NAN: `is_numeric()` is true, but `"INF"`/`"NAN"` is not a DynamoDB
///   number.
/// - numeric strings with leading/trailing whitespace (`" 12"`, `"12 "`):
///   PHP 8 calls them numeric and Laravel sends them untrimmed as `N`, which
///   DynamoDB's number syntax does not allow.
/// - numbers beyond DynamoDB's range (38 significant digits, magnitude
///   1E-130 to below 1E+126), e.g. `1e200` or a 40-digit numeric string.
/// - `S` text that is not UTF-8 (binary strings): DynamoDB `S` attributes
///   must be UTF-8.
pub fn encode_stored(v: &PhpValue) -> Result<StoredValue, CodecError> {
    match v {
        PhpValue::Int(i) => Ok(StoredValue::Number(i.to_string())),
        PhpValue::Float(f) if !f.is_finite() => Err(CodecError::new(format!(
            "cannot store float {}: PHP's is_numeric() is true for it, so Laravel would write \
             a DynamoDB N attribute with text {:?}, which DynamoDB rejects; store a finite number \
             or wrap the value in an array",
            numeric::php_float_to_string(*f),
            numeric::php_float_to_string(*f),
        ))),
        PhpValue::Float(f) => {
            let text = numeric::php_float_to_string(*f);
            numeric::check_dynamodb_number(&text)?;
            Ok(StoredValue::Number(text))
        }
        PhpValue::String(s) if numeric::is_numeric(s) => {
            // is_numeric() only accepts ASCII, so this cannot fail.
            let text = String::from_utf8_lossy(s).into_owned();
            numeric::check_dynamodb_number(&text)?;
            Ok(StoredValue::Number(text))
        }
        _ => String::from_utf8(serialize(v))
            .map(StoredValue::String)
            .map_err(|e| {
                CodecError::at(
                    "serialized value is not valid UTF-8, but DynamoDB S attributes must be UTF-8 \
                     (Laravel's PHP SDK cannot store this either); encode binary data first, \
                     e.g. base64",
                    e.utf8_error().valid_up_to(),
                )
            }),
    }
}

/// Decodes a stored `value` text (from either an `S` or an `N` attribute)
/// exactly as Laravel's `DynamoDbStore::unserialize()`: an int when
/// `filter_var(FILTER_VALIDATE_INT)` accepts it, else a float when
/// `is_numeric()` does, else PHP `unserialize()` (trailing bytes ignored,
/// default [`Limits`]). Where PHP's `unserialize()` would return `false` for
/// garbage, this returns an error instead.
pub fn decode_stored(text: &str) -> Result<PhpValue, CodecError> {
    decode_stored_with(text, &Limits::default())
}

/// [`decode_stored`] with explicit limits for the `unserialize()` branch.
pub fn decode_stored_with(text: &str, limits: &Limits) -> Result<PhpValue, CodecError> {
    let bytes = text.as_bytes();
    if let Some(i) = numeric::filter_validate_int(bytes) {
        return Ok(PhpValue::Int(i));
    }
    if let Some(f) = numeric::parse_numeric_float(bytes) {
        return Ok(PhpValue::Float(f));
    }
    unserialize_with(bytes, limits)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(v: impl Into<PhpValue>) -> Result<StoredValue, CodecError> {
        encode_stored(&v.into())
    }

    #[test]
    fn encode_like_laravel() {
        assert_eq!(stored(42).unwrap(), StoredValue::Number("42".into()));
        assert_eq!(stored(1.5).unwrap(), StoredValue::Number("1.5".into()));
        assert_eq!(
            stored(0.1 + 0.2).unwrap(),
            StoredValue::Number("0.3".into())
        );
        assert_eq!(stored(1e25).unwrap(), StoredValue::Number("1.0E+25".into()));
        assert_eq!(stored("007").unwrap(), StoredValue::Number("007".into()));
        assert_eq!(stored("1e5").unwrap(), StoredValue::Number("1e5".into()));
        assert_eq!(
            stored("hello").unwrap(),
            StoredValue::String("s:5:\"hello\";".into())
        );
        assert_eq!(stored(true).unwrap(), StoredValue::String("b:1;".into()));
        assert_eq!(stored(PhpValue::Null).unwrap().text(), "N;");
        assert_eq!(stored("0x1A").unwrap().type_code(), "S");
        let arr = PhpValue::assoc([("a", PhpValue::Int(1))]);
        assert_eq!(stored(arr).unwrap().text(), "a:1:{s:1:\"a\";i:1;}");
    }

    #[test]
    fn encode_refuses_what_dynamodb_rejects() {
        let e = stored(" 12").unwrap_err();
        assert!(e.message.contains("whitespace"), "{e}");
        assert!(stored("12 ").is_err());
        assert!(stored(f64::NAN).unwrap_err().message.contains("\"NAN\""));
        assert!(stored(f64::NEG_INFINITY).is_err());
        assert!(stored(1e200).unwrap_err().message.contains("range"));
        assert!(stored("1".repeat(39)).unwrap_err().message.contains("38"));
        assert!(stored(format!("{}000", "1".repeat(38))).is_ok());
        let e = stored(vec![0u8, 0xff]).unwrap_err();
        assert!(
            e.message.contains("UTF-8") && e.message.contains("base64"),
            "{e}"
        );
        assert_eq!(e.offset, Some(6)); // in `s:2:"\0\xff";`
    }

    #[test]
    fn decode_like_laravel() {
        assert_eq!(decode_stored("12345").unwrap(), PhpValue::Int(12345));
        assert_eq!(decode_stored("-0").unwrap(), PhpValue::Int(0));
        assert_eq!(decode_stored("007").unwrap(), PhpValue::Float(7.0));
        assert_eq!(decode_stored("1.5").unwrap(), PhpValue::Float(1.5));
        assert_eq!(decode_stored("1E+25").unwrap(), PhpValue::Float(1e25));
        assert_eq!(
            decode_stored("9223372036854775808").unwrap(),
            PhpValue::Float(9223372036854775808.0)
        );
        assert_eq!(
            decode_stored("s:5:\"hello\";").unwrap(),
            PhpValue::from("hello")
        );
        assert_eq!(decode_stored("b:0;").unwrap(), PhpValue::Bool(false));
        let e = decode_stored("not serialized").unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown value type 'n' (expected one of N b i d s S a O C E r R) at byte 0"
        );
    }

    #[test]
    fn display_is_readable() {
        let v = PhpValue::assoc([
            (
                PhpKey::from("a"),
                PhpValue::list([1.into(), 1.5.into(), "x\"y".into()]),
            ),
            (PhpKey::Int(3), PhpValue::from(vec![0u8, b'z'])),
        ]);
        assert_eq!(
            v.to_string(),
            r#"["a" => [0 => 1, 1 => 1.5, 2 => "x\"y"], 3 => "\u{0}z"]"#
        );
        let e = unserialize(b"E:11:\"Suit:Hearts\";").unwrap();
        assert_eq!(e.to_string(), "Suit::Hearts");
        assert_eq!(
            v.get("a").and_then(|l| l.get(2)).and_then(PhpValue::as_str),
            Some("x\"y")
        );
    }
}
