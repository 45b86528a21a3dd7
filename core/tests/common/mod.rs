//! Test support: real local DynamoDB servers (moto, dynalite) started by compat-tests/servers.sh.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType, TableStatus,
};
use aws_sdk_dynamodb::Client;
use ddblock::{Clock, KeyLayout, Store, StoreConfig, StoreConfigBuilder};

/// The local servers every behaviour test runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    Moto,
    Dynalite,
}

impl Server {
    pub fn endpoint(self) -> String {
        let var = match self {
            Server::Moto => "DDBLOCK_TEST_MOTO",
            Server::Dynalite => "DDBLOCK_TEST_DYNALITE",
        };
        std::env::var(var).unwrap_or_else(|_| {
            panic!("{var} is not set: run the tests with ./compat-tests/run-tests.sh, which starts the local servers")
        })
    }
}

/// A frozen clock at the real current second, moved by hand: makes expiry boundaries exact.
#[derive(Debug)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn new() -> Arc<ManualClock> {
        Arc::new(ManualClock(AtomicI64::new(ddblock::SystemClock.now())))
    }
    pub fn set(&self, t: i64) {
        self.0.store(t, Ordering::SeqCst)
    }
    pub fn advance(&self, secs: i64) {
        self.0.fetch_add(secs, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// A plain SDK client for `endpoint` (test credentials; neither server checks signatures).
pub fn client_for(endpoint: &str) -> Client {
    let conf = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new(
            "test",
            "test",
            None,
            None,
            "ddblock-tests",
        ))
        .endpoint_url(endpoint)
        .build();
    Client::from_conf(conf)
}

static TABLES: AtomicUsize = AtomicUsize::new(0);

/// A fresh table with Laravel's schema (`key` S hash key, on-demand), ACTIVE when this returns.
pub async fn new_table(client: &Client, key_attribute: &str) -> String {
    let name = format!(
        "t{}_{}_{}",
        std::process::id(),
        TABLES.fetch_add(1, Ordering::SeqCst),
        ddblock::lock::random_owner().to_lowercase()
    );
    client
        .create_table()
        .table_name(&name)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name(key_attribute)
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name(key_attribute)
                .key_type(KeyType::Hash)
                .build()
                .unwrap(),
        )
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await
        .expect("CreateTable");
    // dynalite reports CREATING first even with --createTableMs 0.
    for _ in 0..200 {
        let d = client
            .describe_table()
            .table_name(&name)
            .send()
            .await
            .expect("DescribeTable");
        if d.table().and_then(|t| t.table_status()) == Some(&TableStatus::Active) {
            return name;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("table {name} never became ACTIVE");
}

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

pub fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.into())
}
pub fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

/// An item with the three Laravel attributes.
pub fn laravel_item(
    key: &str,
    value: AttributeValue,
    expires_at: i64,
) -> HashMap<String, AttributeValue> {
    HashMap::from([
        ("key".to_owned(), s(key)),
        ("value".to_owned(), value),
        ("expires_at".to_owned(), n(expires_at)),
    ])
}

/// Runs each listed `async fn name(server: Server)` as one test per server (`moto::name`, `dynalite::name`).
#[macro_export]
macro_rules! on_servers {
    ($($name:ident),* $(,)?) => {
        mod moto {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() { super::$name($crate::common::Server::Moto).await }
            )*
        }
        mod dynalite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() { super::$name($crate::common::Server::Dynalite).await }
            )*
        }
    };
}
