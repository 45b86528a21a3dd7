//! The options every command takes (`Global`) and the store they build; the flags and parsers
//! several commands share (`--wait`, seconds).

use std::time::Duration;

use clap::Args;
use ddblock::config::{Front, SettingValue};
use ddblock::{Store, StoreConfig, Wait};

use crate::out::Progress;
use crate::settings;

/// Options every command takes.
#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// The store settings, one flag each from the core's settings table.
    #[command(flatten)]
    pub settings: settings::SettingFlags,
    /// Print one JSON object on stdout instead of text
    #[arg(long, global = true)]
    pub json: bool,
    /// NAME/KEY is the literal table key (no prefix, no layout)
    #[arg(long, global = true)]
    pub raw_key: bool,
    /// Progress on stderr for list, sweep and doctor
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto")]
    pub progress: Progress,
    /// The core's events on stderr from LEVEL up: off, error, warn, info, debug, trace
    #[arg(
        long,
        global = true,
        value_name = "LEVEL",
        env = "DDBLOCK_LOG",
        default_value = "warn"
    )]
    pub log_level: crate::warn::Threshold,
    /// How events are printed on stderr: text (`ddblock: warning: ...`) or json (one object a line)
    #[arg(long, global = true, value_name = "FORMAT", default_value = "text")]
    pub log_format: crate::warn::Format,
}

impl Global {
    /// The store configuration: flags first, then Laravel's environment variables, then defaults.
    /// With `raw_key` (for commands taking a NAME/KEY) the prefix is empty, so every layout uses
    /// the name as the table key.
    pub fn config(&self, for_name: bool) -> ddblock::Result<StoreConfig> {
        let mut given = self.settings.given();
        if for_name && self.raw_key {
            given.push(("prefix".into(), SettingValue::Text(String::new())));
        }
        StoreConfig::from_settings(Front::Cli, given, |k| std::env::var(k).ok())?
            .create_table_hint("`ddblock create-table` (with the same --table/--endpoint/--region)")
            .build()
    }

    /// The store (its client is built on the first request).
    pub fn store(&self, for_name: bool) -> ddblock::Result<Store> {
        Ok(Store::new(self.config(for_name)?))
    }
}

/// `--wait SECS`, for the commands that take a lock.
#[derive(Debug, Args)]
pub struct WaitArg {
    /// Wait up to SECS for the lock (0: try once; forever: no limit)
    #[arg(
        long,
        value_name = "SECS",
        default_value = "0",
        allow_negative_numbers = true
    )]
    pub wait: String,
}

impl WaitArg {
    /// The core's one wait parser: a bad wait is a `config` error, as in every front.
    pub fn parse(&self) -> ddblock::Result<Wait> {
        Wait::parse(&self.wait)
    }
}

/// A number of seconds (fractions allowed, 0 or more) as a flag value: `--kill-after`, `--wait`.
pub fn parse_secs(s: &str) -> Result<Duration, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    Duration::try_from_secs_f64(v).map_err(|_| format!("{s:?} must be 0 or more seconds"))
}

/// A duration in whole seconds, as `--locks-older-than` takes it: `3600`, or with units `90m`,
/// `2h30m`, `1d` (days, hours, minutes, then seconds, each at most once, in that order).
pub fn parse_duration(s: &str) -> Result<i64, String> {
    let bad =
        || format!("must be a duration: seconds (3600) or with units (90m, 2h30m, 1d), not {s:?}");
    let text = s.trim();
    let (mut total, mut rest, mut units) = (0i64, text, "dhms".chars());
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let n: i64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit = rest.chars().next().unwrap_or('s');
        // The unit must come after the ones already used (`1h1d` and `5m5m` are refused).
        units.find(|u| *u == unit).ok_or_else(bad)?;
        rest = rest.get(unit.len_utf8()..).unwrap_or("");
        let secs = match unit {
            'd' => 86_400,
            'h' => 3600,
            'm' => 60,
            _ => 1,
        };
        total = n
            .checked_mul(secs)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(bad)?;
    }
    if text.is_empty() {
        return Err(bad());
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::parse_duration;

    #[test]
    fn durations_in_seconds_or_units() {
        for (text, secs) in [
            ("3600", 3600),
            ("90m", 5400),
            ("2h30m", 9000),
            ("1d", 86_400),
            ("1d2h3m4s", 93_784),
            ("45s", 45),
            ("0", 0),
        ] {
            assert_eq!(parse_duration(text), Ok(secs), "{text}");
        }
        for bad in [
            "",
            "h",
            "1x",
            "1h1d",
            "5m5m",
            "-5",
            "1.5h",
            "2h 30m",
            "99999999999999999999",
        ] {
            let err = parse_duration(bad).unwrap_err();
            assert!(err.contains("90m, 2h30m, 1d"), "{bad}: {err}");
        }
    }
}
