//! For a crate that sends its own requests with a store's clients (`ddblock-admin`: table
//! creation, scans, sweeps, the doctor): the clients ([`Store::client`], [`Store::s3_client`]),
//! ddblock's one classifier of SDK failures, and the reading of a raw item. Lock, cache and
//! pattern requests never use this module: they go through the request layers inside the crate.

use crate::config::StoreConfig;
use crate::error::Result;
use crate::format::item::ItemView;
use crate::s3::S3Client;
use crate::store::Store;
use crate::time::DateAnswer;

pub use crate::aws::fault::service_code;
pub use crate::aws::regions::Replication;
pub use crate::dynamo::{replication_of, sdk_error as dynamodb_error, Item};
pub use crate::s3::s3_error;

/// A raw item as the format layer reads it, under `cfg`'s attribute names.
pub fn item_view(cfg: &StoreConfig, item: &Item) -> ItemView {
    crate::dynamo::view(cfg, item)
}

impl Store {
    /// The S3 client of the s3 lock backend (built now if needed), `None` when locks live in the
    /// table; an error when it cannot be built (no root certificates).
    pub async fn s3_client(&self) -> Result<Option<S3Client>> {
        match self.bucket() {
            Some(bucket) => bucket.client().await.map(Some),
            None => Ok(None),
        }
    }

    /// One DescribeTable request and what its answer's `Date` header shows of this host's clock
    /// (an error answer carries one too); `None` without an answer or a `Date`.
    pub async fn clock_sample(&self) -> Option<DateAnswer> {
        self.table().clock_sample().await
    }

    /// One DescribeTable (not the lock's once-per-process answer): which Regions the table spans
    /// and with what consistency; [`Replication::Unknown`] when the request is denied.
    pub async fn replication(&self) -> Result<Replication> {
        self.table().describe_regions().await
    }
}
