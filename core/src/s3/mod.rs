//! The S3 request layer: the only code that touches `aws-sdk-s3`, beside `dynamo/` for DynamoDB.
//! A lock is one object per lock key, created with `If-None-Match: *`, replaced with
//! `If-Match: <ETag>` and deleted with `If-Match: <ETag>` (S3's conditional writes), so every
//! change is conditioned on the exact object read. The lock rules over it are `lock/s3.rs`.
//! Objects: `docs/format.md#s3-lock-objects`.

mod client;
mod error;
mod object;
mod request;

use std::sync::Arc;

use crate::config::{LockBackendKind, StoreConfig};

/// The S3 client type, handed out by `Store::s3_client`.
pub use aws_sdk_s3::Client as S3Client;
pub use error::s3_error;
pub(crate) use object::LockObject;
pub(crate) use object::Owner;
pub(crate) use request::{Delete, Put, Stored};

/// One bucket at one endpoint: the configuration and the S3 client. Cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct Bucket {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    cfg: StoreConfig,
    name: String,
    client: client::ClientCell,
}

impl Bucket {
    /// The bucket of `cfg` (the s3 lock backend's), its client built on first use; `None` when
    /// the configuration keeps locks in DynamoDB.
    pub(crate) fn of(cfg: &StoreConfig) -> Option<Bucket> {
        if cfg.lock_backend() != LockBackendKind::S3 {
            return None;
        }
        let name = cfg.s3_bucket()?.to_owned();
        Some(Bucket {
            inner: Arc::new(Inner {
                cfg: cfg.clone(),
                name,
                client: client::ClientCell::default(),
            }),
        })
    }

    /// The configuration.
    pub(crate) fn config(&self) -> &StoreConfig {
        &self.inner.cfg
    }

    /// The bucket name.
    pub(crate) fn name(&self) -> &str {
        &self.inner.name
    }

    /// The current Unix time from the configured clock.
    pub(crate) fn now(&self) -> i64 {
        self.inner.cfg.clock.now()
    }

    pub(crate) async fn client(&self) -> crate::error::Result<S3Client> {
        self.inner.client.get(&self.inner.cfg).await
    }
}
