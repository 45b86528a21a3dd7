//! Every store setting, once: its name in each front, its environment variable, unit, default
//! and doc line. The fronts pass what they were given as a map ([`StoreConfig::from_settings`]),
//! the CLI makes its flags from this table, and `core/tests/settings_doc.rs` generates from it
//! (and checks for drift) docs/configuration.md's table, Python's keywords and Node's options type.

use std::time::Duration;

use super::{Backoff, StoreConfig, StoreConfigBuilder};
use crate::error::{Error, Result};
use Defaults::{All, PerFront};

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
    LogNames,
    AllowEventualGlobalTable,
    WorkerThreads,
}

/// A setting's default: one for every front, or, where fronts need different ones, each front's
/// with the reason (as the table holds a name per front).
#[derive(Debug, Clone, Copy)]
pub enum Defaults {
    /// The same in every front, as the docs say it.
    All(&'static str),
    /// A count per front (never more than the machine's cores): the front, the count, and why.
    PerFront(&'static [(Front, usize, &'static str)]),
}

/// One store setting: its key, its name in each front (`None`: that front does not offer it),
/// its environment variable, unit, default and what it does.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    /// Which setting.
    pub key: Key,
    /// The Rust builder method.
    pub rust: Option<&'static str>,
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
    /// The default.
    pub default: Defaults,
    /// What it does, one line.
    pub doc: &'static str,
}

/// Every store setting, and the bindings' runtime threads (each front's spellings are generated
/// from this table).
pub const SETTINGS: &[Setting] = &[
    Setting {
        key: Key::Table,
        rust: Some("table"),
        python: Some("table"),
        node: Some("table"),
        cli: Some("table"),
        env: Some("DYNAMODB_CACHE_TABLE"),
        unit: Unit::Text,
        default: All("`cache`"),
        doc: "the table (Laravel's `stores.dynamodb.table`)",
    },
    Setting {
        key: Key::Prefix,
        rust: Some("prefix"),
        python: Some("prefix"),
        node: Some("prefix"),
        cli: Some("prefix"),
        env: Some("CACHE_PREFIX"),
        unit: Unit::Text,
        default: All("Laravel's, from `APP_NAME` ([below](#the-default-prefix))"),
        doc: "Laravel's `cache.prefix`, exactly as configured (an empty value is an empty prefix)",
    },
    Setting {
        key: Key::Layout,
        rust: Some("layout"),
        python: Some("layout"),
        node: Some("layout"),
        cli: Some("layout"),
        env: Some("DDBLOCK_LAYOUT"),
        unit: Unit::Choice(&["laravel8", "laravel11", "laravel12"]),
        default: All("`laravel12`"),
        doc: "the key layout of the PHP side's Laravel version: `laravel8` (8–10), `laravel11`, \
              `laravel12` (12+)",
    },
    Setting {
        key: Key::Endpoint,
        rust: Some("endpoint"),
        python: Some("endpoint_url"),
        node: Some("endpoint"),
        cli: Some("endpoint"),
        env: Some("DYNAMODB_ENDPOINT"),
        unit: Unit::Text,
        default: All("AWS's"),
        doc: "the endpoint URL (DynamoDB Local, moto, dynalite, a proxy); it serves S3 too",
    },
    Setting {
        key: Key::Region,
        rust: Some("region"),
        python: Some("region"),
        node: Some("region"),
        cli: Some("region"),
        env: Some("AWS_DEFAULT_REGION"),
        unit: Unit::Text,
        default: All("the AWS SDK's chain (`AWS_REGION`, the profile), else `us-east-1`"),
        doc: "the AWS region (instance metadata is never asked)",
    },
    Setting {
        key: Key::KeyAttribute,
        rust: Some("key_attribute"),
        python: Some("key_attribute"),
        node: Some("keyAttribute"),
        cli: Some("key-attribute"),
        env: None,
        unit: Unit::Text,
        default: All("`key`"),
        doc: "the partition key attribute (Laravel's `stores.dynamodb.attributes.key`)",
    },
    Setting {
        key: Key::ValueAttribute,
        rust: Some("value_attribute"),
        python: Some("value_attribute"),
        node: Some("valueAttribute"),
        cli: Some("value-attribute"),
        env: None,
        unit: Unit::Text,
        default: All("`value`"),
        doc: "the value attribute",
    },
    Setting {
        key: Key::ExpirationAttribute,
        rust: Some("expiration_attribute"),
        python: Some("expiration_attribute"),
        node: Some("expirationAttribute"),
        cli: Some("expiration-attribute"),
        env: None,
        unit: Unit::Text,
        default: All("`expires_at`"),
        doc: "the expiry attribute (Unix seconds; TTL is enabled on it)",
    },
    Setting {
        key: Key::ConnectTimeout,
        rust: Some("connect_timeout"),
        python: Some("connect_timeout"),
        node: Some("connectTimeoutMs"),
        cli: Some("connect-timeout"),
        env: None,
        unit: Unit::Seconds,
        default: All("the AWS SDK's (3.1 s)"),
        doc: "the TCP connect timeout",
    },
    Setting {
        key: Key::OperationTimeout,
        rust: Some("operation_timeout"),
        python: Some("operation_timeout"),
        node: Some("operationTimeoutMs"),
        cli: Some("operation-timeout"),
        env: None,
        unit: Unit::Seconds,
        default: All("none: the attempts and their timeout bound a request"),
        doc: "the timeout of a whole request, the SDK's retries included",
    },
    Setting {
        key: Key::AttemptTimeout,
        rust: Some("attempt_timeout"),
        python: Some("attempt_timeout"),
        node: Some("attemptTimeoutMs"),
        cli: Some("attempt-timeout"),
        env: None,
        unit: Unit::Seconds,
        default: All("3 s"),
        doc: "the timeout of one attempt (one HTTP request); a lock wait ends within one attempt \
              timeout of its deadline",
    },
    Setting {
        key: Key::MaxAttempts,
        rust: Some("max_attempts"),
        python: Some("max_attempts"),
        node: Some("maxAttempts"),
        cli: Some("max-attempts"),
        env: None,
        unit: Unit::Count,
        default: All("the AWS SDK's (3)"),
        doc: "attempts per request, the first included",
    },
    Setting {
        key: Key::Backoff,
        rust: Some("backoff"),
        python: Some("backoff"),
        node: None,
        cli: None,
        env: None,
        unit: Unit::Backoff,
        default: All("50 ms doubling to 1 s, jitter 0.5"),
        doc: "the pauses of a lock wait between looks at a held lock (capped exponential, \
              jittered)",
    },
    Setting {
        key: Key::ClockSkewMargin,
        rust: Some("clock_skew_margin"),
        python: Some("clock_skew_margin"),
        node: Some("clockSkewMarginMs"),
        cli: Some("clock-skew-margin"),
        env: Some("DDBLOCK_CLOCK_SKEW_MARGIN"),
        unit: Unit::WholeSeconds,
        default: All("0 (Laravel's own rule)"),
        doc: "how long past its expiry a lock must be before it is taken over \
              ([below](#the-clock-skew-margin))",
    },
    Setting {
        key: Key::HeartbeatInterval,
        rust: Some("heartbeat_interval"),
        python: Some("heartbeat_interval"),
        node: Some("heartbeatIntervalMs"),
        cli: Some("heartbeat-interval"),
        env: None,
        unit: Unit::Seconds,
        default: All("a third of the lock's ttl"),
        doc: "how often a held lock's heartbeat refreshes it (`with`, `withLock`, `run \
              --heartbeat`)",
    },
    Setting {
        key: Key::Backend,
        rust: Some("lock_backend"),
        python: Some("backend"),
        node: Some("backend"),
        cli: Some("backend"),
        env: Some("DDBLOCK_BACKEND"),
        unit: Unit::Choice(&["dynamodb", "s3"]),
        default: All("`dynamodb`"),
        doc: "where locks live: the table, or an S3 bucket ([s3](s3.md)); cache entries, once and \
              compare-and-set stay in the table",
    },
    Setting {
        key: Key::Bucket,
        rust: Some("s3_bucket"),
        python: Some("bucket"),
        node: Some("bucket"),
        cli: Some("bucket"),
        env: Some("DDBLOCK_S3_BUCKET"),
        unit: Unit::Text,
        default: All("none (required with `s3`)"),
        doc: "the bucket of the `s3` lock backend",
    },
    Setting {
        key: Key::S3Release,
        rust: Some("s3_release_by_overwrite"),
        python: None,
        node: None,
        cli: None,
        env: Some("DDBLOCK_S3_RELEASE"),
        unit: Unit::Choice(&["delete", "overwrite"]),
        default: All("`delete`"),
        doc: "how the `s3` backend releases ([s3](s3.md#which-release-is-used-and-when))",
    },
    Setting {
        key: Key::ReleaseMode,
        rust: Some("release_mode"),
        python: Some("release_mode"),
        node: Some("releaseMode"),
        cli: Some("release-mode"),
        env: Some("DDBLOCK_RELEASE_MODE"),
        unit: Unit::Choice(&["delete", "keep-fence"]),
        default: All("`delete`"),
        doc:
            "how a lock in the table is released: deleted, or expired with its fencing token kept \
              ([semantics](semantics.md#release-modes))",
    },
    Setting {
        key: Key::LogNames,
        rust: Some("log_names"),
        python: Some("log_names"),
        node: Some("logNames"),
        cli: Some("log-names"),
        env: Some("DDBLOCK_LOG_NAMES"),
        unit: Unit::Choice(&["show", "hide"]),
        default: All("`show`"),
        doc: "whether warnings and debug events name the lock, key or event id they are about; \
              `hide` for a table whose keys are secret (they say `<hidden>`; metrics and spans \
              never name one) ([observability](observability.md))",
    },
    Setting {
        key: Key::AllowEventualGlobalTable,
        rust: Some("allow_eventual_global_table"),
        python: Some("allow_eventual_global_table"),
        node: Some("allowEventualGlobalTable"),
        cli: Some("allow-eventual-global-table"),
        env: Some("DDBLOCK_ALLOW_EVENTUAL_GLOBAL_TABLE"),
        unit: Unit::Choice(&["false", "true"]),
        default: All("`false`"),
        doc: "`true` lets locks run on a global table with eventual consistency (MREC), which \
              they refuse: only safe when every process that takes them writes to one Region \
              ([semantics](semantics.md#multi-region))",
    },
    Setting {
        key: Key::WorkerThreads,
        rust: None,
        python: None,
        node: None,
        cli: None,
        env: Some("DDBLOCK_WORKER_THREADS"),
        unit: Unit::Count,
        default: PerFront(&[
            (
                Front::Python,
                2,
                "a second worker keeps requests moving while the other waits for the GIL to hand \
                 a result to Python",
            ),
            (
                Front::Node,
                1,
                "JavaScript runs on its own thread, so one worker makes two threads; a worker per \
                 core (napi-rs's default) wakes idle workers at every step of a request: a fifth \
                 more CPU per lock cycle on two cores and no more cycles per second",
            ),
        ]),
        doc: "the worker threads of the Python and Node bindings' tokio runtime, read when it \
              starts (a Rust program runs its own runtime)",
    },
];

impl Setting {
    /// This setting's name in `front`, if that front offers it.
    pub fn name_in(&self, front: Front) -> Option<&'static str> {
        match front {
            Front::Rust => self.rust,
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
        let name = self.name_in(front).or(self.env).unwrap_or_default();
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
            // Not the store's: checked here, read by the binding's runtime (worker_threads).
            Key::WorkerThreads => match count(name, value)? {
                0 => return Err(Error::Config(format!("{name} must be 1 or more; got 0"))),
                _ => b,
            },
            Key::Backoff => b.backoff(backoff(front, name, value)?),
            Key::ClockSkewMargin => b.clock_skew_margin(duration(front, name, value, true)?),
            Key::HeartbeatInterval => b.heartbeat_interval(secs(value)?),
            Key::Backend => b.lock_backend(text(value)?.parse()?),
            Key::Bucket => b.s3_bucket(text(value)?),
            Key::ReleaseMode => b.release_mode(text(value)?.parse()?),
            Key::LogNames => b.log_names(!other_word(name, &text(value)?, ["show", "hide"])?),
            Key::AllowEventualGlobalTable => {
                b.allow_eventual_global_table(other_word(name, &text(value)?, ["false", "true"])?)
            }
            Key::S3Release => {
                b.s3_release_by_overwrite(other_word(name, &text(value)?, ["delete", "overwrite"])?)
            }
        })
    }
}

/// A choice of two words (the default first) as whether `got` is the other one.
fn other_word(name: &str, got: &str, [default, other]: [&str; 2]) -> Result<bool> {
    match got.trim() {
        w if w == default => Ok(false),
        w if w == other => Ok(true),
        w => Err(Error::Config(format!(
            "{name} must be {default} (the default) or {other}, got {w:?}"
        ))),
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

/// The worker threads of `front`'s runtime: `DDBLOCK_WORKER_THREADS` read through `get` when it is
/// 1 or more (a bad value is refused when a store is made), else the front's default in the table
/// (1 where it gives none), never more than the machine's cores.
pub fn worker_threads(front: Front, get: impl Fn(&str) -> Option<String>) -> usize {
    let Some(s) = SETTINGS.iter().find(|s| s.key == Key::WorkerThreads) else {
        return 1;
    };
    let given = s.env.and_then(get).map(SettingValue::Text);
    if let Some(Ok(n @ 1..)) = given.map(|v| count("", v)) {
        return n as usize;
    }
    let default = match s.default {
        PerFront(defaults) => defaults.iter().find(|d| d.0 == front).map_or(1, |d| d.1),
        All(_) => 1,
    };
    default.min(std::thread::available_parallelism().map_or(1, |n| n.get()))
}
