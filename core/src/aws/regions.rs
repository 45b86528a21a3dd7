//! Which Regions a table spans, as DynamoDB's `DescribeTable` says it, and the one answer per
//! process and table a store keeps of it (a lock checks the table once, then sends nothing more
//! for it). The request itself is the DynamoDB request layer's (`dynamo/regions.rs`).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use tokio::sync::OnceCell;

use crate::config::StoreConfig;
use crate::error::Result;

/// The kind of table a lock runs on: one Region, or a global table and its consistency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Replication {
    /// No replicas: a single-Region table (a legacy 2017.11.29 global table shows the same:
    /// `DescribeTable` does not name its replicas).
    SingleRegion,
    /// A global table with multi-Region eventual consistency (MREC: `MultiRegionConsistency`
    /// `EVENTUAL` or absent): a conditional write is checked in its own Region only, so locks
    /// refuse it unless `allow_eventual_global_table` is set.
    Eventual {
        /// The Regions of the replicas, as `DescribeTable` lists them.
        replicas: Vec<String>,
    },
    /// A global table with multi-Region strong consistency (MRSC: `STRONG`): conditional writes
    /// hold across Regions.
    Strong {
        /// The Regions of the replicas, as `DescribeTable` lists them.
        replicas: Vec<String>,
    },
    /// `DescribeTable` was denied (a policy without `dynamodb:DescribeTable`): not known.
    Unknown {
        /// What the server answered.
        reason: String,
    },
}

impl Replication {
    /// `single_region`, `eventual` (MREC), `strong` (MRSC) or `unknown`: for reports and JSON.
    pub fn as_str(&self) -> &'static str {
        match self {
            Replication::SingleRegion => "single_region",
            Replication::Eventual { .. } => "eventual",
            Replication::Strong { .. } => "strong",
            Replication::Unknown { .. } => "unknown",
        }
    }
}

/// How long a check that failed (throttled, unreachable: not denied) is not asked again: locks go
/// on meanwhile, and a lock's retries do not each send one.
const ASK_AGAIN_AFTER: Duration = Duration::from_secs(60);

/// Which answer: this process, the endpoint, the region and the table.
type Key = (u32, Option<String>, Option<String>, String);

/// One table's answer, and when asking for it last failed.
#[derive(Default)]
struct Entry {
    answer: OnceCell<Replication>,
    failed: Mutex<Option<Instant>>,
}

/// The answers of this process (copy on write, so a fork never finds the map half-held); the
/// process id in the key keeps a forked child off an entry its parent was filling.
type Answers = HashMap<Key, Arc<Entry>>;

fn answers() -> &'static ArcSwap<Answers> {
    static ANSWERS: OnceLock<ArcSwap<Answers>> = OnceLock::new();
    ANSWERS.get_or_init(ArcSwap::default)
}

/// The table's kind, asked by `describe` once per process, endpoint, region and table: callers
/// at the same time wait for the one request. `None` while it cannot be told: `describe` failed
/// (it is asked again after [`ASK_AGAIN_AFTER`]).
pub(crate) async fn once_per_process<F, Fut>(cfg: &StoreConfig, describe: F) -> Option<Replication>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<Replication>>,
{
    let key: Key = (
        std::process::id(),
        cfg.endpoint().map(str::to_owned),
        cfg.region().map(str::to_owned),
        cfg.table().to_owned(),
    );
    let found = answers().load().get(&key).cloned();
    let entry = match found {
        Some(entry) => entry,
        None => {
            let fresh = Arc::new(Entry::default());
            answers().rcu(|m| {
                let mut m = Answers::clone(m);
                m.entry(key.clone()).or_insert_with(|| fresh.clone());
                m
            });
            answers().load().get(&key).cloned().unwrap_or(fresh)
        }
    };
    let failed = || entry.failed.lock().unwrap_or_else(|e| e.into_inner());
    let answer = entry
        .answer
        .get_or_try_init(|| async {
            if failed().is_some_and(|t| t.elapsed() < ASK_AGAIN_AFTER) {
                return Err(());
            }
            describe().await.map_err(|_| {
                *failed() = Some(Instant::now());
            })
        })
        .await;
    answer.ok().cloned()
}
