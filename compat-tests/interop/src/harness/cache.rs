//! The harness's cache commands: Laravel's `DynamoDbStore` methods, one typed method each.

use std::collections::BTreeMap;

use ddblock::PhpValue;
use serde_json::{json, Value};

use super::{HarnessError, PhpHarness};
use crate::wire::{from_b64, to_b64};

impl PhpHarness {
    /// `$store->get($key)` (`Null` when missing or expired, as Laravel).
    pub async fn get(&self, key: &str) -> PhpValue {
        let v = self.field(json!({"op": "get", "key": key}), "value").await;
        from_b64(v.as_str().expect("value is base64 text"))
    }

    /// `$store->put($key, $value, $ttl)`.
    pub async fn put(&self, key: &str, value: &PhpValue, ttl: i64) -> bool {
        self.bool_field(put_cmd("put", key, value, ttl), "result")
            .await
    }

    /// `$store->put(..)`, returning PHP's refusal instead of panicking.
    pub async fn try_put(
        &self,
        key: &str,
        value: &PhpValue,
        ttl: i64,
    ) -> Result<bool, HarnessError> {
        let v = self.call(put_cmd("put", key, value, ttl)).await?;
        Ok(v["result"].as_bool().expect("put result is a bool"))
    }

    /// `$store->add($key, $value, $ttl)`.
    pub async fn add(&self, key: &str, value: &PhpValue, ttl: i64) -> bool {
        self.bool_field(put_cmd("add", key, value, ttl), "result")
            .await
    }

    /// `$store->putMany([$key => $value, ...], $ttl)`.
    pub async fn put_many(&self, values: &[(&str, PhpValue)], ttl: i64) -> bool {
        self.bool_field(put_many_cmd(values, ttl), "result").await
    }

    /// `$store->putMany(..)`, returning PHP's refusal instead of panicking.
    pub async fn try_put_many(
        &self,
        values: &[(&str, PhpValue)],
        ttl: i64,
    ) -> Result<bool, HarnessError> {
        let v = self.call(put_many_cmd(values, ttl)).await?;
        Ok(v["result"].as_bool().expect("putMany result is a bool"))
    }

    /// `$store->many($keys)`: every key mapped to its value (`Null` when missing).
    pub async fn many(&self, keys: &[&str]) -> BTreeMap<String, PhpValue> {
        let v = self
            .field(json!({"op": "many", "keys": keys}), "values")
            .await;
        v.as_object()
            .unwrap_or_else(|| panic!("many values is not an object: {v}"))
            .iter()
            .map(|(k, b)| (k.clone(), from_b64(b.as_str().expect("base64 text"))))
            .collect()
    }

    /// `$store->increment($key, $by)`: the new value, `None` for Laravel's `false`.
    pub async fn increment(&self, key: &str, by: i64) -> Option<i64> {
        self.counter("increment", key, by).await
    }

    /// `$store->decrement($key, $by)`: the new value, `None` for Laravel's `false`.
    pub async fn decrement(&self, key: &str, by: i64) -> Option<i64> {
        self.counter("decrement", key, by).await
    }

    async fn counter(&self, op: &str, key: &str, by: i64) -> Option<i64> {
        let cmd = json!({"op": op, "key": key, "by": by});
        match self.field(cmd.clone(), "result").await {
            Value::Bool(false) => None,
            Value::Number(n) => Some(
                n.as_i64()
                    .unwrap_or_else(|| panic!("{op} result {n} is not an int")),
            ),
            other => panic!("answer to {cmd}: result is neither false nor an int: {other}"),
        }
    }

    /// `$store->forever($key, $value)`.
    pub async fn forever(&self, key: &str, value: &PhpValue) -> bool {
        let cmd = json!({"op": "forever", "key": key, "v": to_b64(value)});
        self.bool_field(cmd, "result").await
    }

    /// `$store->forget($key)`.
    pub async fn forget(&self, key: &str) -> bool {
        self.bool_field(json!({"op": "forget", "key": key}), "result")
            .await
    }
}

fn put_cmd(op: &str, key: &str, value: &PhpValue, ttl: i64) -> Value {
    json!({"op": op, "key": key, "v": to_b64(value), "ttl": ttl})
}

fn put_many_cmd(values: &[(&str, PhpValue)], ttl: i64) -> Value {
    let map: serde_json::Map<String, Value> = values
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Value::String(to_b64(v))))
        .collect();
    json!({"op": "putMany", "values": map, "ttl": ttl})
}
