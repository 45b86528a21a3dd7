//! docs/configuration.md's table of settings is generated from the core's settings table
//! (`ddblock::config::SETTINGS`): this test fails when they differ. To regenerate after changing
//! the table: `DDBLOCK_BLESS=1 cargo test -p ddblock --test settings_doc`.

use ddblock::config::{settings_markdown, Front, Setting, SettingValue, StoreConfig, SETTINGS};

const BEGIN: &str = "<!-- settings: generated from core/src/config/settings.rs by core/tests/settings_doc.rs; do not edit -->\n";
const END: &str = "<!-- settings: end -->";

#[test]
fn configuration_md_is_generated_from_the_settings_table() {
    let path = ddblock_test_support::repo_root().join("docs/configuration.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let start = doc
        .find(BEGIN)
        .expect("the settings markers in docs/configuration.md")
        + BEGIN.len();
    let end = start + doc[start..].find(END).expect("the end marker");
    let want = settings_markdown();
    if doc[start..end] != want {
        if std::env::var_os("DDBLOCK_BLESS").is_some() {
            std::fs::write(&path, format!("{}{want}{}", &doc[..start], &doc[end..])).unwrap();
            return;
        }
        panic!(
            "docs/configuration.md's settings table is not the one the core generates: run \
             DDBLOCK_BLESS=1 cargo test -p ddblock --test settings_doc"
        );
    }
}

/// Every front's name finds its setting, and each is applied (a value of the right kind is
/// taken; an unknown name is refused with the list of names).
#[test]
fn every_front_name_finds_its_setting() {
    for front in [
        Front::Rust,
        Front::Python,
        Front::Node,
        Front::Cli,
        Front::Env,
    ] {
        for s in SETTINGS {
            if let Some(name) = s.name_in(front) {
                assert_eq!(Setting::find(front, name).unwrap().key, s.key, "{name}");
            }
        }
    }
    let e = Setting::find(Front::Node, "connectTimeout").unwrap_err();
    assert!(e.to_string().contains("connectTimeoutMs"), "{e}");
    let built = |front, given: Vec<(&str, SettingValue)>| {
        StoreConfig::from_settings(
            front,
            given.into_iter().map(|(k, v)| (k.to_owned(), v)),
            |_| None,
        )
        .and_then(|b| b.build())
    };
    // Node's durations are milliseconds, Python's and the CLI's seconds: one setting.
    let node = built(
        Front::Node,
        vec![("heartbeatIntervalMs", SettingValue::Number(1500.0))],
    );
    let py = built(
        Front::Python,
        vec![("heartbeat_interval", SettingValue::Number(1.5))],
    );
    let cli = built(
        Front::Cli,
        vec![("heartbeat-interval", SettingValue::Text("1.5".into()))],
    );
    for c in [node, py, cli] {
        assert_eq!(
            c.unwrap().heartbeat_interval(),
            Some(std::time::Duration::from_millis(1500))
        );
    }
    // The same bad value gets the same kind everywhere.
    for (front, name, v) in [
        (Front::Node, "maxAttempts", SettingValue::Number(1.5)),
        (Front::Python, "max_attempts", SettingValue::Number(-1.0)),
        (Front::Cli, "max-attempts", SettingValue::Text("two".into())),
        (
            Front::Cli,
            "connect-timeout",
            SettingValue::Text("-1".into()),
        ),
        (Front::Node, "layout", SettingValue::Text("laravel7".into())),
        (Front::Python, "table", SettingValue::Number(3.0)),
    ] {
        let e = built(front, vec![(name, v)]).unwrap_err();
        assert_eq!(e.kind().as_str(), "config", "{name}: {e}");
    }
}
