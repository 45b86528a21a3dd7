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
