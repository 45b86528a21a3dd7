//! What the DynamoDB and S3 request layers share: the SDK configuration built from a
//! [`StoreConfig`] (endpoint, region chain without instance metadata, timeouts, attempts), a
//! value kept once per process, and the one classifier of SDK failures ([`fault`]). Uses
//! `aws_config` and the SDKs' shared runtime types, never an SDK crate.

pub(crate) mod fault;
pub(crate) mod regions;

use std::future::Future;
use std::sync::Arc;

use arc_swap::ArcSwapOption;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::SdkConfig;

use crate::config::StoreConfig;

/// `aws-config`'s default chain plus the config's endpoint, region, timeouts and attempts.
/// Without a configured region: `AWS_REGION`/`AWS_DEFAULT_REGION`, then the AWS profile, then
/// `us-east-1` (Laravel's default); instance metadata is not asked.
pub(crate) async fn sdk_config(cfg: &StoreConfig) -> SdkConfig {
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
    loader.load().await
}

/// A value built once per process: a forked child inherits the parent's client, whose
/// connection pool lives on the parent's async runtime (dead in the child), so a child builds
/// its own. Lock-free, so a fork can never catch it half-held.
#[derive(Debug)]
pub(crate) struct PerProcess<T>(ArcSwapOption<(u32, T)>);

impl<T> Default for PerProcess<T> {
    fn default() -> Self {
        PerProcess(ArcSwapOption::empty())
    }
}

impl<T: Clone> PerProcess<T> {
    /// This process's value, built by `build` the first time.
    pub(crate) async fn get_or_build<F: Future<Output = T>>(&self, build: impl FnOnce() -> F) -> T {
        let pid = std::process::id();
        if let Some(slot) = self.0.load().as_ref() {
            if slot.0 == pid {
                return slot.1.clone();
            }
        }
        let value = build().await;
        // Two first callers may both build; the last one stored wins, both values work.
        self.0.store(Some(Arc::new((pid, value.clone()))));
        value
    }
}
