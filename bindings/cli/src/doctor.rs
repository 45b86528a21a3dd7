//! `ddblock doctor`: the table check of ddblock-admin (`Admin::doctor`, with `--backend s3` also the probe of
//! the bucket's conditional requests), printed with what to do about each check that is not ok,
//! and its exit status.

use clap::Args;
use ddblock::Store;
use ddblock_admin::{
    Admin, CheckId, CheckStatus, ClockReading, DoctorOptions, DoctorReport, TtlState,
};
use serde_json::{json, Value};

use crate::admin::{item_json, scan_options, ScanArgs};
use crate::global::Global;
use crate::out::{self, print_json, shell, ProgressLine, EXIT_FAILURE, EXIT_OK};

/// `doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub scan: ScanArgs,
    /// Skip the item checks (no Scan)
    #[arg(long)]
    pub no_scan: bool,
    /// Skip the clock check (no DescribeTable answers measured)
    #[arg(long)]
    pub no_clock: bool,
    /// A live lock with more than SECS left (and at most 86460) counts as a ttl-0 lock
    #[arg(long, value_name = "SECS", default_value_t = ddblock_admin::DEFAULT_LONG_LOCK_SECS, allow_negative_numbers = true)]
    pub min_remaining: i64,
}

/// What to do about a check that is not ok (CLI wording: the core's report has the facts).
/// `flags`: the settings given on the command line, for the commands printed to run.
fn fix(
    id: CheckId,
    status: CheckStatus,
    r: &DoctorReport,
    exp: &str,
    flags: &str,
) -> Option<String> {
    if matches!(status, CheckStatus::Ok | CheckStatus::Skipped) {
        return None;
    }
    let (ttl, clock) = (r.ttl.as_ref(), r.clock);
    let describe =
        "grant `dynamodb:DescribeTable` on the table (docs/deploy.md), and run the doctor again";
    Some(match id {
        CheckId::Table | CheckId::KeySchema | CheckId::Regions if status == CheckStatus::Unknown => {
            describe.into()
        }
        CheckId::Regions if status == CheckStatus::Fail => "lock on a global table with multi-Region strong consistency (MRSC) or on a single-Region table (--table); the locks refuse this one. If every process that takes these locks writes to one Region, set --allow-eventual-global-table true / DDBLOCK_ALLOW_EVENTUAL_GLOBAL_TABLE=true".into(),
        CheckId::Regions => "allowed by allow_eventual_global_table: keep every process that takes these locks writing to one Region".into(),
        CheckId::Table if status == CheckStatus::Fail => {
            "run `ddblock create-table` (same --table/--endpoint/--region), or fix the table name, endpoint or region".into()
        }
        CheckId::Table if r.table_status.is_none() => {
            "nothing to do for locks in the bucket; run `ddblock create-table` before using the cache, `once` or `cas` commands".into()
        }
        CheckId::Table => "wait until the table is ACTIVE".into(),
        CheckId::KeySchema => "a key schema cannot be changed: point --table at Laravel's cache table, or create a new table with `ddblock create-table --table NEW`".into(),
        CheckId::Ttl => match ttl {
            Some(TtlState::Unknown { .. }) => "check TTL in the AWS console (local emulators may not implement it)".into(),
            Some(TtlState::Disabled) => format!("run `ddblock create-table` (enables TTL on `{exp}` of an existing table), or schedule `ddblock sweep`"),
            _ => format!("TTL works on one attribute: disable it and enable it on `{exp}`, or schedule `ddblock sweep`"),
        },
        CheckId::ExpiredItems => "enable TTL (`ddblock create-table`), or run `ddblock sweep` (deletes only expired items)".into(),
        CheckId::DefaultTtlLocks => stuck_locks_fix(r, flags),
        CheckId::InvalidItems => "find what else writes to this table (`ddblock list --all`); ddblock leaves these items alone".into(),
        CheckId::Layout => "set --layout / DDBLOCK_LAYOUT to the PHP side's Laravel version (laravel8 for 8-10, laravel11, laravel12 for 12+) and --prefix / CACHE_PREFIX to the app's `config('cache.prefix')`; `ddblock list --all` shows every key".into(),
        CheckId::Clock => match clock {
            Some(ClockReading::Measured(o)) if status == CheckStatus::Fail => format!("synchronise this host's clock (NTP: chrony, systemd-timesyncd; on AWS the Amazon Time Sync Service), or raise --clock-skew-margin / DDBLOCK_CLOCK_SKEW_MARGIN to at least {} on every host that takes these locks (PHP: ddblock.clock_skew_margin)", o.margin_needed()),
            _ => "run doctor again: more answers narrow the interval; keep the clock synchronised (NTP)".into(),
        },
        CheckId::S3CreateIfAbsent | CheckId::S3EtagChanges | CheckId::S3IfMatchPut => {
            "keep the locks in DynamoDB (--backend dynamodb), or move them to a provider whose doctor passes (docs/s3.md, \"Probe your provider first\")".into()
        }
        CheckId::S3IfMatchDelete if status == CheckStatus::Fail => {
            "set DDBLOCK_S3_RELEASE=overwrite for every process that takes these locks (releases then use a conditional PutObject, which s3_if_match_put checks), and run doctor again with it".into()
        }
        CheckId::S3IfMatchDelete => {
            "keep DDBLOCK_S3_RELEASE=overwrite for every process that takes these locks".into()
        }
        CheckId::S3Versioning if status == CheckStatus::Unknown => {
            "check the bucket's versioning in the provider's console; ddblock does not need it".into()
        }
        CheckId::S3Versioning => {
            "ddblock does not need versioning: use a bucket without it, or add a lifecycle rule expiring noncurrent versions and delete markers under the prefix; run doctor again after any versioning change".into()
        }
        CheckId::S3Cleanup => match &r.s3 {
            Some(p) => format!("delete the object `{}` (and its versions) by hand", p.scratch_key),
            None => "delete the scratch object by hand".into(),
        },
    })
}

/// The fix of the ttl-0 locks: one runnable `force-release` line per listed lock (names
/// shell-quoted: Laravel's hold backslashes, which a shell drops unquoted), then the sweep that
/// lists them all.
fn stuck_locks_fix(r: &DoctorReport, flags: &str) -> String {
    let listed = &r.default_ttl_examples;
    let found = r.counts.map_or(0, |c| c.default_ttl_locks);
    let more = found.saturating_sub(listed.len() as u64);
    let mut lines = vec![format!(
        "if a holder is gone (`ddblock{flags} status NAME` shows it), release its lock:"
    )];
    lines.extend(listed.iter().map(|i| {
        let name = i.name.as_deref().unwrap_or_default();
        format!("  ddblock{flags} force-release {}", shell(name))
    }));
    lines.push(format!(
        "{}`ddblock{flags} sweep --dry-run --locks-older-than` lists those taken with ttl 0 more \
         than {} ago (without --dry-run it removes them); locks released with ddblock cannot stick",
        if more > 0 {
            format!("{more} more not listed: ")
        } else {
            "or: ".to_owned()
        },
        ddblock::time::duration(ddblock_admin::DEFAULT_LONG_LOCK_SECS)
    ));
    lines.join("\n")
}

/// The clock measurement of `doctor --json`: the offset interval (this host minus DynamoDB, in
/// seconds) and the allowance, or why there is none.
fn clock_json(reading: Option<ClockReading>, allowed: f64) -> Value {
    match reading {
        None => Value::Null,
        Some(ClockReading::Measured(o)) => json!({
            "offset": o.estimate(),
            "low": o.low,
            "high": o.high,
            "answers": o.samples,
            "allowed": allowed,
        }),
        Some(r) => json!({"unmeasured": r.unmeasured(), "allowed": allowed}),
    }
}

/// `ddblock doctor`: exit 1 when a check fails.
pub async fn doctor(store: &Store, g: &Global, a: &DoctorArgs) -> ddblock::Result<i32> {
    let c = store.config();
    let progress = ProgressLine::new(g.progress, g.json, "doctor");
    let opts = DoctorOptions::new()
        .scan((!a.no_scan).then(|| scan_options(&a.scan)))
        .min_remaining_secs(a.min_remaining)
        .clock_answers(match a.no_clock {
            true => 0,
            false => ddblock_admin::DEFAULT_CLOCK_ANSWERS,
        });
    let report = Admin::new(store)
        .doctor(&opts, |p| progress.update(p))
        .await;
    progress.finish();
    let r = report?;
    let exp = c.expiration_attribute();
    let flags = g.settings.command_line();
    let endpoint = c.endpoint().unwrap_or("the default AWS endpoint");
    if g.json {
        let checks: Vec<Value> = r
            .checks
            .iter()
            .map(|k| {
                json!({
                    "id": k.id.as_str(),
                    "status": k.status.as_str(),
                    "detail": k.detail,
                    "fix": fix(k.id, k.status, &r, exp, &flags),
                })
            })
            .collect();
        let counts = r.counts.map(|n| {
            json!({
                "scanned": n.scanned,
                "items": n.items,
                "locks": n.locks,
                "cache": n.cache,
                "other": n.other,
                "expired_but_present": n.expired_but_present,
                "default_ttl_locks": n.default_ttl_locks,
                "invalid_expiry": n.invalid_expiry,
                "skipped": n.skipped,
            })
        });
        let mut out = json!({
            "table": c.table(),
            "endpoint": endpoint,
            "healthy": r.healthy(),
            "table_status": r.table_status,
            "billing_mode": r.billing_mode,
            "ttl": r.ttl.as_ref().map(|t| json!({"status": t.as_str(), "attribute": t.attribute()})),
            "checks": checks,
            "counts": counts,
            "default_ttl_locks": r.default_ttl_examples.iter().map(item_json).collect::<Vec<_>>(),
            "clock": clock_json(r.clock, r.clock_allowed),
        });
        // Only with the s3 lock backend: the bucket probed (its results are the `s3_*` checks).
        if let Some(p) = &r.s3 {
            out["s3"] = json!({
                "bucket": p.bucket,
                "scratch_key": p.scratch_key,
                "cleaned_up": p.cleaned_up,
            });
        }
        print_json(&out);
    } else {
        println!("table `{}` at {endpoint}", c.table());
        if let Some(p) = &r.s3 {
            println!(
                "bucket `{}` (probed with the scratch object `{}`)",
                p.bucket, p.scratch_key
            );
        }
        let w = r
            .checks
            .iter()
            .map(|k| k.id.as_str().len())
            .max()
            .unwrap_or(0)
            .max(17);
        for k in &r.checks {
            println!(
                "  {:<7} {:<w$} {}",
                k.status.as_str(),
                k.id.as_str(),
                k.detail
            );
            if let Some(f) = fix(k.id, k.status, &r, exp, &flags) {
                // A multi-line fix (one command a line) keeps the column.
                let f = f.replace('\n', &format!("\n  {:<7} {:<w$}      ", "", ""));
                println!("  {:<7} {:<w$} fix: {f}", "", "");
            }
        }
        for i in &r.default_ttl_examples {
            println!(
                "          ttl-0 lock {} (key {}), {}",
                i.name.as_deref().map_or_else(|| "?".into(), shell),
                shell(&i.key),
                out::until(i.expires_at)
            );
        }
        println!(
            "{}",
            if r.healthy() {
                "no failures"
            } else {
                "FAILED: see the fixes above"
            }
        );
    }
    Ok(if r.healthy() { EXIT_OK } else { EXIT_FAILURE })
}
