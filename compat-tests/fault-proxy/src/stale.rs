//! The read side of the stale-read model: eventually consistent GetItem / BatchGetItem keys the
//! plan made stale are answered from the write history, as of `now - staleness`.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde_json::{json, Map, Value};

use crate::crc32::crc32;
use crate::history::{canonical_key, obj_field, project, str_field, Item, ItemState};
use crate::http1::Response;
use crate::plan::is_consistent;
use crate::shared::Shared;
use crate::upstream::UpstreamResponse;

/// Items served from history, per table (BatchGetItem `Responses`).
pub(crate) type Served = BTreeMap<String, Vec<Value>>;

/// What the history makes of a read request.
pub(crate) enum StaleRead {
    /// Nothing stale: forward the request as it is.
    Fresh,
    /// Answered from history alone.
    Answered(Response),
    /// A BatchGetItem partly served from history: forward `rest` (the request for the other
    /// keys), then add `served` to the answer with [`merge_batch`].
    Partial { served: Served, rest: Bytes },
}

/// Serves the stale keys of a GetItem / BatchGetItem (`stale`: the plan's draws, per key).
pub(crate) fn read(sh: &Shared, op: &str, body: &Item, stale: &[Option<i64>]) -> StaleRead {
    match op {
        "GetItem" => match stale.first() {
            Some(Some(delay)) => {
                stale_get_item(sh, body, *delay).map_or(StaleRead::Fresh, StaleRead::Answered)
            }
            _ => StaleRead::Fresh,
        },
        "BatchGetItem" => match split_batch_get(sh, body, stale) {
            None => StaleRead::Fresh,
            Some((served, rest)) if obj_field(&rest, "RequestItems").is_none_or(Map::is_empty) => {
                let answer = json!({"Responses": served, "UnprocessedKeys": {}});
                StaleRead::Answered(sh.ddb_response(200, &answer))
            }
            Some((served, rest)) => StaleRead::Partial {
                served,
                rest: Bytes::from(serde_json::to_vec(&rest).unwrap_or_default()),
            },
        },
        _ => StaleRead::Fresh,
    }
}

/// The state of `table`'s `key` as of `delay` µs ago, if a write came after that time.
fn state_ago(sh: &Shared, table: &str, key: &Item, now: i64, delay: i64) -> Option<ItemState> {
    let hkey = (table.to_string(), canonical_key(key, None)?);
    sh.history.stale_state_at(&hkey, now - delay)
}

/// Serves an eventually consistent GetItem from history if the plan makes it stale.
fn stale_get_item(sh: &Shared, body: &Item, delay: i64) -> Option<Response> {
    let table = str_field(body, "TableName")?;
    let key = obj_field(body, "Key")?;
    let answer = match state_ago(sh, table, key, sh.now_us(), delay)? {
        ItemState::Present(item) => json!({ "Item": project(&item, body)? }),
        _ => json!({}),
    };
    Some(sh.ddb_response(200, &answer))
}

/// Splits an eventually consistent BatchGetItem into the keys served from history and the
/// request for the rest. `None` if nothing is served from history.
fn split_batch_get(sh: &Shared, body: &Item, stale: &[Option<i64>]) -> Option<(Served, Item)> {
    let tables = obj_field(body, "RequestItems")?;
    let now = sh.now_us();
    let mut draws = stale.iter();
    let mut served = Served::new();
    let mut any_served = false;
    let mut remaining = Map::new();
    for (table, entry) in tables {
        let Some(entry_obj) = entry.as_object() else {
            remaining.insert(table.clone(), entry.clone());
            continue;
        };
        let keys = entry_obj.get("Keys").and_then(Value::as_array);
        if is_consistent(entry_obj) || keys.is_none() {
            remaining.insert(table.clone(), entry.clone());
            continue;
        }
        let mut left = Vec::new();
        for key in keys.into_iter().flatten() {
            let draw = draws.next().copied().flatten();
            let answer =
                draw.and_then(
                    |delay| match state_ago(sh, table, key.as_object()?, now, delay)? {
                        ItemState::Present(item) => {
                            Some(Some(Value::Object(project(&item, entry_obj)?)))
                        }
                        _ => Some(None),
                    },
                );
            match answer {
                Some(found) => {
                    any_served = true;
                    served.entry(table.clone()).or_default().extend(found);
                }
                None => left.push(key.clone()),
            }
        }
        served.entry(table.clone()).or_default();
        if !left.is_empty() {
            let mut e = entry_obj.clone();
            e.insert("Keys".into(), Value::Array(left));
            remaining.insert(table.clone(), Value::Object(e));
        }
    }
    if !any_served {
        return None;
    }
    let mut rest = body.clone();
    rest.insert("RequestItems".into(), Value::Object(remaining));
    Some((served, rest))
}

/// The upstream's BatchGetItem answer with the items `served` from history added (and its CRC
/// header recomputed).
pub(crate) fn merge_batch(resp: UpstreamResponse, served: Served) -> Response {
    let mut merged = resp.json().unwrap_or_default();
    let responses = merged
        .entry("Responses")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(responses) = responses.as_object_mut() {
        for (table, items) in served {
            let list = responses
                .entry(table)
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Some(list) = list.as_array_mut() {
                list.extend(items);
            }
        }
    }
    let body = serde_json::to_vec(&merged).unwrap_or_default();
    let crc = crc32(&body).to_string();
    let mut out = resp.into_response();
    for (name, value) in out.headers.iter_mut() {
        if name.eq_ignore_ascii_case("x-amz-crc32") {
            *value = crc.clone().into_bytes();
        }
    }
    out.body = Bytes::from(body);
    out
}
