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
//!
//! An S3 store that ignores a condition is the same proxy dropping that header:
//! [`s3_ignoring`]`(&moto, &[Ignored::IfMatchOnDelete])`.

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

    /// A plain S3 client through the proxy ([`crate::s3_client_for`] its endpoint).
    pub fn s3_client(&self) -> aws_sdk_s3::Client {
        crate::s3_client_for(&self.endpoint)
    }
}

/// A conditional request an S3-compatible store may ignore, for [`s3_ignoring`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ignored {
    /// `If-Match` on DeleteObject (Hetzner Object Storage, litestream PR #1509; MinIO's community
    /// edition, minio/minio#21677): a delete naming a stale ETag deletes.
    IfMatchOnDelete,
    /// `If-Match` on PutObject: a write naming a stale ETag overwrites.
    IfMatchOnPut,
    /// `If-None-Match: *` on PutObject (Tencent COS once versioning has been on, lance issue
    /// #6595): a create over an existing object overwrites it.
    IfNoneMatchOnPut,
}

impl Ignored {
    /// The HTTP method and the request header the proxy drops.
    pub fn header(self) -> (&'static str, &'static str) {
        match self {
            Ignored::IfMatchOnDelete => ("DELETE", "if-match"),
            Ignored::IfMatchOnPut => ("PUT", "if-match"),
            Ignored::IfNoneMatchOnPut => ("PUT", "if-none-match"),
        }
    }
}

/// The fault proxy in front of an S3 server (moto's) acting as a store that ignores each of
/// `ignored`: it drops their headers from the requests (`strip_headers`) and forwards everything
/// else as sent. Its `PUT` and `DELETE` counters count `stripped` requests.
pub async fn s3_ignoring(upstream: &str, ignored: &[Ignored]) -> FaultyServer {
    let faults = ignored.iter().fold(FaultConfig::default(), |f, i| {
        let (method, header) = i.header();
        f.stripping(method, header)
    });
    faulty(upstream, faults).await
}

/// `DescribeTable`'s fields of a global table with replicas in two Regions and `consistency`
/// (`None`: the field absent, which DynamoDB documents as eventual), for the proxy's
/// `describe_table` fault (no local server has global tables).
pub fn global_table(consistency: Option<&str>) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert(
        "Replicas".into(),
        serde_json::json!([{"RegionName": "us-east-1"}, {"RegionName": "eu-west-1"}]),
    );
    if let Some(c) = consistency {
        m.insert("MultiRegionConsistency".into(), c.into());
    }
    m
}
