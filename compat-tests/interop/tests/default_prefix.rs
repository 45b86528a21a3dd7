//! ddblock's default cache prefix (`CACHE_PREFIX` unset) against Laravel's own `Str::slug`
//! (Debian's 8.83, run as `php compat-tests/laravel/slug.php`): the slug of `APP_NAME` must be
//! Laravel's, byte for byte, or a process that trusts the default never meets the app's locks.

use std::io::Write;
use std::process::{Command, Stdio};

use ddblock::config::{laravel_prefix, laravel_slug};
use ddblock::{ErrorKind, KeyLayout, StoreConfig};
use ddblock_test_support::repo_root;

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

fn php_slugs(names: &[&str]) -> Vec<(String, String, String)> {
    let script = repo_root().join("compat-tests/laravel/slug.php");
    let mut child = Command::new("php")
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("cannot start php: run compat-tests/setup.sh");
    {
        let mut stdin = child.stdin.take().unwrap();
        for n in names {
            writeln!(stdin, "{}", serde_json::to_string(n).unwrap()).unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "php slug.php failed");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn default_prefix_is_laravels() {
    let slugs = php_slugs(NAMES);
    assert_eq!(slugs.len(), NAMES.len());
    for (name, underscore, dash) in &slugs {
        assert_eq!(
            &laravel_slug(name, '_'),
            underscore,
            "Str::slug({name:?}, '_')"
        );
        assert_eq!(&laravel_slug(name, '-'), dash, "Str::slug({name:?})");
        // The suffixes are those of config/cache.php per version (see laravel_prefix's doc).
        let by_layout = [
            (KeyLayout::Laravel8, format!("{underscore}_cache")),
            (KeyLayout::Laravel11, format!("{underscore}_cache_")),
            (KeyLayout::Laravel12, format!("{dash}-cache-")),
        ];
        for (layout, want) in by_layout {
            assert_eq!(
                laravel_prefix(name, layout).unwrap(),
                want,
                "{name:?} {layout}"
            );
            let built = StoreConfig::from_vars(|k| (k == "APP_NAME").then(|| name.clone()))
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
