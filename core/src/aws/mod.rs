//! What the DynamoDB and S3 request layers share: the SDK configuration built from a
//! [`StoreConfig`] (endpoint, region chain without instance metadata, timeouts, attempts), a
//! value kept once per process, and the one classifier of SDK failures ([`fault`]). Uses
//! `aws_config` and the SDKs' shared runtime types, never an SDK crate.

pub(crate) mod fault;
pub(crate) mod regions;

use std::future::Future;
use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwapOption;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::SdkConfig;

use crate::config::StoreConfig;
use crate::error::{Error, Result};

/// The SDK behaviour version ddblock is built against, named, never `latest()`: a newer SDK's
/// "latest" may change retries and timeouts under ddblock's own retry and unknown-outcome rules
/// without a line of ddblock changing (v2026_01_12: standard retries, 3 attempts, 1 s initial
/// backoff, 20 s cap; 3.1 s connect timeout; no operation or attempt timeout). The test below
/// fails when the pinned version's defaults move; docs/semantics.md says which retries run.
pub(crate) fn behavior_version() -> aws_config::BehaviorVersion {
    aws_config::BehaviorVersion::v2026_01_12()
}

/// `aws-config`'s default chain plus the config's endpoint, region, timeouts and attempts.
/// Without a configured region: `AWS_REGION`/`AWS_DEFAULT_REGION`, then the AWS profile, then
/// `us-east-1` (Laravel's default); instance metadata is not asked.
pub(crate) async fn sdk_config(cfg: &StoreConfig) -> SdkConfig {
    let mut loader = aws_config::defaults(behavior_version());
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
        if plain_http(e) {
            loader = loader.http_client(plain_http_client());
        }
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

/// Whether an endpoint is `http://`: no TLS, so no root certificates to read.
fn plain_http(endpoint: &str) -> bool {
    endpoint
        .get(..7)
        .is_some_and(|s| s.eq_ignore_ascii_case("http://"))
}

/// The SDK's hyper client without TLS, set up as its default HTTPS one is (connector settings,
/// sleep, proxies from the environment: aws-smithy-runtime 1.16 `default_https_client`). The
/// default client builds its rustls config, reading and parsing the system's whole certificate
/// store, before its first request even to an `http://` endpoint: milliseconds of every cold
/// start against DynamoDB Local, and a panic where the store is missing.
fn plain_http_client() -> aws_smithy_runtime_api::client::http::SharedHttpClient {
    use aws_smithy_http_client::{proxy::ProxyConfig, Builder, ConnectorBuilder};
    Builder::new().build_with_connector_fn(|settings, components| {
        let mut conn = ConnectorBuilder::default();
        conn.set_connector_settings(settings.cloned());
        if let Some(c) = components {
            conn.set_sleep_impl(c.sleep_impl());
        }
        conn.set_proxy_config(Some(ProxyConfig::from_env()));
        conn.build_http()
    })
}

/// Whether the SDK's HTTPS client will find root certificates, checked once per process before
/// a client for an `https://` endpoint (or AWS's own) is built. The client reads the system's
/// store when it is built (rustls-native-certs: `SSL_CERT_FILE` and `SSL_CERT_DIR` when either is
/// set, else OpenSSL's usual places), and panics when it finds none (aws-smithy-http-client 1.5,
/// `rustls_root_certs`: "no valid root certificates parsed"): a scratch container, or a
/// distroless image without its CA bundle. This tells the caller what to install instead.
pub(crate) fn root_certificates(cfg: &StoreConfig) -> Result<()> {
    if cfg.endpoint().is_some_and(plain_http) {
        return Ok(());
    }
    static FOUND: OnceLock<bool> = OnceLock::new();
    if *FOUND.get_or_init(roots_present) {
        return Ok(());
    }
    Err(Error::Config(
        "no root certificates for TLS: none at SSL_CERT_FILE or SSL_CERT_DIR, nor in the system's \
         usual places (/etc/ssl/certs, /etc/pki/tls/certs, ...); the AWS SDK's HTTPS client needs \
         them for an https:// endpoint (AWS's own included). Install the CA bundle (the \
         ca-certificates package on Debian, Ubuntu, Alpine and Amazon Linux; in a scratch image, \
         copy /etc/ssl/certs/ca-certificates.crt in) or point SSL_CERT_FILE at a PEM bundle"
            .to_owned(),
    ))
}

/// Whether rustls-native-certs would find a certificate file or a non-empty folder of them,
/// looking where it looks (its `load_native_certs`, unix.rs).
#[cfg(all(unix, not(target_vendor = "apple")))]
fn roots_present() -> bool {
    use std::path::PathBuf;
    let file = std::env::var_os("SSL_CERT_FILE").map(PathBuf::from);
    let dirs: Vec<PathBuf> = std::env::var_os("SSL_CERT_DIR")
        .map(|d| {
            std::env::split_paths(&d)
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default();
    // Either variable set: those paths only, as rustls-native-certs does; else openssl-probe's.
    let (file, dirs) = if file.is_some() || !dirs.is_empty() {
        (file, dirs)
    } else {
        let probe = openssl_probe::probe();
        (probe.cert_file, probe.cert_dir)
    };
    file.is_some_and(|f| f.is_file())
        || dirs
            .iter()
            .any(|d| std::fs::read_dir(d).is_ok_and(|mut entries| entries.next().is_some()))
}

/// macOS and Windows: the platform's own store, which always exists.
#[cfg(not(all(unix, not(target_vendor = "apple"))))]
fn roots_present() -> bool {
    true
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use aws_config::retry::RetryMode;

    use super::*;

    /// The SDK defaults the lock's rules were written against (docs/semantics.md, "Retries"):
    /// when an SDK update changes the pinned version's defaults, this fails and the rules are
    /// weighed again, instead of changing silently.
    #[tokio::test]
    async fn the_pinned_behavior_version_keeps_the_retries_and_timeouts_ddblock_relies_on() {
        let cfg = StoreConfig::builder()
            .table("cache")
            .endpoint("http://127.0.0.1:9")
            .region("us-east-1")
            .build()
            .unwrap();
        let sdk = sdk_config(&cfg).await;
        let retry = sdk.retry_config().expect("a retry config");
        assert_eq!(retry.mode(), RetryMode::Standard);
        assert_eq!(retry.max_attempts(), 3);
        assert_eq!(retry.initial_backoff(), Duration::from_secs(1));
        assert_eq!(retry.max_backoff(), Duration::from_secs(20));
        let timeouts = sdk.timeout_config().expect("a timeout config");
        assert_eq!(
            timeouts.connect_timeout(),
            Some(Duration::from_millis(3_100))
        );
        assert_eq!(timeouts.operation_timeout(), None);
        // ddblock's own default (`attempt_timeout`), not the SDK's (none).
        assert_eq!(
            timeouts.operation_attempt_timeout(),
            Some(Duration::from_secs(3))
        );
        assert_eq!(sdk.behavior_version(), Some(behavior_version()));
    }
}
