//! Batch requests (BatchGetItem, BatchWriteItem), chunked to DynamoDB's limits, with the
//! unprocessed keys and items sent again.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes, PutRequest, WriteRequest};

use super::attr;
use super::error::sdk_error;
use super::Table;
use crate::error::{Error, Result};
use crate::format::item::ItemView;
use crate::holder::StoredValue;

/// Keys per BatchGetItem request (DynamoDB's limit).
const BATCH_GET_CHUNK: usize = 100;
/// Put requests per BatchWriteItem request (DynamoDB's limit).
const BATCH_WRITE_CHUNK: usize = 25;
/// Rounds of resending unprocessed batch keys/items before giving up as throttled.
const BATCH_RETRY_ROUNDS: u32 = 10;

impl Table {
    /// Eventually consistent reads of `keys` (distinct table keys), as Laravel's `many()`: the
    /// items found, by table key.
    pub(crate) async fn batch_get(&self, keys: &[&str]) -> Result<HashMap<String, ItemView>> {
        let c = self.config();
        let client = self.client().await?;
        let mut found = HashMap::new();
        for chunk in keys.chunks(BATCH_GET_CHUNK) {
            let mut pending = KeysAndAttributes::builder()
                .set_keys(Some(chunk.iter().map(|k| attr::key(c, k)).collect()))
                .consistent_read(false)
                .build()
                .map_err(|e| Error::Config(e.to_string()))?;
            let mut round = 0;
            loop {
                let out = client
                    .batch_get_item()
                    .request_items(c.table(), pending)
                    .send()
                    .await
                    .map_err(|e| sdk_error(c, "BatchGetItem", e))?;
                if let Some(mut resp) = out.responses {
                    for it in resp.remove(c.table()).unwrap_or_default() {
                        if let Some(AttributeValue::S(k)) = it.get(c.key_attribute()) {
                            found.insert(k.clone(), attr::view(c, &it));
                        }
                    }
                }
                match out.unprocessed_keys.and_then(|mut u| u.remove(c.table())) {
                    Some(rest) if !rest.keys.is_empty() => {
                        round += 1;
                        if round > BATCH_RETRY_ROUNDS {
                            return Err(unprocessed("BatchGetItem", rest.keys.len()));
                        }
                        tokio::time::sleep(batch_backoff(round)).await;
                        pending = rest;
                    }
                    _ => break,
                }
            }
        }
        Ok(found)
    }

    /// Laravel's `putMany()`: full items with one expiry, in BatchWriteItem chunks of 25.
    /// `items` must not repeat a key (BatchWriteItem rejects that).
    pub(crate) async fn batch_put(
        &self,
        items: &[(String, StoredValue)],
        expires_at: i64,
    ) -> Result<()> {
        let c = self.config();
        let client = self.client().await?;
        let requests: Vec<WriteRequest> = items
            .iter()
            .map(|(k, v)| {
                let put = PutRequest::builder()
                    .set_item(Some(attr::full_item(c, k, v, expires_at)))
                    .build();
                put.map(|p| WriteRequest::builder().put_request(p).build())
                    .map_err(|e| Error::Config(e.to_string()))
            })
            .collect::<Result<_>>()?;
        for chunk in requests.chunks(BATCH_WRITE_CHUNK) {
            let mut pending = chunk.to_vec();
            let mut round = 0;
            loop {
                let out = client
                    .batch_write_item()
                    .request_items(c.table(), pending)
                    .send()
                    .await
                    .map_err(|e| sdk_error(c, "BatchWriteItem", e))?;
                match out.unprocessed_items.and_then(|mut u| u.remove(c.table())) {
                    Some(rest) if !rest.is_empty() => {
                        round += 1;
                        if round > BATCH_RETRY_ROUNDS {
                            return Err(unprocessed("BatchWriteItem", rest.len()));
                        }
                        tokio::time::sleep(batch_backoff(round)).await;
                        pending = rest;
                    }
                    _ => break,
                }
            }
        }
        Ok(())
    }
}

fn unprocessed(operation: &'static str, left: usize) -> Error {
    Error::Throttled {
        operation,
        code: "UnprocessedItems".into(),
        message: format!("{left} items were still unprocessed after {BATCH_RETRY_ROUNDS} resends"),
    }
}

fn batch_backoff(round: u32) -> Duration {
    Duration::from_millis((25u64 << round.min(6)).min(1000))
}
