//! Laravel's read of a stored `value` text (`decode_stored`) and the numeric rules under it.
//!
//! Checks: the three branches (`FILTER_VALIDATE_INT` int, `is_numeric` float, `unserialize`)
//! agree with each other and with Rust's own number parsing (a filter int is numeric and reads
//! as the same number as a float; an `is_numeric` text parses as a Rust f64 once PHP's whitespace
//! is trimmed); tight limits only refuse; whatever is read, `encode_stored` (Laravel's write)
//! handles without panicking, and an int read from an `N` is written back as the same `N`.
#![no_main]

use ddblock::codec::{
    decode_stored, decode_stored_with, encode_stored, numeric, unserialize, PhpValue, StoredValue,
};
use ddblock_fuzz::{same, TIGHT};
use libfuzzer_sys::fuzz_target;

/// PHP's whitespace for numeric strings (`" \t\n\r\v\f"`).
fn php_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c')
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let bytes = text.as_bytes();
    let read = decode_stored(&text);

    if let Ok(tight) = decode_stored_with(&text, &TIGHT) {
        let d = read
            .as_ref()
            .expect("tight limits accepted what the defaults refuse");
        assert!(same(&tight, d), "tight limits changed the value");
    }

    let int = numeric::filter_validate_int(bytes);
    let float = numeric::parse_numeric_float(bytes);
    let numeric_text = numeric::is_numeric(bytes);
    assert_eq!(
        float.is_some(),
        numeric_text,
        "parse_numeric_float and is_numeric disagree"
    );
    if let Some(i) = int {
        assert!(numeric_text, "{text:?} is a filter int but not numeric");
        assert_eq!(
            float,
            Some(i as f64),
            "{text:?}: (float) differs from the int"
        );
        assert!(same(
            read.as_ref().expect("an int reads"),
            &PhpValue::Int(i)
        ));
        assert_eq!(
            numeric::filter_validate_int(i.to_string().as_bytes()),
            Some(i),
            "the int's own text is a filter int"
        );
    } else if let Some(f) = float {
        let rust: f64 = text
            .trim_matches(php_space)
            .parse()
            .unwrap_or_else(|_| panic!("{text:?} is numeric but not a Rust float"));
        assert_eq!(
            f.to_bits(),
            rust.to_bits(),
            "{text:?}: {f} vs Rust's {rust}"
        );
        assert_eq!(f.to_bits(), numeric::php_string_to_float(bytes).to_bits());
        assert!(same(
            read.as_ref().expect("a float reads"),
            &PhpValue::Float(f)
        ));
    } else {
        match (&read, unserialize(bytes)) {
            (Ok(a), Ok(b)) => assert!(same(a, &b), "decode_stored differs from unserialize"),
            (Err(_), Err(_)) => {}
            _ => panic!("decode_stored and unserialize disagree on {text:?}"),
        }
    }

    if let Ok(v) = &read {
        match encode_stored(v) {
            Ok(StoredValue::Number(n)) => {
                numeric::check_dynamodb_number(&n).expect("N is a DynamoDB number");
                if let PhpValue::Int(i) = v {
                    assert_eq!(n, i.to_string());
                }
            }
            Ok(StoredValue::String(s)) => assert!(!numeric::is_numeric(s.as_bytes())),
            Err(e) => assert!(!e.message.is_empty()),
        }
    }
    // Only the numeric grammar's own texts are DynamoDB numbers.
    if numeric::check_dynamodb_number(&text).is_ok() {
        assert!(
            numeric_text,
            "check_dynamodb_number accepted {text:?}, which is not numeric"
        );
    }
});
