//! The S3 client, built from the configuration once per process: the same rules as the
//! DynamoDB client (`aws.rs`: endpoint, region chain without instance metadata, timeouts,
//! attempts), plus path-style addressing for endpoints other than AWS's.

use aws_sdk_s3::Client;

use crate::aws::{sdk_config, PerProcess};
use crate::config::StoreConfig;
use crate::error::Result;

/// This backend's client, built lazily per process.
#[derive(Debug, Default)]
pub(super) struct ClientCell(PerProcess<Client>);

impl ClientCell {
    pub(super) async fn get(&self, cfg: &StoreConfig) -> Result<Client> {
        crate::aws::root_certificates(cfg)?;
        Ok(self
            .0
            .get_or_build(|| async {
                // A custom endpoint (MinIO, moto, LocalStack) serves buckets as paths, not
                // subdomains.
                let path_style = cfg.endpoint().is_some();
                Client::from_conf(
                    aws_sdk_s3::config::Builder::from(&sdk_config(cfg).await)
                        .force_path_style(path_style)
                        .build(),
                )
            })
            .await)
    }
}
