//! Sweeping: deleting expired items, each with a DeleteItem conditioned on still being expired,
//! and, on request, locks that look stuck since taken with ttl 0, each only while unchanged.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use ddblock::format::input::DEFAULT_LOCK_TTL_SECS;
use ddblock::{Error, Result};

use crate::doctor::DEFAULT_LONG_LOCK_SECS;
#[cfg(doc)]
use crate::scan::Scope;
use crate::scan::{check_segments, Counters, ItemKind, ScanItem, ScanOptions, ScanProgress};
use crate::Admin;

/// Default of [`SweepOptions::grace_secs`]: only items expired more than a minute ago are swept.
pub const DEFAULT_SWEEP_GRACE_SECS: i64 = 60;

/// Options of [`Admin::sweep_expired`].
#[derive(Debug, Clone)]
pub struct SweepOptions {
    scan: ScanOptions,
    grace_secs: i64,
    dry_run: bool,
    locks_older_than: Option<i64>,
}

impl Default for SweepOptions {
    fn default() -> Self {
        SweepOptions {
            scan: ScanOptions::default(),
            grace_secs: DEFAULT_SWEEP_GRACE_SECS,
            dry_run: false,
            locks_older_than: None,
        }
    }
}

impl SweepOptions {
    /// Defaults: 4 segments, [`Scope::Prefix`], 60 s grace, not a dry run, no lock rule.
    pub fn new() -> Self {
        Self::default()
    }
    /// Scan segments, scope and page size.
    pub fn scan(mut self, scan: ScanOptions) -> Self {
        self.scan = scan;
        self
    }
    /// Only items with `expires_at < now - grace_secs` are deleted (a margin for clock skew between
    /// this machine and the lock holders; 0 deletes everything already expired).
    pub fn grace_secs(mut self, secs: i64) -> Self {
        self.grace_secs = secs;
        self
    }
    /// Count what would be deleted, delete nothing.
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }
    /// Also delete live locks that look taken with ttl 0 (Laravel's 86400 s) more than `secs`
    /// ago: those with `3600 < expires_at - now < 86400 - secs` (3600:
    /// [`DEFAULT_LONG_LOCK_SECS`], doctor's threshold, and the CLI's default for `secs`), what
    /// stock Laravel's release leaves stuck. `None` (the default): no lock is deleted unless
    /// expired.
    pub fn locks_older_than(mut self, secs: Option<i64>) -> Self {
        self.locks_older_than = secs;
        self
    }
}

/// Why a sweep deletes an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SweepReason {
    /// Expired before the cutoff (`expires_at < now - grace`).
    Expired,
    /// A live lock that looks taken with ttl 0 longer ago than [`SweepOptions::locks_older_than`].
    StuckLock,
}

impl SweepReason {
    /// `expired` or `stuck_lock`.
    pub fn as_str(self) -> &'static str {
        match self {
            SweepReason::Expired => "expired",
            SweepReason::StuckLock => "stuck_lock",
        }
    }
}

/// An item a sweep found to delete.
#[derive(Debug, Clone, PartialEq)]
pub struct SweptItem {
    /// The item as the scan saw it.
    pub item: ScanItem,
    /// Why it is deleted.
    pub reason: SweepReason,
    /// `Some(true)`: deleted; `Some(false)`: left, changed (or gone) since the scan; `None`: a
    /// dry run.
    pub removed: Option<bool>,
}

/// What [`Admin::sweep_expired`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepReport {
    /// Items DynamoDB evaluated.
    pub scanned: u64,
    /// Expired items found (`expires_at < cutoff`).
    pub expired: u64,
    /// Stuck-looking locks found (with [`SweepOptions::locks_older_than`]).
    pub stuck_locks: u64,
    /// Items deleted (0 on a dry run).
    pub deleted: u64,
    /// Items found but not deleted because the delete's condition failed: refreshed, taken
    /// over, released or gone between the scan and the delete.
    pub skipped: u64,
    /// Nothing was deleted.
    pub dry_run: bool,
    /// Items with `expires_at` below this were expired.
    pub cutoff: i64,
    /// The lock rule's age, when it was on.
    pub locks_older_than: Option<i64>,
    /// Every item found, with its reason and whether it was removed, sorted by key.
    pub items: Vec<SweptItem>,
}

impl Admin {
    /// Deletes expired items: every item in scope with `expires_at < now - grace` gets a DeleteItem
    /// conditioned on `#expires_at < :cutoff`, so an item refreshed or re-acquired after the scan
    /// is never removed, and neither is a live one. Items without an expiry never expire and are
    /// left alone. With [`SweepOptions::locks_older_than`], also the live lock items
    /// ([`Admin::classify`]; a keep-fence release counts) that look taken with ttl 0 longer ago,
    /// each with a DeleteItem conditioned on the item being as the scan read it (its value,
    /// expiry, attempt id and fence), so a lock taken, refreshed or released since the scan
    /// stays. `progress` is called after every page.
    pub async fn sweep_expired(
        &self,
        opts: &SweepOptions,
        progress: impl Fn(&ScanProgress) + Send + Sync,
    ) -> Result<SweepReport> {
        if opts.grace_secs < 0 {
            return Err(Error::Config(
                "the sweep grace must be 0 or more seconds".into(),
            ));
        }
        if opts.locks_older_than.is_some_and(|d| d < 0) {
            return Err(Error::Config(
                "the age of locks to sweep (locks older than) must be 0 or more seconds".into(),
            ));
        }
        let total = check_segments(&opts.scan)?;
        let now = self.store.now();
        let cutoff = now.saturating_sub(opts.grace_secs);
        // The lock rule: `low < expires_at < high` (the scan's filter takes the bounds too).
        let window = opts.locks_older_than.map(|d| {
            let low = now.saturating_add(DEFAULT_LONG_LOCK_SECS);
            (
                low,
                now.saturating_add(DEFAULT_LOCK_TTL_SECS).saturating_sub(d),
            )
        });
        let mut filter = self.scope_filter(opts.scan.scope);
        filter.expired_before = Some(cutoff);
        filter.expires_between = window;
        let counters = &Counters::new(total);
        let skipped = &AtomicU64::new(0);
        let found = &Mutex::new(Vec::new());
        self.for_each_page(
            &opts.scan,
            &filter,
            counters,
            &progress,
            move |items| async move {
                for it in items {
                    let Some(item) = self.scan_item(&it.view, now) else {
                        continue;
                    };
                    // The filter passed it: expired, or in the lock rule's window.
                    let in_window = window
                        .zip(item.expires_at)
                        .is_some_and(|((low, high), e)| low < e && e < high);
                    let reason = match in_window {
                        true if item.kind == ItemKind::Lock => SweepReason::StuckLock,
                        true => continue,
                        false => SweepReason::Expired,
                    };
                    counters.matched.fetch_add(1, Ordering::Relaxed);
                    let removed = match (opts.dry_run, reason) {
                        (true, _) => None,
                        (false, SweepReason::Expired) => {
                            Some(self.delete_if_expired_before(&item.key, cutoff).await?)
                        }
                        (false, SweepReason::StuckLock) => {
                            Some(self.delete_if_unchanged(&item.key, &it.raw).await?)
                        }
                    };
                    match removed {
                        Some(true) => counters.deleted.fetch_add(1, Ordering::Relaxed),
                        Some(false) => skipped.fetch_add(1, Ordering::Relaxed),
                        None => 0,
                    };
                    let swept = SweptItem {
                        item,
                        reason,
                        removed,
                    };
                    found.lock().unwrap_or_else(|e| e.into_inner()).push(swept);
                }
                Ok(())
            },
        )
        .await?;
        let p = counters.snapshot();
        let mut items = std::mem::take(&mut *found.lock().unwrap_or_else(|e| e.into_inner()));
        items.sort_by(|a, b| a.item.key.cmp(&b.item.key));
        let count = |r| items.iter().filter(|i| i.reason == r).count() as u64;
        Ok(SweepReport {
            scanned: p.scanned,
            expired: count(SweepReason::Expired),
            stuck_locks: count(SweepReason::StuckLock),
            deleted: p.deleted,
            skipped: skipped.load(Ordering::Relaxed),
            dry_run: opts.dry_run,
            cutoff,
            locks_older_than: opts.locks_older_than,
            items,
        })
    }
}
