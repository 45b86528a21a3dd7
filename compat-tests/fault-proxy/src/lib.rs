//! `ddblock-fault-proxy`: an HTTP/1.1 proxy between any DynamoDB client and a local
//! DynamoDB-compatible server (moto, dynalite; JSON 1.0 protocol) that injects faults:
//!
//! - **stale eventually consistent reads**: GetItem / BatchGetItem without
//!   `ConsistentRead: true` may see an item as it was up to `stale_ms` ago, from a
//!   history of the writes the proxy forwarded (real DynamoDB under load; the local
//!   servers are always consistent);
//! - **dropped responses**: the request is forwarded, then the client connection is
//!   closed without an answer (the ambiguous-write case);
//! - **throttling** (400 ProvisionedThroughputExceededException) and **500
//!   InternalServerError**, answered without forwarding;
//! - **latency**, fixed plus jitter;
//! - **ignored conditions**: request headers dropped per HTTP method (`strip_headers`, e.g.
//!   `If-Match` from S3 DeleteObject requests), as if the server ignored them.
//!
//! All random choices come from one seeded RNG, so a sequential request sequence
//! gets the same faults every run. Requests are counted by operation and outcome.
//!
//! Control endpoints on the proxy's own address: `GET /__proxy/stats`,
//! `POST /__proxy/reset` (`{"history": true}` also forgets the write history),
//! `GET|POST /__proxy/config` (a [`FaultConfig`] as JSON; re-seeds the RNG) and
//! `POST /__proxy/clock` (`{"advance_ms": N}`: moves the history clock forward, a test hook) and
//! `GET /__proxy/journal` (with `journal` on: every forwarded write and the server's answer, each
//! item's writes in commit order; `POST /__proxy/reset` with `{"journal": true}` clears it).
//!
//! ```no_run
//! # async fn demo() -> ddblock_fault_proxy::Result<()> {
//! use ddblock_fault_proxy::{start, FaultConfig, ProxyConfig};
//! let proxy = start(ProxyConfig {
//!     upstream: "http://127.0.0.1:8000".into(),
//!     listen: "127.0.0.1:0".into(),
//!     faults: FaultConfig { stale_ms: 500, seed: 7, ..FaultConfig::default() },
//! })
//! .await?;
//! println!("point the client at {}", proxy.url());
//! println!("{:?}", proxy.stats());
//! proxy.shutdown().await;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

mod config;
mod control;
mod crc32;
mod error;
mod faults;
mod history;
mod http1;
mod journal;
mod plan;
mod proxy;
mod shared;
mod stale;
mod stats;
mod upstream;
mod writes;

pub use config::{parse_args, Command, FaultConfig, ProxyConfig, USAGE};
pub use error::{Error, Result};
pub use stats::{
    Stats, ACCESS_DENIED, DELAYED, DROPPED, DROPPED_REQUEST, ERROR_500, FORWARDED_ERROR_PREFIX,
    FORWARDED_OK, REPLICATED_CONFLICT, RESET, STALE_SERVED, STRIPPED, THROTTLED,
    UPSTREAM_UNREACHABLE,
};

use shared::Shared;

/// How long [`ProxyHandle::shutdown`] lets in-flight requests finish.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// A running proxy. Dropping it stops accepting connections (in-flight requests finish).
pub struct ProxyHandle {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown_tx: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for ProxyHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyHandle")
            .field("addr", &self.addr)
            .finish()
    }
}

/// The `host:port` of an `http://` upstream URL.
fn upstream_authority(url: &str) -> Result<String> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e| Error::Config(format!("upstream {url:?}: {e}")))?;
    if uri.scheme_str() != Some("http") {
        return Err(Error::Config(format!(
            "upstream {url:?}: only http:// upstreams are supported"
        )));
    }
    let authority = uri
        .authority()
        .ok_or_else(|| Error::Config(format!("upstream {url:?}: no host")))?;
    if !matches!(uri.path(), "" | "/") {
        return Err(Error::Config(format!(
            "upstream {url:?}: a path is not supported"
        )));
    }
    Ok(authority.as_str().to_string())
}

/// Starts the proxy on the current tokio runtime and returns once it is listening.
pub async fn start(config: ProxyConfig) -> Result<ProxyHandle> {
    config.faults.validate()?;
    let authority = upstream_authority(&config.upstream)?;
    let listen: SocketAddr = config
        .listen
        .parse()
        .map_err(|e| Error::Config(format!("listen {:?}: {e}", config.listen)))?;
    if !listen.ip().is_loopback() {
        return Err(Error::Config(format!(
            "listen {listen}: only loopback addresses are allowed"
        )));
    }
    let listener = TcpListener::bind(listen).await?;
    let addr = listener.local_addr()?;
    let shared = Arc::new(Shared::new(authority, config.faults));
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let task = tokio::spawn(accept_loop(listener, shutdown_rx, shared.clone()));
    Ok(ProxyHandle {
        addr,
        shared,
        shutdown_tx,
        task: Some(task),
    })
}

async fn accept_loop(
    listener: TcpListener,
    mut shutdown: watch::Receiver<bool>,
    shared: Arc<Shared>,
) {
    let mut conns = JoinSet::new();
    let conn_shutdown = shutdown.clone();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    // Out of file descriptors or similar: back off instead of spinning.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let shared = shared.clone();
                let handle = move |req| {
                    let shared = shared.clone();
                    async move { proxy::handle(&shared, req).await }
                };
                conns.spawn(http1::serve_connection(stream, conn_shutdown.clone(), handle));
            }
            _ = async { let _ = shutdown.wait_for(|down| *down).await; } => break,
        }
        while conns.try_join_next().is_some() {}
    }
    drop(listener);
    let drain = async { while conns.join_next().await.is_some() {} };
    if tokio::time::timeout(SHUTDOWN_GRACE, drain).await.is_err() {
        conns.abort_all();
    }
}

impl ProxyHandle {
    /// The proxy's base URL, `http://127.0.0.1:PORT`: use it as the client's endpoint.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The address the proxy listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        self.shared.counters.snapshot()
    }

    /// Zeroes the counters (the write history is kept).
    pub fn reset(&self) {
        self.shared.counters.reset();
    }

    /// Forgets the write history and the learned key schemas (stale reads then go upstream
    /// until new writes are seen; use it after deleting or re-creating tables).
    pub fn reset_history(&self) {
        self.shared.reset_history();
    }

    /// The journal (with [`FaultConfig::journal`] on): one JSON object per forwarded write,
    /// `{"seq", "wall_us", "op", "request", "status", "response", "delivery"}`, where `request` is
    /// the body sent, `status` and `response` the server's answer (status 0 when it could not be
    /// reached), and `delivery` what the client got: `answered`, `dropped`, `reset`, `delayed`
    /// or `unreachable`. Writes to one item appear in the order the server committed them.
    pub fn journal(&self) -> Vec<serde_json::Value> {
        self.shared.journal.snapshot()
    }

    /// Forgets the journal.
    pub fn clear_journal(&self) {
        self.shared.journal.clear();
    }

    /// The current fault configuration.
    pub fn config(&self) -> FaultConfig {
        (*self.shared.config()).clone()
    }

    /// Replaces the fault configuration and re-seeds the RNG from `faults.seed`.
    pub fn set_config(&self, faults: FaultConfig) -> Result<()> {
        faults.validate()?;
        self.shared.set_config(faults);
        Ok(())
    }

    /// Test hook: moves the proxy's history clock forward, as if `by` had passed.
    ///
    /// Writes after the call are recorded `by` later than writes before it, which makes
    /// "read as of N ms ago" land deterministically between two writes.
    pub fn advance_clock(&self, by: Duration) {
        self.shared.advance_clock(by);
    }

    /// Stops accepting, lets in-flight requests finish (up to 5 s), and closes all connections.
    pub async fn shutdown(mut self) {
        let _ = self.shutdown_tx.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for ProxyHandle {
    fn drop(&mut self) {
        let _ = self.shutdown_tx.send(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_urls() {
        assert_eq!(
            upstream_authority("http://127.0.0.1:8000").unwrap(),
            "127.0.0.1:8000"
        );
        assert_eq!(
            upstream_authority("http://localhost:8000/").unwrap(),
            "localhost:8000"
        );
        assert!(upstream_authority("https://127.0.0.1:8000").is_err());
        assert!(upstream_authority("http://127.0.0.1:8000/x").is_err());
        assert!(upstream_authority("nonsense").is_err());
    }

    #[tokio::test]
    async fn refuses_non_loopback_listen() {
        let cfg = ProxyConfig {
            upstream: "http://127.0.0.1:9".into(),
            listen: "0.0.0.0:0".into(),
            faults: FaultConfig::default(),
        };
        assert!(matches!(start(cfg).await, Err(Error::Config(_))));
    }
}
