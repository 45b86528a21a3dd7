//! `ddblock`: run a command under a lock shared with Laravel, inspect, repair and set up the table.
//!
//! A thin layer over the `ddblock` core: argument parsing, output (human and `--json`), exit codes,
//! signals and the child process of `run` and `once`. Table logic lives in the core
//! (`ddblock-admin`). See docs/cli.md.
//!
//! This file: the command line and the dispatch to the command modules, one per command family
//! (each with its arguments). The modules form a DAG (tests/modules.rs checks it): main → lock,
//! run, once, cache, admin, doctor; doctor → admin; cache → cas; run, once → child; run, once,
//! admin, doctor → global → settings; all of them → out (exit statuses, output); main → warn.

mod admin;
mod cache;
mod cas;
mod child;
mod doctor;
mod global;
mod lock;
mod once;
mod out;
mod run;
mod settings;
mod warn;

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::global::Global;
use crate::out::EXIT_FAILURE;

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

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run CMD while holding lock NAME, like flock(1); exit with CMD's status (75 if the lock is held)
    Run(run::RunArgs),
    /// Take lock NAME and print its owner (exit 75 if held by someone else)
    Acquire(lock::AcquireArgs),
    /// Release lock NAME if OWNER holds it: one conditional DeleteItem (exit 1 if not released)
    Release(lock::ReleaseArgs),
    /// Extend lock NAME to now + SECS if OWNER holds it and it is live (exit 1 if not)
    Refresh(lock::RefreshArgs),
    /// Delete lock NAME whoever holds it
    ForceRelease(lock::NameArgs),
    /// Show who holds lock NAME (consistent read)
    Status(lock::NameArgs),
    /// List the items under the prefix: key, kind, holder, time left, expired-but-present
    List(admin::ListArgs),
    /// Delete expired items, each with a conditional delete that never removes a live item
    Sweep(admin::SweepArgs),
    /// Check the table (schema, TTL, expired items, stuck-looking locks) and say what to fix
    Doctor(doctor::DoctorArgs),
    /// Create the table (on-demand, string key, TTL on); fine if it exists; waits until ACTIVE
    CreateTable(admin::CreateTableArgs),
    /// Print cache value KEY, PHP-decoded (exit 1 if missing or expired)
    Get(cache::GetArgs),
    /// Store cache value KEY exactly as Laravel's Cache::put would (--if-version: compare-and-set)
    Put(cache::PutArgs),
    /// Run CMD for EVENT_ID only if no other caller did: claim, run, mark done (give back on failure)
    Once(once::OnceArgs),
    /// Show where EVENT_ID stands: free, in_progress, done, given_back or expired
    OnceStatus(once::OnceStatusArgs),
}

/// Runs the command; returns the exit status.
async fn dispatch(cli: &Cli) -> i32 {
    let g = &cli.global;
    let for_name = matches!(
        cli.command,
        Command::Run(_)
            | Command::Acquire(_)
            | Command::Release(_)
            | Command::Refresh(_)
            | Command::ForceRelease(_)
            | Command::Status(_)
            | Command::Get(_)
            | Command::Put(_)
            | Command::Once(_)
            | Command::OnceStatus(_)
    );
    let store = match g.store(for_name) {
        Ok(s) => s,
        Err(e) => return out::error(&e, g.json),
    };
    let res = match &cli.command {
        Command::Run(a) => run::run(&store, g, a).await,
        Command::Acquire(a) => lock::acquire(&store, g.json, a).await,
        Command::Release(a) => lock::release(&store, g.json, a).await,
        Command::Refresh(a) => lock::refresh(&store, g.json, a).await,
        Command::ForceRelease(a) => lock::force_release(&store, g.json, a).await,
        Command::Status(a) => lock::status(&store, g.json, a).await,
        Command::List(a) => admin::list(&store, g, a).await,
        Command::Sweep(a) => admin::sweep(&store, g, a).await,
        Command::Doctor(a) => doctor::doctor(&store, g, a).await,
        Command::CreateTable(a) => admin::create_table(&store, g.json, a).await,
        Command::Get(a) => cache::get(&store, g.json, a).await,
        Command::Put(a) => cache::put(&store, g.json, a).await,
        Command::Once(a) => once::once(&store, g, a).await,
        Command::OnceStatus(a) => once::once_status(&store, g.json, a).await,
    };
    res.unwrap_or_else(|e| out::error(&e, g.json))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    warn::init(cli.global.log_level, cli.global.log_format);
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
    let code = rt.block_on(dispatch(&cli));
    // Do not wait for stray blocking tasks (the SDK's) before exiting.
    rt.shutdown_timeout(Duration::from_millis(100));
    ExitCode::from(code.clamp(0, 255) as u8)
}
