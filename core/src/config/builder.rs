//! The builder of a [`StoreConfig`], and the one place every setting is checked.

use std::sync::Arc;
use std::time::Duration;

use super::{laravel_prefix, Backoff, Clock, KeyLayout, LockBackendKind, ReleaseMode, StoreConfig};
use crate::error::{Error, Result};

/// Setters of the builder: `name(arg: Type) => field = value;` sets `self.cfg.field`.
macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident($arg:ident: $ty:ty) => $field:ident = $value:expr;)*) => {$(
        $(#[$doc])*
        pub fn $name(mut self, $arg: $ty) -> Self {
            self.cfg.$field = $value;
            self
        }
    )*};
}

/// Builder for [`StoreConfig`].
#[derive(Debug, Clone)]
pub struct StoreConfigBuilder {
    pub(super) cfg: StoreConfig,
    /// Set by [`StoreConfig::from_vars`] when `CACHE_PREFIX` is unset: the prefix is then
    /// Laravel's own default for this app name and the final layout (see [`laravel_prefix`]).
    pub(super) default_prefix_for: Option<String>,
}

impl StoreConfigBuilder {
    /// Cache prefix exactly as configured in Laravel (`cache.prefix`); the layout decides what is added.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.cfg.prefix = prefix.into();
        self.default_prefix_for = None;
        self
    }
    setters! {
        /// Table name (Laravel's `stores.dynamodb.table`, default `cache`).
        table(table: impl Into<String>) => table = table.into();
        /// Partition key attribute name (default `key`).
        key_attribute(name: impl Into<String>) => key_attribute = name.into();
        /// Value attribute name (default `value`).
        value_attribute(name: impl Into<String>) => value_attribute = name.into();
        /// Expiry attribute name (default `expires_at`).
        expiration_attribute(name: impl Into<String>) => expiration_attribute = name.into();
        /// The key layout of the Laravel version on the PHP side.
        layout(layout: KeyLayout) => layout = layout;
        /// Endpoint URL override (DynamoDB Local, moto, dynalite, a proxy).
        endpoint(url: impl Into<String>) => endpoint = Some(url.into());
        /// Region override.
        region(region: impl Into<String>) => region = Some(region.into());
        /// TCP connect timeout of the client built by [`crate::Store::connect`].
        connect_timeout(d: Duration) => connect_timeout = Some(d);
        /// Timeout of a whole operation including the SDK's retries.
        operation_timeout(d: Duration) => operation_timeout = Some(d);
        /// Timeout of one attempt (one HTTP request; default 3 s); the SDK retries a timed-out
        /// attempt while attempts and the operation timeout last, and a wait for a lock ends within
        /// one attempt timeout of its deadline.
        attempt_timeout(d: Duration) => attempt_timeout = Some(d);
        /// How long past its `expires_at` a lock must be before ddblock takes it over (default 0,
        /// Laravel's own rule): a contender whose clock runs up to this much (plus the second of
        /// expiry rounding) ahead of the holder's cannot take a live lock. Laravel's own condition,
        /// with `:now` moved back by the margin; `doctor` (ddblock-admin) measures the clock offset. Whole seconds only (expiries
        /// are whole seconds): [`StoreConfigBuilder::build`] refuses a fraction with [`Error::Config`].
        clock_skew_margin(d: Duration) => clock_skew_margin = d;
        /// How often heartbeats refresh a held lock (default: a third of the lock's ttl).
        heartbeat_interval(d: Duration) => heartbeat_interval = Some(d);
        /// Attempts per request including the first (the SDK's standard retry mode; default 3).
        max_attempts(n: u32) => max_attempts = Some(n);
        /// Where locks are kept (`DDBLOCK_BACKEND`): the DynamoDB table, or an S3 bucket.
        lock_backend(kind: LockBackendKind) => lock_backend = kind;
        /// The bucket of the S3 lock backend (`DDBLOCK_S3_BUCKET`).
        s3_bucket(bucket: impl Into<String>) => s3_bucket = Some(bucket.into());
        /// Release S3 locks by a conditional overwrite to a released object (`DDBLOCK_S3_RELEASE=
        /// overwrite`) instead of a conditional delete: for servers that ignore `If-Match` on
        /// DeleteObject (a server that refuses it gets the overwrite anyway).
        s3_release_by_overwrite(yes: bool) => s3_release_by_overwrite = yes;
        /// Whether warnings and debug events name the lock, key or event id they are about
        /// (`DDBLOCK_LOG_NAMES=hide`: false, for tables whose keys are secret; they then say
        /// `<hidden>`). Metrics and spans never name one.
        log_names(yes: bool) => log_names = yes;
        /// Let locks run on a DynamoDB global table with multi-Region eventual consistency
        /// (MREC; `DDBLOCK_ALLOW_EVENTUAL_GLOBAL_TABLE=true`), which they refuse by default: its
        /// conditional writes are checked in one Region only, so two Regions can hold one lock.
        /// Safe only when every process that takes these locks writes to the same Region.
        allow_eventual_global_table(yes: bool) => allow_eventual_global_table = yes;
        /// How a lock in the DynamoDB table is released (`DDBLOCK_RELEASE_MODE`): `Delete` (the
        /// default) or `KeepFence`, which expires the item and keeps its fencing token.
        release_mode(mode: ReleaseMode) => release_mode = mode;
        /// Default backoff of `block()`.
        backoff(backoff: Backoff) => backoff = backoff;
        /// The clock for expiry decisions (tests use a manual one).
        clock(clock: Arc<dyn Clock>) => clock = clock;
        /// How the `TableNotFound` error of this front says to create the table (a binding sets its
        /// own way, e.g. `store.create_table()` in Python, `await store.createTable()` in Node).
        create_table_hint(hint: impl Into<String>) => create_table_hint = hint.into();
    }
    /// Checks the configuration and returns it.
    pub fn build(mut self) -> Result<StoreConfig> {
        if let Some(app) = self.default_prefix_for.take() {
            self.cfg.prefix = laravel_prefix(&app, self.cfg.layout)?;
            self.cfg.prefix_from_app_name = Some(app);
        }
        let c = &self.cfg;
        for (what, v) in [
            ("table", &c.table),
            ("key attribute", &c.key_attribute),
            ("value attribute", &c.value_attribute),
            ("expiration attribute", &c.expiration_attribute),
        ] {
            if v.is_empty() {
                return Err(Error::Config(format!(
                    "the {what} name is empty; set it or leave the default"
                )));
            }
        }
        // DynamoDB table names: 3-255 chars of [a-zA-Z0-9_.-].
        let valid_table = (3..=255).contains(&c.table.len())
            && c.table
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
        if !valid_table {
            return Err(Error::Config(format!(
                "table name {:?} is not a valid DynamoDB table name (3-255 characters of a-z, A-Z, 0-9, _ . -)",
                c.table
            )));
        }
        let distinct = c.key_attribute != c.value_attribute
            && c.key_attribute != c.expiration_attribute
            && c.value_attribute != c.expiration_attribute;
        if !distinct {
            return Err(Error::Config(
                "key, value and expiration attribute names must be distinct".into(),
            ));
        }
        if let Some(e) = &c.endpoint {
            if !(e.starts_with("http://") || e.starts_with("https://")) {
                return Err(Error::Config(format!(
                    "endpoint {e:?} must be a URL starting with http:// or https://"
                )));
            }
        }
        if c.max_attempts == Some(0) {
            return Err(Error::Config("max_attempts must be at least 1".into()));
        }
        c.backoff.validate()?;
        // The lock condition compares whole seconds (`expires_at < now - margin`): a fraction
        // would be dropped silently, so it is refused here, once for every front.
        if c.clock_skew_margin.subsec_nanos() != 0 {
            return Err(Error::Config(format!(
                "the clock-skew margin must be whole seconds (the lock condition compares whole \
                 seconds), got {:?}; use {} or {} s",
                c.clock_skew_margin,
                c.clock_skew_margin.as_secs(),
                c.clock_skew_margin.as_secs() + 1
            )));
        }
        match (c.lock_backend, c.s3_bucket.as_deref()) {
            (LockBackendKind::S3, None) => {
                return Err(Error::Config(
                    "the s3 lock backend needs a bucket: DDBLOCK_S3_BUCKET, --bucket, or the \
                     s3_bucket setting"
                        .into(),
                ))
            }
            (_, Some(b)) if !valid_bucket(b) => {
                return Err(Error::Config(format!(
                    "bucket name {b:?} is not a valid S3 bucket name (3-63 characters of a-z, \
                     0-9, . and -, starting and ending with a letter or digit)"
                )))
            }
            _ => {}
        }
        for (what, d) in [
            ("connect timeout", c.connect_timeout),
            ("operation timeout", c.operation_timeout),
            ("attempt timeout", c.attempt_timeout),
            ("heartbeat interval", c.heartbeat_interval),
        ] {
            if d.is_some_and(|d| d.is_zero()) {
                return Err(Error::Config(format!(
                    "the {what} must be more than 0; leave it unset for the default"
                )));
            }
        }
        Ok(self.cfg)
    }
}

/// S3's rules for a bucket name (general purpose buckets).
fn valid_bucket(b: &str) -> bool {
    let edge = |c: Option<u8>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    (3..=63).contains(&b.len())
        && b.bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'.' || c == b'-')
        && edge(b.bytes().next())
        && edge(b.bytes().last())
}
