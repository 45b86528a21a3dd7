//! One interop test's world: a fresh table with a ddblock store and a PHP harness on it.

use std::sync::Arc;

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use ddblock::{KeyLayout, Store};

use crate::harness::PhpHarness;
use crate::{client_for, delete_table, new_table, store, Item, Server};

/// One interop test's world: a fresh table on `server`, a ddblock [`Store`] and a PHP harness on
/// it, both with the same layout and prefix.
#[derive(Debug)]
pub struct Interop {
    /// The server the table lives on.
    pub server: Server,
    /// The key layout of both sides.
    pub layout: KeyLayout,
    /// The configured prefix of both sides.
    pub prefix: String,
    /// A plain SDK client for the server.
    pub client: Client,
    /// The table, created for this test.
    pub table: String,
    /// The Rust side.
    pub store: Store,
    /// The PHP side (an `Arc` so spawned tasks can use it too).
    pub php: Arc<PhpHarness>,
}

impl Interop {
    /// Creates the table and starts the harness.
    pub async fn new(server: Server, layout: KeyLayout, prefix: &str) -> Interop {
        let endpoint = server.endpoint();
        let client = client_for(&endpoint);
        let table = new_table(&client, "key").await;
        let store = store(server, &client, &table, layout, prefix);
        let php = Arc::new(PhpHarness::spawn(&endpoint, &table, layout, prefix));
        Interop {
            server,
            layout,
            prefix: prefix.to_owned(),
            client,
            table,
            store,
            php,
        }
    }

    /// The table key of cache entry `key` (as ddblock computes it).
    pub fn cache_key(&self, key: &str) -> String {
        self.store.cache_key(key).expect("valid key")
    }

    /// The table key of lock `name` (as ddblock computes it).
    pub fn lock_key(&self, name: &str) -> String {
        self.store.lock_key(name).expect("valid lock name")
    }

    /// The raw item under table key `key` (strongly consistent GetItem, plain SDK).
    pub async fn raw(&self, key: &str) -> Option<Item> {
        ddblock_test_support::raw_item(&self.client, &self.table, key).await
    }

    /// The raw item under table key `key`, which must exist.
    pub async fn raw_some(&self, key: &str) -> Item {
        self.raw(key)
            .await
            .unwrap_or_else(|| panic!("no item under table key {key:?}"))
    }

    /// Every table key, sorted (a consistent Scan; each test has its own table).
    pub async fn keys(&self) -> Vec<String> {
        let mut keys = Vec::new();
        let mut start = None;
        loop {
            let out = self
                .client
                .scan()
                .table_name(&self.table)
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .unwrap_or_else(|e| panic!("Scan: {e:?}"));
            for item in out.items() {
                match item.get("key") {
                    Some(AttributeValue::S(k)) => keys.push(k.clone()),
                    other => panic!("item without a string key: {other:?}"),
                }
            }
            match out.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => break,
            }
        }
        keys.sort();
        keys
    }

    /// Writes a raw item (plain SDK).
    pub async fn put_raw(&self, item: Item) {
        ddblock_test_support::put_raw_item(&self.client, &self.table, item).await
    }

    /// Ends the test: stops the harness and deletes the table (skipped when a test panics).
    pub async fn finish(self) {
        drop(self.php);
        delete_table(&self.client, &self.table).await;
    }
}
