//! Per-(table, key) history of the writes the proxy forwarded, for stale reads.
//!
//! Times are microseconds on the proxy clock (real elapsed time plus any test
//! advance). A history is a time-ordered list of `(time, state)`: the item is in
//! `state` from `time` until the next entry. A baseline entry (the item as it
//! was before the first write seen, fetched with a consistent read) sits at
//! `i64::MIN`, i.e. "since forever".

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use serde_json::{Map, Value};

/// A DynamoDB item in its JSON wire form (`{"attr": {"S": "..."}, ...}`).
pub(crate) type Item = Map<String, Value>;

/// `v[name]` if it is a string.
pub(crate) fn str_field<'a>(v: &'a Item, name: &str) -> Option<&'a str> {
    v.get(name).and_then(Value::as_str)
}

/// `v[name]` if it is an object.
pub(crate) fn obj_field<'a>(v: &'a Item, name: &str) -> Option<&'a Item> {
    v.get(name).and_then(Value::as_object)
}

/// Time before everything: the baseline entry's time.
pub(crate) const SINCE_FOREVER: i64 = i64::MIN;

/// The state of one item at some time.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ItemState {
    /// The item existed with these attributes.
    Present(Item),
    /// No item under that key.
    Absent,
    /// Changed in a way the proxy could not observe: reads of this period go upstream.
    Unknown,
}

/// `(table, canonical key JSON)`.
pub(crate) type HistoryKey = (String, String);

#[derive(Debug, Default)]
pub(crate) struct History {
    keys: Mutex<HashMap<HistoryKey, Vec<(i64, ItemState)>>>,
}

impl History {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<HistoryKey, Vec<(i64, ItemState)>>> {
        self.keys.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether any write (or baseline) was recorded for the key.
    pub(crate) fn contains(&self, key: &HistoryKey) -> bool {
        self.lock().get(key).is_some_and(|v| !v.is_empty())
    }

    /// Records the state the item had before the first write seen, unless something is recorded already.
    pub(crate) fn set_baseline(&self, key: HistoryKey, state: ItemState) {
        let mut keys = self.lock();
        let entries = keys.entry(key).or_default();
        if entries.is_empty() {
            entries.push((SINCE_FOREVER, state));
        }
    }

    /// Records that the item is in `state` from `now` on; forgets what no read `keep_us` back can see.
    pub(crate) fn record(&self, key: HistoryKey, now: i64, state: ItemState, keep_us: i64) {
        let mut keys = self.lock();
        let entries = keys.entry(key).or_default();
        let t = entries.last().map_or(now, |(last, _)| now.max(*last));
        entries.push((t, state));
        let cutoff = now.saturating_sub(keep_us);
        // Keep the last entry at or before the cutoff: it is the state at the cutoff.
        if let Some(idx) = entries.iter().rposition(|(time, _)| *time <= cutoff) {
            entries.drain(..idx);
        }
    }

    /// The state at time `t` if it is known *and stale*: `None` when no entry covers `t`,
    /// when the covering entry is the latest (the read would not be stale: go upstream),
    /// or when the state is [`ItemState::Unknown`].
    pub(crate) fn stale_state_at(&self, key: &HistoryKey, t: i64) -> Option<ItemState> {
        let keys = self.lock();
        let entries = keys.get(key)?;
        let idx = entries.iter().rposition(|(time, _)| *time <= t)?;
        if idx + 1 == entries.len() {
            return None;
        }
        match &entries[idx].1 {
            ItemState::Unknown => None,
            s => Some(s.clone()),
        }
    }

    /// Forgets everything.
    pub(crate) fn clear(&self) {
        self.lock().clear();
    }
}

/// The canonical JSON of a key: the named attributes (or all of `key_map` if `names` is
/// `None`) as an object with sorted attribute names. `None` if a named attribute is missing.
pub(crate) fn canonical_key(key_map: &Item, names: Option<&[String]>) -> Option<String> {
    let mut sorted: BTreeMap<&str, &Value> = BTreeMap::new();
    match names {
        Some(names) => {
            for n in names {
                sorted.insert(n, key_map.get(n)?);
            }
        }
        None => {
            for (k, v) in key_map {
                sorted.insert(k, v);
            }
        }
    }
    if sorted.is_empty() {
        return None;
    }
    serde_json::to_string(&sorted).ok()
}

/// Applies a read's projection (`ProjectionExpression` with top-level names, or
/// `AttributesToGet`) to an item. `None` if the projection uses nested paths, which
/// the proxy does not evaluate (the read then goes upstream).
pub(crate) fn project(item: &Item, request: &Item) -> Option<Item> {
    let wanted: Vec<String> = if let Some(expr) = request.get("ProjectionExpression") {
        let expr = expr.as_str()?;
        let names = request
            .get("ExpressionAttributeNames")
            .and_then(Value::as_object);
        let mut out = Vec::new();
        for path in expr.split(',').map(str::trim) {
            if path.is_empty() || path.contains('.') || path.contains('[') {
                return None;
            }
            if path.starts_with('#') {
                out.push(names?.get(path)?.as_str()?.to_string());
            } else {
                out.push(path.to_string());
            }
        }
        out
    } else if let Some(list) = request.get("AttributesToGet") {
        list.as_array()?
            .iter()
            .map(|v| v.as_str().map(String::from))
            .collect::<Option<_>>()?
    } else {
        return Some(item.clone());
    };
    Some(
        item.iter()
            .filter(|(k, _)| wanted.iter().any(|w| w == *k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn item(v: Value) -> Item {
        v.as_object().unwrap().clone()
    }

    fn k(s: &str) -> HistoryKey {
        ("t".into(), s.into())
    }

    #[test]
    fn canonical_key_sorts_and_selects() {
        let a = item(json!({"sk": {"N": "1"}, "pk": {"S": "x"}, "v": {"S": "y"}}));
        let names = vec!["sk".to_string(), "pk".to_string()];
        assert_eq!(
            canonical_key(&a, Some(&names)).unwrap(),
            r#"{"pk":{"S":"x"},"sk":{"N":"1"}}"#
        );
        let key = item(json!({"sk": {"N": "1"}, "pk": {"S": "x"}}));
        assert_eq!(canonical_key(&key, None), canonical_key(&a, Some(&names)));
        assert_eq!(canonical_key(&a, Some(&["nope".to_string()])), None);
    }

    #[test]
    fn lookup_only_serves_truly_stale_states() {
        let h = History::default();
        let v1 = ItemState::Present(item(json!({"key": {"S": "a"}, "v": {"S": "1"}})));
        let v2 = ItemState::Present(item(json!({"key": {"S": "a"}, "v": {"S": "2"}})));
        h.set_baseline(k("a"), ItemState::Absent);
        h.record(k("a"), 100, v1.clone(), 1_000_000);
        h.record(k("a"), 200, v2, 1_000_000);
        assert_eq!(h.stale_state_at(&k("a"), 50), Some(ItemState::Absent));
        assert_eq!(h.stale_state_at(&k("a"), 100), Some(v1.clone()));
        assert_eq!(h.stale_state_at(&k("a"), 199), Some(v1));
        // At or after the latest write the read is not stale: upstream answers.
        assert_eq!(h.stale_state_at(&k("a"), 200), None);
        assert_eq!(h.stale_state_at(&k("b"), 50), None);
        // A baseline is only set once.
        h.set_baseline(k("a"), ItemState::Unknown);
        assert_eq!(h.stale_state_at(&k("a"), i64::MIN), Some(ItemState::Absent));
    }

    #[test]
    fn without_baseline_times_before_the_first_write_are_unknown() {
        let h = History::default();
        h.record(k("a"), 100, ItemState::Absent, 1_000);
        h.record(k("a"), 200, ItemState::Unknown, 1_000);
        h.record(k("a"), 300, ItemState::Absent, 1_000);
        assert_eq!(h.stale_state_at(&k("a"), 99), None);
        assert_eq!(h.stale_state_at(&k("a"), 150), Some(ItemState::Absent));
        assert_eq!(h.stale_state_at(&k("a"), 250), None);
    }

    #[test]
    fn pruning_keeps_the_state_at_the_cutoff() {
        let h = History::default();
        h.set_baseline(k("a"), ItemState::Absent);
        for t in 1..=10 {
            h.record(k("a"), t * 100, ItemState::Absent, 250);
        }
        // cutoff = 1000 - 250 = 750: entries from 700 on remain.
        assert_eq!(h.stale_state_at(&k("a"), 699), None);
        assert_eq!(h.stale_state_at(&k("a"), 760), Some(ItemState::Absent));
        assert_eq!(h.lock()[&k("a")].len(), 4);
    }

    #[test]
    fn projection_of_top_level_names() {
        let it = item(json!({"a": {"S": "1"}, "b": {"S": "2"}, "c": {"S": "3"}}));
        let req =
            item(json!({"ProjectionExpression": "a, #x", "ExpressionAttributeNames": {"#x": "c"}}));
        assert_eq!(
            project(&it, &req).unwrap(),
            item(json!({"a": {"S": "1"}, "c": {"S": "3"}}))
        );
        let req = item(json!({"AttributesToGet": ["b"]}));
        assert_eq!(project(&it, &req).unwrap(), item(json!({"b": {"S": "2"}})));
        let req = item(json!({"ProjectionExpression": "a.b"}));
        assert_eq!(project(&it, &req), None);
        assert_eq!(project(&it, &item(json!({}))).unwrap(), it);
    }
}
