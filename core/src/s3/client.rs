//! Building the S3 client from the configuration, once per process: the same rules as the
//! DynamoDB client (`dynamo/client.rs`: endpoint, region chain without instance metadata,
//! timeouts, attempts), plus path-style addressing for endpoints other than AWS's.

use std::sync::Arc;

use arc_swap::ArcSwapOption;
use aws_sdk_s3::config::retry::RetryConfig;
use aws_sdk_s3::config::timeout::TimeoutConfig;
use aws_sdk_s3::Client;

use crate::config::StoreConfig;

/// `(pid, client)`: a forked child builds its own (the parent's pool lives on a dead runtime).
#[derive(Debug, Default)]
pub(super) struct ClientCell(ArcSwapOption<(u32, Client)>);

impl ClientCell {
    pub(super) async fn get(&self, cfg: &StoreConfig) -> Client {
        let pid = std::process::id();
        if let Some(slot) = self.0.load().as_ref() {
            if slot.0 == pid {
                return slot.1.clone();
            }
        }
        let client = build(cfg).await;
        self.0.store(Some(Arc::new((pid, client.clone()))));
        client
    }
}

async fn build(cfg: &StoreConfig) -> Client {
    let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest());
    if let Some(r) = cfg.region() {
        loader = loader.region(aws_config::Region::new(r.to_owned()));
    } else {
        let chain = aws_config::meta::region::RegionProviderChain::first_try(
            aws_config::environment::region::EnvironmentVariableRegionProvider::new(),
        )
        .or_else(aws_config::profile::ProfileFileRegionProvider::new())
        .or_else(aws_config::Region::new("us-east-1"));
        loader = loader.region(chain);
    }
    if let Some(e) = cfg.endpoint() {
        loader = loader.endpoint_url(e);
    }
    let timeouts = [
        cfg.connect_timeout(),
        cfg.operation_timeout(),
        cfg.attempt_timeout(),
    ];
    if timeouts.iter().any(Option::is_some) {
        let mut t = TimeoutConfig::builder();
        if let Some(d) = cfg.connect_timeout() {
            t = t.connect_timeout(d);
        }
        if let Some(d) = cfg.operation_timeout() {
            t = t.operation_timeout(d);
        }
        if let Some(d) = cfg.attempt_timeout() {
            t = t.operation_attempt_timeout(d);
        }
        loader = loader.timeout_config(t.build());
    }
    if let Some(n) = cfg.max_attempts() {
        loader = loader.retry_config(RetryConfig::standard().with_max_attempts(n));
    }
    let sdk = loader.load().await;
    // A custom endpoint (MinIO, moto, LocalStack) serves buckets as paths, not subdomains.
    let path_style = cfg.endpoint().is_some();
    Client::from_conf(
        aws_sdk_s3::config::Builder::from(&sdk)
            .force_path_style(path_style)
            .build(),
    )
}
