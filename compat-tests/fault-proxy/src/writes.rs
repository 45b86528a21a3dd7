//! The write side of the stale-read model: which items a write request changes (key schemas
//! learned from Key maps, DescribeTable or the config), their state before the first write seen,
//! and the history entries of the writes the server accepted.

use std::collections::HashSet;

use serde_json::{json, Value};

use crate::config::FaultConfig;
use crate::history::{canonical_key, obj_field, str_field, HistoryKey, Item, ItemState};
use crate::http1::Request;
use crate::shared::Shared;
use crate::upstream::UpstreamResponse;

/// What a successful write does to one item.
#[derive(Debug, Clone)]
enum Effect {
    Put(Item),
    Delete,
    /// Updated: new state from the response (ALL_NEW) or from a consistent read.
    Update {
        all_new: bool,
    },
}

/// One item a write request changes if it succeeds.
#[derive(Debug, Clone)]
pub(crate) struct WriteEffect {
    table: String,
    key: Item,
    pub(crate) hkey: HistoryKey,
    effect: Effect,
}

/// One request of a BatchWriteItem table list.
enum BatchWrite<'a> {
    Put(&'a Item),
    Delete(&'a Item),
}

impl<'a> BatchWrite<'a> {
    fn parse(r: &'a Value) -> Option<BatchWrite<'a>> {
        let inner = |kind: &str, field: &str| r.get(kind)?.get(field)?.as_object();
        inner("PutRequest", "Item")
            .map(BatchWrite::Put)
            .or_else(|| inner("DeleteRequest", "Key").map(BatchWrite::Delete))
    }
}

/// The `(table, requests)` pairs of a BatchWriteItem `RequestItems` / `UnprocessedItems` map.
fn batch_writes<'a>(
    body: &'a Item,
    field: &str,
) -> impl Iterator<Item = (&'a String, BatchWrite<'a>)> {
    obj_field(body, field)
        .into_iter()
        .flatten()
        .flat_map(|(table, requests)| {
            let requests = requests.as_array().into_iter().flatten();
            requests.filter_map(move |r| Some((table, BatchWrite::parse(r)?)))
        })
}

fn key_of(item: &Item, names: &[String]) -> Option<Item> {
    names
        .iter()
        .map(|n| Some((n.clone(), item.get(n)?.clone())))
        .collect()
}

/// The write side of one client request: the proxy's state, the request (whose credentials
/// headers the proxy's own reads reuse) and the fault config it runs under.
pub(crate) struct Writes<'a> {
    pub(crate) sh: &'a Shared,
    pub(crate) req: &'a Request,
    pub(crate) cfg: &'a FaultConfig,
}

fn keyed_effect(table: &str, key: &Item, effect: Effect) -> Option<WriteEffect> {
    let hkey = (table.to_string(), canonical_key(key, None)?);
    Some(WriteEffect {
        table: table.to_string(),
        key: key.clone(),
        hkey,
        effect,
    })
}

/// `body`'s `TableName` and its `field` map (`Item`, `Key`).
fn table_and<'a>(body: &'a Item, field: &str) -> Option<(&'a str, &'a Item)> {
    Some((str_field(body, "TableName")?, obj_field(body, field)?))
}

impl Writes<'_> {
    /// The item's current state read with a consistent GetItem upstream.
    async fn fetch_state(&self, table: &str, key: &Item) -> ItemState {
        let body = json!({"TableName": table, "Key": key, "ConsistentRead": true});
        match self.sh.upstream.call(self.req, "GetItem", body).await {
            Some(resp) => match obj_field(&resp, "Item") {
                Some(item) => ItemState::Present(item.clone()),
                None => ItemState::Absent,
            },
            None => ItemState::Unknown,
        }
    }

    /// The table's key attribute names: learned from Key maps, else DescribeTable, else the
    /// config.
    async fn key_schema(&self, table: &str) -> Vec<String> {
        if let Some(names) = self.sh.schema(table) {
            return names;
        }
        let described = self
            .sh
            .upstream
            .call(self.req, "DescribeTable", json!({"TableName": table}))
            .await
            .and_then(|resp| {
                let schema = resp.get("Table")?.get("KeySchema")?.as_array()?;
                let mut names: Vec<String> = schema
                    .iter()
                    .filter_map(|e| e.get("AttributeName")?.as_str().map(String::from))
                    .collect();
                names.sort();
                (!names.is_empty()).then_some(names)
            });
        match described {
            Some(names) => {
                self.sh.learn_schema(table, names.clone());
                names
            }
            None => vec![self.cfg.key_attribute.clone()],
        }
    }

    async fn put_effect(&self, table: &str, item: &Item) -> Option<WriteEffect> {
        let key = key_of(item, &self.key_schema(table).await)?;
        keyed_effect(table, &key, Effect::Put(item.clone()))
    }

    /// The items an `op` request with `body` changes if it succeeds.
    pub(crate) async fn effects(&self, op: &str, body: &Item) -> Vec<WriteEffect> {
        let mut out = Vec::new();
        match op {
            "PutItem" => {
                if let Some((table, item)) = table_and(body, "Item") {
                    out.extend(self.put_effect(table, item).await);
                }
            }
            "DeleteItem" | "UpdateItem" => {
                if let Some((table, key)) = table_and(body, "Key") {
                    let effect = if op == "DeleteItem" {
                        Effect::Delete
                    } else {
                        Effect::Update {
                            all_new: str_field(body, "ReturnValues") == Some("ALL_NEW"),
                        }
                    };
                    out.extend(keyed_effect(table, key, effect));
                }
            }
            "BatchWriteItem" => {
                for (table, write) in batch_writes(body, "RequestItems") {
                    match write {
                        BatchWrite::Put(item) => out.extend(self.put_effect(table, item).await),
                        BatchWrite::Delete(key) => {
                            out.extend(keyed_effect(table, key, Effect::Delete))
                        }
                    }
                }
            }
            "TransactWriteItems" => {
                let items = body.get("TransactItems").and_then(Value::as_array);
                for t in items.into_iter().flatten().filter_map(Value::as_object) {
                    let put = obj_field(t, "Put").and_then(|p| table_and(p, "Item"));
                    if let Some((table, item)) = put {
                        out.extend(self.put_effect(table, item).await);
                    }
                    for (kind, effect) in [
                        ("Delete", Effect::Delete),
                        ("Update", Effect::Update { all_new: false }),
                    ] {
                        if let Some((table, key)) =
                            obj_field(t, kind).and_then(|d| table_and(d, "Key"))
                        {
                            out.extend(keyed_effect(table, key, effect));
                        }
                    }
                }
            }
            _ => {}
        }
        out
    }

    /// With stale reads on: the state of each item before the first write the proxy sees to it
    /// (a consistent read), taken as its state "since forever".
    pub(crate) async fn record_baselines(&self, effects: &[WriteEffect]) {
        if !self.cfg.stale_enabled() {
            return;
        }
        for e in effects {
            if !self.sh.history.contains(&e.hkey) {
                let before = self.fetch_state(&e.table, &e.key).await;
                self.sh.history.set_baseline(e.hkey.clone(), before);
            }
        }
    }

    /// Keys of BatchWriteItem requests the upstream returned as unprocessed.
    async fn unprocessed_keys(&self, resp: &Item) -> HashSet<HistoryKey> {
        let mut out = HashSet::new();
        for (table, write) in batch_writes(resp, "UnprocessedItems") {
            let key = match write {
                BatchWrite::Put(item) => key_of(item, &self.key_schema(table).await),
                BatchWrite::Delete(key) => Some(key.clone()),
            };
            if let Some(k) = key.as_ref().and_then(|k| canonical_key(k, None)) {
                out.insert((table.clone(), k));
            }
        }
        out
    }

    /// Records in the history the effects of an `op` write the upstream accepted.
    pub(crate) async fn record(
        &self,
        op: &str,
        effects: Vec<WriteEffect>,
        resp: &UpstreamResponse,
    ) {
        let now = self.sh.now_us();
        let keep_us = self.cfg.stale_ms as i64 * 1000;
        let resp_json = resp.json().unwrap_or_default();
        let skipped = if op == "BatchWriteItem" {
            self.unprocessed_keys(&resp_json).await
        } else {
            HashSet::new()
        };
        for e in effects {
            if skipped.contains(&e.hkey) {
                continue;
            }
            if !matches!(e.effect, Effect::Put(_)) {
                // A Key map the server accepted names exactly the table's key attributes.
                let mut names: Vec<String> = e.key.keys().cloned().collect();
                names.sort();
                self.sh.learn_schema(&e.table, names);
            }
            let state = match e.effect {
                Effect::Put(item) => ItemState::Present(item),
                Effect::Delete => ItemState::Absent,
                Effect::Update { all_new } => {
                    match obj_field(&resp_json, "Attributes").filter(|_| all_new) {
                        Some(attrs) => ItemState::Present(attrs.clone()),
                        None => self.fetch_state(&e.table, &e.key).await,
                    }
                }
            };
            self.sh.history.record(e.hkey, now, state, keep_us);
        }
    }
}
