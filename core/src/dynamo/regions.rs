//! The table's Regions, asked once per process before a lock's first request: a global table with
//! multi-Region eventual consistency (MREC) checks a conditional write against its own Region's
//! copy only and settles conflicting writes last-writer-wins, so two Regions can both take one
//! lock. Such a table is refused unless `allow_eventual_global_table` says every writer is in one
//! Region; one with strong consistency (MRSC) and a single-Region table lock as usual.

use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::types::{MultiRegionConsistency, TableDescription};

use super::error::sdk_error;
use super::Table;
use crate::aws::fault::service_code;
use crate::aws::regions::{once_per_process, Replication};
use crate::error::{Error, Result};

/// The answer to a request the caller's policy does not allow.
const ACCESS_DENIED: &str = "AccessDeniedException";

impl Table {
    /// One DescribeTable, sent once (no SDK retries: the check is asked again on the next lock
    /// operation when it fails), read as the table's [`Replication`]; a denied request is
    /// [`Replication::Unknown`].
    pub(crate) async fn describe_regions(&self) -> Result<Replication> {
        let c = self.config();
        let res = self
            .client()
            .await?
            .describe_table()
            .table_name(c.table())
            .customize()
            .config_override(
                aws_sdk_dynamodb::config::Builder::default().retry_config(RetryConfig::disabled()),
            )
            .send()
            .await;
        match res {
            Ok(out) => Ok(out.table().map_or(Replication::SingleRegion, replication)),
            Err(e) if service_code(&e) == Some(ACCESS_DENIED) => Ok(Replication::Unknown {
                reason: sdk_error(c, "DescribeTable", e).to_string(),
            }),
            Err(e) => Err(sdk_error(c, "DescribeTable", e)),
        }
    }

    /// Refuses a lock operation on a global table with eventual consistency (unless allowed).
    /// The table is described once per process and table; a denied DescribeTable lets locks go
    /// on and warns once; any other failure lets locks go on and is asked again a minute later.
    pub(crate) async fn check_regions(&self) -> Result<()> {
        let c = self.config();
        let kind = once_per_process(c, || async {
            let kind = self.describe_regions().await.inspect_err(|e| {
                tracing::debug!(table = %c.table(), error = %e, "could not describe the table; locks go on");
            })?;
            if let Replication::Unknown { reason } = &kind {
                tracing::warn!(
                    name: "ddblock.table.describe_denied",
                    table = %c.table(),
                    permission = "dynamodb:DescribeTable",
                    "could not tell whether table `{}` spans Regions ({reason}): locks go on \
                     unchecked. Grant dynamodb:DescribeTable on the table, so that a global \
                     table with eventual consistency (MREC), where two Regions can hold one lock, \
                     is refused; `doctor` reports the table's kind",
                    c.table()
                );
            }
            Ok(kind)
        })
        .await;
        match kind {
            Some(Replication::Eventual { replicas }) if !c.allow_eventual_global_table() => {
                Err(Error::Config(format!(
                    "table `{}` is a DynamoDB global table with multi-Region eventual consistency \
                     (MREC; replicas: {}): a conditional write is checked against one Region's \
                     copy only and conflicting writes are settled last-writer-wins, so processes \
                     in two Regions can hold the same lock at once. Lock on a global table with \
                     multi-Region strong consistency (MRSC, MultiRegionConsistency STRONG) or on a \
                     single-Region table; or, if every process that takes these locks writes to \
                     one Region only, set allow_eventual_global_table \
                     (DDBLOCK_ALLOW_EVENTUAL_GLOBAL_TABLE=true)",
                    c.table(),
                    replicas.join(", ")
                )))
            }
            _ => Ok(()),
        }
    }
}

/// What a table description says of its Regions: replicas and their consistency (absent means
/// eventual, the default).
pub fn replication(t: &TableDescription) -> Replication {
    let replicas: Vec<String> = t
        .replicas()
        .iter()
        .map(|r| r.region_name().unwrap_or("?").to_owned())
        .collect();
    if replicas.is_empty() {
        return Replication::SingleRegion;
    }
    match t.multi_region_consistency() {
        Some(MultiRegionConsistency::Strong) => Replication::Strong { replicas },
        _ => Replication::Eventual { replicas },
    }
}
