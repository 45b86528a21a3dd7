//! `ddblock`: run a command under a lock shared with Laravel, inspect, repair and set up the table.
//!
//! A thin layer over the `ddblock` core: argument parsing, output (human and `--json`), exit codes,
//! signals and the child process of `run`. Table logic lives in the core (`ddblock::admin`).
//! See docs/cli.md.

mod cmd;
mod out;
mod patterns;
mod run;
mod settings;
mod warn;

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use ddblock::config::{Front, SettingValue};
use ddblock::{Store, StoreConfig};

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

const AFTER_HELP: &str = "\
Configuration: a flag wins over the environment variable Laravel uses (named in each flag's help),
which wins over the default (docs/configuration.md). Credentials come from the AWS SDK's usual
chain (AWS_ACCESS_KEY_ID, profiles, roles).

Exit status:
  0   success
  1   error (one line on stderr), or release/get found nothing to act on, or doctor found a failure
  2   bad command line
  3   conflict: put --if-version found another version; once lost its claim before marking it done
  75  the lock is held by someone else (acquire, run); once: the event is in progress elsewhere
  76  run --heartbeat: the lease was lost while CMD ran (CMD was stopped; see --on-lease-lost)
  run and once exit with CMD's status (128+N when CMD was killed by signal N; 127 when CMD is not
  found); once exits 0 without running CMD when the event is already done

Documentation: docs/cli.md";

/// Laravel-compatible DynamoDB locks from the shell: run a command under a lock shared with the
/// Laravel scheduler, inspect and release locks, sweep expired items, check and create the table.
#[derive(Debug, Parser)]
#[command(name = "ddblock", version, after_help = AFTER_HELP)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

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

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run CMD while holding lock NAME, like flock(1); exit with CMD's status (75 if the lock is held)
    Run(RunArgs),
    /// Take lock NAME and print its owner (exit 75 if held by someone else)
    Acquire(AcquireArgs),
    /// Release lock NAME if OWNER holds it: one conditional DeleteItem (exit 1 if not released)
    Release(ReleaseArgs),
    /// Extend lock NAME to now + SECS if OWNER holds it and it is live (exit 1 if not)
    Refresh(RefreshArgs),
    /// Delete lock NAME whoever holds it
    ForceRelease(NameArgs),
    /// Show who holds lock NAME (consistent read)
    Status(NameArgs),
    /// List the items under the prefix: key, kind, holder, time left, expired-but-present
    List(ListArgs),
    /// Delete expired items, each with a conditional delete that never removes a live item
    Sweep(SweepArgs),
    /// Check the table (schema, TTL, expired items, stuck-looking locks) and say what to fix
    Doctor(DoctorArgs),
    /// Create the table (on-demand, string key, TTL on); fine if it exists; waits until ACTIVE
    CreateTable(CreateTableArgs),
    /// Print cache value KEY, PHP-decoded (exit 1 if missing or expired)
    Get(GetArgs),
    /// Store cache value KEY exactly as Laravel's Cache::put would (--if-version: compare-and-set)
    Put(PutArgs),
    /// Run CMD for EVENT_ID only if no other caller did: claim, run, mark done (give back on failure)
    Once(OnceArgs),
    /// Show where EVENT_ID stands: free, in_progress, done, given_back or expired
    OnceStatus(OnceStatusArgs),
}

/// `once`.
#[derive(Debug, Args)]
pub struct OnceArgs {
    /// Event id: a cache key (the claim counter is that cache entry), e.g. once:MESSAGE_ID
    pub event: String,
    /// How long the claim lasts, in whole seconds: longer than CMD runs (then another caller takes over)
    #[arg(long, value_name = "SECS", allow_negative_numbers = true)]
    pub ttl: String,
    /// How long a done event is remembered (redeliveries within it are skipped) [default: 86400, the core's]
    #[arg(long, value_name = "SECS", allow_negative_numbers = true)]
    pub done_ttl: Option<String>,
    /// The command and its arguments (use -- before a command starting with -)
    #[arg(required = true, trailing_var_arg = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// `once-status`.
#[derive(Debug, Args)]
pub struct OnceStatusArgs {
    /// Event id
    pub event: String,
}

/// `run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Lock name (as given to Laravel's Cache::lock)
    pub name: String,
    /// Lock ttl in whole seconds (0 means Laravel's default of 86400)
    #[arg(long, value_name = "SECS", allow_negative_numbers = true)]
    pub ttl: String,
    /// Wait up to SECS for the lock (0: try once; forever: no limit)
    #[arg(
        long,
        value_name = "SECS",
        default_value = "0",
        allow_negative_numbers = true
    )]
    pub wait: String,
    /// Refresh the lock every ttl/3 (--heartbeat-interval) while CMD runs; if the lease is lost, stop CMD and exit 76
    #[arg(long)]
    pub heartbeat: bool,
    /// What a lost lease does under --heartbeat: stop (SIGTERM to CMD, SIGKILL after --kill-after; exit 76) or warn (a line on stderr; CMD keeps running, exit with its status)
    #[arg(
        long,
        value_name = "WHAT",
        default_value = "stop",
        requires = "heartbeat"
    )]
    pub on_lease_lost: OnLeaseLost,
    /// Seconds between the SIGTERM and the SIGKILL that stop CMD after a lost lease
    #[arg(long, value_name = "SECS", default_value = "5", value_parser = parse_secs, allow_negative_numbers = true)]
    pub kill_after: Duration,
    /// The command and its arguments (use -- before a command starting with -)
    #[arg(required = true, trailing_var_arg = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// What `run --heartbeat` does when the lease is lost while CMD runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnLeaseLost {
    /// SIGTERM to CMD, SIGKILL after --kill-after, exit 76.
    Stop,
    /// One line on stderr; CMD keeps running without the lock; exit with CMD's status.
    Warn,
}

/// `acquire`.
#[derive(Debug, Args)]
pub struct AcquireArgs {
    /// Lock name
    pub name: String,
    /// Lock ttl in whole seconds (0 means Laravel's default of 86400)
    #[arg(long, value_name = "SECS", allow_negative_numbers = true)]
    pub ttl: String,
    /// Owner token (default: 16 random characters, as Laravel)
    #[arg(long, value_name = "OWNER")]
    pub owner: Option<String>,
    /// Wait up to SECS for the lock (0: try once; forever: no limit)
    #[arg(
        long,
        value_name = "SECS",
        default_value = "0",
        allow_negative_numbers = true
    )]
    pub wait: String,
}

/// `release`.
#[derive(Debug, Args)]
pub struct ReleaseArgs {
    /// Lock name
    pub name: String,
    /// The owner that holds the lock (printed by acquire, shown by status)
    #[arg(long, value_name = "OWNER")]
    pub owner: String,
}

/// `refresh`.
#[derive(Debug, Args)]
pub struct RefreshArgs {
    /// Lock name
    pub name: String,
    /// The owner that holds the lock
    #[arg(long, value_name = "OWNER")]
    pub owner: String,
    /// New lease from now, in whole seconds (0 means Laravel's default of 86400)
    #[arg(long, value_name = "SECS", allow_negative_numbers = true)]
    pub ttl: String,
}

/// Commands taking only a lock name.
#[derive(Debug, Args)]
pub struct NameArgs {
    /// Lock name
    pub name: String,
}

/// Scan options shared by list, sweep and doctor.
#[derive(Debug, Args)]
pub struct ScanArgs {
    /// Every item in the table, not only those under the prefix
    #[arg(long)]
    pub all: bool,
    /// Parallel scan segments
    #[arg(long, value_name = "N", default_value_t = ddblock::admin::DEFAULT_SEGMENTS)]
    pub segments: u32,
}

/// `list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub scan: ScanArgs,
    /// Only lock items
    #[arg(long)]
    pub locks: bool,
    /// Only items that are expired but still in the table
    #[arg(long)]
    pub expired: bool,
}

/// `sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub scan: ScanArgs,
    /// Count what would be deleted, delete nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Only delete items expired more than SECS ago (margin for clock skew)
    #[arg(long, value_name = "SECS", default_value_t = ddblock::admin::DEFAULT_SWEEP_GRACE_SECS, allow_negative_numbers = true)]
    pub grace: i64,
}

/// `doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub scan: ScanArgs,
    /// Skip the item checks (no Scan)
    #[arg(long)]
    pub no_scan: bool,
    /// A live lock with more than SECS left (and at most 86460) counts as a ttl-0 lock
    #[arg(long, value_name = "SECS", default_value_t = ddblock::admin::DEFAULT_LONG_LOCK_SECS, allow_negative_numbers = true)]
    pub min_remaining: i64,
}

/// `create-table`.
#[derive(Debug, Args)]
pub struct CreateTableArgs {
    /// TTL attribute [default: the expiration attribute]
    #[arg(long, value_name = "NAME")]
    pub ttl_attribute: Option<String>,
    /// Do not enable TTL
    #[arg(long, conflicts_with = "ttl_attribute")]
    pub no_ttl: bool,
    /// Wait up to SECS for the table to become ACTIVE [default: 120, the core's]
    #[arg(long, value_name = "SECS", value_parser = parse_secs, allow_negative_numbers = true)]
    pub wait: Option<Duration>,
}

/// `get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// Cache key (as given to Laravel's Cache::get)
    pub key: String,
    /// Strongly consistent read (Laravel reads eventually consistent)
    #[arg(long)]
    pub consistent: bool,
    /// Also print the version for `put --if-version` (first line; `version` in --json); a consistent read
    #[arg(long)]
    pub with_version: bool,
}

/// `put`.
#[derive(Debug, Args)]
pub struct PutArgs {
    /// Cache key
    pub key: String,
    /// The value (see --as); a negative number is a value, not an option
    #[arg(allow_negative_numbers = true)]
    pub value: String,
    /// Whole seconds to keep it (<= 0 writes an already expired item, as Laravel); or --forever
    #[arg(long, value_name = "SECS", allow_negative_numbers = true)]
    pub ttl: Option<String>,
    /// Keep it 5 years (Laravel's Cache::forever)
    #[arg(long, conflicts_with = "ttl")]
    pub forever: bool,
    /// Store only if the entry is still at version V (from `get --with-version`; 0: no version); exit 3 if not
    #[arg(
        long,
        value_name = "V",
        conflicts_with = "forever",
        requires = "ttl",
        allow_negative_numbers = true
    )]
    pub if_version: Option<String>,
    /// How to read VALUE
    #[arg(long = "as", value_name = "TYPE", default_value = "string")]
    pub value_type: ValueType,
}

/// How `put` reads its VALUE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ValueType {
    /// A PHP string (numeric strings are stored as numbers, as Laravel does)
    String,
    /// JSON: objects become associative arrays, arrays lists
    Json,
    /// PHP serialize() text
    Serialized,
}

fn parse_secs(s: &str) -> Result<Duration, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    Duration::try_from_secs_f64(v).map_err(|_| format!("{s:?} must be 0 or more seconds"))
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    warn::init();
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ddblock: cannot start the async runtime: {e}");
            return ExitCode::from(EXIT_FAILURE as u8);
        }
    };
    let code = rt.block_on(cmd::dispatch(&cli));
    // Do not wait for stray blocking tasks (the SDK's) before exiting.
    rt.shutdown_timeout(Duration::from_millis(100));
    ExitCode::from(code.clamp(0, 255) as u8)
}
