//! Table keys: `KeyLayout::{effective_prefix, cache_key, lock_key}`, `format::layout::checked_key`
//! and `StoreConfig::{cache_key, lock_key}` with fuzzed prefixes, names and layout names.
//!
//! Input: one flags byte, then UTF-8 fields separated by `0xFF`: prefix, key or lock name, a
//! layout name for `KeyLayout::from_str`. Flags bits 0-1 pick the layout (8, 11, 12, or the
//! parsed name); when bit 2 is set the name is repeated `flags >> 3` times, to reach DynamoDB's
//! 2048-byte key limit from short inputs.
//!
//! Checks: never panics; a checked key is never over 2048 bytes or empty, and is refused exactly
//! when it would be (as bytes, not characters); keys are the effective prefix plus the name
//! (twice the prefix for 8-11 lock keys, as `double_prefixed_locks` says); the store's keys are
//! the layout's keys, checked; a refused key's message shows at most 64 characters of it; layout
//! names round-trip.
#![no_main]

use std::str::FromStr;

use ddblock::format::layout::{checked_key, MAX_KEY_BYTES};
use ddblock::{Error, ErrorKind, KeyLayout, StoreConfig};
use ddblock_fuzz::fields;
use libfuzzer_sys::fuzz_target;

fn check(given: &str, full: &str, result: &ddblock::Result<String>) {
    let refuse = given.is_empty() || full.len() > MAX_KEY_BYTES;
    match result {
        Ok(key) => {
            assert!(!refuse, "accepted {} bytes for {given:?}", full.len());
            assert!(key.len() <= MAX_KEY_BYTES && !key.is_empty());
            assert_eq!(key, full);
        }
        Err(e) => {
            assert!(refuse, "refused a {}-byte key: {e}", full.len());
            assert_eq!(e.kind(), ErrorKind::InvalidKey);
            let Error::InvalidKey { key, reason } = e else {
                panic!("{e:?}")
            };
            assert!(key.chars().count() <= 65 && given.starts_with(key.trim_end_matches('…')));
            assert!(!reason.is_empty() && !e.to_string().is_empty());
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let (flags, [prefix, name, layout_name]) = fields::<3>(data);
    let name = if flags & 4 != 0 {
        name.repeat(usize::from(flags >> 3))
    } else {
        name
    };

    let parsed = KeyLayout::from_str(&layout_name);
    match &parsed {
        Ok(l) => {
            assert_eq!(KeyLayout::from_str(l.as_str()).ok(), Some(*l));
            assert_eq!(l.to_string(), l.as_str());
        }
        Err(e) => assert_eq!(e.kind(), ErrorKind::Config),
    }
    let layout = match flags & 3 {
        0 => KeyLayout::Laravel8,
        1 => KeyLayout::Laravel11,
        2 => KeyLayout::Laravel12,
        _ => parsed.unwrap_or_default(),
    };

    let ep = layout.effective_prefix(&prefix);
    if layout == KeyLayout::Laravel8 && !prefix.is_empty() {
        assert_eq!(ep, format!("{prefix}:"));
    } else {
        assert_eq!(ep, prefix);
    }
    let cache = layout.cache_key(&prefix, &name);
    let lock = layout.lock_key(&prefix, &name);
    assert_eq!(cache, format!("{ep}{name}"));
    if layout.double_prefixed_locks(&prefix) {
        assert_eq!(lock, format!("{ep}{ep}{name}"));
        assert_ne!(lock, cache);
    } else {
        assert_eq!(lock, cache);
    }

    let checked_cache = checked_key(&name, cache.clone());
    let checked_lock = checked_key(&name, lock.clone());
    check(&name, &cache, &checked_cache);
    check(&name, &lock, &checked_lock);

    let config = StoreConfig::builder()
        .prefix(prefix.clone())
        .layout(layout)
        .build()
        .expect("any prefix and layout make a valid configuration");
    assert_eq!(config.effective_prefix(), ep);
    assert_eq!(config.cache_key(&name).ok(), checked_cache.ok());
    assert_eq!(config.lock_key(&name).ok(), checked_lock.ok());
});
