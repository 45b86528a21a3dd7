//! What a once-only guard item means (see `docs/format.md#once-only-guard-items`): a Laravel
//! cache item whose value is a claim counter, plus attributes Laravel ignores. No SDK types: the
//! request layer hands over [`OnceItem`]s.
//!
//! | attribute | type | meaning |
//! | --- | --- | --- |
//! | value | `N` | claim attempts since the item was (re)created: 1 for the winner, 2+ for each later caller; `0` once given back |
//! | expires_at | `N` | the claim's end (in progress), or how long a done event is remembered |
//! | `ddblock_claim` | `S` | the winner's claim token (unique per claim attempt); absent when given back |
//! | `ddblock_done` | `N` | Unix time the handler was marked done |
//! | `ddblock_given_back` | `S` | the token of the claim that was given back |

use std::fmt;

use crate::error::{Error, Result};

/// The attribute holding the winning claim's token.
pub const CLAIM_ATTRIBUTE: &str = "ddblock_claim";
/// The attribute holding the time a claim was marked done.
pub const DONE_ATTRIBUTE: &str = "ddblock_done";
/// The attribute holding the token of a claim that was given back.
pub const GIVEN_BACK_ATTRIBUTE: &str = "ddblock_given_back";
/// How long a done event is remembered when no other time is given: one day.
pub const DEFAULT_DONE_TTL_SECS: i64 = 86_400;

/// A once-guard item as read (attribute names resolved by the request layer).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OnceItem {
    /// The value attribute as a whole number (the claim counter); `None` when missing or not a
    /// number.
    pub claims: Option<i64>,
    /// The expiry attribute (`None`: missing or not a number).
    pub expires_at: Option<i64>,
    /// The winning claim's token.
    pub claim: Option<String>,
    /// When the claim was marked done.
    pub done_at: Option<i64>,
    /// The token of a claim that was given back.
    pub given_back: Option<String>,
}

/// Where an event stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OnceState {
    /// No item: never claimed (or its item was deleted after it expired).
    Free,
    /// Claimed and live: a handler is running (or died and its claim has not expired yet).
    InProgress,
    /// The handler finished and was marked done; redeliveries are skipped until it expires.
    Done,
    /// A failed handler gave its claim back; the next delivery claims it.
    GivenBack,
    /// The item is past its expiry: a claim whose handler never finished (nor gave it back), or
    /// a done event no longer remembered. The next delivery claims it.
    Expired,
}

impl OnceState {
    /// A stable snake_case name (`free`, `in_progress`, `done`, `given_back`, `expired`).
    pub fn as_str(self) -> &'static str {
        match self {
            OnceState::Free => "free",
            OnceState::InProgress => "in_progress",
            OnceState::Done => "done",
            OnceState::GivenBack => "given_back",
            OnceState::Expired => "expired",
        }
    }
}

impl fmt::Display for OnceState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a caller learns about an event: its state and the item's facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OnceStatus {
    /// Where the event stands.
    pub state: OnceState,
    /// The claim counter (how many callers tried since the item was created); `None` when free.
    pub claims: Option<i64>,
    /// When the claim ends (in progress) or the done record is forgotten (done).
    pub expires_at: Option<i64>,
    /// When the handler was marked done.
    pub done_at: Option<i64>,
}

impl OnceStatus {
    /// The status of an event without an item.
    pub fn free() -> OnceStatus {
        OnceStatus {
            state: OnceState::Free,
            claims: None,
            expires_at: None,
            done_at: None,
        }
    }
}

impl OnceItem {
    /// Whether a new claim may replace this item at `now`: it expired (`expires_at < now`, the
    /// takeover rule of Laravel's `add`) or was given back (counter 0 and no claim; checked
    /// without the clock, so a host whose clock lags still sees it free).
    pub fn is_free(&self, now: i64) -> bool {
        let expired = self.expires_at.is_some_and(|e| e < now);
        let given_back = self.claims == Some(0) && self.claim.is_none();
        expired || given_back
    }

    /// What this item says about the event at `now`.
    pub fn status(&self, now: i64) -> OnceStatus {
        let state = if self.claims == Some(0) && self.claim.is_none() {
            OnceState::GivenBack
        } else if self.expires_at.is_some_and(|e| e < now) {
            OnceState::Expired
        } else if self.done_at.is_some() {
            OnceState::Done
        } else {
            // A live claim: ours, another ddblock caller's, or one without a token (Laravel's
            // `Cache::add($key, 1, $ttl)` claims this way).
            OnceState::InProgress
        };
        OnceStatus {
            state,
            claims: self.claims,
            expires_at: self.expires_at,
            done_at: self.done_at,
        }
    }
}

/// A claim or done ttl: whole seconds, at least 1.
pub fn once_ttl(what: &str, ttl_secs: i64) -> Result<i64> {
    if ttl_secs < 1 {
        return Err(Error::InvalidTtl {
            ttl: ttl_secs,
            reason: format!(
                "a once {what} ttl must be at least 1 second (the claim ttl must outlast the \
                 handler; the done ttl is how long redeliveries are skipped)"
            ),
        });
    }
    Ok(ttl_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(claims: i64, expires_at: i64) -> OnceItem {
        OnceItem {
            claims: Some(claims),
            expires_at: Some(expires_at),
            claim: Some("t".into()),
            ..OnceItem::default()
        }
    }

    #[test]
    fn states() {
        assert_eq!(item(1, 100).status(100).state, OnceState::InProgress);
        assert_eq!(item(1, 100).status(101).state, OnceState::Expired);
        assert!(!item(1, 100).is_free(100));
        assert!(item(1, 100).is_free(101));
        let done = OnceItem {
            done_at: Some(90),
            ..item(3, 200)
        };
        assert_eq!(done.status(150).state, OnceState::Done);
        assert_eq!(done.status(201).state, OnceState::Expired);
        let given = OnceItem {
            claim: None,
            given_back: Some("t".into()),
            ..item(0, 500)
        };
        assert_eq!(given.status(100).state, OnceState::GivenBack);
        assert!(given.is_free(100), "free whatever the clock says");
        let laravel = OnceItem {
            claim: None,
            ..item(1, 100)
        };
        assert_eq!(laravel.status(50).state, OnceState::InProgress);
        assert!(!laravel.is_free(50));
    }

    #[test]
    fn ttls() {
        assert_eq!(once_ttl("claim", 1).unwrap(), 1);
        assert!(once_ttl("claim", 0).is_err());
        assert!(once_ttl("done", -5).is_err());
    }
}
