//! A journaled request read as one of ddblock's (core/src/dynamo/request.rs), with its owner.

use ddblock_model::state::{Action, ClientId};
use serde_json::Value;

/// What a journaled request on a lock item is, as ddblock's requests (core/src/dynamo/request.rs).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Request {
    /// The acquire's UpdateItem: `(attempt, clock, expires_at, fence_base)`.
    Acquire(String, i64, i64, i64),
    /// The release: DeleteItem if `#value = :owner`, or (`Some(clock)`) the keep-fence UpdateItem.
    Release(Option<i64>),
    /// The clean-up of an unknown outcome: `(attempt, keep-fence clock)`.
    Cleanup(String, Option<i64>),
    /// The refresh: `(clock, expires_at)`.
    Refresh(i64, i64),
}

fn s_val<'a>(r: &'a Value, name: &str) -> Option<&'a str> {
    r["ExpressionAttributeValues"][name]["S"].as_str()
}

fn n_val(r: &Value, name: &str) -> Option<i64> {
    r["ExpressionAttributeValues"][name]["N"]
        .as_str()
        .and_then(|n| n.parse().ok())
}

/// The owner token in a stored value: Laravel's `s:16:"TOKEN";`, or the token itself.
pub fn owner_token(stored: &str) -> &str {
    match (stored.find('"'), stored.rfind('"')) {
        (Some(a), Some(b)) if stored.starts_with("s:") && b > a => &stored[a + 1..b],
        _ => stored,
    }
}

const ACQUIRE_SET: &str = "SET #value = :owner, #expires_at = :expires_at, #attempt = :attempt, \
                           #fence = if_not_exists(#fence, :fence_base) + :one";
const FREE: &str = "attribute_not_exists(#key) OR #expires_at < :now";
const KEEP: &str = "SET #expires_at = :expires_at REMOVE #value, #attempt, #since";
const OWNED: &str = "#value = :owner";
const THIS_ATTEMPT: &str = "#value = :owner AND #attempt = :attempt";
const LIVE_OWNED: &str = "attribute_exists(#key) AND #value = :owner AND #expires_at > :now";

/// Reads a journaled request as one of ddblock's, with its owner token; `Err` says what it is.
/// Times come back as seconds since `base` (the model's ticks).
pub(super) fn classify(
    op: &str,
    r: &Value,
    margin: i64,
    day: i64,
    base: i64,
) -> Result<(String, Request), String> {
    let cond = r["ConditionExpression"].as_str().unwrap_or("");
    let update = r["UpdateExpression"].as_str().unwrap_or("");
    let owner = s_val(r, ":owner").map(|o| owner_token(o).to_owned());
    let attempt = s_val(r, ":attempt").map(str::to_owned);
    // Times rebased; the fence base, a clock in µs, is not.
    let secs = |name: &str| n_val(r, name).map(|n| n - base);
    let kept = secs(":expires_at").map(|e| e + day);
    let req = match (op, cond, owner.clone(), attempt) {
        ("UpdateItem", FREE, Some(_), Some(a)) if update.starts_with(ACQUIRE_SET) => {
            match (secs(":now"), secs(":expires_at"), n_val(r, ":fence_base")) {
                (Some(now), Some(e), Some(f)) => Some(Request::Acquire(a, now + margin, e, f)),
                _ => None,
            }
        }
        ("DeleteItem", OWNED, Some(_), None) => Some(Request::Release(None)),
        ("UpdateItem", OWNED, Some(_), None) if update == KEEP && kept.is_some() => {
            Some(Request::Release(kept))
        }
        ("DeleteItem", THIS_ATTEMPT, Some(_), Some(a)) => Some(Request::Cleanup(a, None)),
        ("UpdateItem", THIS_ATTEMPT, Some(_), Some(a)) if update == KEEP && kept.is_some() => {
            Some(Request::Cleanup(a, kept))
        }
        ("UpdateItem", LIVE_OWNED, Some(_), None) => match (secs(":now"), secs(":expires_at")) {
            (Some(now), Some(e)) => Some(Request::Refresh(now, e)),
            _ => None,
        },
        _ => None,
    };
    match (req, owner) {
        (Some(req), Some(owner)) => Ok((owner, req)),
        _ => {
            let what = if cond.is_empty() {
                "no condition".to_owned()
            } else {
                format!("condition {cond:?}")
            };
            let update = if update.is_empty() {
                String::new()
            } else {
                format!(", update {update:?}")
            };
            Err(format!("a {op} with {what}{update}"))
        }
    }
}

/// The client an action is about.
pub(super) fn about(a: Action) -> Option<ClientId> {
    match a {
        Action::Acquire(c)
        | Action::Land(c, _)
        | Action::Drop(c, _)
        | Action::Refuse(c, _)
        | Action::Answer(c)
        | Action::Timeout(c)
        | Action::Resend(c)
        | Action::Finish(c)
        | Action::Refresh(c, _)
        | Action::Release(c, _)
        | Action::Delete(c) => Some(c),
        Action::Tick | Action::TtlDelete | Action::ForceRelease => None,
    }
}

pub(super) fn short(owner: &str) -> String {
    owner.chars().take(6).collect()
}

/// Whether a journaled write landed (the server answered it), and whether its answer reached
/// the client.
pub(super) fn landed_and_heard(e: &Value) -> (bool, bool) {
    let status = e["status"].as_u64().unwrap_or(0);
    let landed = status == 200 || status == 400;
    let heard = landed && matches!(e["delivery"].as_str(), Some("answered" | "delayed"));
    (landed, heard)
}
