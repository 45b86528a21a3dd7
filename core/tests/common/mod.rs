//! The core's test support: [`Env`] (a raw client, a fresh table, a manual clock) over the shared
//! `ddblock-test-support` crate (servers, tables, clocks, items).
#![allow(dead_code, unused_imports)]

use std::collections::HashMap;
use std::sync::Arc;

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use ddblock::{Clock, KeyLayout, Store, StoreConfig, StoreConfigBuilder};
pub use ddblock_test_support::{
    client_for, laravel_item, n, new_table, on_servers, s, ManualClock, Server,
};

/// Everything a test needs: a raw client, a fresh table, a manual clock.
pub struct Env {
    pub server: Server,
    pub client: Client,
    pub table: String,
    pub clock: Arc<ManualClock>,
}

impl Env {
    pub async fn new(server: Server) -> Env {
        let client = client_for(&server.endpoint());
        let table = new_table(&client, "key").await;
        Env {
            server,
            client,
            table,
            clock: ManualClock::new(),
        }
    }

    /// A config builder for this table and clock.
    pub fn config(&self) -> StoreConfigBuilder {
        StoreConfig::builder()
            .table(&self.table)
            .endpoint(self.server.endpoint())
            .clock(self.clock.clone())
    }

    /// A store with prefix `app_` and the given layout.
    pub fn store(&self, layout: KeyLayout) -> Store {
        self.store_with(self.config().prefix("app_").layout(layout))
    }

    pub fn store_with(&self, b: StoreConfigBuilder) -> Store {
        Store::with_client(self.client.clone(), b.build().expect("config"))
    }

    pub fn now(&self) -> i64 {
        self.clock.now()
    }

    /// The raw item under table key `key` (consistent read, plain SDK).
    pub async fn raw(&self, key: &str) -> Option<HashMap<String, AttributeValue>> {
        self.client
            .get_item()
            .table_name(&self.table)
            .key("key", AttributeValue::S(key.into()))
            .consistent_read(true)
            .send()
            .await
            .expect("GetItem")
            .item
    }

    /// Writes a raw item (plain SDK), e.g. exactly what Laravel would have written.
    pub async fn put_raw(&self, item: HashMap<String, AttributeValue>) {
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .expect("PutItem");
    }
}
