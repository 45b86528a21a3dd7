//! The table itself: creating it ([`Store::create_table`]), its TTL setting
//! ([`Store::describe_ttl`]) and its description and key schema.

use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
    TableDescription, TableStatus, TimeToLiveSpecification, TimeToLiveStatus,
};

use crate::error::{Error, Result};
use crate::store::Store;

/// Default of [`CreateTableOptions::wait`].
pub const DEFAULT_CREATE_WAIT: Duration = Duration::from_secs(120);

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

/// Options of [`Store::create_table`].
#[derive(Debug, Clone)]
pub struct CreateTableOptions {
    ttl: bool,
    ttl_attribute: Option<String>,
    wait: Duration,
}

impl Default for CreateTableOptions {
    fn default() -> Self {
        CreateTableOptions {
            ttl: true,
            ttl_attribute: None,
            wait: DEFAULT_CREATE_WAIT,
        }
    }
}

impl CreateTableOptions {
    /// Defaults: enable TTL on the configured expiration attribute, wait up to 120 s for ACTIVE.
    pub fn new() -> Self {
        Self::default()
    }
    /// Whether to enable TTL (on a new or an existing table).
    pub fn ttl(mut self, enable: bool) -> Self {
        self.ttl = enable;
        self
    }
    /// The TTL attribute (default: the configured expiration attribute).
    pub fn ttl_attribute(mut self, name: impl Into<String>) -> Self {
        self.ttl_attribute = Some(name.into());
        self
    }
    /// How long to wait for the table to become ACTIVE.
    pub fn wait(mut self, d: Duration) -> Self {
        self.wait = d;
        self
    }
}

/// What [`Store::create_table`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateTableReport {
    /// This call created the table (false: it existed).
    pub created: bool,
    /// The table status after waiting (`ACTIVE` unless the wait ran out).
    pub status: String,
    /// Why the key schema does not fit Laravel's cache table, for an existing table.
    pub key_schema_problem: Option<String>,
    /// The TTL setting afterwards; `None` when TTL was not asked for.
    pub ttl: Option<TtlState>,
    /// This call enabled TTL.
    pub ttl_changed: bool,
}

impl CreateTableReport {
    /// ACTIVE with the right key schema.
    pub fn ready(&self) -> bool {
        self.status == "ACTIVE" && self.key_schema_problem.is_none()
    }
}

impl Store {
    /// Creates the table Laravel's cache store needs: one string partition key named as configured,
    /// on-demand billing; waits until it is ACTIVE and (by default) enables TTL on the expiration
    /// attribute. Idempotent: an existing table is fine (its key schema is checked, TTL enabled if
    /// off). On a server without UpdateTimeToLive (dynalite) the TTL state is
    /// [`TtlState::Unknown`].
    pub async fn create_table(&self, opts: &CreateTableOptions) -> Result<CreateTableReport> {
        let c = self.config();
        let res = self
            .client()
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
        let created = match res {
            Ok(_) => true,
            Err(e) if service_code(&e) == Some("ResourceInUseException") => false,
            Err(e) => return Err(self.sdk_error("CreateTable", e)),
        };
        let deadline = Instant::now() + opts.wait;
        let mut delay = Duration::from_millis(50);
        let table = loop {
            let t = self.describe_table().await?;
            if t.table_status() == Some(&TableStatus::Active) || Instant::now() >= deadline {
                break t;
            }
            tokio::time::sleep(delay.min(deadline.saturating_duration_since(Instant::now()))).await;
            delay = (delay * 2).min(Duration::from_secs(2));
        };
        let status = table
            .table_status()
            .map(|s| s.as_str().to_owned())
            .unwrap_or_else(|| "UNKNOWN".into());
        let key_schema_problem = self.key_schema_problem(&table);
        let mut report = CreateTableReport {
            created,
            status,
            key_schema_problem,
            ttl: None,
            ttl_changed: false,
        };
        if !opts.ttl || !report.ready() {
            return Ok(report);
        }
        let attribute = opts
            .ttl_attribute
            .clone()
            .unwrap_or_else(|| c.expiration_attribute().to_owned());
        let state = self.describe_ttl().await?;
        if state != TtlState::Disabled {
            report.ttl = Some(state);
            return Ok(report);
        }
        let res = self
            .client()
            .update_time_to_live()
            .table_name(c.table())
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .enabled(true)
                    .attribute_name(&attribute)
                    .build()
                    .map_err(|e| Error::Config(e.to_string()))?,
            )
            .send()
            .await;
        match res {
            Ok(_) => {
                report.ttl_changed = true;
                report.ttl = Some(match self.describe_ttl().await? {
                    // A server that accepted the update but still says disabled: trust the update.
                    TtlState::Disabled | TtlState::Unknown { .. } => {
                        TtlState::Enabled { attribute }
                    }
                    s => s,
                });
            }
            Err(e) if service_code(&e) == Some("UnknownOperationException") => {
                report.ttl = Some(TtlState::Unknown {
                    reason: "the server does not implement UpdateTimeToLive".into(),
                });
            }
            Err(e) => return Err(self.sdk_error("UpdateTimeToLive", e)),
        }
        Ok(report)
    }

    /// The table's TTL setting; a service error (unknown operation, access denied) is
    /// [`TtlState::Unknown`], a missing table or an unreachable endpoint an error.
    pub async fn describe_ttl(&self) -> Result<TtlState> {
        let res = self
            .client()
            .describe_time_to_live()
            .table_name(self.config().table())
            .send()
            .await;
        let out = match res {
            Ok(out) => out,
            Err(e) => {
                return match self.sdk_error("DescribeTimeToLive", e) {
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

    // ---- internals ----

    pub(super) async fn describe_table(&self) -> Result<TableDescription> {
        let out = self
            .client()
            .describe_table()
            .table_name(self.config().table())
            .send()
            .await
            .map_err(|e| self.sdk_error("DescribeTable", e))?;
        out.table.ok_or_else(|| Error::Service {
            operation: "DescribeTable",
            code: "MissingTable".into(),
            message: "the server returned no table description".into(),
        })
    }

    /// Why `table`'s key schema is not one string HASH key named as configured, if it is not.
    pub(super) fn key_schema_problem(&self, table: &TableDescription) -> Option<String> {
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
}

fn service_code<E, R>(err: &aws_sdk_dynamodb::error::SdkError<E, R>) -> Option<&str>
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata,
{
    match err {
        aws_sdk_dynamodb::error::SdkError::ServiceError(se) => se.err().code(),
        _ => None,
    }
}
