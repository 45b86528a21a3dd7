//! For a crate that sends its own requests with a store's clients (`ddblock-admin`: table
//! creation, scans, sweeps, the doctor): the clients ([`Store::client`], [`Store::s3_client`]),
//! ddblock's one classifier of SDK failures, and the reading of a raw item. Lock, cache and
//! pattern requests never use this module: they go through the request layers inside the crate.

use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_runtime_api::http::Response;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;

use crate::aws::fault::{classify, Service};
use crate::config::StoreConfig;
use crate::error::Error;
use crate::format::item::ItemView;
use crate::s3::S3Client;
use crate::store::Store;
use crate::time::DateAnswer;

pub use crate::aws::fault::service_code;
pub use crate::dynamo::Item;

/// A failed DynamoDB request of `operation` as ddblock's error kinds.
pub fn dynamodb_error<E>(
    cfg: &StoreConfig,
    operation: &'static str,
    err: SdkError<E, Response>,
) -> Error
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    classify(cfg, Service::DynamoDb, operation, err)
}

/// A failed S3 request of `operation` on `bucket` as ddblock's error kinds.
pub fn s3_error<E>(
    cfg: &StoreConfig,
    bucket: &str,
    operation: &'static str,
    err: SdkError<E, Response>,
) -> Error
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    classify(cfg, Service::S3 { bucket }, operation, err)
}

/// A raw item as the format layer reads it, under `cfg`'s attribute names.
pub fn item_view(cfg: &StoreConfig, item: &Item) -> ItemView {
    crate::dynamo::view(cfg, item)
}

impl Store {
    /// The S3 client of the s3 lock backend (built now if needed), `None` when locks live in the
    /// table.
    pub async fn s3_client(&self) -> Option<S3Client> {
        Some(self.bucket()?.client().await)
    }

    /// One DescribeTable request and what its answer's `Date` header shows of this host's clock
    /// (an error answer carries one too); `None` without an answer or a `Date`.
    pub async fn clock_sample(&self) -> Option<DateAnswer> {
        self.table().clock_sample().await
    }
}
