//! Scanning: what a scan finds ([`ScanItem`], [`ScanReport`]), how an item is classified as a lock
//! or a cache entry, and the parallel scan that [`Admin::sweep_expired`] and [`Admin::doctor`] share.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

use futures_util::{StreamExt, TryStreamExt};

use ddblock::format::item::{self, is_expired, Expiry, ItemView, Value, OWNER_LEN};
use ddblock::{Error, Holder, PhpValue, Result, StoredValue};

use crate::requests::{ScanFilter, Scanned, StartKey};
use crate::Admin;

/// Whether a stored value is a PHP string of 16 `[A-Za-z0-9]`, the owner Laravel's `Str::random()`
/// (and ddblock) generate.
pub fn looks_like_generated_owner(value: &StoredValue) -> bool {
    match value {
        StoredValue::String(s) => matches!(
            ddblock::codec::decode_stored(s),
            Ok(PhpValue::String(b)) if b.len() == OWNER_LEN && b.iter().all(u8::is_ascii_alphanumeric)
        ),
        StoredValue::Number(_) => false,
    }
}

/// A lock released in keep-fence mode: no value (ddblock's and Laravel's writes always have one)
/// and a fencing token, kept for the next acquisition.
fn released_with_fence(it: &ItemView) -> bool {
    matches!(it.value, Value::Missing) && it.fence.is_some()
}

/// Default number of parallel scan segments.
pub const DEFAULT_SEGMENTS: u32 = 4;
/// DynamoDB's limit on `TotalSegments`.
pub const MAX_SEGMENTS: u32 = 1_000_000;
/// Segments scanned at once: more segments take turns, so a scan with many segments does not
/// open that many requests (and connections) at the same time.
pub const MAX_CONCURRENT_SEGMENTS: usize = 16;

/// Which items a scan looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scope {
    /// Items whose key starts with the configured prefix (as the layout writes it); every item
    /// when the prefix is empty.
    #[default]
    Prefix,
    /// Every item in the table, whatever its key.
    All,
}

/// What an item appears to be (see [`Admin::classify`] for the exact rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ItemKind {
    /// A lock item (its value is the owner).
    Lock,
    /// A cache entry.
    Cache,
    /// Outside the configured prefix (only seen with [`Scope::All`]).
    Other,
}

impl ItemKind {
    /// `lock`, `cache` or `other`.
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::Lock => "lock",
            ItemKind::Cache => "cache",
            ItemKind::Other => "other",
        }
    }
}

impl fmt::Display for ItemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Options of [`Admin::scan_items`].
#[derive(Debug, Clone)]
pub struct ScanOptions {
    segments: u32,
    pub(crate) scope: Scope,
    pub(crate) page_size: Option<u32>,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            segments: DEFAULT_SEGMENTS,
            scope: Scope::Prefix,
            page_size: None,
        }
    }
}

impl ScanOptions {
    /// Defaults: 4 segments, [`Scope::Prefix`], DynamoDB's 1 MB pages.
    pub fn new() -> Self {
        Self::default()
    }
    /// Parallel scan segments (1 to 1,000,000).
    pub fn segments(mut self, n: u32) -> Self {
        self.segments = n;
        self
    }
    /// Which items to look at.
    pub fn scope(mut self, scope: Scope) -> Self {
        self.scope = scope;
        self
    }
    /// Items evaluated per Scan request (`Limit`); `None` for DynamoDB's 1 MB pages.
    pub fn page_size(mut self, n: Option<u32>) -> Self {
        self.page_size = n;
        self
    }
}

/// One item found by a scan.
#[derive(Clone, PartialEq)]
pub struct ScanItem {
    /// The table key.
    pub key: String,
    /// Lock, cache entry, or outside the prefix.
    pub kind: ItemKind,
    /// The lock name or cache key under the configured prefix and layout (`None` for [`ItemKind::Other`]).
    pub name: Option<String>,
    /// The stored value (`N` or `S` text), if the item has one.
    pub value: Option<StoredValue>,
    /// For locks: the owner as Laravel compares it (see [`Holder::owner`]).
    pub owner: Option<String>,
    /// The expiry; `None` when the item has none (never expires) or it is unreadable.
    pub expires_at: Option<i64>,
    /// `expires_at - now` at the time of the scan (negative once expired).
    pub expires_in: Option<i64>,
    /// The item reads as missing (`now >= expires_at`) but is still in the table (DynamoDB's TTL
    /// deletion lags up to 48 h, or TTL is off).
    pub expired_but_present: bool,
    /// The expiry attribute is there but not a number.
    pub invalid_expiry: bool,
    /// A lock released in keep-fence mode (`DDBLOCK_RELEASE_MODE=keep-fence`): expired, without
    /// an owner, its fencing token kept for the next acquisition; free, not "expired but held".
    pub released_fence_kept: bool,
}

impl ScanItem {
    /// The item as a lock holder (owner, stored value, expiry).
    pub fn holder(&self) -> Holder {
        item::holder(self.value.clone(), self.expires_at)
    }
}

impl fmt::Debug for ScanItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The value of a lock is its owner, a secret: shown redacted, as Holder does.
        f.debug_struct("ScanItem")
            .field("key", &self.key)
            .field("kind", &self.kind)
            .field("name", &self.name)
            .field("holder", &self.holder())
            .field("expires_in", &self.expires_in)
            .field("expired_but_present", &self.expired_but_present)
            .field("invalid_expiry", &self.invalid_expiry)
            .field("released_fence_kept", &self.released_fence_kept)
            .finish()
    }
}

/// Running totals passed to progress callbacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ScanProgress {
    /// Items DynamoDB evaluated so far (`ScannedCount`).
    pub scanned: u64,
    /// Items that passed the filter (in scope; for a sweep: expired).
    pub matched: u64,
    /// Items deleted so far (sweep only).
    pub deleted: u64,
    /// Segments finished.
    pub segments_done: u32,
    /// Segments in total.
    pub segments: u32,
}

/// What [`Admin::scan_items`] found.
#[derive(Debug, Clone)]
pub struct ScanReport {
    /// Items in scope, sorted by key.
    pub items: Vec<ScanItem>,
    /// Items DynamoDB evaluated.
    pub scanned: u64,
    /// Items in scope whose key attribute is missing or not a string (not Laravel items).
    pub skipped: u64,
    /// The time the scan used for expiry decisions.
    pub now: i64,
}

/// Shared counters of a parallel scan.
pub(crate) struct Counters {
    pub(crate) scanned: AtomicU64,
    pub(crate) matched: AtomicU64,
    pub(crate) deleted: AtomicU64,
    pub(crate) segments_done: AtomicU32,
    segments: u32,
}

impl Counters {
    pub(crate) fn new(segments: u32) -> Counters {
        Counters {
            scanned: AtomicU64::new(0),
            matched: AtomicU64::new(0),
            deleted: AtomicU64::new(0),
            segments_done: AtomicU32::new(0),
            segments,
        }
    }

    pub(crate) fn snapshot(&self) -> ScanProgress {
        ScanProgress {
            scanned: self.scanned.load(Ordering::Relaxed),
            matched: self.matched.load(Ordering::Relaxed),
            deleted: self.deleted.load(Ordering::Relaxed),
            segments_done: self.segments_done.load(Ordering::Relaxed),
            segments: self.segments,
        }
    }
}

impl Admin {
    /// What table key `key` is under the configured prefix and layout: `(kind, name)`.
    ///
    /// - A key not starting with the effective prefix is [`ItemKind::Other`], without a name.
    /// - Layouts `laravel8`/`laravel11` with a non-empty prefix `P`: lock keys are `P P name` and
    ///   cache keys `P key`, so a key starting with `P` twice is a lock named by the rest (a cache
    ///   key that itself starts with `P` reads as a lock too: the layout cannot tell them apart);
    ///   anything else under `P` is a cache entry.
    /// - Otherwise (`laravel12`, or an empty prefix) locks and cache entries share one key space,
    ///   so the value decides: a PHP string of 16 `[A-Za-z0-9]`, the owner Laravel's
    ///   `Str::random()` and ddblock generate, is a lock; anything else a cache entry (a lock taken
    ///   with a custom owner therefore shows as a cache entry).
    pub fn classify(&self, key: &str, value: Option<&StoredValue>) -> (ItemKind, Option<String>) {
        let c = self.config();
        let p = c.effective_prefix();
        let Some(rest) = key.strip_prefix(p.as_str()) else {
            return (ItemKind::Other, None);
        };
        if c.layout().double_prefixed_locks(c.prefix()) {
            return match rest.strip_prefix(p.as_str()) {
                Some(name) => (ItemKind::Lock, Some(name.to_owned())),
                None => (ItemKind::Cache, Some(rest.to_owned())),
            };
        }
        if value.is_some_and(looks_like_generated_owner) {
            (ItemKind::Lock, Some(rest.to_owned()))
        } else {
            (ItemKind::Cache, Some(rest.to_owned()))
        }
    }

    /// Scans the table (parallel segments) and returns every item in scope with its kind, name,
    /// owner (locks) and expiry, sorted by key. `progress` is called after every page.
    pub async fn scan_items(
        &self,
        opts: &ScanOptions,
        progress: impl Fn(&ScanProgress) + Send + Sync,
    ) -> Result<ScanReport> {
        let now = self.store.now();
        let sink = Mutex::new((Vec::new(), 0u64));
        let scanned = self
            .scan_collect(opts, now, &progress, |item| {
                let mut s = sink.lock().unwrap_or_else(|e| e.into_inner());
                match item {
                    Some(i) => s.0.push(i),
                    None => s.1 += 1,
                }
            })
            .await?;
        let (mut items, skipped) = sink.into_inner().unwrap_or_else(|e| e.into_inner());
        items.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(ScanReport {
            items,
            scanned,
            skipped,
            now,
        })
    }

    // ---- internals ----

    /// The server-side filter of a scope.
    pub(crate) fn scope_filter(&self, scope: Scope) -> ScanFilter {
        ScanFilter {
            key_prefix: (scope == Scope::Prefix).then(|| self.config().effective_prefix()),
            expired_before: None,
            expires_between: None,
        }
    }

    /// Scans the items in scope, calling `each` with every item (`None` for one without a string
    /// key); returns the number of items DynamoDB evaluated.
    pub(crate) async fn scan_collect(
        &self,
        opts: &ScanOptions,
        now: i64,
        progress: &(impl Fn(&ScanProgress) + Send + Sync),
        each: impl Fn(Option<ScanItem>) + Send + Sync,
    ) -> Result<u64> {
        let total = check_segments(opts)?;
        let filter = self.scope_filter(opts.scope);
        let counters = &Counters::new(total);
        let each = &each;
        self.for_each_page(opts, &filter, counters, progress, move |items| async move {
            counters
                .matched
                .fetch_add(items.len() as u64, Ordering::Relaxed);
            for it in &items {
                each(self.scan_item(&it.view, now));
            }
            Ok(())
        })
        .await?;
        Ok(counters.snapshot().scanned)
    }

    /// The parallel scan behind `scan_collect` ([`Admin::scan_items`], [`Admin::doctor`]) and
    /// [`Admin::sweep_expired`]: scans `counters.segments` segments concurrently, page by page.
    /// Each page's `ScannedCount` is added to `counters.scanned` before `on_page` gets the page's
    /// items; `progress` is called after every page and again when a segment is done (after
    /// `segments_done` is counted). The first error (of a page or of `on_page`) ends the scan.
    pub(crate) async fn for_each_page<F, Fut>(
        &self,
        opts: &ScanOptions,
        filter: &ScanFilter,
        counters: &Counters,
        progress: &(impl Fn(&ScanProgress) + Send + Sync),
        on_page: F,
    ) -> Result<()>
    where
        F: Fn(Vec<Scanned>) -> Fut,
        Fut: Future<Output = Result<()>>,
    {
        let total = counters.segments;
        let on_page = &on_page;
        let segment = |seg: u32| async move {
            let mut start: Option<StartKey> = None;
            loop {
                let page = self
                    .scan_page(seg, total, filter, opts.page_size, start)
                    .await?;
                counters.scanned.fetch_add(page.scanned, Ordering::Relaxed);
                on_page(page.items).await?;
                progress(&counters.snapshot());
                match page.next {
                    Some(k) => start = Some(k),
                    None => break,
                }
            }
            counters.segments_done.fetch_add(1, Ordering::Relaxed);
            progress(&counters.snapshot());
            Ok::<_, Error>(())
        };
        futures_util::stream::iter((0..total).map(segment))
            .buffer_unordered(MAX_CONCURRENT_SEGMENTS)
            .try_collect::<Vec<()>>()
            .await?;
        Ok(())
    }

    /// A scanned item as ddblock sees it; `None` when its key attribute is missing or not a string.
    pub(crate) fn scan_item(&self, it: &ItemView, now: i64) -> Option<ScanItem> {
        let key = it.key.clone()?;
        let value = it.value.stored().cloned();
        let expires_at = it.expiry.at();
        let (kind, name) = match self.classify(&key, value.as_ref()) {
            // Only a lock's keep-fence release leaves an item with a fence and no value.
            (ItemKind::Cache, name) if released_with_fence(it) => (ItemKind::Lock, name),
            other => other,
        };
        let owner = match kind {
            ItemKind::Lock => item::holder(value.clone(), expires_at).owner,
            _ => None,
        };
        Some(ScanItem {
            key,
            kind,
            name,
            value,
            owner,
            expires_at,
            expires_in: expires_at.map(|e| e.saturating_sub(now)),
            expired_but_present: is_expired(expires_at, now),
            invalid_expiry: matches!(it.expiry, Expiry::Invalid(_)),
            released_fence_kept: released_with_fence(it),
        })
    }
}

pub(crate) fn check_segments(opts: &ScanOptions) -> Result<u32> {
    if !(1..=MAX_SEGMENTS).contains(&opts.segments) {
        return Err(Error::Config(format!(
            "scan segments must be between 1 and {MAX_SEGMENTS}, not {}",
            opts.segments
        )));
    }
    if opts.page_size == Some(0) {
        return Err(Error::Config(
            "the scan page size must be at least 1".into(),
        ));
    }
    Ok(opts.segments)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_owners_are_recognised() {
        let s = |t: &str| StoredValue::String(t.into());
        assert!(looks_like_generated_owner(&s(
            r#"s:16:"y5lgfdhGNbGy3sTY";"#
        )));
        assert!(!looks_like_generated_owner(&s(
            r#"s:15:"y5lgfdhGNbGy3sT";"#
        )));
        assert!(!looks_like_generated_owner(&s(
            r#"s:16:"y5lgfdhGNbGy3sT-";"#
        )));
        assert!(!looks_like_generated_owner(&s("i:5;")));
        assert!(!looks_like_generated_owner(&StoredValue::Number(
            "1234567890123456".into()
        )));
    }
}
