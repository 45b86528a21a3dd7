//! The store settings as global flags, one per row of the core's settings table
//! (`ddblock::config::SETTINGS`): name, help and default come from there, and the values go back
//! to the core as text (`StoreConfig::from_settings`), which parses and checks them.

use clap::{Arg, ArgMatches, Args, Command, FromArgMatches};
use ddblock::config::{Defaults, Front, SettingValue, Unit, SETTINGS};

use crate::out::shell;

/// The settings given on the command line, by their flag names.
#[derive(Debug, Clone, Default)]
pub struct SettingFlags {
    given: Vec<(String, String)>,
}

impl SettingFlags {
    /// The given settings as flags a shell reads back (` --table cache --prefix 'a b'`, or
    /// empty): what a command printed for a person to run needs to reach the same table.
    pub fn command_line(&self) -> String {
        self.given
            .iter()
            .map(|(k, v)| format!(" --{k} {}", shell(v)))
            .collect()
    }

    /// The given settings, for `StoreConfig::from_settings(Front::Cli, ...)`.
    pub fn given(&self) -> Vec<(String, SettingValue)> {
        self.given
            .iter()
            .map(|(k, v)| (k.clone(), SettingValue::Text(v.clone())))
            .collect()
    }
}

fn flags() -> impl Iterator<Item = (&'static str, &'static ddblock::config::Setting)> {
    SETTINGS
        .iter()
        .filter_map(|s| s.name_in(Front::Cli).map(|flag| (flag, s)))
}

impl Args for SettingFlags {
    fn augment_args(cmd: Command) -> Command {
        cmd.args(flags().map(|(flag, s)| {
            let value_name = match s.unit {
                Unit::Seconds | Unit::WholeSeconds => "SECS",
                Unit::Count => "N",
                Unit::Choice(_) => "WHICH",
                Unit::Text | Unit::Backoff => "TEXT",
            };
            let env = s.env.map(|e| format!(" [env: {e}]")).unwrap_or_default();
            let default = match s.default {
                Defaults::All(text) => plain(text),
                Defaults::PerFront(_) => "per front (docs/configuration.md)".into(),
            };
            Arg::new(flag)
                .long(flag)
                .global(true)
                .value_name(value_name)
                .allow_negative_numbers(true)
                .help(format!("{}{env} [default: {default}]", plain(s.doc)))
        }))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl FromArgMatches for SettingFlags {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let given = flags()
            .filter_map(|(flag, _)| {
                m.get_one::<String>(flag)
                    .map(|v| (flag.to_owned(), v.clone()))
            })
            .collect();
        Ok(SettingFlags { given })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

/// A doc line of the table as plain text: no backticks, no Markdown links (a parenthesised link
/// goes, a bare one keeps its text).
fn plain(doc: &str) -> String {
    let mut out = String::new();
    let mut rest = doc;
    while let Some(open) = rest.find('[') {
        let Some(mid) = rest[open..].find("](").map(|m| open + m) else {
            break;
        };
        let Some(close) = rest[mid..].find(')').map(|c| mid + c) else {
            break;
        };
        let text = &rest[open + 1..mid];
        let before = &rest[..open];
        // " ([below](#x))" goes whole; "[s3](s3.md)" keeps "s3".
        if before.ends_with('(') && rest[close + 1..].starts_with(')') {
            out.push_str(before.trim_end_matches('(').trim_end());
            rest = &rest[close + 2..];
        } else {
            out.push_str(before);
            out.push_str(text);
            rest = &rest[close + 1..];
        }
    }
    out.push_str(rest);
    out.replace('`', "")
}
