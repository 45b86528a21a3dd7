//! The DynamoDB request layer: the only code that touches `aws-sdk-dynamodb`. It builds the
//! client, writes every request (expressions, conditions, `ReturnValues`), maps SDK errors to
//! [`crate::Error`], and hands results up as the format layer's types ([`ItemView`]), never as
//! SDK types. Everything above (cache, lock, once, cas) asks for requests by what they mean.
//!
//! [`ItemView`]: crate::format::item::ItemView

mod attr;
mod batch;
mod build;
mod cas;
mod client;
mod date;
mod error;
mod once;
mod regions;
mod request;

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

/// The SDK client type, passed through by `Store::with_client` and `Store::client`.
pub use aws_sdk_dynamodb::Client;

use crate::config::StoreConfig;
use crate::error::Result;

pub(crate) use attr::view;
pub use attr::Item;
pub(crate) use cas::CasWrite;
pub use error::sdk_error;
pub(crate) use once::{ClaimAdd, Conditional};
pub use regions::replication as replication_of;
pub(crate) use request::{DeleteIfValue, TakeLock};

/// What a server does with `ReturnValuesOnConditionCheckFailure: ALL_OLD` (dynalite ignores it).
const ALL_OLD_UNKNOWN: u8 = 0;
const ALL_OLD_RETURNED: u8 = 1;
const ALL_OLD_IGNORED: u8 = 2;

/// One table at one endpoint: the configuration and the SDK client. Cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct Table {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    cfg: StoreConfig,
    client: client::ClientCell,
    /// Learned from answers: whether a failed condition comes back with the old item.
    all_old: AtomicU8,
    /// When the last clock warning was logged.
    clock: date::ClockWatch,
}

impl Table {
    /// A table whose client is built on first use (from the config and `aws-config`'s default
    /// chain), and built again in a forked child process.
    pub(crate) fn new(cfg: StoreConfig) -> Table {
        Table::with_cell(cfg, client::ClientCell::lazy())
    }

    /// A table over a client the caller built.
    pub(crate) fn with_client(client: Client, cfg: StoreConfig) -> Table {
        Table::with_cell(cfg, client::ClientCell::fixed(client))
    }

    fn with_cell(cfg: StoreConfig, client: client::ClientCell) -> Table {
        Table {
            inner: Arc::new(Inner {
                cfg,
                client,
                all_old: AtomicU8::new(ALL_OLD_UNKNOWN),
                clock: date::ClockWatch::default(),
            }),
        }
    }

    /// The configuration.
    pub(crate) fn config(&self) -> &StoreConfig {
        &self.inner.cfg
    }

    /// The current Unix time from the configured clock.
    pub(crate) fn now(&self) -> i64 {
        self.inner.cfg.clock.now()
    }

    /// The SDK client of this process (built now if needed).
    pub(crate) async fn client(&self) -> Result<Client> {
        self.inner.client.get(&self.inner.cfg).await
    }

    /// Whether an empty old item on a failed condition means "no item" (the server returns
    /// `ALL_OLD`), as opposed to "the server ignored `ALL_OLD`" (then a read must tell).
    pub(crate) fn empty_old_means_absent(&self) -> bool {
        self.inner.all_old.load(Ordering::Relaxed) == ALL_OLD_RETURNED
    }

    /// Records what a failed condition returned: an old item proves the server honours `ALL_OLD`;
    /// no old item where one must exist (a failed put-if-absent) proves it ignores it.
    pub(crate) fn learn_all_old(&self, returned: bool) {
        let v = if returned {
            ALL_OLD_RETURNED
        } else {
            ALL_OLD_IGNORED
        };
        self.inner.all_old.store(v, Ordering::Relaxed);
    }
}
