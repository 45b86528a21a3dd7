//! What an item means: its stored value, its expiry (Laravel's rules), and, for a lock, its holder.
//! No SDK types: the request layer hands over [`ItemView`]s.

use std::time::Instant;

use crate::error::{CodecError, Error, Result};
use crate::format::codec::{self, PhpValue};
use crate::holder::{Holder, StoredValue};

/// Length of a generated owner (Laravel's `Str::random()` default).
pub const OWNER_LEN: usize = 16;
/// Laravel's `forever()` means "5 years from now".
pub const FOREVER_YEARS: i64 = 5;
/// ddblock's fencing token on a lock item (`N`); Laravel neither reads nor writes it, and its
/// `add()` (a whole-item PutItem) drops it.
pub const FENCE_ATTRIBUTE: &str = "ddblock_fence";
/// The id of the acquire attempt that wrote a lock item (`S`, 16 random characters): how an
/// attempt tells its own write (a retry after a lost answer) from another handle's with the same
/// owner. Laravel ignores it.
pub const ATTEMPT_ATTRIBUTE: &str = "ddblock_attempt";
/// When the acquirer began waiting for the lock, Unix milliseconds: written by acquisitions that
/// waited (`block`, `acquire_within`), read by other waiters to let the longest waiting go first.
/// Laravel ignores it; a stale one (left by an acquire that did not wait) only shifts waiters'
/// timing, never who may hold the lock.
pub const SINCE_ATTRIBUTE: &str = "ddblock_since";

/// How far before the release a keep-fence release sets `expires_at` ([`released_expiry`]).
pub const RELEASED_EXPIRY_BACK_SECS: i64 = 86_400;

/// The `expires_at` a keep-fence release writes: the release time minus a day. Every reader sees
/// the item as free at once (Laravel's `get()`: `expires_at <= now`; `add()` and ddblock's acquire:
/// `expires_at < now - margin`) even with a clock up to a day behind the releaser's, and the
/// value stays inside DynamoDB TTL's 5-year window, so TTL still deletes the item eventually.
pub fn released_expiry(now: i64) -> i64 {
    now.saturating_sub(RELEASED_EXPIRY_BACK_SECS)
}

/// The expiry attribute of an item as found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expiry {
    /// No expiry attribute: the item never expires (as in Laravel).
    Never,
    /// Unix seconds.
    At(i64),
    /// Present but not a Unix-time number; what it holds, for messages (`S "tomorrow"`).
    Invalid(String),
}

impl Expiry {
    /// The timestamp, if there is a valid one.
    pub fn at(&self) -> Option<i64> {
        match self {
            Expiry::At(t) => Some(*t),
            Expiry::Never | Expiry::Invalid(_) => None,
        }
    }
}

/// The value attribute of an item as found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// No value attribute.
    Missing,
    /// An `N` or `S` attribute, as Laravel writes.
    Stored(StoredValue),
    /// Another DynamoDB type (`B`, `BOOL`, `L`, `M`, ...): not written by Laravel.
    Other(&'static str),
}

impl Value {
    /// The stored value, when the attribute is `N` or `S`.
    pub fn stored(&self) -> Option<&StoredValue> {
        match self {
            Value::Stored(v) => Some(v),
            Value::Missing | Value::Other(_) => None,
        }
    }
}

/// An item as ddblock reads it (attribute names already resolved by the request layer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemView {
    /// The table key, when the key attribute is a string.
    pub key: Option<String>,
    /// The value attribute.
    pub value: Value,
    /// The expiry attribute.
    pub expiry: Expiry,
    /// The fencing token ([`FENCE_ATTRIBUTE`]), when it is a number.
    pub fence: Option<u64>,
    /// The acquire attempt that wrote the item ([`ATTEMPT_ATTRIBUTE`]), when there is one.
    pub attempt: Option<String>,
    /// When the holder began waiting ([`SINCE_ATTRIBUTE`], Unix ms), when it is a number.
    pub since: Option<i64>,
}

impl ItemView {
    /// The lock holder this item describes. An item whose expiry is not a number is reported
    /// with an unknown expiry: a lock condition (`#expires_at < :now`) can never be true for it,
    /// so it is held until someone force-releases it.
    pub fn holder(&self) -> Holder {
        Holder {
            fence: self.fence,
            since_ms: self.since,
            ..holder(self.value.stored().cloned(), self.expiry.at())
        }
    }

    /// The live value of a cache entry read at `now`: `None` when expired (`now >= expires_at`,
    /// Laravel's `isExpired`) or without a value; an error naming `key` when the item is not a
    /// Laravel cache value.
    pub fn live_value(
        &self,
        key: &str,
        expiry_attribute: &str,
        now: i64,
    ) -> Result<Option<PhpValue>> {
        let at = match &self.expiry {
            Expiry::Never => None,
            Expiry::At(t) => Some(*t),
            Expiry::Invalid(what) => {
                return Err(CodecError::new(format!(
                    "key {key:?}: attribute `{expiry_attribute}` holds {what}, not a Unix timestamp \
                     number; the item was not written by Laravel or ddblock (forget() it or fix it)"
                ))
                .into())
            }
        };
        if is_expired(at, now) {
            return Ok(None);
        }
        match &self.value {
            Value::Missing => Ok(None),
            Value::Other(ty) => Err(CodecError::new(format!(
                "key {key:?}: the value attribute is of DynamoDB type {ty}, not a Laravel cache \
                 value (N or S); it was written by something other than Laravel or ddblock"
            ))
            .into()),
            Value::Stored(v) => codec::decode_stored(v.text())
                .map(Some)
                .map_err(|e| e.context(format_args!("value of key {key:?}")).into()),
        }
    }
}

/// A holder from a stored value and expiry: the owner as Laravel compares it (the PHP string, or
/// the number text of an `N` owner).
pub fn holder(value: Option<StoredValue>, expires_at: Option<i64>) -> Holder {
    let owner = value.as_ref().and_then(|v| match v {
        StoredValue::Number(n) => Some(n.clone()),
        StoredValue::String(s) => match codec::decode_stored(s) {
            Ok(PhpValue::String(b)) => Some(String::from_utf8_lossy(&b).into_owned()),
            Ok(PhpValue::Int(i)) => Some(i.to_string()),
            _ => None,
        },
    });
    Holder {
        owner,
        value,
        expires_at,
        fence: None,
        since_ms: None,
    }
}

/// The stored value of a lock owner, exactly as Laravel's `add()` stores it: `N` when PHP's
/// `is_numeric` holds (so `1`, `01` and `1e0` are the same owner to DynamoDB), else serialized `S`.
pub fn stored_owner(owner: &str) -> Result<StoredValue> {
    Ok(codec::encode_stored(&PhpValue::String(
        owner.as_bytes().to_vec(),
    ))?)
}

/// Parses an `expires_at` number text. Laravel writes integers; a fraction is floored, as PHP's
/// `>=` comparison against an integer timestamp would treat it.
pub fn parse_timestamp(text: &str) -> Option<i64> {
    let t = text.trim();
    if let Ok(i) = t.parse::<i64>() {
        return Some(i);
    }
    match t.parse::<f64>() {
        Ok(f) if f.is_finite() => Some(f.floor().clamp(i64::MIN as f64, i64::MAX as f64) as i64),
        _ => None,
    }
}

/// Laravel's `isExpired`: an item without expiry never expires; otherwise expired when `now >= expires_at`.
pub fn is_expired(expires_at: Option<i64>, now: i64) -> bool {
    expires_at.is_some_and(|e| now >= e)
}

/// Laravel's `toTimestamp()`: now + ttl for a positive ttl, else now (an already-expired item).
pub fn expiry(now: i64, ttl_secs: i64) -> Result<i64> {
    if ttl_secs <= 0 {
        return Ok(now);
    }
    now.checked_add(ttl_secs).ok_or_else(|| Error::InvalidTtl {
        ttl: ttl_secs,
        reason: "now + ttl overflows a 64-bit timestamp; use a smaller ttl".into(),
    })
}

/// PHP's `(int)` of a DynamoDB number text (Laravel casts the incremented value).
pub fn php_int_cast(n: &str) -> i64 {
    n.trim()
        .parse::<i64>()
        .unwrap_or_else(|_| n.trim().parse::<f64>().map(|f| f as i64).unwrap_or(0))
}

/// One conditional create-or-take-over of a lock item, as the lock rules ask for it and the
/// request layers send it (DynamoDB's `take_lock`, S3's conditional put).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Take<'a> {
    /// The table key.
    pub key: &'a str,
    /// The owner, as stored.
    pub owner: &'a StoredValue,
    /// This attempt's id: recognises the attempt's own write on a retry.
    pub attempt: &'a str,
    /// The expiry to write.
    pub expires_at: i64,
    /// Take over only an item with `expires_at < cutoff` (now minus the clock-skew margin).
    pub cutoff: i64,
    /// The fencing token to start from when the item has none (the clock in microseconds).
    pub fence_base: u64,
    /// When this acquirer began waiting (Unix ms), written as [`SINCE_ATTRIBUTE`]; `None` for an
    /// acquire that does not wait (its request stays Laravel's item plus attempt and fence).
    pub since_ms: Option<i64>,
    /// When the whole request (retries included) must have ended, plus one attempt timeout.
    pub deadline: Option<Instant>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse() {
        assert_eq!(parse_timestamp("1700000000"), Some(1_700_000_000));
        assert_eq!(parse_timestamp("1700000000.9"), Some(1_700_000_000));
        assert_eq!(parse_timestamp("abc"), None);
        assert_eq!(parse_timestamp("1e400"), None);
    }

    #[test]
    fn expiry_boundary_is_inclusive() {
        assert!(is_expired(Some(100), 100));
        assert!(!is_expired(Some(101), 100));
        assert!(!is_expired(None, 100));
    }

    #[test]
    fn int_cast_like_php() {
        assert_eq!(php_int_cast("42"), 42);
        assert_eq!(php_int_cast("2.5"), 2);
        assert_eq!(php_int_cast("-2.5"), -2);
    }

    #[test]
    fn bad_items_name_the_key() {
        let v = ItemView {
            key: Some("k".into()),
            value: Value::Other("BOOL"),
            expiry: Expiry::Never,
            fence: None,
            attempt: None,
            since: None,
        };
        let e = v.live_value("k", "expires_at", 0).unwrap_err().to_string();
        assert!(e.contains("\"k\"") && e.contains("BOOL"), "{e}");
        let v = ItemView {
            key: Some("k".into()),
            value: Value::Stored(StoredValue::String("s:1:\"a\";".into())),
            expiry: Expiry::Invalid("S \"soon\"".into()),
            fence: None,
            attempt: None,
            since: None,
        };
        let e = v.live_value("k", "expires_at", 0).unwrap_err().to_string();
        assert!(e.contains("\"k\"") && e.contains("expires_at"), "{e}");
    }
}
