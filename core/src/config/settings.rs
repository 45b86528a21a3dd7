//! Every store setting, once: its name in each front, its environment variable, unit, default
//! and doc line. The fronts pass what they were given as a map ([`StoreConfig::from_settings`]),
//! the CLI makes its flags from this table, and docs/configuration.md is generated from it
//! ([`settings_markdown`], checked for drift by `core/tests/settings_doc.rs`).

use std::fmt::Write as _;
use std::time::Duration;

use super::{Backoff, StoreConfig, StoreConfigBuilder};
use crate::error::{Error, Result};

/// Which front names a setting: each spells it its own way (Node in camelCase, its durations in
/// milliseconds), and the environment uses Laravel's variable names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Front {
    /// The Rust builder's method name.
    Rust,
    /// Python's keyword argument (seconds for durations).
    Python,
    /// Node's option (camelCase; durations in milliseconds, named `...Ms`).
    Node,
    /// The CLI's flag, without `--` (seconds for durations).
    Cli,
    /// The environment variable (text, seconds for durations).
    Env,
}

impl Front {
    fn label(self) -> &'static str {
        match self {
            Front::Rust => "Rust builder",
            Front::Python => "Python",
            Front::Node => "Node",
            Front::Cli => "CLI",
            Front::Env => "environment",
        }
    }
}

/// What a setting holds: how its value is read and shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A string.
    Text,
    /// One of a few words.
    Choice(&'static [&'static str]),
    /// A duration: seconds (Python, CLI, environment) or milliseconds (Node).
    Seconds,
    /// A duration in whole seconds (milliseconds that are whole seconds, in Node).
    WholeSeconds,
    /// A whole number, 1 or more.
    Count,
    /// Four numbers: initial and max wait (durations), multiplier, jitter.
    Backoff,
}

/// A setting's value as a front hands it over: text (the CLI, the environment), a number
/// (Python, Node), or the four numbers of a backoff.
#[derive(Debug, Clone, PartialEq)]
pub enum SettingValue {
    /// Text, parsed by the setting's unit.
    Text(String),
    /// A number in the front's unit (seconds, or milliseconds in Node).
    Number(f64),
    /// A backoff: initial and max (the front's duration unit), multiplier, jitter.
    Backoff([f64; 4]),
}

/// The settings, named once (each front's spelling is in [`Setting`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)] // each variant is documented by its row in SETTINGS
pub enum Key {
    Table,
    Prefix,
    Layout,
    Endpoint,
    Region,
    KeyAttribute,
    ValueAttribute,
    ExpirationAttribute,
    ConnectTimeout,
    OperationTimeout,
    AttemptTimeout,
    MaxAttempts,
    Backoff,
    ClockSkewMargin,
    HeartbeatInterval,
    Backend,
    Bucket,
    S3Release,
    ReleaseMode,
}

/// One store setting: its key, its name in each front (`None`: that front does not offer it),
/// its environment variable, unit, default and what it does.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    /// Which setting.
    pub key: Key,
    /// The Rust builder method.
    pub rust: &'static str,
    /// Python's keyword argument.
    pub python: Option<&'static str>,
    /// Node's option.
    pub node: Option<&'static str>,
    /// The CLI's flag, without `--`.
    pub cli: Option<&'static str>,
    /// The environment variable (Laravel's name where Laravel has one).
    pub env: Option<&'static str>,
    /// What it holds.
    pub unit: Unit,
    /// The default, as the docs say it.
    pub default: &'static str,
    /// What it does, one line.
    pub doc: &'static str,
}

/// Every store setting (docs/configuration.md is generated from this table).
pub const SETTINGS: &[Setting] = &[
    Setting {
        key: Key::Table,
        rust: "table",
        python: Some("table"),
        node: Some("table"),
        cli: Some("table"),
        env: Some("DYNAMODB_CACHE_TABLE"),
        unit: Unit::Text,
        default: "`cache`",
        doc: "the table (Laravel's `stores.dynamodb.table`)",
    },
    Setting {
        key: Key::Prefix,
        rust: "prefix",
        python: Some("prefix"),
        node: Some("prefix"),
        cli: Some("prefix"),
        env: Some("CACHE_PREFIX"),
        unit: Unit::Text,
        default: "Laravel's, from `APP_NAME` ([below](#the-default-prefix))",
        doc: "Laravel's `cache.prefix`, exactly as configured (an empty value is an empty prefix)",
    },
    Setting {
        key: Key::Layout,
        rust: "layout",
        python: Some("layout"),
        node: Some("layout"),
        cli: Some("layout"),
        env: Some("DDBLOCK_LAYOUT"),
        unit: Unit::Choice(&["laravel8", "laravel11", "laravel12"]),
        default: "`laravel12`",
        doc: "the key layout of the PHP side's Laravel version: `laravel8` (8–10), `laravel11`, \
              `laravel12` (12+)",
    },
    Setting {
        key: Key::Endpoint,
        rust: "endpoint",
        python: Some("endpoint_url"),
        node: Some("endpoint"),
        cli: Some("endpoint"),
        env: Some("DYNAMODB_ENDPOINT"),
        unit: Unit::Text,
        default: "AWS's",
        doc: "the endpoint URL (DynamoDB Local, moto, dynalite, a proxy); it serves S3 too",
    },
    Setting {
        key: Key::Region,
        rust: "region",
        python: Some("region"),
        node: Some("region"),
        cli: Some("region"),
        env: Some("AWS_DEFAULT_REGION"),
        unit: Unit::Text,
        default: "the AWS SDK's chain (`AWS_REGION`, the profile), else `us-east-1`",
        doc: "the AWS region (instance metadata is never asked)",
    },
    Setting {
        key: Key::KeyAttribute,
        rust: "key_attribute",
        python: Some("key_attribute"),
        node: Some("keyAttribute"),
        cli: Some("key-attribute"),
        env: None,
        unit: Unit::Text,
        default: "`key`",
        doc: "the partition key attribute (Laravel's `stores.dynamodb.attributes.key`)",
    },
    Setting {
        key: Key::ValueAttribute,
        rust: "value_attribute",
        python: Some("value_attribute"),
        node: Some("valueAttribute"),
        cli: Some("value-attribute"),
        env: None,
        unit: Unit::Text,
        default: "`value`",
        doc: "the value attribute",
    },
    Setting {
        key: Key::ExpirationAttribute,
        rust: "expiration_attribute",
        python: Some("expiration_attribute"),
        node: Some("expirationAttribute"),
        cli: Some("expiration-attribute"),
        env: None,
        unit: Unit::Text,
        default: "`expires_at`",
        doc: "the expiry attribute (Unix seconds; TTL is enabled on it)",
    },
    Setting {
        key: Key::ConnectTimeout,
        rust: "connect_timeout",
        python: Some("connect_timeout"),
        node: Some("connectTimeoutMs"),
        cli: Some("connect-timeout"),
        env: None,
        unit: Unit::Seconds,
        default: "the AWS SDK's (3.1 s)",
        doc: "the TCP connect timeout",
    },
    Setting {
        key: Key::OperationTimeout,
        rust: "operation_timeout",
        python: Some("operation_timeout"),
        node: Some("operationTimeoutMs"),
        cli: Some("operation-timeout"),
        env: None,
        unit: Unit::Seconds,
        default: "none: the attempts and their timeout bound a request",
        doc: "the timeout of a whole request, the SDK's retries included",
    },
    Setting {
        key: Key::AttemptTimeout,
        rust: "attempt_timeout",
        python: Some("attempt_timeout"),
        node: Some("attemptTimeoutMs"),
        cli: Some("attempt-timeout"),
        env: None,
        unit: Unit::Seconds,
        default: "3 s",
        doc: "the timeout of one attempt (one HTTP request); a lock wait ends within one attempt \
              timeout of its deadline",
    },
    Setting {
        key: Key::MaxAttempts,
        rust: "max_attempts",
        python: Some("max_attempts"),
        node: Some("maxAttempts"),
        cli: Some("max-attempts"),
        env: None,
        unit: Unit::Count,
        default: "the AWS SDK's (3)",
        doc: "attempts per request, the first included",
    },
    Setting {
        key: Key::Backoff,
        rust: "backoff",
        python: Some("backoff"),
        node: None,
        cli: None,
        env: None,
        unit: Unit::Backoff,
        default: "50 ms doubling to 1 s, jitter 0.5",
        doc: "the pauses of a lock wait between looks at a held lock (capped exponential, \
              jittered)",
    },
    Setting {
        key: Key::ClockSkewMargin,
        rust: "clock_skew_margin",
        python: Some("clock_skew_margin"),
        node: Some("clockSkewMarginMs"),
        cli: Some("clock-skew-margin"),
        env: Some("DDBLOCK_CLOCK_SKEW_MARGIN"),
        unit: Unit::WholeSeconds,
        default: "0 (Laravel's own rule)",
        doc: "how long past its expiry a lock must be before it is taken over \
              ([below](#the-clock-skew-margin))",
    },
    Setting {
        key: Key::HeartbeatInterval,
        rust: "heartbeat_interval",
        python: Some("heartbeat_interval"),
        node: Some("heartbeatIntervalMs"),
        cli: Some("heartbeat-interval"),
        env: None,
        unit: Unit::Seconds,
        default: "a third of the lock's ttl",
        doc: "how often a held lock's heartbeat refreshes it (`with`, `withLock`, `run \
              --heartbeat`)",
    },
    Setting {
        key: Key::Backend,
        rust: "lock_backend",
        python: Some("backend"),
        node: Some("backend"),
        cli: Some("backend"),
        env: Some("DDBLOCK_BACKEND"),
        unit: Unit::Choice(&["dynamodb", "s3"]),
        default: "`dynamodb`",
        doc: "where locks live: the table, or an S3 bucket ([s3](s3.md)); cache entries, once and \
              compare-and-set stay in the table",
    },
    Setting {
        key: Key::Bucket,
        rust: "s3_bucket",
        python: Some("bucket"),
        node: Some("bucket"),
        cli: Some("bucket"),
        env: Some("DDBLOCK_S3_BUCKET"),
        unit: Unit::Text,
        default: "none (required with `s3`)",
        doc: "the bucket of the `s3` lock backend",
    },
    Setting {
        key: Key::S3Release,
        rust: "s3_release_by_overwrite",
        python: None,
        node: None,
        cli: None,
        env: Some("DDBLOCK_S3_RELEASE"),
        unit: Unit::Choice(&["delete", "overwrite"]),
        default: "`delete`",
        doc: "how the `s3` backend releases ([s3](s3.md#which-release-is-used-and-when))",
    },
    Setting {
        key: Key::ReleaseMode,
        rust: "release_mode",
        python: Some("release_mode"),
        node: Some("releaseMode"),
        cli: Some("release-mode"),
        env: Some("DDBLOCK_RELEASE_MODE"),
        unit: Unit::Choice(&["delete", "keep-fence"]),
        default: "`delete`",
        doc:
            "how a lock in the table is released: deleted, or expired with its fencing token kept \
              ([semantics](semantics.md#release-modes))",
    },
];

impl Setting {
    /// This setting's name in `front`, if that front offers it.
    pub fn name_in(&self, front: Front) -> Option<&'static str> {
        match front {
            Front::Rust => Some(self.rust),
            Front::Python => self.python,
            Front::Node => self.node,
            Front::Cli => self.cli,
            Front::Env => self.env,
        }
    }

    /// The setting `front` calls `name`; an unknown name is a `Config` error listing the names.
    pub fn find(front: Front, name: &str) -> Result<&'static Setting> {
        SETTINGS
            .iter()
            .find(|s| s.name_in(front) == Some(name))
            .ok_or_else(|| {
                let known: Vec<&str> = SETTINGS.iter().filter_map(|s| s.name_in(front)).collect();
                Error::Config(format!(
                    "unknown {} setting {name:?}; the settings are: {}",
                    front.label(),
                    known.join(", ")
                ))
            })
    }

    /// Sets this setting on `b` from `value` as `front` gave it (its name and unit).
    pub fn apply(
        &self,
        front: Front,
        b: StoreConfigBuilder,
        value: SettingValue,
    ) -> Result<StoreConfigBuilder> {
        let name = self.name_in(front).unwrap_or(self.rust);
        let text = |v: SettingValue| match v {
            SettingValue::Text(t) => Ok(t),
            other => Err(Error::Config(format!("{name} must be text, got {other:?}"))),
        };
        let secs = |v: SettingValue| duration(front, name, v, false);
        Ok(match self.key {
            Key::Table => b.table(text(value)?),
            Key::Prefix => b.prefix(text(value)?),
            Key::Layout => b.layout(text(value)?.parse()?),
            Key::Endpoint => b.endpoint(text(value)?),
            Key::Region => b.region(text(value)?),
            Key::KeyAttribute => b.key_attribute(text(value)?),
            Key::ValueAttribute => b.value_attribute(text(value)?),
            Key::ExpirationAttribute => b.expiration_attribute(text(value)?),
            Key::ConnectTimeout => b.connect_timeout(secs(value)?),
            Key::OperationTimeout => b.operation_timeout(secs(value)?),
            Key::AttemptTimeout => b.attempt_timeout(secs(value)?),
            Key::MaxAttempts => b.max_attempts(count(name, value)?),
            Key::Backoff => b.backoff(backoff(front, name, value)?),
            Key::ClockSkewMargin => b.clock_skew_margin(duration(front, name, value, true)?),
            Key::HeartbeatInterval => b.heartbeat_interval(secs(value)?),
            Key::Backend => b.lock_backend(text(value)?.parse()?),
            Key::Bucket => b.s3_bucket(text(value)?),
            Key::ReleaseMode => b.release_mode(text(value)?.parse()?),
            Key::S3Release => match text(value)?.trim() {
                "delete" => b.s3_release_by_overwrite(false),
                "overwrite" => b.s3_release_by_overwrite(true),
                other => {
                    return Err(Error::Config(format!(
                        "{name} must be delete (the default) or overwrite, got {other:?}"
                    )))
                }
            },
        })
    }
}

/// A duration setting from a number in the front's unit (Node: milliseconds) or from text
/// (seconds); `whole`: whole seconds only (text is then a whole number).
fn duration(front: Front, name: &str, v: SettingValue, whole: bool) -> Result<Duration> {
    let (unit, per_sec) = if front == Front::Node {
        ("milliseconds", 1000.0)
    } else {
        ("seconds", 1.0)
    };
    let n = match v {
        SettingValue::Number(n) => n,
        SettingValue::Text(t) if whole => {
            t.trim().parse::<u64>().map(|s| s as f64).map_err(|_| {
                Error::Config(format!(
                    "{name} must be a whole number of seconds (0 or more), got {t:?}"
                ))
            })?
        }
        SettingValue::Text(t) => t
            .trim()
            .parse::<f64>()
            .map_err(|_| Error::Config(format!("{name} must be a number of {unit}, got {t:?}")))?,
        other => {
            return Err(Error::Config(format!(
                "{name} must be a number of {unit}, got {other:?}"
            )))
        }
    };
    Duration::try_from_secs_f64(n / per_sec).map_err(|_| {
        Error::Config(format!(
            "{name} must be a finite number of {unit}, 0 or more; got {n}"
        ))
    })
}

/// A count: a whole number from 1 to 2^32 - 1 (0 is refused by the builder, with its reason).
fn count(name: &str, v: SettingValue) -> Result<u32> {
    let n = match v {
        SettingValue::Number(n) => n,
        SettingValue::Text(t) => t.trim().parse::<f64>().unwrap_or(f64::NAN),
        SettingValue::Backoff(_) => f64::NAN,
    };
    if n.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&n) {
        Ok(n as u32)
    } else {
        Err(Error::Config(format!(
            "{name} must be a whole number, 1 or more; got {n}"
        )))
    }
}

fn backoff(front: Front, name: &str, v: SettingValue) -> Result<Backoff> {
    let SettingValue::Backoff([initial, max, multiplier, jitter]) = v else {
        return Err(Error::Config(format!(
            "{name} must be four numbers: initial, max, multiplier, jitter"
        )));
    };
    let d = |what: &str, n: f64| {
        duration(
            front,
            &format!("{name} {what}"),
            SettingValue::Number(n),
            false,
        )
    };
    Ok(Backoff {
        initial: d("initial", initial)?,
        max: d("max", max)?,
        multiplier,
        jitter,
    })
}

impl StoreConfig {
    /// The configuration rule of every front in one call: `given` (the settings the caller set,
    /// by `front`'s names) win, Laravel's variables read through `env` fill the rest
    /// ([`StoreConfig::from_vars`]), Laravel's defaults last. An unknown name is a `Config`
    /// error naming the settings `front` has.
    pub fn from_settings<I>(
        front: Front,
        given: I,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<StoreConfigBuilder>
    where
        I: IntoIterator<Item = (String, SettingValue)>,
    {
        let mut b = StoreConfig::from_vars(env)?;
        for (name, value) in given {
            b = Setting::find(front, &name)?.apply(front, b, value)?;
        }
        Ok(b)
    }
}

/// The settings table of docs/configuration.md, in Markdown.
pub fn settings_markdown() -> String {
    let code = |n: Option<&str>, pre: &str| n.map_or("—".to_owned(), |n| format!("`{pre}{n}`"));
    let mut out = String::from(
        "| setting | Rust builder | Python | Node | CLI | environment | unit | default |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for s in SETTINGS {
        let unit = match s.unit {
            Unit::Text => "text".to_owned(),
            Unit::Choice(words) => words
                .iter()
                .map(|w| format!("`{w}`"))
                .collect::<Vec<_>>()
                .join(", "),
            Unit::Seconds => "seconds (Node: ms)".to_owned(),
            Unit::WholeSeconds => "whole seconds (Node: ms)".to_owned(),
            Unit::Count => "a whole number, 1 or more".to_owned(),
            Unit::Backoff => "initial, max (seconds), multiplier, jitter".to_owned(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {unit} | {} |",
            s.doc,
            code(Some(s.rust), "."),
            code(s.python, ""),
            code(s.node, ""),
            code(s.cli, "--"),
            code(s.env, ""),
            s.default
        );
    }
    out
}
