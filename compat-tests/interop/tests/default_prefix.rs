//! ddblock's default cache prefix (`CACHE_PREFIX` unset) against Laravel's own `Str::slug`
//! (Debian's 8.83) and config/cache.php's prefix of each version, as the PHP peer's `slug`
//! request answers them (`compat-tests/laravel/harness.php`): the prefix from `APP_NAME` must be
//! Laravel's, byte for byte, or a process that trusts the default never meets the app's locks.

use ddblock::config::{laravel_prefix, laravel_slug};
use ddblock::{ErrorKind, KeyLayout, StoreConfig};
use ddblock_test_support::laravel::{self, PeerEnv};
use serde_json::{json, Value};

/// ASCII app names, ordinary and awkward: separators, `@`, punctuation, runs, edges.
const NAMES: &[&str] = &[
    "Laravel",
    "laravel",
    "My Shop-App",
    " a@b  ",
    "x__y--z",
    "[LOCAL] My App",
    "admin.domain",
    "Shop 2.0 (beta)",
    "--edge__",
    "A\tB\nC",
    "123",
    "!!!",
    "a@@b",
    "CamelCaseName",
    "under_score-and dash",
];

/// Stock Laravel's answers to `slug` for every name, in the version of `layout`. The peer sends
/// no request for it, so the endpoint and table are placeholders.
fn php_slugs(layout: KeyLayout) -> Vec<Value> {
    let env = PeerEnv::new(
        "http://127.0.0.1:9",
        "unused",
        layout.as_str(),
        "",
        "laravel",
    );
    let requests: Vec<Value> = NAMES
        .iter()
        .map(|n| json!({"op": "slug", "name": n}))
        .collect();
    let answers = laravel::answers(&env, &requests, "PHP peer (slug)").unwrap();
    for (name, a) in NAMES.iter().zip(&answers) {
        assert_eq!(a["ok"], true, "slug {name:?}: {a}");
    }
    answers
}

#[test]
fn default_prefix_is_laravels() {
    for layout in [
        KeyLayout::Laravel8,
        KeyLayout::Laravel11,
        KeyLayout::Laravel12,
    ] {
        for (name, php) in NAMES.iter().zip(php_slugs(layout)) {
            let (underscore, dash) = (&php["slug_underscore"], &php["slug"]);
            assert_eq!(
                laravel_slug(name, '_'),
                *underscore,
                "Str::slug({name:?}, '_')"
            );
            assert_eq!(laravel_slug(name, '-'), *dash, "Str::slug({name:?})");
            let want = php["prefix"].as_str().unwrap();
            assert_eq!(
                laravel_prefix(name, layout).unwrap(),
                want,
                "{name:?} {layout}"
            );
            let built = StoreConfig::from_vars(|k| (k == "APP_NAME").then(|| name.to_string()))
                .unwrap()
                .layout(layout)
                .build()
                .unwrap();
            assert_eq!(built.prefix(), want, "from_vars with APP_NAME={name:?}");
        }
    }
}

#[test]
fn a_non_ascii_app_name_needs_cache_prefix() {
    // Laravel transliterates ("Café" -> "cafe", "日本" -> ""); ddblock refuses rather than guess.
    for name in ["Café Ünïcode", "日本"] {
        let err = StoreConfig::from_vars(|k| (k == "APP_NAME").then(|| name.to_owned()))
            .unwrap()
            .build()
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Config, "{err}");
        assert!(err.to_string().contains("set CACHE_PREFIX"), "{err}");
        let with_prefix = StoreConfig::from_vars(|k| match k {
            "APP_NAME" => Some(name.to_owned()),
            "CACHE_PREFIX" => Some("cafe_cache_".to_owned()),
            _ => None,
        })
        .unwrap()
        .build()
        .unwrap();
        assert_eq!(with_prefix.prefix(), "cafe_cache_");
    }
}
