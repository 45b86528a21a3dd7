//! [`Store`]: the handle on one Laravel cache table. It holds the configuration and the request
//! layers (DynamoDB, and S3 when locks live in a bucket); the operations live by topic in
//! `cache.rs`, `lock/`, `once.rs` and `cas.rs` (table administration: the `ddblock-admin` crate).

use crate::config::StoreConfig;
use crate::dynamo::{Client, Table};
use crate::error::Result;
use crate::s3::Bucket;

/// A handle on one Laravel cache table; cheap to clone, share it between tasks.
#[derive(Clone, Debug)]
pub struct Store {
    table: Table,
    /// The bucket of the s3 lock backend, when the configuration selects it.
    bucket: Option<Bucket>,
}

impl Store {
    /// A store whose AWS client is built on the first request (so creating one sends nothing and
    /// needs no runtime), from `aws-config`'s default chain plus the config's endpoint, region,
    /// timeouts and attempts. Without a configured region: `AWS_REGION`/`AWS_DEFAULT_REGION`, then
    /// the AWS profile, then `us-east-1` (Laravel's default); instance metadata is not asked.
    /// A forked child process builds its own client.
    pub fn new(cfg: StoreConfig) -> Store {
        Store {
            bucket: Bucket::of(&cfg),
            table: Table::new(cfg),
        }
    }

    /// [`Store::new`], with the client built now.
    pub async fn connect(cfg: StoreConfig) -> Result<Store> {
        let store = Store::new(cfg);
        store.table.client().await?;
        Ok(store)
    }

    /// A store over a client you built (your credentials, interceptors, HTTP settings).
    pub fn with_client(client: Client, cfg: StoreConfig) -> Store {
        Store {
            bucket: Bucket::of(&cfg),
            table: Table::with_client(client, cfg),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &StoreConfig {
        self.table.config()
    }

    /// The SDK client, for operations ddblock does not wrap.
    pub async fn client(&self) -> Result<Client> {
        self.table.client().await
    }

    /// The current Unix time from the configured clock.
    pub fn now(&self) -> i64 {
        self.table.now()
    }

    /// The table key of cache entry `key` under the configured prefix and layout, validated.
    pub fn cache_key(&self, key: &str) -> Result<String> {
        self.config().cache_key(key)
    }

    /// The table key of lock `name` under the configured prefix and layout, validated.
    pub fn lock_key(&self, name: &str) -> Result<String> {
        self.config().lock_key(name)
    }

    /// The S3 request layer, when locks live in a bucket (for `lock/`).
    pub(crate) fn bucket(&self) -> Option<&Bucket> {
        self.bucket.as_ref()
    }

    /// The request layer, for the operation modules.
    pub(crate) fn table(&self) -> &Table {
        &self.table
    }
}
