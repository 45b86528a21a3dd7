//! Scan pages: one segment's page of a parallel scan, filtered server-side.

use aws_sdk_dynamodb::types::AttributeValue;

use super::attr::{self, Item};
use super::error::sdk_error;
use super::Table;
use crate::error::Result;
use crate::format::item::ItemView;

/// What a scan keeps (a server-side `FilterExpression`; the scan still reads the whole table).
#[derive(Debug, Clone, Default)]
pub(crate) struct ScanFilter {
    /// Keys starting with this string (`begins_with(#key, :prefix)`); `None` or empty: all keys.
    pub(crate) key_prefix: Option<String>,
    /// Items with `#expires_at < :cutoff`.
    pub(crate) expired_before: Option<i64>,
}

/// Where the next page of a segment starts (DynamoDB's `LastEvaluatedKey`, kept opaque).
#[derive(Debug, Clone)]
pub(crate) struct StartKey(Item);

/// One page of one segment.
#[derive(Debug)]
pub(crate) struct ScanPage {
    /// The items of the page that passed the filter.
    pub(crate) items: Vec<ItemView>,
    /// Items DynamoDB evaluated (`ScannedCount`).
    pub(crate) scanned: u64,
    /// The start of the next page, `None` after the last.
    pub(crate) next: Option<StartKey>,
}

impl Table {
    /// One page of segment `segment` of `total` (`total == 1`: a plain scan).
    pub(crate) async fn scan_page(
        &self,
        segment: u32,
        total: u32,
        filter: &ScanFilter,
        page_size: Option<u32>,
        start: Option<StartKey>,
    ) -> Result<ScanPage> {
        let c = self.config();
        let mut req = self
            .client()
            .await?
            .scan()
            .table_name(c.table())
            .set_exclusive_start_key(start.map(|s| s.0))
            .set_limit(page_size.map(|n| n.min(i32::MAX as u32) as i32));
        if total > 1 {
            req = req.segment(segment as i32).total_segments(total as i32);
        }
        let mut parts = Vec::new();
        if let Some(p) = filter.key_prefix.as_deref().filter(|p| !p.is_empty()) {
            parts.push("begins_with(#key, :prefix)");
            req = req
                .expression_attribute_names("#key", c.key_attribute())
                .expression_attribute_values(":prefix", AttributeValue::S(p.to_owned()));
        }
        if let Some(cutoff) = filter.expired_before {
            parts.push("#expires_at < :cutoff");
            req = req
                .expression_attribute_names("#expires_at", c.expiration_attribute())
                .expression_attribute_values(":cutoff", attr::num(cutoff));
        }
        if !parts.is_empty() {
            req = req.filter_expression(parts.join(" AND "));
        }
        let out = req.send().await.map_err(|e| sdk_error(c, "Scan", e))?;
        Ok(ScanPage {
            scanned: out.scanned_count().max(0) as u64,
            next: out
                .last_evaluated_key
                .filter(|k| !k.is_empty())
                .map(StartKey),
            items: out
                .items
                .unwrap_or_default()
                .iter()
                .map(|i| attr::view(c, i))
                .collect(),
        })
    }
}
