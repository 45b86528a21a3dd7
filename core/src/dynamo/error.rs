//! DynamoDB's SDK failures as ddblock's error kinds: the one classifier shared with S3
//! (`aws::fault`), told that DynamoDB answered.

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};

use crate::aws::fault::{classify, Service};
use crate::config::StoreConfig;
use crate::error::Error;

/// A failed DynamoDB request of `operation` as ddblock's error kinds.
pub fn sdk_error<E>(
    cfg: &StoreConfig,
    operation: &'static str,
    err: SdkError<E, HttpResponse>,
) -> Error
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    classify(cfg, Service::DynamoDb, operation, err)
}
