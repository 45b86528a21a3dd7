//! Key layouts: how Laravel builds table keys from the prefix, per Laravel version, and the
//! prefix Laravel derives from `APP_NAME` when `CACHE_PREFIX` is unset.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// DynamoDB's limit on a partition key value, in bytes.
pub const MAX_KEY_BYTES: usize = 2048;

/// How keys are built from the prefix, matching the Laravel version on the PHP side.
///
/// Lock names only collide across languages when the keys are byte-identical, so this must
/// match the Laravel version the PHP apps run (see `docs/format.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum KeyLayout {
    /// Laravel 8.x to 10.x: `setPrefix` appends `:` to a non-empty prefix, and `lock()` prefixes
    /// the name before `add()` prefixes it again: cache `app_:k`, lock `app_:app_:orders`.
    Laravel8,
    /// Laravel 11.x: the prefix is used as given (laravel/framework PR #47380), the lock key is
    /// still double-prefixed: cache `app_k`, lock `app_app_orders`.
    Laravel11,
    /// Laravel 12.0+: `lock()` passes the bare name (PR #52986): cache `app_k`, lock `app_orders`.
    #[default]
    Laravel12,
}

impl KeyLayout {
    /// The string each key starts with for `prefix` under this layout.
    pub fn effective_prefix(self, prefix: &str) -> String {
        match self {
            KeyLayout::Laravel8 if !prefix.is_empty() => format!("{prefix}:"),
            _ => prefix.to_owned(),
        }
    }

    /// The table key of cache entry `key` (not checked; see [`checked_key`]).
    pub fn cache_key(self, prefix: &str, key: &str) -> String {
        format!("{}{key}", self.effective_prefix(prefix))
    }

    /// The table key of lock `name` (not checked; see [`checked_key`]).
    pub fn lock_key(self, prefix: &str, name: &str) -> String {
        let p = self.effective_prefix(prefix);
        match self {
            KeyLayout::Laravel8 | KeyLayout::Laravel11 => format!("{p}{p}{name}"),
            KeyLayout::Laravel12 => format!("{p}{name}"),
        }
    }

    /// Whether lock keys carry the prefix twice (8-11 with a non-empty prefix), which is what
    /// tells a lock key from a cache key in a scan.
    pub fn double_prefixed_locks(self, prefix: &str) -> bool {
        !prefix.is_empty() && matches!(self, KeyLayout::Laravel8 | KeyLayout::Laravel11)
    }

    /// The canonical lower-case name (`laravel8`, `laravel11`, `laravel12`).
    pub fn as_str(self) -> &'static str {
        match self {
            KeyLayout::Laravel8 => "laravel8",
            KeyLayout::Laravel11 => "laravel11",
            KeyLayout::Laravel12 => "laravel12",
        }
    }
}

impl fmt::Display for KeyLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for KeyLayout {
    type Err = Error;

    /// Accepts `laravel8`/`8`/`laravel9`/`laravel10`, `laravel11`/`11`, `laravel12`/`12`/`laravel13`/`13`.
    fn from_str(s: &str) -> Result<Self> {
        let t = s.trim().to_ascii_lowercase();
        let t = t.strip_prefix("laravel").unwrap_or(&t);
        let t = t.split('.').next().unwrap_or("");
        match t {
            "8" | "9" | "10" => Ok(KeyLayout::Laravel8),
            "11" => Ok(KeyLayout::Laravel11),
            "12" | "13" => Ok(KeyLayout::Laravel12),
            _ => Err(Error::Config(format!(
                "unknown key layout {s:?}: use laravel8 (Laravel 8-10), laravel11 or laravel12 (12.0+)"
            ))),
        }
    }
}

/// `full` (the prefixed table key of `given`), checked to be non-empty and at most 2048 bytes
/// (DynamoDB's partition key limit; bytes, not characters) before any request.
pub fn checked_key(given: &str, full: String) -> Result<String> {
    let shown = || {
        let mut s: String = given.chars().take(64).collect();
        if s.len() < given.len() {
            s.push('…');
        }
        s
    };
    if given.is_empty() {
        return Err(Error::InvalidKey {
            key: String::new(),
            reason: "it is empty; give a non-empty key or lock name".into(),
        });
    }
    if full.len() > MAX_KEY_BYTES {
        return Err(Error::InvalidKey {
            key: shown(),
            reason: format!(
                "it is {} bytes once prefixed, and DynamoDB partition keys are at most {MAX_KEY_BYTES} bytes; \
                 use a shorter key (e.g. a hash of it)",
                full.len()
            ),
        });
    }
    Ok(full)
}

/// Laravel's default `cache.prefix` when `CACHE_PREFIX` is unset, from `config/cache.php`:
/// `Str::slug(APP_NAME, '_').'_cache'` in the Laravel 8-10 skeleton, `..._cache_` in 11 and
/// early 12, and `Str::slug(APP_NAME).'-cache-'` in Laravel 13 (framework PR #56172) and the 12
/// skeleton since June 2025 (laravel/laravel PR #6636). Layout `laravel12` stands for 12 and
/// later, so it takes the newer, hyphenated form: a Laravel 12 app created before July 2025
/// (or one whose config says otherwise) needs `CACHE_PREFIX` set, and `doctor` says so when it
/// finds no item under the derived prefix.
/// An `APP_NAME` with non-ASCII characters is refused ([`Error::Config`]): Laravel transliterates
/// them (`Str::ascii`), which ddblock does not reproduce.
pub fn laravel_prefix(app_name: &str, layout: KeyLayout) -> Result<String> {
    if !app_name.is_ascii() {
        return Err(Error::Config(format!(
            "APP_NAME {app_name:?} has non-ASCII characters, which Laravel transliterates for \
             its default cache prefix and ddblock cannot: set CACHE_PREFIX to the app's \
             `config('cache.prefix')`"
        )));
    }
    Ok(match layout {
        KeyLayout::Laravel8 => format!("{}_cache", laravel_slug(app_name, '_')),
        KeyLayout::Laravel11 => format!("{}_cache_", laravel_slug(app_name, '_')),
        KeyLayout::Laravel12 => format!("{}-cache-", laravel_slug(app_name, '-')),
    })
}

/// Laravel's `Str::slug($title, $separator)` for ASCII titles: the other separator (`-` or `_`)
/// becomes `separator`, `@` becomes `{sep}at{sep}`, letters are lowered, characters other than
/// letters, digits, whitespace and the separator are dropped, runs of whitespace and separators
/// become one separator, and separators are trimmed from both ends. (Laravel transliterates
/// non-ASCII letters first; [`laravel_prefix`] refuses them.) Checked against Laravel's own
/// `Str::slug` in `compat-tests/interop/tests/default_prefix.rs`.
pub fn laravel_slug(title: &str, separator: char) -> String {
    let at = format!("{separator}at{separator}");
    let mut slug = String::new();
    let mut pending_sep = false;
    for ch in title.replace('@', &at).chars() {
        if ch.is_alphanumeric() {
            if pending_sep && !slug.is_empty() {
                slug.push(separator);
            }
            pending_sep = false;
            slug.extend(ch.to_lowercase());
        } else if ch.is_whitespace() || ch == '-' || ch == '_' {
            pending_sep = true;
        }
    }
    slug
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn laravel_default_prefixes() {
        for (app, layout, want) in [
            ("laravel", KeyLayout::Laravel12, "laravel-cache-"),
            ("laravel", KeyLayout::Laravel11, "laravel_cache_"),
            ("laravel", KeyLayout::Laravel8, "laravel_cache"),
            ("My Shop-App", KeyLayout::Laravel11, "my_shop_app_cache_"),
            (" a@b  ", KeyLayout::Laravel12, "a-at-b-cache-"),
        ] {
            assert_eq!(laravel_prefix(app, layout).unwrap(), want, "{app:?}");
        }
        let e = laravel_prefix("Café", KeyLayout::Laravel12).unwrap_err();
        assert!(e.to_string().contains("set CACHE_PREFIX"), "{e}");
    }
}
