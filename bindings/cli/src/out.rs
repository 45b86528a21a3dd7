//! Output: JSON shapes, times, durations, PHP values, errors, progress.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ddblock::{ErrorKind, Holder, PhpKey, PhpValue, ScanProgress, StoredValue};
use serde_json::{json, Map, Value};

use crate::{Progress, EXIT_FAILURE, EXIT_HELD};

/// Prints one JSON value on a line of stdout.
pub fn print_json(v: &Value) {
    println!("{v}");
}

/// Prints a ddblock error as one line on stderr (and as JSON on stdout with `--json`); returns the
/// exit status (75 for a lock timeout, else 1).
pub fn error(e: &ddblock::Error, json: bool) -> i32 {
    let mut msg = one_line(&e.to_string());
    match e.kind() {
        ErrorKind::TableNotFound => msg.push_str(
            "; to create it run `ddblock create-table` with the same --table/--endpoint/--region",
        ),
        ErrorKind::Transport => {
            msg.push_str(" [ddblock flags: --endpoint, --region, --connect-timeout, --timeout]")
        }
        _ => {}
    }
    eprintln!("ddblock: {msg}");
    if json {
        print_json(&json!({"error": {"kind": e.kind().as_str(), "message": msg}}));
    }
    match e.kind() {
        ErrorKind::LockTimeout => EXIT_HELD,
        _ => EXIT_FAILURE,
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
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
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
    })
}

/// The first four characters of an owner, for messages that end up in logs (an owner is what
/// releases a lock).
pub fn redacted(owner: Option<&str>) -> String {
    match owner {
        None => "an unknown owner".into(),
        Some(o) if o.chars().count() <= 4 => format!("owner {o:?}"),
        Some(o) => format!(
            "owner \"{}…\" ({} chars)",
            o.chars().take(4).collect::<String>(),
            o.chars().count()
        ),
    }
}

/// "owner "abcd…" (16 chars) until 2026-11-22 02:30:00 UTC (in 25s)".
pub fn holder_text(h: &Holder) -> String {
    format!("{} {}", redacted(h.owner.as_deref()), until(h.expires_at))
}

/// "until 2026-11-22 02:30:00 UTC (in 25s)", or "without expiry".
pub fn until(expires_at: Option<i64>) -> String {
    match expires_at {
        Some(t) => format!("until {} ({})", time(t), relative(t - now())),
        None => "without expiry".into(),
    }
}

/// "in 25s" / "5m ago" / "now".
pub fn relative(secs: i64) -> String {
    match secs {
        0 => "now".into(),
        s if s > 0 => format!("in {}", duration(s)),
        s => format!("{} ago", duration(s.saturating_neg())),
    }
}

/// A duration in its two largest units: "25s", "4m10s", "23h59m", "2d3h".
pub fn duration(secs: i64) -> String {
    let s = secs.max(0);
    let (d, h, m, sec) = (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60);
    match () {
        _ if d > 0 => format!("{d}d{h}h"),
        _ if h > 0 => format!("{h}h{m}m"),
        _ if m > 0 => format!("{m}m{sec}s"),
        _ => format!("{sec}s"),
    }
}

/// A Unix time as "2026-11-22 02:30:00 UTC".
pub fn time(ts: i64) -> String {
    let (days, secs) = (ts.div_euclid(86_400), ts.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
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
        assert_eq!(time(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(time(1_795_309_200), "2026-11-22 01:00:00 UTC");
        assert_eq!(time(1_709_164_800), "2024-02-29 00:00:00 UTC");
        assert_eq!(duration(25), "25s");
        assert_eq!(duration(250), "4m10s");
        assert_eq!(duration(86_399), "23h59m");
        assert_eq!(duration(2 * 86_400 + 3 * 3600 + 5), "2d3h");
        assert_eq!(relative(-300), "5m0s ago");
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
    fn owners_as_json() {
        let n = StoredValue::Number("12345".into());
        assert_eq!(owner_json(Some(&n), Some("12345")), json!(12345));
        let s = StoredValue::String("s:3:\"abc\";".into());
        assert_eq!(owner_json(Some(&s), Some("abc")), json!("abc"));
        assert_eq!(owner_json(None, None), Value::Null);
    }
}
