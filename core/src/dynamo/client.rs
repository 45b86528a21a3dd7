//! Building the SDK client from the configuration, once per process.

use std::sync::Arc;

use arc_swap::ArcSwapOption;
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::Client;

use crate::config::StoreConfig;
use crate::error::Result;

/// The client of a [`super::Table`]: given by the caller, or built lazily per process.
#[derive(Debug)]
pub(super) enum ClientCell {
    Fixed(Client),
    /// `(pid, client)`: a forked child inherits the parent's client, whose connection pool lives on
    /// the parent's async runtime (dead in the child), so a child builds its own. Lock-free, so a
    /// fork can never catch it half-held.
    Lazy(ArcSwapOption<(u32, Client)>),
}

impl ClientCell {
    pub(super) fn fixed(client: Client) -> ClientCell {
        ClientCell::Fixed(client)
    }

    pub(super) fn lazy() -> ClientCell {
        ClientCell::Lazy(ArcSwapOption::empty())
    }

    pub(super) async fn get(&self, cfg: &StoreConfig) -> Result<Client> {
        match self {
            ClientCell::Fixed(c) => Ok(c.clone()),
            ClientCell::Lazy(cell) => {
                let pid = std::process::id();
                if let Some(slot) = cell.load().as_ref() {
                    if slot.0 == pid {
                        return Ok(slot.1.clone());
                    }
                }
                let client = build(cfg).await;
                // Two first callers may both build; the last one stored wins, both clients work.
                cell.store(Some(Arc::new((pid, client.clone()))));
                Ok(client)
            }
        }
    }
}

/// A client from `aws-config`'s default chain plus the config's endpoint, region, timeouts and
/// attempts. Without a configured region: `AWS_REGION`/`AWS_DEFAULT_REGION`, then the AWS
/// profile, then `us-east-1` (Laravel's default); instance metadata is not asked.
async fn build(cfg: &StoreConfig) -> Client {
    let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest());
    if let Some(r) = cfg.region() {
        loader = loader.region(aws_config::Region::new(r.to_owned()));
    } else {
        // Laravel's config falls back to us-east-1 when AWS_DEFAULT_REGION is unset. The SDK's
        // default chain would first ask EC2 instance metadata, which stalls off EC2.
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
        // Only when one is set: an empty TimeoutConfig would replace aws-config's defaults.
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
    Client::from_conf(aws_sdk_dynamodb::config::Builder::from(&sdk).build())
}
