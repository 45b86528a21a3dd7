//! The table itself: creating it ([`Admin::create_table`]), its TTL setting
//! ([`Admin::describe_ttl`]) and its description and key schema.

use std::time::{Duration, Instant};

use ddblock::Result;

use crate::requests::TtlState;
use crate::Admin;

/// Default of [`CreateTableOptions::wait`].
pub const DEFAULT_CREATE_WAIT: Duration = Duration::from_secs(120);

/// Options of [`Admin::create_table`].
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
    /// How long `create_table` waits for ACTIVE, as set.
    pub fn wait_limit(&self) -> Duration {
        self.wait
    }
    /// How long to wait for the table to become ACTIVE (default [`DEFAULT_CREATE_WAIT`]).
    pub fn wait(mut self, d: Duration) -> Self {
        self.wait = d;
        self
    }
}

/// What [`Admin::create_table`] did.
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

impl Admin {
    /// Creates the table Laravel's cache store needs: one string partition key named as configured,
    /// on-demand billing; waits until it is ACTIVE and (by default) enables TTL on the expiration
    /// attribute. Idempotent: an existing table is fine (its key schema is checked, TTL enabled if
    /// off). On a server without UpdateTimeToLive (dynalite) the TTL state is
    /// [`TtlState::Unknown`].
    pub async fn create_table(&self, opts: &CreateTableOptions) -> Result<CreateTableReport> {
        let t = self;
        let created = t.create().await?;
        let deadline = Instant::now() + opts.wait;
        let mut delay = Duration::from_millis(50);
        let info = loop {
            let info = t.describe_table().await?;
            if info.active || Instant::now() >= deadline {
                break info;
            }
            tokio::time::sleep(delay.min(deadline.saturating_duration_since(Instant::now()))).await;
            delay = (delay * 2).min(Duration::from_secs(2));
        };
        let mut report = CreateTableReport {
            created,
            status: info.status,
            key_schema_problem: info.key_schema_problem,
            ttl: None,
            ttl_changed: false,
        };
        if !opts.ttl || !report.ready() {
            return Ok(report);
        }
        let attribute = opts
            .ttl_attribute
            .clone()
            .unwrap_or_else(|| self.config().expiration_attribute().to_owned());
        let state = t.describe_ttl().await?;
        if state != TtlState::Disabled {
            report.ttl = Some(state);
            return Ok(report);
        }
        if t.enable_ttl(&attribute).await? {
            report.ttl_changed = true;
            report.ttl = Some(match t.describe_ttl().await? {
                // A server that accepted the update but still says disabled: trust the update.
                TtlState::Disabled | TtlState::Unknown { .. } => TtlState::Enabled { attribute },
                s => s,
            });
        } else {
            report.ttl = Some(TtlState::Unknown {
                reason: "the server does not implement UpdateTimeToLive".into(),
            });
        }
        Ok(report)
    }
}
