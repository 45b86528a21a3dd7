//! Sweeping: deleting expired items, each with a DeleteItem conditioned on still being expired.

use std::sync::atomic::{AtomicU64, Ordering};

use ddblock::{Error, Result};

#[cfg(doc)]
use crate::scan::Scope;
use crate::scan::{check_segments, Counters, ScanOptions, ScanProgress};
use crate::Admin;

/// Default of [`SweepOptions::grace_secs`]: only items expired more than a minute ago are swept.
pub const DEFAULT_SWEEP_GRACE_SECS: i64 = 60;

/// Options of [`Admin::sweep_expired`].
#[derive(Debug, Clone)]
pub struct SweepOptions {
    scan: ScanOptions,
    grace_secs: i64,
    dry_run: bool,
}

impl Default for SweepOptions {
    fn default() -> Self {
        SweepOptions {
            scan: ScanOptions::default(),
            grace_secs: DEFAULT_SWEEP_GRACE_SECS,
            dry_run: false,
        }
    }
}

impl SweepOptions {
    /// Defaults: 4 segments, [`Scope::Prefix`], 60 s grace, not a dry run.
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
}

/// What [`Admin::sweep_expired`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SweepReport {
    /// Items DynamoDB evaluated.
    pub scanned: u64,
    /// Expired items found (`expires_at < cutoff`).
    pub expired: u64,
    /// Items deleted (0 on a dry run).
    pub deleted: u64,
    /// Expired items not deleted because the delete's condition failed: refreshed or taken over
    /// between the scan and the delete, or already gone.
    pub skipped: u64,
    /// Nothing was deleted.
    pub dry_run: bool,
    /// Items with `expires_at` below this were expired.
    pub cutoff: i64,
}

impl Admin {
    /// Deletes expired items: every item in scope with `expires_at < now - grace` gets a DeleteItem
    /// conditioned on `#expires_at < :cutoff`, so an item refreshed or re-acquired after the scan
    /// is never removed, and neither is a live one. Items without an expiry never expire and are
    /// left alone. `progress` is called after every page.
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
        let total = check_segments(&opts.scan)?;
        let cutoff = self.store.now().saturating_sub(opts.grace_secs);
        let mut filter = self.scope_filter(opts.scan.scope);
        filter.expired_before = Some(cutoff);
        let counters = &Counters::new(total);
        let skipped = &AtomicU64::new(0);
        self.for_each_page(
            &opts.scan,
            &filter,
            counters,
            &progress,
            move |items| async move {
                for it in items {
                    let Some(key) = it.key else {
                        continue;
                    };
                    counters.matched.fetch_add(1, Ordering::Relaxed);
                    if opts.dry_run {
                        continue;
                    }
                    if self.delete_if_expired_before(&key, cutoff).await? {
                        counters.deleted.fetch_add(1, Ordering::Relaxed);
                    } else {
                        skipped.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Ok(())
            },
        )
        .await?;
        let p = counters.snapshot();
        Ok(SweepReport {
            scanned: p.scanned,
            expired: p.matched,
            deleted: p.deleted,
            skipped: skipped.load(Ordering::Relaxed),
            dry_run: opts.dry_run,
            cutoff,
        })
    }
}
