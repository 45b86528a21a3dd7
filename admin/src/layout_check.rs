//! The doctor's layout check: keys in the table that another Laravel version's layout would
//! write, a sign that `DDBLOCK_LAYOUT` does not match the PHP side (then locks never meet); and a
//! prefix derived from `APP_NAME` that no scanned item carries, a sign that `CACHE_PREFIX` must
//! be set.

use ddblock::{KeyLayout, StoreConfig};

use crate::report::{Check, CheckId, CheckStatus};

/// Keys seen that fit another layout better, per layout: (count, an example).
pub(super) struct LayoutTally {
    prefix: String,
    layout: KeyLayout,
    other: Vec<(KeyLayout, u64, String)>,
    /// The key prefix items carry, and the `APP_NAME` it was derived from (when it was).
    effective_prefix: String,
    derived_from: Option<String>,
    /// Scanned keys under `effective_prefix`.
    under_prefix: u64,
}

impl LayoutTally {
    pub(super) fn new(cfg: &StoreConfig) -> LayoutTally {
        LayoutTally {
            prefix: cfg.prefix().to_owned(),
            layout: cfg.layout(),
            other: Vec::new(),
            effective_prefix: cfg.effective_prefix(),
            derived_from: cfg.prefix_from_app_name().map(str::to_owned),
            under_prefix: 0,
        }
    }

    /// The layout `key` suggests, when it is not the configured one.
    fn suggests(&self, key: &str) -> Option<KeyLayout> {
        let p = self.prefix.as_str();
        if p.is_empty() {
            return None; // every layout writes the same keys
        }
        let rest = key.strip_prefix(p)?;
        let theirs = if rest.starts_with(':') {
            KeyLayout::Laravel8 // `setPrefix` appends ':' in 8-10
        } else if rest.starts_with(p) {
            KeyLayout::Laravel11 // a double prefix without ':' (11; 8-10 would have ':')
        } else {
            // A single prefix without ':' is what 11 and 12 write for cache keys, and 12 for
            // locks: it tells nothing unless we expect 8-10's ':'.
            return (self.layout == KeyLayout::Laravel8).then_some(KeyLayout::Laravel12);
        };
        let fits = match (self.layout, theirs) {
            (KeyLayout::Laravel8, KeyLayout::Laravel8) => true,
            (KeyLayout::Laravel11, KeyLayout::Laravel11) => true,
            // 12 writes single-prefixed lock keys; a double-prefixed one is 11's (or a cache key
            // that itself starts with the prefix: the check is a hint, hence a warning).
            _ => false,
        };
        (!fits).then_some(theirs)
    }

    pub(super) fn see(&mut self, key: &str) {
        if key.starts_with(&self.effective_prefix) {
            self.under_prefix += 1;
        }
        let Some(theirs) = self.suggests(key) else {
            return;
        };
        match self.other.iter_mut().find(|(l, _, _)| *l == theirs) {
            Some((_, n, _)) => *n += 1,
            None => self.other.push((theirs, 1, key.to_owned())),
        }
    }

    /// The check, given how many items the scan read in all (DynamoDB's `ScannedCount`, which
    /// counts the items outside the prefix that the scan's filter dropped).
    pub(super) fn check(&self, scanned: u64) -> Check {
        if let Some(app) = &self.derived_from {
            if self.under_prefix == 0 && scanned > 0 {
                return Check {
                    id: CheckId::Layout,
                    status: CheckStatus::Warn,
                    detail: format!(
                        "none of the {scanned} items scanned is under the prefix `{}`, Laravel's \
                         default for APP_NAME `{app}` with layout `{}` (CACHE_PREFIX is unset): if \
                         the app's `config('cache.prefix')` is another, set CACHE_PREFIX to it or \
                         the locks never meet",
                        self.effective_prefix, self.layout
                    ),
                };
            }
        }
        let Some((theirs, n, example)) = self.other.iter().max_by_key(|(_, n, _)| *n) else {
            return Check {
                id: CheckId::Layout,
                status: CheckStatus::Ok,
                detail: format!(
                    "no key looks like another Laravel version's layout than `{}`",
                    self.layout
                ),
            };
        };
        let versions = match theirs {
            KeyLayout::Laravel8 => "8-10",
            KeyLayout::Laravel11 => "11",
            KeyLayout::Laravel12 => "11+",
        };
        Check {
            id: CheckId::Layout,
            status: CheckStatus::Warn,
            detail: format!(
                "{n} keys look like Laravel {versions}'s layout (e.g. `{example}`), but the layout \
                 is `{}`: if the PHP side runs Laravel {versions}, set DDBLOCK_LAYOUT={theirs} (or \
                 --layout) or the locks never meet",
                self.layout
            ),
        }
    }
}
