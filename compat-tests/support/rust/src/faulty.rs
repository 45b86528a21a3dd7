//! A faulty server: the fault proxy (compat-tests/fault-proxy) in front of a local server, for
//! tests of what a lost answer, a throttle or a slow reply does. One way to start it, so no test
//! copies the proxy's set-up:
//!
//! ```ignore
//! let f = faulty(&server.endpoint(), FaultConfig::default()).await;
//! let store = Store::new(StoreConfig::builder().endpoint(&f.endpoint) /* ... */);
//! f.set_faults(FaultConfig { drop_response_rate: 1.0, ..FaultConfig::default() });
//! assert_eq!(f.stats().count("UpdateItem", DROPPED), 1);
//! ```

use aws_sdk_dynamodb::Client;
use ddblock_fault_proxy::{FaultConfig, ProxyConfig, ProxyHandle};

/// The fault proxy running in front of a server; it stops when this is dropped (or on
/// `proxy.shutdown()`). Derefs to the proxy: `faulty.stats()`, `faulty.reset()`.
#[derive(Debug)]
pub struct FaultyServer {
    /// The running proxy: its faults (`set_config`), counters (`stats`, `reset`), journal.
    pub proxy: ProxyHandle,
    /// The proxy's URL: the endpoint of a client whose requests go through the faults.
    pub endpoint: String,
    /// The server behind the proxy: the endpoint of a client that bypasses the faults.
    pub upstream: String,
}

/// Starts the fault proxy in front of `upstream` (a server's endpoint URL) on a free loopback
/// port, with `faults` from the first request on. Panics when it cannot (tests).
pub async fn faulty(upstream: &str, faults: FaultConfig) -> FaultyServer {
    try_faulty(upstream, faults)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// [`faulty`] for programs (the bench, the chaos run): the failure as a message.
pub async fn try_faulty(upstream: &str, faults: FaultConfig) -> Result<FaultyServer, String> {
    let proxy = ddblock_fault_proxy::start(ProxyConfig {
        upstream: upstream.to_owned(),
        listen: "127.0.0.1:0".into(),
        faults,
    })
    .await
    .map_err(|e| format!("fault proxy in front of {upstream}: {e}"))?;
    Ok(FaultyServer {
        endpoint: proxy.url(),
        upstream: upstream.to_owned(),
        proxy,
    })
}

impl std::ops::Deref for FaultyServer {
    type Target = ProxyHandle;

    fn deref(&self) -> &ProxyHandle {
        &self.proxy
    }
}

impl FaultyServer {
    /// Replaces the faults and zeroes the counters, so counts start from the new faults.
    pub fn set_faults(&self, faults: FaultConfig) {
        self.proxy.set_config(faults).expect("valid faults");
        self.proxy.reset();
    }

    /// Stops the proxy: lets in-flight requests finish, closes every connection.
    pub async fn shutdown(self) {
        self.proxy.shutdown().await
    }

    /// A plain SDK client through the proxy ([`crate::client_for`] its endpoint).
    pub fn client(&self) -> Client {
        crate::client_for(&self.endpoint)
    }
}
