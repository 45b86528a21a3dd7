//! The requests of table administration, the only code of this crate that touches
//! `aws-sdk-dynamodb` (through the store's client and the core's error classifier,
//! `ddblock::sdk`): create, describe, TTL, scan pages, a sweep's conditional deletes.

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType, TableDescription, TableStatus, TimeToLiveSpecification, TimeToLiveStatus,
};
use ddblock::format::item::{ItemView, ATTEMPT_ATTRIBUTE, FENCE_ATTRIBUTE};
use ddblock::sdk::{dynamodb_error, item_view, replication_of, service_code, Item, Replication};
use ddblock::{Error, Result};

use crate::Admin;

/// The table's TTL setting (DescribeTimeToLive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TtlState {
    /// TTL deletes items once `attribute` is in the past.
    Enabled {
        /// The TTL attribute.
        attribute: String,
    },
    /// Being enabled on `attribute`.
    Enabling {
        /// The TTL attribute.
        attribute: String,
    },
    /// Being disabled.
    Disabling {
        /// The TTL attribute.
        attribute: String,
    },
    /// TTL is off: expired items stay until something deletes them.
    Disabled,
    /// The server could not say (dynalite has no UpdateTimeToLive; missing permissions).
    Unknown {
        /// Why.
        reason: String,
    },
}

impl TtlState {
    /// `enabled`, `enabling`, `disabling`, `disabled` or `unknown`.
    pub fn as_str(&self) -> &'static str {
        match self {
            TtlState::Enabled { .. } => "enabled",
            TtlState::Enabling { .. } => "enabling",
            TtlState::Disabling { .. } => "disabling",
            TtlState::Disabled => "disabled",
            TtlState::Unknown { .. } => "unknown",
        }
    }

    /// The TTL attribute, when there is one.
    pub fn attribute(&self) -> Option<&str> {
        match self {
            TtlState::Enabled { attribute }
            | TtlState::Enabling { attribute }
            | TtlState::Disabling { attribute } => Some(attribute),
            TtlState::Disabled | TtlState::Unknown { .. } => None,
        }
    }

    /// Enabled or being enabled on `attribute`.
    pub fn covers(&self, attribute: &str) -> bool {
        matches!(self, TtlState::Enabled { attribute: a } | TtlState::Enabling { attribute: a } if a == attribute)
    }
}

/// What DescribeTable says, in the terms ddblock checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableInfo {
    /// `ACTIVE`, `CREATING`, ...
    pub status: String,
    /// The status is ACTIVE.
    pub active: bool,
    /// `PAY_PER_REQUEST` or `PROVISIONED`, when the server says.
    pub billing_mode: Option<String>,
    /// Why the key schema does not fit Laravel's cache table, if it does not.
    pub key_schema_problem: Option<String>,
    /// Which Regions the table spans, and with what consistency.
    pub replication: Replication,
}

impl Admin {
    /// CreateTable with Laravel's schema (one string partition key, on-demand). False when the
    /// table already existed.
    pub(crate) async fn create(&self) -> Result<bool> {
        let c = self.config();
        let res = self
            .store
            .client()
            .await?
            .create_table()
            .table_name(c.table())
            .attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name(c.key_attribute())
                    .attribute_type(ScalarAttributeType::S)
                    .build()
                    .map_err(|e| Error::Config(e.to_string()))?,
            )
            .key_schema(
                KeySchemaElement::builder()
                    .attribute_name(c.key_attribute())
                    .key_type(KeyType::Hash)
                    .build()
                    .map_err(|e| Error::Config(e.to_string()))?,
            )
            .billing_mode(BillingMode::PayPerRequest)
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) if service_code(&e) == Some("ResourceInUseException") => Ok(false),
            Err(e) => Err(self.fail("CreateTable", e)),
        }
    }

    /// The table's status, billing mode and whether its key schema fits (DescribeTable).
    pub async fn describe_table(&self) -> Result<TableInfo> {
        let c = self.config();
        let out = self
            .store
            .client()
            .await?
            .describe_table()
            .table_name(c.table())
            .send()
            .await
            .map_err(|e| self.fail("DescribeTable", e))?;
        let t = out.table.ok_or_else(|| Error::Service {
            operation: "DescribeTable",
            code: "MissingTable".into(),
            message: "the server returned no table description".into(),
        })?;
        Ok(TableInfo {
            status: t
                .table_status()
                .map(|s| s.as_str().to_owned())
                .unwrap_or_else(|| "UNKNOWN".into()),
            active: t.table_status() == Some(&TableStatus::Active),
            billing_mode: t
                .billing_mode_summary()
                .and_then(|b| b.billing_mode())
                .map(|b| b.as_str().to_owned()),
            key_schema_problem: self.key_schema_problem(&t),
            replication: replication_of(&t),
        })
    }

    /// The table's TTL setting; a service error (unknown operation, access denied) is
    /// [`TtlState::Unknown`], a missing table or an unreachable endpoint an error.
    pub async fn describe_ttl(&self) -> Result<TtlState> {
        let c = self.config();
        let res = self
            .store
            .client()
            .await?
            .describe_time_to_live()
            .table_name(c.table())
            .send()
            .await;
        let out = match res {
            Ok(out) => out,
            Err(e) => {
                return match self.fail("DescribeTimeToLive", e) {
                    Error::Service { code, message, .. } => Ok(TtlState::Unknown {
                        reason: if code == "UnknownOperationException" {
                            "the server does not implement DescribeTimeToLive".into()
                        } else {
                            format!("DescribeTimeToLive failed with {code}: {message}")
                        },
                    }),
                    other => Err(other),
                };
            }
        };
        let Some(d) = out.time_to_live_description() else {
            return Ok(TtlState::Unknown {
                reason: "DescribeTimeToLive returned no description".into(),
            });
        };
        let attribute = d.attribute_name().unwrap_or_default().to_owned();
        Ok(match d.time_to_live_status() {
            Some(TimeToLiveStatus::Enabled) => TtlState::Enabled { attribute },
            Some(TimeToLiveStatus::Enabling) => TtlState::Enabling { attribute },
            Some(TimeToLiveStatus::Disabling) => TtlState::Disabling { attribute },
            Some(TimeToLiveStatus::Disabled) => TtlState::Disabled,
            other => TtlState::Unknown {
                reason: format!("unexpected TTL status {other:?}"),
            },
        })
    }

    /// UpdateTimeToLive enabling TTL on `attribute`. `Ok(false)` when the server does not
    /// implement it (dynalite).
    pub(crate) async fn enable_ttl(&self, attribute: &str) -> Result<bool> {
        let c = self.config();
        let res = self
            .store
            .client()
            .await?
            .update_time_to_live()
            .table_name(c.table())
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .enabled(true)
                    .attribute_name(attribute)
                    .build()
                    .map_err(|e| Error::Config(e.to_string()))?,
            )
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) if service_code(&e) == Some("UnknownOperationException") => Ok(false),
            Err(e) => Err(self.fail("UpdateTimeToLive", e)),
        }
    }

    /// Why `table`'s key schema is not one string HASH key named as configured, if it is not.
    fn key_schema_problem(&self, table: &TableDescription) -> Option<String> {
        let want = self.config().key_attribute();
        let describe = |e: &KeySchemaElement| {
            let ty = table
                .attribute_definitions()
                .iter()
                .find(|d| d.attribute_name() == e.attribute_name())
                .map(|d| d.attribute_type().as_str().to_owned())
                .unwrap_or_else(|| "?".into());
            format!("`{}` ({}, {ty})", e.attribute_name(), e.key_type().as_str())
        };
        let keys = table.key_schema();
        let ok = match keys {
            [k] => {
                k.attribute_name() == want
                    && k.key_type() == &KeyType::Hash
                    && table.attribute_definitions().iter().any(|d| {
                        d.attribute_name() == want && d.attribute_type() == &ScalarAttributeType::S
                    })
            }
            _ => false,
        };
        (!ok).then(|| {
            format!(
                "the key schema is {}; Laravel's cache table needs exactly one string (S) \
                 partition key named `{want}` (or configure the key attribute to match)",
                keys.iter().map(describe).collect::<Vec<_>>().join(" + ")
            )
        })
    }
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
            .store
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
            // A number first: moto answers HTTP 500 to `<` on a string expiry (DynamoDB: false).
            req = req
                .expression_attribute_names("#expires_at", c.expiration_attribute())
                .expression_attribute_values(":number", AttributeValue::S("N".into()))
                .expression_attribute_values(":cutoff", AttributeValue::N(cutoff.to_string()));
            match filter.expires_between {
                None => {
                    parts.push("attribute_type(#expires_at, :number) AND #expires_at < :cutoff")
                }
                Some((low, high)) => {
                    parts.push(
                        "attribute_type(#expires_at, :number) AND (#expires_at < :cutoff OR \
                         #expires_at BETWEEN :low AND :high)",
                    );
                    req = req
                        .expression_attribute_values(":low", AttributeValue::N(low.to_string()))
                        .expression_attribute_values(":high", AttributeValue::N(high.to_string()));
                }
            }
        }
        if !parts.is_empty() {
            req = req.filter_expression(parts.join(" AND "));
        }
        let out = req.send().await.map_err(|e| self.fail("Scan", e))?;
        Ok(ScanPage {
            scanned: out.scanned_count().max(0) as u64,
            next: out
                .last_evaluated_key
                .filter(|k| !k.is_empty())
                .map(StartKey),
            items: out
                .items
                .unwrap_or_default()
                .into_iter()
                .map(|raw| Scanned {
                    view: item_view(c, &raw),
                    raw: AsRead(raw),
                })
                .collect(),
        })
    }

    /// A sweep's delete: only if the item is still expired before `cutoff` (so an item refreshed
    /// or re-acquired since the scan stays). True when deleted.
    pub(crate) async fn delete_if_expired_before(&self, k: &str, cutoff: i64) -> Result<bool> {
        let c = self.config();
        let res = self
            .store
            .client()
            .await?
            .delete_item()
            .table_name(c.table())
            .key(c.key_attribute(), AttributeValue::S(k.to_owned()))
            .condition_expression("#expires_at < :cutoff")
            .expression_attribute_names("#expires_at", c.expiration_attribute())
            .expression_attribute_values(":cutoff", AttributeValue::N(cutoff.to_string()))
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) if service_code(&e) == Some("ConditionalCheckFailedException") => Ok(false),
            Err(e) => Err(self.fail("DeleteItem", e)),
        }
    }

    /// A sweep's delete of a stuck-looking lock: only while the item is as the scan read it
    /// (`attribute_exists(#k)` and, for the value, the expiry, `ddblock_attempt` and
    /// `ddblock_fence`, `#a = :a` when the scan read it, else `attribute_not_exists(#a)`), so a
    /// lock taken, refreshed or released since the scan stays. True when deleted.
    pub(crate) async fn delete_if_unchanged(&self, k: &str, seen: &AsRead) -> Result<bool> {
        let c = self.config();
        let mut req = self
            .store
            .client()
            .await?
            .delete_item()
            .table_name(c.table())
            .key(c.key_attribute(), AttributeValue::S(k.to_owned()))
            .expression_attribute_names("#k", c.key_attribute());
        let mut parts = vec!["attribute_exists(#k)".to_owned()];
        for (p, attribute) in [
            ("v", c.value_attribute()),
            ("e", c.expiration_attribute()),
            ("a", ATTEMPT_ATTRIBUTE),
            ("f", FENCE_ATTRIBUTE),
        ] {
            req = req.expression_attribute_names(format!("#{p}"), attribute);
            parts.push(match seen.0.get(attribute) {
                Some(v) => {
                    req = req.expression_attribute_values(format!(":{p}"), v.clone());
                    format!("#{p} = :{p}")
                }
                None => format!("attribute_not_exists(#{p})"),
            });
        }
        let res = req.condition_expression(parts.join(" AND ")).send().await;
        match res {
            Ok(_) => Ok(true),
            Err(e) if service_code(&e) == Some("ConditionalCheckFailedException") => Ok(false),
            Err(e) => Err(self.fail("DeleteItem", e)),
        }
    }

    /// A failed request of `operation`, as ddblock's error kinds.
    fn fail<E>(&self, operation: &'static str, err: SdkError<E, HttpResponse>) -> Error
    where
        E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    {
        dynamodb_error(self.config(), operation, err)
    }
}

/// What a scan keeps (a server-side `FilterExpression`; the scan still reads the whole table).
#[derive(Debug, Clone, Default)]
pub(crate) struct ScanFilter {
    /// Keys starting with this string (`begins_with(#key, :prefix)`); `None` or empty: all keys.
    pub(crate) key_prefix: Option<String>,
    /// Items with `#expires_at < :cutoff`.
    pub(crate) expired_before: Option<i64>,
    /// With `expired_before`: also items with `:low <= #expires_at <= :high`.
    pub(crate) expires_between: Option<(i64, i64)>,
}

/// One scanned item: what it means, and the item as read.
#[derive(Debug)]
pub(crate) struct Scanned {
    /// The item as the format layer reads it.
    pub(crate) view: ItemView,
    /// The item as read (a sweep's unchanged condition compares with it).
    pub(crate) raw: AsRead,
}

/// A raw item as a scan read it, kept opaque outside this file.
#[derive(Debug)]
pub(crate) struct AsRead(Item);

/// Where the next page of a segment starts (DynamoDB's `LastEvaluatedKey`, kept opaque).
#[derive(Debug, Clone)]
pub(crate) struct StartKey(Item);

/// One page of one segment.
#[derive(Debug)]
pub(crate) struct ScanPage {
    /// The items of the page that passed the filter.
    pub(crate) items: Vec<Scanned>,
    /// Items DynamoDB evaluated (`ScannedCount`).
    pub(crate) scanned: u64,
    /// The start of the next page, `None` after the last.
    pub(crate) next: Option<StartKey>,
}
