//! The table commands: `list`, `sweep` and `create-table` (and the scan options `doctor` shares):
//! the core's `ddblock-admin`, printed and mapped to exit statuses. Names and keys a person may
//! paste into a command are printed shell-quoted (`out::shell`).

use std::time::Duration;

use clap::Args;
use ddblock::format::input::DEFAULT_LOCK_TTL_SECS;
use ddblock::time::duration;
use ddblock::Store;
use ddblock_admin::{
    Admin, CreateTableOptions, ItemKind, ScanItem, ScanOptions, Scope, SweepOptions, SweepReason,
    TtlState, DEFAULT_LONG_LOCK_SECS,
};
use serde_json::{json, Value};

use crate::global::{parse_duration, parse_secs, Global};
use crate::out::{owner_json, plural, print_json, shell, ProgressLine, EXIT_FAILURE, EXIT_OK};

/// Scan options shared by list, sweep and doctor.
#[derive(Debug, Args)]
pub struct ScanArgs {
    /// Every item in the table, not only those under the prefix
    #[arg(long)]
    pub all: bool,
    /// Parallel scan segments
    #[arg(long, value_name = "N", default_value_t = ddblock_admin::DEFAULT_SEGMENTS)]
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
    #[arg(long, value_name = "SECS", default_value_t = ddblock_admin::DEFAULT_SWEEP_GRACE_SECS, allow_negative_numbers = true)]
    pub grace: i64,
    /// Also delete locks that look taken with ttl 0 (a day) longer ago than DURATION: 3600, 90m,
    /// 2h30m, 1d [default without a value: 3600, doctor's threshold]
    #[arg(long, value_name = "DURATION", num_args = 0..=1, require_equals = false, value_parser = parse_duration)]
    pub locks_older_than: Option<Option<i64>>,
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

/// The scan of `list`, `sweep` and `doctor`.
pub fn scan_options(a: &ScanArgs) -> ScanOptions {
    ScanOptions::new()
        .segments(a.segments)
        .scope(if a.all { Scope::All } else { Scope::Prefix })
}

/// An item of `list --json` (and of `doctor --json`'s ttl-0 locks).
pub fn item_json(i: &ScanItem) -> Value {
    json!({
        "key": i.key,
        "kind": i.kind.as_str(),
        "name": i.name,
        "owner": match i.kind {
            ItemKind::Lock => owner_json(i.value.as_ref(), i.owner.as_deref()),
            ItemKind::Cache | ItemKind::Other => Value::Null,
        },
        "expires_at": i.expires_at,
        "expires_in": i.expires_in,
        "expired_but_present": i.expired_but_present,
        "released_fence_kept": i.released_fence_kept,
    })
}

/// `ddblock list`: the items under the prefix (or all), as a table or JSON.
pub async fn list(store: &Store, g: &Global, a: &ListArgs) -> ddblock::Result<i32> {
    let progress = ProgressLine::new(g.progress, g.json, "list");
    let report = Admin::new(store)
        .scan_items(&scan_options(&a.scan), |p| progress.update(p))
        .await;
    progress.finish();
    let report = report?;
    let items: Vec<&ScanItem> = report
        .items
        .iter()
        .filter(|i| !a.locks || i.kind == ItemKind::Lock)
        .filter(|i| !a.expired || i.expired_but_present)
        .collect();
    let locks = items.iter().filter(|i| i.kind == ItemKind::Lock).count();
    let expired = items.iter().filter(|i| i.expired_but_present).count();
    if g.json {
        print_json(&json!({
            "table": store.config().table(),
            "scanned": report.scanned,
            "count": items.len(),
            "locks": locks,
            "expired_but_present": expired,
            "items": items.iter().map(|i| item_json(i)).collect::<Vec<_>>(),
        }));
        return Ok(EXIT_OK);
    }
    let rows: Vec<[String; 5]> = items
        .iter()
        .map(|i| {
            let expires = match (i.expires_at, i.expires_in) {
                _ if i.released_fence_kept => "released, fence kept".into(),
                (Some(_), Some(r)) if i.expired_but_present => {
                    format!("expired {} (still present)", ddblock::time::relative(r))
                }
                (Some(_), Some(r)) => ddblock::time::relative(r),
                _ if i.invalid_expiry => "invalid expiry".into(),
                _ => "never".into(),
            };
            [
                shell(&i.key),
                i.kind.as_str().into(),
                i.name.as_deref().map_or_else(|| "-".into(), shell),
                i.owner.clone().unwrap_or_else(|| "-".into()),
                expires,
            ]
        })
        .collect();
    let header = ["KEY", "KIND", "NAME", "OWNER", "EXPIRES"].map(String::from);
    let mut widths = header.clone().map(|h| h.chars().count());
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |r: &[String; 5]| {
        let mut s = String::new();
        for (i, (c, w)) in r.iter().zip(widths).enumerate() {
            if i == 4 {
                s.push_str(c);
            } else {
                s.push_str(&format!("{c:<w$}  "));
            }
        }
        s
    };
    if !rows.is_empty() {
        println!("{}", line(&header));
        for r in &rows {
            println!("{}", line(r));
        }
    }
    println!(
        "{} ({locks} locks, {expired} expired but still present); {} scanned in table `{}`",
        plural(items.len(), "item"),
        report.scanned,
        store.config().table()
    );
    Ok(EXIT_OK)
}

/// `ddblock sweep`: deletes expired items (and, with `--locks-older-than`, stuck-looking locks),
/// each conditionally; says what it removed (or would) and why.
pub async fn sweep(store: &Store, g: &Global, a: &SweepArgs) -> ddblock::Result<i32> {
    let progress = ProgressLine::new(g.progress, g.json, "sweep");
    let age = a
        .locks_older_than
        .map(|d| d.unwrap_or(DEFAULT_LONG_LOCK_SECS));
    let opts = SweepOptions::new()
        .scan(scan_options(&a.scan))
        .grace_secs(a.grace)
        .dry_run(a.dry_run)
        .locks_older_than(age);
    let report = Admin::new(store)
        .sweep_expired(&opts, |p| progress.update(p))
        .await;
    progress.finish();
    let r = report?;
    let table = store.config().table();
    if g.json {
        let items: Vec<Value> = r
            .items
            .iter()
            .map(|s| {
                json!({
                    "key": s.item.key,
                    "kind": s.item.kind.as_str(),
                    "name": s.item.name,
                    "expires_at": s.item.expires_at,
                    "reason": s.reason.as_str(),
                    "removed": s.removed,
                })
            })
            .collect();
        print_json(&json!({
            "table": table,
            "dry_run": r.dry_run,
            "scanned": r.scanned,
            "expired": r.expired,
            "stuck_locks": r.stuck_locks,
            "deleted": r.deleted,
            "skipped": r.skipped,
            "cutoff": r.cutoff,
            "locks_older_than": r.locks_older_than,
            "items": items,
        }));
        return Ok(EXIT_OK);
    }
    let locks = match r.locks_older_than {
        Some(d) => format!(
            ", {} locks that look taken with ttl 0 more than {} ago",
            r.stuck_locks,
            duration(d)
        ),
        None => String::new(),
    };
    let found = format!(
        "{} items: {} expired (before {}){locks}",
        r.expired + r.stuck_locks,
        r.expired,
        ddblock::time::utc(r.cutoff)
    );
    if r.dry_run {
        println!(
            "dry run: would delete {found}; {} scanned in table `{table}`",
            r.scanned
        );
    } else {
        println!(
            "deleted {} of {found}; {} skipped (changed since the scan: refreshed, taken over, \
             released or gone); {} scanned in table `{table}`",
            r.deleted, r.skipped, r.scanned
        );
    }
    for s in &r.items {
        let i = &s.item;
        let left = i.expires_in.unwrap_or_default();
        let why = match s.reason {
            SweepReason::Expired => format!(
                "expired {} ago, past the {} s grace",
                duration(-left),
                a.grace
            ),
            SweepReason::StuckLock => format!(
                "{} left, so taken about {} ago if with ttl 0 (a day): older than {}",
                duration(left),
                duration(DEFAULT_LOCK_TTL_SECS - left),
                duration(r.locks_older_than.unwrap_or_default())
            ),
        };
        println!(
            "  {}{} {} (key {}): {why}",
            if s.removed == Some(false) {
                "left, changed since the scan: "
            } else {
                ""
            },
            i.kind.as_str(),
            i.name.as_deref().map_or_else(|| "-".into(), shell),
            shell(&i.key)
        );
    }
    Ok(EXIT_OK)
}

/// `ddblock create-table`: creates the table (or checks the one there), TTL on.
pub async fn create_table(store: &Store, json: bool, a: &CreateTableArgs) -> ddblock::Result<i32> {
    let c = store.config();
    let mut opts = CreateTableOptions::new().ttl(!a.no_ttl);
    if let Some(w) = a.wait {
        opts = opts.wait(w);
    }
    if let Some(t) = &a.ttl_attribute {
        opts = opts.ttl_attribute(t);
    }
    let r = Admin::new(store).create_table(&opts).await?;
    if json {
        print_json(&json!({
            "table": c.table(),
            "created": r.created,
            "status": r.status,
            "ready": r.ready(),
            "key_schema_problem": r.key_schema_problem,
            "ttl": r.ttl.as_ref().map(|t| json!({"status": t.as_str(), "attribute": t.attribute()})),
            "ttl_changed": r.ttl_changed,
        }));
    } else {
        let what = if r.created {
            "created"
        } else {
            "already exists:"
        };
        let ttl = match &r.ttl {
            None if a.no_ttl => "TTL not requested".to_owned(),
            None => "TTL not checked".to_owned(),
            Some(TtlState::Unknown { reason }) => format!("TTL unknown ({reason})"),
            Some(t) => match t.attribute() {
                Some(attr) => format!(
                    "TTL {} on `{attr}`{}",
                    t.as_str(),
                    if r.ttl_changed { " (just enabled)" } else { "" }
                ),
                None => format!("TTL {}", t.as_str()),
            },
        };
        println!(
            "table `{}` {what} status {}, key `{}` (S), {ttl}",
            c.table(),
            r.status,
            c.key_attribute()
        );
    }
    if let Some(p) = &r.key_schema_problem {
        eprintln!("ddblock: table `{}` cannot be used: {p}", c.table());
        return Ok(EXIT_FAILURE);
    }
    if !r.ready() {
        eprintln!(
            "ddblock: table `{}` is still {} after waiting {:?}; run create-table again or raise --wait",
            c.table(),
            r.status,
            opts.wait_limit()
        );
        return Ok(EXIT_FAILURE);
    }
    if let Some(t) = &r.ttl {
        let exp = opts_ttl_attribute(a, c.expiration_attribute());
        if !matches!(t, TtlState::Unknown { .. }) && !t.covers(&exp) {
            eprintln!(
                "ddblock: warning: TTL is {} on `{}`, not `{exp}`; expired items will not be garbage-collected",
                t.as_str(),
                t.attribute().unwrap_or("-")
            );
        }
    }
    Ok(EXIT_OK)
}

fn opts_ttl_attribute(a: &CreateTableArgs, default: &str) -> String {
    a.ttl_attribute
        .clone()
        .unwrap_or_else(|| default.to_owned())
}
