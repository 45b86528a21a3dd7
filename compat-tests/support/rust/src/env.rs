//! What most behaviour tests start from: [`Env`] (a raw client, a fresh table, a manual clock)
//! and [`FaultyTable`] (a fresh table with the fault proxy in front of its server).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use ddblock::{Clock, KeyLayout, Store, StoreConfig, StoreConfigBuilder};

use crate::faulty::{faulty, FaultyServer};
use crate::{client_for, new_table, Item, ManualClock, Server};

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
        crate::raw_item(&self.client, &self.table, key).await
    }

    /// Writes a raw item (plain SDK), e.g. exactly what Laravel would have written.
    pub async fn put_raw(&self, item: HashMap<String, AttributeValue>) {
        crate::put_raw_item(&self.client, &self.table, item).await
    }
}

/// A fresh table on a server with the fault proxy in front of the server (no faults yet), for
/// the tests of what lost answers, throttles and slow replies do. Stores use the real clock.
pub struct FaultyTable {
    /// The proxy: its faults (`set_faults`) and counters (`stats`, `reset`).
    pub proxy: FaultyServer,
    pub table: String,
}

impl FaultyTable {
    pub async fn new(server: Server) -> FaultyTable {
        let endpoint = server.endpoint();
        FaultyTable {
            table: new_table(&client_for(&endpoint), "key").await,
            proxy: faulty(&endpoint, Default::default()).await,
        }
    }

    /// A config for the table through the proxy (its requests are faulted and counted).
    pub fn through(&self) -> StoreConfigBuilder {
        StoreConfig::builder()
            .table(&self.table)
            .endpoint(&self.proxy.endpoint)
            .region("us-east-1")
    }

    /// A config for the table straight to the server: another endpoint, so to a store through
    /// the proxy it is another process.
    pub fn direct(&self) -> StoreConfigBuilder {
        self.through().endpoint(&self.proxy.upstream)
    }

    /// The raw item under table key `key`, straight from the server (consistent read).
    pub async fn raw(&self, key: &str) -> Option<Item> {
        let upstream = client_for(&self.proxy.upstream);
        crate::raw_item(&upstream, &self.table, key).await
    }

    /// Waits (up to 5 s) until the item under `key` is gone.
    pub async fn until_gone(&self, key: &str) -> bool {
        let end = Instant::now() + Duration::from_secs(5);
        while Instant::now() < end {
            if self.raw(key).await.is_none() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        false
    }
}
