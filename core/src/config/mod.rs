//! Store configuration: table, attribute names, prefix, key layout, client settings, clock.
//! Built once, checked once; every other layer reads it.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::format::layout::checked_key;
pub use crate::format::layout::{laravel_prefix, laravel_slug, KeyLayout, MAX_KEY_BYTES};

mod builder;
pub mod settings;

pub use crate::time::{Clock, SystemClock};
pub use builder::StoreConfigBuilder;
pub use settings::{worker_threads, Defaults, Front, Setting, SettingValue, Unit, SETTINGS};

/// Default of [`StoreConfigBuilder::clock_skew_margin`]: 0, Laravel's own takeover rule
/// (`expires_at < now`), so every front on a table shares one rule (docs/semantics.md).
pub const DEFAULT_CLOCK_SKEW_MARGIN: Duration = Duration::from_secs(0);
/// Default of [`StoreConfigBuilder::attempt_timeout`].
pub const DEFAULT_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(3);

/// What `TableNotFound` tells a Rust caller to run (each binding sets its own, see
/// [`StoreConfigBuilder::create_table_hint`]).
const RUST_CREATE_TABLE_HINT: &str =
    "`ddblock_admin::Admin::new(&store).create_table(..)` or `ddblock create-table`";

/// Capped exponential backoff with jitter for `block()` retries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// First wait between attempts.
    pub initial: Duration,
    /// Longest wait between attempts.
    pub max: Duration,
    /// Growth factor per attempt (1.0 = fixed interval, as Laravel's 250 ms poll).
    pub multiplier: f64,
    /// Fraction of each wait that is randomised (0.0 none, 1.0 "full jitter").
    pub jitter: f64,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: Duration::from_millis(50),
            max: Duration::from_millis(1000),
            multiplier: 2.0,
            jitter: 0.5,
        }
    }
}

impl Backoff {
    /// Laravel's fixed 250 ms poll, without jitter.
    pub fn laravel() -> Self {
        Backoff {
            initial: Duration::from_millis(250),
            max: Duration::from_millis(250),
            multiplier: 1.0,
            jitter: 0.0,
        }
    }

    /// Checks the settings: initial > 0, max >= initial, a finite multiplier >= 1 and a jitter
    /// from 0 to 1.
    pub fn validate(&self) -> Result<()> {
        let ok = !self.initial.is_zero()
            && self.max >= self.initial
            && self.multiplier.is_finite()
            && self.multiplier >= 1.0
            && (0.0..=1.0).contains(&self.jitter);
        if ok {
            Ok(())
        } else {
            Err(Error::Config(format!(
                "invalid backoff {self:?}: it needs initial > 0, max >= initial, a finite \
                 multiplier of at least 1 and a jitter from 0 to 1"
            )))
        }
    }

    /// The wait before retry number `attempt` (0-based), jittered with `rand01` in `[0, 1)`.
    /// Never panics: non-finite or out-of-range settings fall back to sane bounds.
    pub fn delay(&self, attempt: u32, rand01: f64) -> Duration {
        let finite_or = |v: f64, d: f64| if v.is_finite() { v } else { d };
        let multiplier = finite_or(self.multiplier, 1.0).max(1.0);
        let base = self.initial.as_secs_f64() * multiplier.powi(attempt.min(64) as i32);
        let capped = finite_or(base, f64::MAX).min(self.max.as_secs_f64());
        let jitter = finite_or(self.jitter, 0.0).clamp(0.0, 1.0);
        let secs = capped * (1.0 - jitter * finite_or(rand01, 0.0).clamp(0.0, 1.0));
        Duration::try_from_secs_f64(secs).unwrap_or(self.max)
    }
}

/// Where a store keeps its locks. Cache entries, the once-only guard and compare-and-set always
/// live in the DynamoDB table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LockBackendKind {
    /// The DynamoDB table, in Laravel's lock items (the default).
    #[default]
    DynamoDb,
    /// Objects in an S3 bucket, with S3's conditional writes (`If-None-Match`, `If-Match`).
    S3,
}

/// How a lock in the DynamoDB table is released (`DDBLOCK_RELEASE_MODE`; docs/semantics.md,
/// "Release modes"). Either way it is ONE request conditioned on `#value = :owner`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReleaseMode {
    /// A DeleteItem: the item, and its fencing token, are gone (the default).
    #[default]
    Delete,
    /// An UpdateItem that expires the item (`expires_at` a day before the release) and removes
    /// its value and attempt id, keeping `ddblock_fence`: the next acquisition continues the fence.
    KeepFence,
}

impl ReleaseMode {
    /// The setting's word: `delete` or `keep-fence`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReleaseMode::Delete => "delete",
            ReleaseMode::KeepFence => "keep-fence",
        }
    }
}

impl std::str::FromStr for ReleaseMode {
    type Err = Error;

    /// `delete` or `keep-fence` (any case).
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "delete" => Ok(ReleaseMode::Delete),
            "keep-fence" => Ok(ReleaseMode::KeepFence),
            _ => Err(Error::Config(format!(
                "unknown release mode {s:?}: use delete (the default) or keep-fence"
            ))),
        }
    }
}

impl std::str::FromStr for LockBackendKind {
    type Err = Error;

    /// `dynamodb` or `s3` (any case).
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "dynamodb" => Ok(LockBackendKind::DynamoDb),
            "s3" => Ok(LockBackendKind::S3),
            _ => Err(Error::Config(format!(
                "unknown lock backend {s:?}: use dynamodb (the default) or s3"
            ))),
        }
    }
}

/// Everything a [`crate::Store`] needs; build it with [`StoreConfig::builder`].
#[derive(Clone)]
pub struct StoreConfig {
    pub(crate) table: String,
    pub(crate) key_attribute: String,
    pub(crate) value_attribute: String,
    pub(crate) expiration_attribute: String,
    pub(crate) prefix: String,
    pub(crate) layout: KeyLayout,
    pub(crate) endpoint: Option<String>,
    pub(crate) region: Option<String>,
    pub(crate) connect_timeout: Option<Duration>,
    pub(crate) operation_timeout: Option<Duration>,
    pub(crate) attempt_timeout: Option<Duration>,
    pub(crate) max_attempts: Option<u32>,
    pub(crate) backoff: Backoff,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) create_table_hint: String,
    pub(crate) clock_skew_margin: Duration,
    pub(crate) heartbeat_interval: Option<Duration>,
    pub(crate) prefix_from_app_name: Option<String>,
    pub(crate) lock_backend: LockBackendKind,
    pub(crate) s3_bucket: Option<String>,
    pub(crate) s3_release_by_overwrite: bool,
    pub(crate) release_mode: ReleaseMode,
    pub(crate) log_names: bool,
    pub(crate) allow_eventual_global_table: bool,
}

impl fmt::Debug for StoreConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreConfig")
            .field("table", &self.table)
            .field("key_attribute", &self.key_attribute)
            .field("value_attribute", &self.value_attribute)
            .field("expiration_attribute", &self.expiration_attribute)
            .field("prefix", &self.prefix)
            .field("layout", &self.layout)
            .field("endpoint", &self.endpoint)
            .field("region", &self.region)
            .finish_non_exhaustive()
    }
}

impl StoreConfig {
    /// A builder with Laravel's defaults (table `cache`, attributes `key`/`value`/`expires_at`, layout 12).
    pub fn builder() -> StoreConfigBuilder {
        StoreConfigBuilder {
            default_prefix_for: None,
            cfg: StoreConfig {
                table: "cache".into(),
                key_attribute: "key".into(),
                value_attribute: "value".into(),
                expiration_attribute: "expires_at".into(),
                prefix: String::new(),
                layout: KeyLayout::default(),
                endpoint: None,
                region: None,
                connect_timeout: None,
                operation_timeout: None,
                attempt_timeout: Some(DEFAULT_ATTEMPT_TIMEOUT),
                max_attempts: None,
                backoff: Backoff::default(),
                clock: Arc::new(SystemClock),
                create_table_hint: RUST_CREATE_TABLE_HINT.into(),
                clock_skew_margin: DEFAULT_CLOCK_SKEW_MARGIN,
                heartbeat_interval: None,
                prefix_from_app_name: None,
                lock_backend: LockBackendKind::DynamoDb,
                s3_bucket: None,
                s3_release_by_overwrite: false,
                release_mode: ReleaseMode::Delete,
                log_names: true,
                allow_eventual_global_table: false,
            },
        }
    }

    /// A builder filled from Laravel's environment variable names, read through `get`: the one
    /// configuration rule of every front is "explicit settings win, Laravel's variables fill the
    /// rest, Laravel's defaults last", so call this first and the builder's setters after.
    ///
    /// Reads `DYNAMODB_CACHE_TABLE` (default `cache`), `DYNAMODB_ENDPOINT`, `AWS_DEFAULT_REGION`,
    /// `CACHE_PREFIX`, `DDBLOCK_LAYOUT` and `DDBLOCK_CLOCK_SKEW_MARGIN` (whole seconds); empty
    /// values count as unset, except `CACHE_PREFIX` (an empty prefix is a real setting). Without
    /// `CACHE_PREFIX` (and no `prefix()` call later) the prefix is Laravel's own default, from
    /// `APP_NAME` (default `laravel`) and the final layout ([`laravel_prefix`]). Taking a lookup
    /// function keeps the core free of process-environment reads; [`StoreConfig::from_env`]
    /// passes `std::env::var`.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<StoreConfigBuilder> {
        let mut b = StoreConfig::builder();
        if get("CACHE_PREFIX").is_none() {
            b.default_prefix_for = Some(
                get("APP_NAME")
                    .filter(|v| !v.is_empty())
                    .unwrap_or_else(|| "laravel".into()),
            );
        }
        for s in SETTINGS {
            let Some(var) = s.env else { continue };
            // An empty variable counts as unset, except CACHE_PREFIX: an empty prefix is real.
            let value = get(var).filter(|v| !v.is_empty() || var == "CACHE_PREFIX");
            if let Some(v) = value {
                b = s.apply(Front::Env, b, SettingValue::Text(v))?;
            }
        }
        Ok(b)
    }

    /// [`StoreConfig::from_vars`] over the process environment.
    pub fn from_env() -> Result<StoreConfigBuilder> {
        Self::from_vars(|k| std::env::var(k).ok())
    }

    /// The table key of cache entry `key` under the prefix and layout; checked to be non-empty and
    /// at most 2048 bytes (DynamoDB's partition key limit) before any request.
    pub fn cache_key(&self, key: &str) -> Result<String> {
        checked_key(key, self.layout.cache_key(&self.prefix, key))
    }

    /// The table key of lock `name` under the prefix and layout, checked like [`Self::cache_key`].
    pub fn lock_key(&self, name: &str) -> Result<String> {
        checked_key(name, self.layout.lock_key(&self.prefix, name))
    }

    /// The string every key of this store starts with (prefix as the layout writes it).
    pub fn effective_prefix(&self) -> String {
        self.layout.effective_prefix(&self.prefix)
    }

    /// The table name.
    pub fn table(&self) -> &str {
        &self.table
    }
    /// The partition key attribute name.
    pub fn key_attribute(&self) -> &str {
        &self.key_attribute
    }
    /// The value attribute name.
    pub fn value_attribute(&self) -> &str {
        &self.value_attribute
    }
    /// The expiry timestamp attribute name.
    pub fn expiration_attribute(&self) -> &str {
        &self.expiration_attribute
    }
    /// The prefix as configured (before the layout adds anything).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }
    /// The `APP_NAME` the prefix was derived from when `CACHE_PREFIX` was unset (see
    /// [`laravel_prefix`]); `None` when the prefix was set. `doctor` warns on a derived prefix
    /// that no item in the table carries.
    pub fn prefix_from_app_name(&self) -> Option<&str> {
        self.prefix_from_app_name.as_deref()
    }
    /// The key layout.
    pub fn layout(&self) -> KeyLayout {
        self.layout
    }
    /// The endpoint URL override, if any.
    pub fn endpoint(&self) -> Option<&str> {
        self.endpoint.as_deref()
    }
    /// The region override, if any.
    pub fn region(&self) -> Option<&str> {
        self.region.as_deref()
    }
    /// The default backoff of `block()`.
    pub fn backoff(&self) -> Backoff {
        self.backoff
    }
    /// The clock used for expiry decisions.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }
    /// The TCP connect timeout, if set.
    pub fn connect_timeout(&self) -> Option<Duration> {
        self.connect_timeout
    }
    /// The timeout of a whole operation (all attempts), if set.
    pub fn operation_timeout(&self) -> Option<Duration> {
        self.operation_timeout
    }
    /// The timeout of one attempt (one HTTP request; the SDK retries after it), if set.
    pub fn attempt_timeout(&self) -> Option<Duration> {
        self.attempt_timeout
    }
    /// Attempts per request, if set (the SDK's default is 3).
    pub fn max_attempts(&self) -> Option<u32> {
        self.max_attempts
    }
    /// How a missing table's error tells the user to create it.
    pub fn create_table_hint(&self) -> &str {
        &self.create_table_hint
    }
    /// How long past `expires_at` a lock must be before ddblock takes it over.
    pub fn clock_skew_margin(&self) -> Duration {
        self.clock_skew_margin
    }
    /// How often a heartbeat refreshes a held lock; `None`: a third of the lock's ttl.
    pub fn heartbeat_interval(&self) -> Option<Duration> {
        self.heartbeat_interval
    }
    /// Where locks are kept.
    pub fn lock_backend(&self) -> LockBackendKind {
        self.lock_backend
    }
    /// `name` as warnings and debug events say it: itself, or `<hidden>` when names are not logged
    /// ([`StoreConfigBuilder::log_names`]).
    pub fn logged<'a>(&self, name: &'a str) -> &'a str {
        if self.log_names {
            name
        } else {
            "<hidden>"
        }
    }
    /// Where locks live: the S3 bucket with the `s3` backend, else the table (what metrics and
    /// spans call `db.collection.name`).
    pub fn collection(&self) -> &str {
        self.s3_bucket().unwrap_or(self.table())
    }
    /// The S3 bucket of the `s3` lock backend.
    pub fn s3_bucket(&self) -> Option<&str> {
        self.s3_bucket.as_deref()
    }
    /// Whether the s3 backend releases by a conditional overwrite instead of a conditional delete.
    pub fn s3_release_by_overwrite(&self) -> bool {
        self.s3_release_by_overwrite
    }
    /// How a lock in the DynamoDB table is released.
    pub fn release_mode(&self) -> ReleaseMode {
        self.release_mode
    }
    /// Whether locks may run on a global table with eventual consistency (MREC), which they
    /// otherwise refuse ([`StoreConfigBuilder::allow_eventual_global_table`]).
    pub fn allow_eventual_global_table(&self) -> bool {
        self.allow_eventual_global_table
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_from_the_environment() {
        let vars = |app: Option<&'static str>, prefix: Option<&'static str>| {
            move |k: &str| match k {
                "APP_NAME" => app.map(str::to_owned),
                "CACHE_PREFIX" => prefix.map(str::to_owned),
                _ => None,
            }
        };
        let p = |b: StoreConfigBuilder| b.build().unwrap().prefix().to_owned();
        assert_eq!(
            p(StoreConfig::from_vars(vars(None, None)).unwrap()),
            "laravel-cache-"
        );
        assert_eq!(
            p(StoreConfig::from_vars(vars(Some("Shop"), None)).unwrap()),
            "shop-cache-"
        );
        assert_eq!(
            p(StoreConfig::from_vars(vars(Some("Shop"), Some(""))).unwrap()),
            ""
        );
        let old = StoreConfig::from_vars(vars(Some("Shop"), None))
            .unwrap()
            .layout(KeyLayout::Laravel8);
        assert_eq!(
            p(old),
            "shop_cache",
            "the layout set after decides the suffix"
        );
        let explicit = StoreConfig::from_vars(vars(Some("Shop"), None))
            .unwrap()
            .prefix("x_");
        assert_eq!(p(explicit), "x_");
        let margin = |v: &'static str| {
            StoreConfig::from_vars(move |k| (k == "DDBLOCK_CLOCK_SKEW_MARGIN").then(|| v.into()))
                .map(|b| b.build().unwrap().clock_skew_margin())
        };
        assert_eq!(margin("0").unwrap(), Duration::ZERO);
        assert_eq!(margin("5").unwrap(), Duration::from_secs(5));
        for bad in ["-1", "1.5", "two"] {
            let e = margin(bad).unwrap_err();
            assert!(e.to_string().contains("whole number of seconds"), "{e}");
        }
        assert_eq!(p(StoreConfig::builder()), "", "builder() reads nothing");
        let fractional = StoreConfig::builder()
            .clock_skew_margin(Duration::from_millis(1500))
            .build()
            .unwrap_err();
        assert!(
            fractional.to_string().contains("must be whole seconds"),
            "{fractional}"
        );
        let whole = StoreConfig::builder().clock_skew_margin(Duration::from_secs(3));
        assert_eq!(whole.build().unwrap().clock_skew_margin().as_secs(), 3);
    }
}
