//! Who holds a lock ([`Holder`]), the raw stored value ([`StoredValue`]) and owner redaction.
//! A leaf: imports only [`crate::time`] (for display).

use std::fmt;

use crate::time;

/// A DynamoDB attribute as Laravel writes the cache `value`: its type (`N` or `S`) and text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredValue {
    /// A DynamoDB number (`{"N": text}`).
    Number(String),
    /// A DynamoDB string (`{"S": text}`) holding PHP `serialize()` output.
    String(String),
}

impl StoredValue {
    /// The attribute text, whatever the type.
    pub fn text(&self) -> &str {
        match self {
            StoredValue::Number(t) | StoredValue::String(t) => t,
        }
    }

    /// The DynamoDB type descriptor: `"N"` or `"S"`.
    pub fn type_code(&self) -> &'static str {
        match self {
            StoredValue::Number(_) => "N",
            StoredValue::String(_) => "S",
        }
    }

    /// Whether two stored values are equal as DynamoDB's `#value = :owner` compares them: numbers
    /// by value (`007` = `7` = `7.0` = `0.7E1`), strings byte for byte, `N` never equal to `S`.
    pub fn same_as(&self, other: &StoredValue) -> bool {
        match (self, other) {
            (StoredValue::Number(a), StoredValue::Number(b)) => numbers_equal(a, b),
            (StoredValue::String(a), StoredValue::String(b)) => a == b,
            _ => false,
        }
    }
}

/// Who holds a lock, as read from the table.
#[derive(Clone, PartialEq)]
pub struct Holder {
    /// The owner as Laravel compares it: the PHP string, or the number text for `N` owners;
    /// `None` when the stored value is not a string or number (not a lock item).
    pub owner: Option<String>,
    /// The raw stored value (`N` or `S` text), `None` if the item has no value attribute.
    pub value: Option<StoredValue>,
    /// The Unix time the lock expires at; `None` for an item without expiry (never expires, as in
    /// Laravel) or with an expiry that is not a number.
    pub expires_at: Option<i64>,
    /// The fencing token of this acquisition (ddblock's `ddblock_fence` attribute); `None` for a
    /// lock written by Laravel itself.
    pub fence: Option<u64>,
    /// When this holder began waiting for the lock (Unix ms, ddblock's `ddblock_since`, written
    /// by acquisitions that waited); `None` for a plain acquire, stock Laravel or S3. Other
    /// waiters order themselves by it (docs/semantics.md#waiting).
    pub since_ms: Option<i64>,
}

impl Holder {
    /// Whether this holder's stored value is `owner`, compared as DynamoDB's `#value = :owner` would.
    pub fn is(&self, owner: &StoredValue) -> bool {
        self.value.as_ref().is_some_and(|v| v.same_as(owner))
    }
}

/// An owner as it may be shown: at most its first 4 characters, since the owner is the secret that
/// releases a lock. Every front shows owners through this.
pub fn redact_owner(owner: Option<&str>) -> String {
    match owner {
        None => "an unknown owner".into(),
        Some(o) if o.chars().count() <= 4 => format!("owner {o:?}"),
        Some(o) => format!(
            "owner \"{}…\" ({} chars)",
            o.chars().take(4).collect::<String>().escape_debug(),
            o.chars().count()
        ),
    }
}

impl fmt::Display for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", redact_owner(self.owner.as_deref()))?;
        match self.expires_at {
            Some(t) => write!(f, " until {}", time::utc(t)),
            None => write!(f, " without expiry"),
        }
    }
}

impl fmt::Debug for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Holder")
            .field("owner", &redact_owner(self.owner.as_deref()))
            .field("expires_at", &self.expires_at)
            .field("fence", &self.fence)
            .finish()
    }
}

/// Whether two DynamoDB numbers are equal as DynamoDB compares them (`007` = `7` = `7.0` = `0.7E1`).
fn numbers_equal(a: &str, b: &str) -> bool {
    match (canonical_number(a), canonical_number(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// (negative, significant digits without leading/trailing zeros, exponent of the first digit).
/// A zero mantissa is zero whatever its exponent (`0E99999999999999999999` = `0`: DynamoDB
/// accepts it, a zero passes any range check). `None` for text that is not a number, or for a
/// non-zero number whose exponent does not fit (DynamoDB allows 10^±130, so such text is not a
/// DynamoDB number either).
fn canonical_number(s: &str) -> Option<(bool, String, i64)> {
    let s = s.trim();
    let (neg, rest) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (mantissa, exp) = match rest.find(['e', 'E']) {
        Some(i) => {
            let exp = &rest[i + 1..];
            let digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            // Parsed only for a non-zero mantissa, below: a zero's exponent may not fit.
            (&rest[..i], Some(exp))
        }
        None => (rest, None),
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
    let exp = match exp {
        Some(e) => e.parse::<i64>().ok()?,
        None => 0,
    };
    let point = (int.len() as i64 - lead as i64).checked_add(exp)?;
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
        // A huge exponent must not overflow (it is not a DynamoDB number; compared as text).
        assert!(!numbers_equal(
            "1e9223372036854775807",
            "10e9223372036854775807"
        ));
        assert!(numbers_equal(
            "1e9223372036854775807",
            "1e9223372036854775807"
        ));
    }

    #[test]
    fn redaction_shows_four_chars() {
        assert_eq!(redact_owner(Some("abcdefgh")), "owner \"abcd…\" (8 chars)");
        assert_eq!(redact_owner(Some("ab")), "owner \"ab\"");
        assert_eq!(redact_owner(None), "an unknown owner");
    }
}
