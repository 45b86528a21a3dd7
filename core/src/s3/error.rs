//! S3's SDK failures as ddblock's error kinds, and the conditions S3 answers with a status.

use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};

use crate::aws::fault::{classify, Service};
use crate::config::StoreConfig;
use crate::error::Error;

/// Whether a conditional request was refused: 412 Precondition Failed, 409 (a concurrent
/// conditional write to the same key won), or 404 (the object to match is gone).
pub(super) fn condition_failed<E>(err: &SdkError<E, HttpResponse>) -> bool {
    match err {
        SdkError::ServiceError(se) => matches!(se.raw().status().as_u16(), 404 | 409 | 412),
        _ => false,
    }
}

/// Whether the server does not implement what was asked (501 NotImplemented).
pub(super) fn not_implemented<E: ProvideErrorMetadata>(err: &SdkError<E, HttpResponse>) -> bool {
    match err {
        SdkError::ServiceError(se) => {
            se.raw().status().as_u16() == 501 || se.err().code() == Some("NotImplemented")
        }
        _ => false,
    }
}

/// Maps an SDK failure of `operation` on `bucket` to ddblock's error kinds: the one classifier
/// shared with DynamoDB (`aws::fault`), told that S3 answered.
pub fn s3_error<E>(
    cfg: &StoreConfig,
    bucket: &str,
    operation: &'static str,
    err: SdkError<E, HttpResponse>,
) -> Error
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    classify(cfg, Service::S3 { bucket }, operation, err)
}
