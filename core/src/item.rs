//! Converting between DynamoDB items and ddblock's view of them (key, stored value, expiry).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

use crate::codec::{CodecError, StoredValue};

/// A DynamoDB item as the SDK hands it over.
pub(crate) type Item = HashMap<String, AttributeValue>;

/// The DynamoDB attribute for a stored value (`N` or `S`, as Laravel's `type()` chose).
pub(crate) fn to_attr(v: &StoredValue) -> AttributeValue {
    match v {
        StoredValue::Number(n) => AttributeValue::N(n.clone()),
        StoredValue::String(s) => AttributeValue::S(s.clone()),
    }
}

/// The stored value in attribute `av`, if it is `S` or `N` (Laravel reads `['S'] ?? ['N']`).
pub(crate) fn from_attr(av: &AttributeValue) -> Option<StoredValue> {
    match av {
        AttributeValue::S(s) => Some(StoredValue::String(s.clone())),
        AttributeValue::N(n) => Some(StoredValue::Number(n.clone())),
        _ => None,
    }
}

/// Parses an `expires_at` number. Laravel writes integers; a fraction is floored, as PHP's
/// `>=` comparison against an integer timestamp would treat it.
pub(crate) fn parse_timestamp(attr: &str, av: &AttributeValue) -> Result<i64, CodecError> {
    let bad = |what: &str| CodecError {
        message: format!("attribute `{attr}` {what}; it must be a Unix timestamp number"),
        offset: None,
    };
    match av {
        AttributeValue::N(n) => {
            if let Ok(i) = n.trim().parse::<i64>() {
                return Ok(i);
            }
            match n.trim().parse::<f64>() {
                Ok(f) if f.is_finite() => {
                    Ok(f.floor().clamp(i64::MIN as f64, i64::MAX as f64) as i64)
                }
                _ => Err(bad(&format!("holds {n:?}"))),
            }
        }
        _ => Err(bad("is not of type N")),
    }
}

/// Whether two DynamoDB numbers are equal as DynamoDB compares them (`007` = `7` = `7.0` = `0.7E1`).
pub(crate) fn numbers_equal(a: &str, b: &str) -> bool {
    match (canonical_number(a), canonical_number(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// (negative, significant digits without leading/trailing zeros, exponent of the first digit).
fn canonical_number(s: &str) -> Option<(bool, String, i64)> {
    let s = s.trim();
    let (neg, rest) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (mantissa, exp) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().ok()?),
        None => (rest, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty()
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let digits: String = int.chars().chain(frac.chars()).collect();
    let lead = digits.len() - digits.trim_start_matches('0').len();
    let sig = digits.trim_matches('0').to_owned();
    if sig.is_empty() {
        return Some((false, String::new(), 0));
    }
    let point = int.len() as i64 - lead as i64 + exp;
    Some((neg, sig, point))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_compare_like_dynamodb() {
        assert!(numbers_equal("007", "7"));
        assert!(numbers_equal("7.0", "7"));
        assert!(numbers_equal("0.7E1", "7"));
        assert!(numbers_equal("1e5", "100000"));
        assert!(numbers_equal("-0", "0"));
        assert!(numbers_equal("12345", "12345"));
        assert!(!numbers_equal("12345", "1234"));
        assert!(!numbers_equal("-7", "7"));
        assert!(!numbers_equal("0.07", "0.7"));
        assert!(!numbers_equal("70", "7"));
    }

    #[test]
    fn timestamps_parse() {
        let n = |s: &str| AttributeValue::N(s.into());
        assert_eq!(
            parse_timestamp("e", &n("1700000000")).unwrap(),
            1_700_000_000
        );
        assert_eq!(
            parse_timestamp("e", &n("1700000000.9")).unwrap(),
            1_700_000_000
        );
        assert!(parse_timestamp("e", &AttributeValue::S("1".into())).is_err());
        assert!(parse_timestamp("e", &n("abc")).is_err());
    }
}
