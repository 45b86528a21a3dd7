//! Every command except `run`: call the core, print the outcome, pick the exit status.

use ddblock::admin::{
    CheckId, CheckStatus, ClockReading, CreateTableOptions, DoctorOptions, ItemKind, ScanItem,
    ScanOptions, Scope, SweepOptions, TtlState,
};
use ddblock::format::input::ttl_from_str;
use ddblock::{AcquireOutcome, Consistency, PhpValue, ReleaseOutcome, Store, Wait};
use serde_json::{json, Value};

use crate::out::{self, holder_json, holder_text, owner_json, print_json, ProgressLine};
use crate::{
    AcquireArgs, Cli, Command, CreateTableArgs, DoctorArgs, GetArgs, ListArgs, NameArgs, PutArgs,
    RefreshArgs, ReleaseArgs, ScanArgs, SweepArgs, ValueType, EXIT_FAILURE, EXIT_HELD, EXIT_OK,
};

/// Runs the command; returns the exit status.
pub async fn dispatch(cli: &Cli) -> i32 {
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
        Command::Run(a) => crate::run::run(&store, g, a).await,
        Command::Acquire(a) => acquire(&store, g.json, a).await,
        Command::Release(a) => release(&store, g.json, a).await,
        Command::Refresh(a) => refresh(&store, g.json, a).await,
        Command::ForceRelease(a) => force_release(&store, g.json, a).await,
        Command::Status(a) => status(&store, g.json, a).await,
        Command::List(a) => list(&store, cli, a).await,
        Command::Sweep(a) => sweep(&store, cli, a).await,
        Command::Doctor(a) => doctor(&store, cli, a).await,
        Command::CreateTable(a) => create_table(&store, g.json, a).await,
        Command::Get(a) => get(&store, g.json, a).await,
        Command::Put(a) => put(&store, g.json, a).await,
        Command::Once(a) => crate::patterns::once(&store, g, a).await,
        Command::OnceStatus(a) => crate::patterns::once_status(&store, g.json, a).await,
    };
    res.unwrap_or_else(|e| out::error(&e, g.json))
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

/// "lock `NAME` is held by owner "abcd…" (16 chars) until ... (in 25s)".
pub fn held_message(name: &str, h: &ddblock::Holder) -> String {
    format!("lock `{name}` is held by {}", holder_text(h))
}

async fn acquire(store: &Store, json: bool, a: &AcquireArgs) -> ddblock::Result<i32> {
    let lock = match &a.owner {
        Some(o) => store.lock_with_owner(&a.name, ttl_from_str(&a.ttl)?, o.clone())?,
        None => store.lock(&a.name, ttl_from_str(&a.ttl)?)?,
    };
    // The core's one wait parser: a bad wait is a `config` error, as in every front.
    let outcome = lock.acquire_within(Wait::parse(&a.wait)?).await?;
    if json {
        print_json(&acquire_json(&lock, &outcome));
    }
    Ok(match outcome {
        AcquireOutcome::Acquired { .. } => {
            if !json {
                println!("{}", lock.owner());
            }
            EXIT_OK
        }
        AcquireOutcome::Held(h) => {
            eprintln!("ddblock: {}", held_message(&a.name, &h));
            EXIT_HELD
        }
    })
}

async fn release(store: &Store, json: bool, a: &ReleaseArgs) -> ddblock::Result<i32> {
    let lock = store.restore_lock(&a.name, a.owner.clone())?;
    let outcome = lock.release().await?;
    let (name, holder) = match &outcome {
        ReleaseOutcome::Released => ("released", None),
        ReleaseOutcome::NotHeld => ("not_held", None),
        ReleaseOutcome::HeldByOther(h) => ("held_by_other", Some(h)),
    };
    if json {
        print_json(&json!({
            "released": outcome.is_released(),
            "outcome": name,
            "name": lock.name(),
            "key": lock.key(),
            "holder": holder.map(holder_json),
        }));
    }
    Ok(match &outcome {
        ReleaseOutcome::Released => {
            if !json {
                println!("released lock `{}`", a.name);
            }
            EXIT_OK
        }
        ReleaseOutcome::NotHeld => {
            eprintln!("ddblock: lock `{}` is not held (already released or expired and swept); nothing released", a.name);
            EXIT_FAILURE
        }
        ReleaseOutcome::HeldByOther(h) => {
            eprintln!(
                "ddblock: {}, not by the given owner; nothing released",
                held_message(&a.name, h)
            );
            EXIT_FAILURE
        }
    })
}

async fn refresh(store: &Store, json: bool, a: &RefreshArgs) -> ddblock::Result<i32> {
    let ttl = ttl_from_str(&a.ttl)?;
    let lock = store.restore_lock(&a.name, a.owner.clone())?;
    let refreshed = lock.refresh(Some(ttl)).await?;
    let holder = lock.current_holder().await?;
    if json {
        print_json(&json!({
            "refreshed": refreshed,
            "name": lock.name(),
            "key": lock.key(),
            "expires_at": holder.as_ref().filter(|_| refreshed).and_then(|h| h.expires_at),
            "holder": holder.as_ref().map(holder_json),
        }));
    }
    if refreshed {
        if !json {
            let until = holder.and_then(|h| h.expires_at);
            println!("refreshed lock `{}` {}", a.name, out::until(until));
        }
        Ok(EXIT_OK)
    } else {
        match holder {
            Some(h) => eprintln!(
                "ddblock: {}, not by the given owner; nothing refreshed",
                held_message(&a.name, &h)
            ),
            None => eprintln!(
                "ddblock: lock `{}` is not held (expired, released or never taken); nothing refreshed",
                a.name
            ),
        }
        Ok(EXIT_FAILURE)
    }
}

async fn force_release(store: &Store, json: bool, a: &NameArgs) -> ddblock::Result<i32> {
    let lock = store.lock(&a.name, 0)?;
    lock.force_release().await?;
    if json {
        print_json(&json!({"force_released": true, "name": lock.name(), "key": lock.key()}));
    } else {
        println!("force-released lock `{}` (key {})", a.name, lock.key());
    }
    Ok(EXIT_OK)
}

async fn status(store: &Store, json: bool, a: &NameArgs) -> ddblock::Result<i32> {
    let lock = store.lock(&a.name, 0)?;
    let holder = lock.current_holder().await?;
    let now = out::now();
    if json {
        let (owner, expires_at) = match &holder {
            Some(h) => (
                owner_json(h.value.as_ref(), h.owner.as_deref()),
                h.expires_at,
            ),
            None => (Value::Null, None),
        };
        print_json(&json!({
            "name": lock.name(),
            "key": lock.key(),
            "held": holder.is_some(),
            "owner": owner,
            "expires_at": expires_at,
            "expires_in": expires_at.map(|e| e - now),
            "fence": holder.as_ref().and_then(|h| h.fence),
        }));
    } else {
        match &holder {
            Some(h) => println!(
                "lock `{}` (key {}) is held by owner {} {}",
                a.name,
                lock.key(),
                h.owner.as_deref().unwrap_or("(not a string)"),
                out::until(h.expires_at)
            ),
            None => println!("lock `{}` (key {}) is free", a.name, lock.key()),
        }
    }
    Ok(EXIT_OK)
}

fn scan_options(a: &ScanArgs) -> ScanOptions {
    ScanOptions::new()
        .segments(a.segments)
        .scope(if a.all { Scope::All } else { Scope::Prefix })
}

fn item_json(i: &ScanItem) -> Value {
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
    })
}

async fn list(store: &Store, cli: &Cli, a: &ListArgs) -> ddblock::Result<i32> {
    let g = &cli.global;
    let progress = ProgressLine::new(g.progress, g.json, "list");
    let report = store
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
                (Some(_), Some(r)) if i.expired_but_present => {
                    format!("expired {} (still present)", ddblock::time::relative(r))
                }
                (Some(_), Some(r)) => ddblock::time::relative(r),
                _ if i.invalid_expiry => "invalid expiry".into(),
                _ => "never".into(),
            };
            [
                i.key.clone(),
                i.kind.as_str().into(),
                i.name.clone().unwrap_or_else(|| "-".into()),
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

async fn sweep(store: &Store, cli: &Cli, a: &SweepArgs) -> ddblock::Result<i32> {
    let g = &cli.global;
    let progress = ProgressLine::new(g.progress, g.json, "sweep");
    let opts = SweepOptions::new()
        .scan(scan_options(&a.scan))
        .grace_secs(a.grace)
        .dry_run(a.dry_run);
    let report = store.sweep_expired(&opts, |p| progress.update(p)).await;
    progress.finish();
    let r = report?;
    if g.json {
        print_json(&json!({
            "table": store.config().table(),
            "dry_run": r.dry_run,
            "scanned": r.scanned,
            "expired": r.expired,
            "deleted": r.deleted,
            "skipped": r.skipped,
            "cutoff": r.cutoff,
        }));
    } else if r.dry_run {
        println!(
            "dry run: would delete {} expired items (expired before {}); {} scanned in table `{}`",
            r.expired,
            ddblock::time::utc(r.cutoff),
            r.scanned,
            store.config().table()
        );
    } else {
        println!(
            "deleted {} expired items (expired before {}), {} skipped (refreshed, taken over or gone meanwhile); {} scanned in table `{}`",
            r.deleted,
            ddblock::time::utc(r.cutoff),
            r.skipped,
            r.scanned,
            store.config().table()
        );
    }
    Ok(EXIT_OK)
}

/// What to do about a check that is not ok (CLI wording: the core's report has the facts).
fn fix(
    id: CheckId,
    status: CheckStatus,
    ttl: Option<&TtlState>,
    clock: Option<ClockReading>,
    exp: &str,
) -> Option<String> {
    if matches!(status, CheckStatus::Ok | CheckStatus::Skipped) {
        return None;
    }
    Some(match id {
        CheckId::Table if status == CheckStatus::Fail => {
            "run `ddblock create-table` (same --table/--endpoint/--region), or fix the table name, endpoint or region".into()
        }
        CheckId::Table => "wait until the table is ACTIVE".into(),
        CheckId::KeySchema => "a key schema cannot be changed: point --table at Laravel's cache table, or create a new table with `ddblock create-table --table NEW`".into(),
        CheckId::Ttl => match ttl {
            Some(TtlState::Unknown { .. }) => "check TTL in the AWS console (local emulators may not implement it)".into(),
            Some(TtlState::Disabled) => format!("run `ddblock create-table` (enables TTL on `{exp}` of an existing table), or schedule `ddblock sweep`"),
            _ => format!("TTL works on one attribute: disable it and enable it on `{exp}`, or schedule `ddblock sweep`"),
        },
        CheckId::ExpiredItems => "enable TTL (`ddblock create-table`), or run `ddblock sweep` (deletes only expired items)".into(),
        CheckId::DefaultTtlLocks => "see them with `ddblock list --locks`; if a holder is gone, `ddblock force-release NAME` (or `ddblock release NAME --owner OWNER`); release with ddblock so locks cannot stick".into(),
        CheckId::InvalidItems => "find what else writes to this table (`ddblock list --all`); ddblock leaves these items alone".into(),
        CheckId::Layout => "set --layout / DDBLOCK_LAYOUT to the PHP side's Laravel version (laravel8 for 8-10, laravel11, laravel12 for 12+) and --prefix / CACHE_PREFIX to the app's `config('cache.prefix')`; `ddblock list --all` shows every key".into(),
        CheckId::Clock => match clock {
            Some(ClockReading::Measured(o)) if status == CheckStatus::Fail => format!("synchronise this host's clock (NTP: chrony, systemd-timesyncd; on AWS the Amazon Time Sync Service), or raise --clock-skew-margin / DDBLOCK_CLOCK_SKEW_MARGIN to at least {} on every host that takes these locks (PHP: ddblock.clock_skew_margin)", o.margin_needed()),
            _ => "run doctor again: more answers narrow the interval; keep the clock synchronised (NTP)".into(),
        },
    })
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

async fn doctor(store: &Store, cli: &Cli, a: &DoctorArgs) -> ddblock::Result<i32> {
    let g = &cli.global;
    let c = store.config();
    let progress = ProgressLine::new(g.progress, g.json, "doctor");
    let opts = DoctorOptions::new()
        .scan((!a.no_scan).then(|| scan_options(&a.scan)))
        .min_remaining_secs(a.min_remaining);
    let report = store.doctor(&opts, |p| progress.update(p)).await;
    progress.finish();
    let r = report?;
    let exp = c.expiration_attribute();
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
                    "fix": fix(k.id, k.status, r.ttl.as_ref(), r.clock, exp),
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
        print_json(&json!({
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
        }));
    } else {
        println!("table `{}` at {endpoint}", c.table());
        for k in &r.checks {
            println!(
                "  {:<7} {:<17} {}",
                k.status.as_str(),
                k.id.as_str(),
                k.detail
            );
            if let Some(f) = fix(k.id, k.status, r.ttl.as_ref(), r.clock, exp) {
                println!("  {:<7} {:<17} fix: {f}", "", "");
            }
        }
        for i in &r.default_ttl_examples {
            println!(
                "          ttl-0 lock `{}` (key {}), {}",
                i.name.as_deref().unwrap_or("?"),
                i.key,
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

async fn create_table(store: &Store, json: bool, a: &CreateTableArgs) -> ddblock::Result<i32> {
    let c = store.config();
    let mut opts = CreateTableOptions::new().ttl(!a.no_ttl);
    if let Some(w) = a.wait {
        opts = opts.wait(w);
    }
    if let Some(t) = &a.ttl_attribute {
        opts = opts.ttl_attribute(t);
    }
    let r = store.create_table(&opts).await?;
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

async fn get(store: &Store, json: bool, a: &GetArgs) -> ddblock::Result<i32> {
    if a.with_version {
        return crate::patterns::get_versioned(store, json, a).await;
    }
    let consistency = if a.consistent {
        Consistency::Strong
    } else {
        Consistency::Eventual
    };
    let table_key = store.cache_key(&a.key)?;
    let value = store.get_with(&a.key, consistency).await?;
    if json {
        print_json(&json!({
            "key": a.key,
            "table_key": table_key,
            "found": value.is_some(),
            "value": value.as_ref().map_or(Value::Null, out::php_to_json),
        }));
    }
    Ok(match value {
        Some(v) => {
            if !json {
                println!("{}", out::php_text(&v));
            }
            EXIT_OK
        }
        None => {
            if !json {
                eprintln!(
                    "ddblock: `{}` (key {table_key}) is not in the cache (missing or expired)",
                    a.key
                );
            }
            EXIT_FAILURE
        }
    })
}

async fn put(store: &Store, json: bool, a: &PutArgs) -> ddblock::Result<i32> {
    let value = match a.value_type {
        ValueType::String => PhpValue::String(a.value.clone().into_bytes()),
        ValueType::Json => {
            let v: Value = match serde_json::from_str(&a.value) {
                Ok(v) => v,
                Err(e) => return Ok(out::fail(&format!("VALUE is not JSON: {e}"), json)),
            };
            ddblock::codec::to_php(&v)?
        }
        ValueType::Serialized => ddblock::codec::unserialize(a.value.as_bytes())?,
    };
    let table_key = store.cache_key(&a.key)?;
    let ttl = a.ttl.as_deref().map(ttl_from_str).transpose()?;
    if let (Some(v), Some(ttl)) = (&a.if_version, ttl) {
        return crate::patterns::put_if_version(store, json, a, &value, ttl, v).await;
    }
    match (ttl, a.forever) {
        (Some(ttl), false) => store.put(&a.key, &value, ttl).await?,
        (None, true) => store.forever(&a.key, &value).await?,
        // clap refuses both together; neither is a usage error that names both ways.
        _ => {
            eprintln!("ddblock: put needs --ttl SECS (how long to keep the value) or --forever (5 years, as Laravel's Cache::forever)");
            return Ok(crate::EXIT_USAGE);
        }
    }
    if json {
        print_json(&json!({
            "key": a.key,
            "table_key": table_key,
            "stored": true,
            "ttl": ttl,
            "forever": a.forever,
        }));
    } else {
        println!("stored `{}` (key {table_key})", a.key);
    }
    Ok(EXIT_OK)
}

/// `1 item`, `2 items`.
fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
