//! What a versioned (compare-and-set) item means (see `docs/format.md#versioned-items`): a
//! Laravel cache item plus two attributes Laravel ignores. No SDK types.
//!
//! | attribute | type | meaning |
//! | --- | --- | --- |
//! | `ddblock_version` | `N` | the version; absent on items Laravel wrote (version 0) |
//! | `ddblock_writes` | `M` of `S` | write tokens: slot `v % 8` holds the token of the write that made version `v` |
//!
//! A version is never reused for a key: the first versioned write of an item (new, expired,
//! or replaced by Laravel) takes the current time in microseconds, each later one adds 1.

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::format::item::ItemView;
use crate::holder::StoredValue;

/// The attribute holding the version.
pub const VERSION_ATTRIBUTE: &str = "ddblock_version";
/// The attribute holding the write tokens of the last [`WRITE_SLOTS`] versions.
pub const WRITES_ATTRIBUTE: &str = "ddblock_writes";
/// How many recent writes an item remembers (slot `version % WRITE_SLOTS`).
pub const WRITE_SLOTS: u64 = 8;
/// The largest version a front can pass as a JavaScript number without losing precision.
pub const MAX_VERSION: u64 = (1 << 53) - 1;

/// A versioned item as read (attribute names resolved by the request layer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionedItem {
    /// Laravel's view of the item (key, value, expiry).
    pub item: ItemView,
    /// The version attribute; `None` when absent (an item Laravel or a plain `put` wrote).
    pub version: Option<u64>,
    /// Write tokens by slot (`version % WRITE_SLOTS`).
    pub writes: HashMap<u64, String>,
}

/// What a conditional write requires of the item it replaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Precondition {
    /// The version attribute equals this; 0: the item has no version (or there is no item).
    Version(u64),
    /// The item as read: no item at all (`None`), or this version (0: none) with this stored
    /// value (`None`: no value attribute). Stronger than [`Precondition::Version`]: a Laravel
    /// `increment` keeps the version but changes the value, and fails this.
    Seen(Option<(u64, Option<StoredValue>)>),
}

impl Precondition {
    /// The version the write expects (0: none).
    pub fn version(&self) -> u64 {
        match self {
            Precondition::Version(v) => *v,
            Precondition::Seen(Some((v, _))) => *v,
            Precondition::Seen(None) => 0,
        }
    }
}

/// Whether the write that made version `wrote` with `token` is in `item`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Landed {
    /// It is: the item is at that version or a later one of the last [`WRITE_SLOTS`], and the
    /// slot holds our token.
    Yes,
    /// It is not: the item's chain of versions has someone else's token at that version, or
    /// never reached it.
    No,
    /// The item moved on by [`WRITE_SLOTS`] versions or more since: the slot was reused.
    Unknown,
}

impl VersionedItem {
    /// Whether our write (version `wrote`, `token`) landed, judged from the current item.
    pub fn landed(&self, wrote: u64, token: &str) -> Landed {
        let Some(current) = self.version else {
            return Landed::No; // replaced by a write without a version (Laravel's put)
        };
        if current < wrote {
            return Landed::No;
        }
        if current - wrote >= WRITE_SLOTS {
            return Landed::Unknown;
        }
        match self.writes.get(&(wrote % WRITE_SLOTS)) {
            Some(t) if t == token => Landed::Yes,
            _ => Landed::No,
        }
    }
}

/// The version a write after `expected` gets: `expected + 1`, or, for an item without a version,
/// `now_micros` (so a version read before Laravel replaced the item never matches a later one).
pub fn next_version(expected: u64, now_micros: u64) -> u64 {
    if expected == 0 {
        now_micros.clamp(1, MAX_VERSION)
    } else {
        expected.saturating_add(1)
    }
}

/// A version given as a float (a JS number): a whole number from 0 to 2^53 - 1.
pub fn version_from_f64(v: f64) -> Result<u64> {
    if !v.is_finite() || v.fract() != 0.0 || v < 0.0 || v > MAX_VERSION as f64 {
        return Err(bad_version(v));
    }
    Ok(v as u64)
}

/// A version given as a signed integer (Python's int): 0 to 2^53 - 1.
pub fn version_from_i64(v: i64) -> Result<u64> {
    u64::try_from(v)
        .ok()
        .filter(|v| *v <= MAX_VERSION)
        .ok_or_else(|| bad_version(v))
}

/// A version given as text (a command-line argument).
pub fn version_from_str(text: &str) -> Result<u64> {
    text.trim()
        .parse::<i64>()
        .map_err(|_| bad_version(format!("{text:?}")))
        .and_then(version_from_i64)
}

fn bad_version(v: impl std::fmt::Display) -> Error {
    Error::Config(format!(
        "version {v} is not a ddblock version: give the whole number from a versioned read \
         (0 to 2^53 - 1; 0 means the item has no version)"
    ))
}

/// One compare-and-set write, as the request layer sends it: the entry and its expiry, what the
/// item must be found as, the version to write, and this write's token (to recognise it later).
#[derive(Debug, Clone, Copy)]
pub(crate) struct VersionedWrite<'a> {
    /// The table key.
    pub key: &'a str,
    /// The value, as stored.
    pub value: &'a StoredValue,
    /// The expiry to write.
    pub expires_at: i64,
    /// What the item must be found as.
    pub pre: &'a Precondition,
    /// The version to write.
    pub version: u64,
    /// This write's token.
    pub token: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::item::{Expiry, Value};

    fn item(version: Option<u64>, writes: &[(u64, &str)]) -> VersionedItem {
        VersionedItem {
            item: ItemView {
                key: Some("k".into()),
                value: Value::Missing,
                expiry: Expiry::Never,
                fence: None,
                attempt: None,
                since: None,
            },
            version,
            writes: writes.iter().map(|(s, t)| (*s, (*t).to_owned())).collect(),
        }
    }

    #[test]
    fn landed_writes_are_recognised_within_the_slots() {
        assert_eq!(item(Some(10), &[(2, "me")]).landed(10, "me"), Landed::Yes);
        assert_eq!(item(Some(13), &[(2, "me")]).landed(10, "me"), Landed::Yes);
        assert_eq!(item(Some(13), &[(2, "you")]).landed(10, "me"), Landed::No);
        assert_eq!(
            item(Some(18), &[(2, "me")]).landed(10, "me"),
            Landed::Unknown
        );
        assert_eq!(item(Some(9), &[(2, "me")]).landed(10, "me"), Landed::No);
        assert_eq!(item(None, &[]).landed(10, "me"), Landed::No);
    }

    #[test]
    fn versions() {
        assert_eq!(
            next_version(0, 1_795_000_000_000_000),
            1_795_000_000_000_000
        );
        assert_eq!(next_version(7, 123), 8);
        assert_eq!(version_from_f64(3.0).unwrap(), 3);
        for bad in [-1.0, 1.5, f64::NAN, 1e16] {
            assert!(version_from_f64(bad).is_err(), "{bad}");
        }
        assert!(version_from_i64(-1).is_err());
        assert_eq!(version_from_str(" 42 ").unwrap(), 42);
        assert!(version_from_str("v1").is_err());
    }
}
