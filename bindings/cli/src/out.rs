//! Output: the exit statuses, JSON shapes, times, durations, PHP values, errors, progress.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use clap::ValueEnum;
use ddblock::time::{relative, utc};
use ddblock::{
    redact_owner, AcquireOutcome, Clock, ErrorKind, Holder, PhpKey, PhpValue, StoredValue,
};
use ddblock_admin::ScanProgress;
use serde_json::{json, Map, Value};

/// Exit status: success.
pub const EXIT_OK: i32 = 0;
/// Exit status: an error, or a release/get that found nothing to act on.
pub const EXIT_FAILURE: i32 = 1;
/// Exit status: bad command line (as clap's own usage errors).
pub const EXIT_USAGE: i32 = 2;
/// Exit status: a compare-and-set found the entry changed (`put --if-version`), or a once-claim
/// was lost before it was marked done.
pub const EXIT_CONFLICT: i32 = 3;
/// Exit status: the lock is held by someone else (EX_TEMPFAIL); a once event in progress elsewhere.
pub const EXIT_HELD: i32 = 75;
/// Exit status: `run --heartbeat` lost the lease while CMD ran (CMD was stopped, by default).
pub const EXIT_LEASE_LOST: i32 = 76;

/// When to show scan progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Progress {
    /// When stderr is a terminal and --json is off.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// Prints one JSON value on a line of stdout.
pub fn print_json(v: &Value) {
    println!("{v}");
}

/// Prints a ddblock error as one line on stderr (and as JSON on stdout with `--json`); returns the
/// exit status (75 for a lock timeout, 76 for a lost lease, 3 for a conflict, else 1).
pub fn error(e: &ddblock::Error, json: bool) -> i32 {
    let mut msg = one_line(&e.to_string());
    // The flags that set what a transport error is about.
    if e.kind() == ErrorKind::Transport {
        msg.push_str(
            " [ddblock flags: --endpoint, --region, --connect-timeout, --operation-timeout]",
        );
    }
    eprintln!("ddblock: {msg}");
    if json {
        print_json(&json!({"error": {"kind": e.kind().as_str(), "message": msg}}));
    }
    match e.kind() {
        ErrorKind::LockTimeout => EXIT_HELD,
        ErrorKind::LeaseLost => EXIT_LEASE_LOST,
        ErrorKind::InvalidKey
        | ErrorKind::InvalidTtl
        | ErrorKind::TableNotFound
        | ErrorKind::Throttled
        | ErrorKind::OutcomeUnknown
        | ErrorKind::Codec
        | ErrorKind::Service
        | ErrorKind::Transport
        | ErrorKind::Credentials
        | ErrorKind::Config
        | ErrorKind::Unsupported => EXIT_FAILURE,
        ErrorKind::Conflict => EXIT_CONFLICT,
    }
}

/// Prints a problem of the CLI itself (not a core error) as one line; returns 1.
pub fn fail(msg: &str, json: bool) -> i32 {
    let msg = one_line(msg);
    eprintln!("ddblock: {msg}");
    if json {
        print_json(&json!({"error": {"kind": "cli", "message": msg}}));
    }
    EXIT_FAILURE
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The current Unix time in seconds.
pub fn now() -> i64 {
    ddblock::SystemClock.now()
}

/// An owner as JSON: a number for an owner stored as `N`, else the string, or null.
pub fn owner_json(value: Option<&StoredValue>, owner: Option<&str>) -> Value {
    if let Some(StoredValue::Number(n)) = value {
        if let Ok(num) = n.trim().parse::<serde_json::Number>() {
            return Value::Number(num);
        }
    }
    owner.map_or(Value::Null, |o| Value::String(o.to_owned()))
}

/// A holder as JSON: `{"owner", "expires_at"}`.
pub fn holder_json(h: &Holder) -> Value {
    json!({
        "owner": owner_json(h.value.as_ref(), h.owner.as_deref()),
        "expires_at": h.expires_at,
        "fence": h.fence,
    })
}

/// "owner "abcd…" (16 chars) until 2026-11-22 02:30:00 UTC (in 25s)".
pub fn holder_text(h: &Holder) -> String {
    format!(
        "{} {}",
        redact_owner(h.owner.as_deref()),
        until(h.expires_at)
    )
}

/// The JSON of an acquire attempt (also printed by `run --json` when the lock is held).
pub fn acquire_json(lock: &ddblock::Lock, outcome: &AcquireOutcome) -> Value {
    match outcome {
        AcquireOutcome::Acquired {
            expires_at,
            recovered,
            fence,
        } => json!({
            "acquired": true,
            "name": lock.name(),
            "key": lock.key(),
            "owner": owner_json(Some(lock.stored_owner()), Some(lock.owner())),
            "expires_at": expires_at,
            "recovered": recovered,
            "fence": fence,
            "holder": null,
        }),
        AcquireOutcome::Held(h) => json!({
            "acquired": false,
            "name": lock.name(),
            "key": lock.key(),
            "owner": owner_json(Some(lock.stored_owner()), Some(lock.owner())),
            "expires_at": null,
            "recovered": false,
            "fence": null,
            "holder": holder_json(h),
        }),
    }
}

/// "lock NAME is held by owner "abcd…" (16 chars) until ... (in 25s)", NAME shell-quoted.
pub fn held_message(name: &str, h: &Holder) -> String {
    format!("lock {} is held by {}", shell(name), holder_text(h))
}

/// `word` as a shell reads it back, for names and keys a person may paste into a command: bare
/// when every character is safe, else in single quotes (a `'` as `'"'"'`). A lock name such as
/// Laravel's `laravel-queue-overlap:App\Jobs\SyncAccount:0` loses its backslashes unquoted.
pub fn shell(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        return word.to_owned();
    }
    shell_quoted(word)
}

/// `word` in single quotes always (`'a'`), as a shell reads it back.
pub fn shell_quoted(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\"'\"'"))
}

/// "until 2026-11-22 02:30:00 UTC (in 25s)", or "without expiry".
pub fn until(expires_at: Option<i64>) -> String {
    match expires_at {
        Some(t) => format!("until {} ({})", utc(t), relative(t - now())),
        None => "without expiry".into(),
    }
}

/// A PHP value as JSON: null/bool/int/float/string as themselves (INF/NAN as strings), lists
/// (keys 0..n in order) as arrays, other arrays as objects with string keys, objects as
/// `{"__class": C, ...properties}` (enum cases `{"__class", "__case"}`, Serializable payloads
/// `{"__class", "__serialized"}`).
pub fn php_to_json(v: &PhpValue) -> Value {
    match v {
        PhpValue::Null => Value::Null,
        PhpValue::Bool(b) => Value::Bool(*b),
        PhpValue::Int(i) => json!(i),
        PhpValue::Float(f) => serde_json::Number::from_f64(*f).map_or_else(
            || {
                Value::String(
                    match () {
                        _ if f.is_nan() => "NAN",
                        _ if *f > 0.0 => "INF",
                        _ => "-INF",
                    }
                    .into(),
                )
            },
            Value::Number,
        ),
        PhpValue::String(b) => Value::String(String::from_utf8_lossy(b).into_owned()),
        PhpValue::Array(entries) => {
            let is_list = entries
                .iter()
                .enumerate()
                .all(|(i, (k, _))| *k == PhpKey::Int(i as i64));
            if is_list {
                Value::Array(entries.iter().map(|(_, v)| php_to_json(v)).collect())
            } else {
                Value::Object(entries_json(entries))
            }
        }
        PhpValue::Object(o) => {
            let mut m = Map::new();
            m.insert("__class".into(), Value::String(o.class.clone()));
            match &o.kind {
                ddblock::codec::ObjectKind::Object => m.extend(entries_json(&o.properties)),
                ddblock::codec::ObjectKind::Enum(case) => {
                    m.insert("__case".into(), Value::String(case.clone()));
                }
                ddblock::codec::ObjectKind::Custom(payload) => {
                    m.insert(
                        "__serialized".into(),
                        Value::String(String::from_utf8_lossy(payload).into_owned()),
                    );
                }
            }
            Value::Object(m)
        }
    }
}

fn entries_json(entries: &[(PhpKey, PhpValue)]) -> Map<String, Value> {
    entries
        .iter()
        .map(|(k, v)| {
            let key = match k {
                PhpKey::Int(i) => i.to_string(),
                // Private/protected property names are mangled with NUL bytes: keep the plain name.
                PhpKey::Str(s) => {
                    let s = String::from_utf8_lossy(s);
                    s.rsplit('\0').next().unwrap_or_default().to_owned()
                }
            };
            (key, php_to_json(v))
        })
        .collect()
}

/// A PHP value for a terminal: strings as they are, everything else as JSON.
pub fn php_text(v: &PhpValue) -> String {
    match v {
        PhpValue::String(b) => String::from_utf8_lossy(b).into_owned(),
        other => php_to_json(other).to_string(),
    }
}

/// `1 item`, `2 items`.
pub fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// A progress line on stderr, at most five times a second, cleared by `finish`.
pub struct ProgressLine {
    enabled: bool,
    last: Mutex<Option<Instant>>,
    verb: &'static str,
}

impl ProgressLine {
    pub fn new(when: Progress, json: bool, verb: &'static str) -> ProgressLine {
        let enabled = match when {
            Progress::Always => true,
            Progress::Never => false,
            Progress::Auto => !json && std::io::stderr().is_terminal(),
        };
        ProgressLine {
            enabled,
            last: Mutex::new(None),
            verb,
        }
    }

    pub fn update(&self, p: &ScanProgress) {
        if !self.enabled {
            return;
        }
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let done = p.segments_done == p.segments;
        if !done && last.is_some_and(|t| t.elapsed() < Duration::from_millis(200)) {
            return;
        }
        *last = Some(Instant::now());
        let mut line = format!(
            "\r{}: {} items scanned, {} matched",
            self.verb, p.scanned, p.matched
        );
        if p.deleted > 0 {
            line.push_str(&format!(", {} deleted", p.deleted));
        }
        line.push_str(&format!(" (segments {}/{})", p.segments_done, p.segments));
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "{line}\x1b[K");
        let _ = err.flush();
    }

    pub fn finish(&self) {
        if self.enabled && self.last.lock().map(|l| l.is_some()).unwrap_or(false) {
            eprintln!();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_durations() {
        assert_eq!(utc(1_709_164_800), "2024-02-29 00:00:00 UTC");
        assert!(until(Some(0)).starts_with("until 1970-01-01 00:00:00 UTC ("));
        assert_eq!(until(None), "without expiry");
    }

    #[test]
    fn php_values_as_json() {
        let v = PhpValue::assoc([
            ("a", PhpValue::Int(1)),
            ("b", PhpValue::list([PhpValue::Null])),
        ]);
        assert_eq!(php_to_json(&v), json!({"a": 1, "b": [null]}));
        assert_eq!(php_to_json(&PhpValue::Float(f64::INFINITY)), json!("INF"));
        assert_eq!(php_to_json(&PhpValue::Float(0.5)), json!(0.5));
    }

    #[test]
    fn words_a_shell_reads_back() {
        assert_eq!(
            shell("reports:nightly-1.5/a_b@c%d+e=f,g"),
            "reports:nightly-1.5/a_b@c%d+e=f,g"
        );
        assert_eq!(
            shell(r"laravel-queue-overlap:App\Jobs\SyncAccount:0"),
            r"'laravel-queue-overlap:App\Jobs\SyncAccount:0'"
        );
        assert_eq!(shell("it's a lock"), r#"'it'"'"'s a lock'"#);
        assert_eq!(shell(""), "''");
        assert_eq!(shell_quoted("x"), "'x'");
    }

    #[test]
    fn owners_as_json() {
        let n = StoredValue::Number("12345".into());
        assert_eq!(owner_json(Some(&n), Some("12345")), json!(12345));
        let s = StoredValue::String("s:3:\"abc\";".into());
        assert_eq!(owner_json(Some(&s), Some("abc")), json!("abc"));
        assert_eq!(owner_json(None, None), Value::Null);
    }
}
