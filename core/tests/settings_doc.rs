//! Every front's spelling of the settings is generated from the core's settings table
//! (`ddblock::config::SETTINGS`), and this test fails when one differs: docs/configuration.md's
//! table, Python's keyword arguments (`bindings/python/python/ddblock/_base.py`) and Node's
//! options type (`StoreOptions` in `bindings/node/lib.d.ts`). To regenerate after changing the table:
//! `DDBLOCK_BLESS=1 cargo test -p ddblock --test settings_doc`.

use std::fmt::Write as _;

use ddblock::config::{Defaults, Front, Setting, SettingValue, StoreConfig, Unit, SETTINGS};

const GENERATED: &str = "generated from core/src/config/settings.rs by core/tests/settings_doc.rs";

/// Checks (or with `DDBLOCK_BLESS`, writes) one generated section of file `name`.
fn generated(name: &str, begin: &str, end: &str, want: &str) {
    let bless = "cargo test -p ddblock --test settings_doc";
    ddblock_test_support::generated(name, begin, end, want, bless);
}

/// A default as the docs say it.
fn default_text(d: Defaults) -> String {
    match d {
        Defaults::All(text) => text.to_owned(),
        Defaults::PerFront(fronts) => {
            let each: Vec<String> = fronts
                .iter()
                .map(|(front, n, why)| format!("{front:?} {n}: {why}"))
                .collect();
            format!("{}; never more than the cores", each.join("; "))
        }
    }
}

#[test]
fn configuration_md_is_generated_from_the_settings_table() {
    let code = |n: Option<&str>, pre: &str| n.map_or("—".to_owned(), |n| format!("`{pre}{n}`"));
    let mut out = String::from(
        "| setting | Rust builder | Python | Node | CLI | environment | unit | default |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for s in SETTINGS {
        let unit = match s.unit {
            Unit::Text => "text".to_owned(),
            Unit::Choice(words) => words
                .iter()
                .map(|w| format!("`{w}`"))
                .collect::<Vec<_>>()
                .join(", "),
            Unit::Seconds => "seconds (Node: ms)".to_owned(),
            Unit::WholeSeconds => "whole seconds (Node: ms)".to_owned(),
            Unit::Count => "a whole number, 1 or more".to_owned(),
            Unit::Backoff => "initial, max (seconds), multiplier, jitter".to_owned(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {unit} | {} |",
            s.doc,
            code(s.rust, "."),
            code(s.python, ""),
            code(s.node, ""),
            code(s.cli, "--"),
            code(s.env, ""),
            default_text(s.default)
        );
    }
    let begin = format!("<!-- settings: {GENERATED}; do not edit -->\n");
    generated(
        "docs/configuration.md",
        &begin,
        "<!-- settings: end -->",
        &out,
    );
}

/// `Store(...)`'s keyword arguments: every setting Python names (the table by position too).
#[test]
fn python_keywords_are_generated_from_the_settings_table() {
    let mut out = String::new();
    for s in SETTINGS {
        let Some(name) = s.python else { continue };
        let ty = match s.unit {
            Unit::Text | Unit::Choice(_) => "str",
            Unit::Seconds | Unit::WholeSeconds => "float",
            Unit::Count => "int",
            Unit::Backoff => "Backoff",
        };
        let _ = writeln!(out, "        {name}: {ty} | None = None,");
        if s.key == ddblock::config::settings::Key::Table {
            out.push_str("        *,\n");
        }
    }
    let begin = format!("        # settings: {GENERATED}\n");
    let end = "        # settings: end";
    generated("bindings/python/python/ddblock/_base.py", &begin, end, &out);
}

/// A doc line of the table with its Markdown links as paths from the repository's root.
fn js_doc(doc: &str) -> String {
    let mut doc = doc.replace("](#", "](configuration.md#");
    while let Some(open) = doc.find('[') {
        let Some(mid) = doc[open..].find("](").map(|m| open + m) else {
            break;
        };
        doc.replace_range(open..mid + 2, "docs/");
        let close = open + doc[open..].find(')').expect("a link's end");
        doc.remove(close);
    }
    let mut chars = doc.chars();
    chars
        .next()
        .map_or(String::new(), |c| c.to_uppercase().chain(chars).collect())
}

/// `new Store(options)`'s TypeScript type: every setting Node names.
#[test]
fn node_options_type_is_generated_from_the_settings_table() {
    let mut out = String::from(
        "/**\n * The options of `new Store(...)`: what is not given comes from Laravel's variables, \
         then\n * Laravel's defaults (docs/configuration.md). Durations are in milliseconds.\n \
         */\nexport interface StoreOptions {\n",
    );
    for s in SETTINGS {
        let Some(name) = s.node else { continue };
        let ty = match s.unit {
            Unit::Text | Unit::Choice(_) => "string",
            _ => "number",
        };
        let env = s
            .env
            .map(|e| format!(" Environment: `{e}`."))
            .unwrap_or_default();
        let doc = js_doc(&format!(
            "{}. Default: {}.{env}",
            s.doc,
            default_text(s.default)
        ));
        let _ = writeln!(out, "  /** {doc} */\n  {name}?: {ty}");
    }
    out.push_str("}\n");
    let begin = format!("// settings: {GENERATED}; do not edit\n");
    generated("bindings/node/lib.d.ts", &begin, "// settings: end", &out);
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

/// `DDBLOCK_WORKER_THREADS`: each binding's default from the table (never more than the cores),
/// a given count as it is, and a bad one refused when a store is made from the environment.
#[test]
fn worker_threads_have_a_default_per_front() {
    use ddblock::config::worker_threads;
    let cores = std::thread::available_parallelism().unwrap().get();
    let var = |v: &'static str| move |k: &str| (k == "DDBLOCK_WORKER_THREADS").then(|| v.into());
    assert_eq!(worker_threads(Front::Python, |_| None), cores.min(2));
    assert_eq!(worker_threads(Front::Node, |_| None), 1);
    assert_eq!(worker_threads(Front::Node, var("3")), 3);
    for bad in ["0", "two", "-1", "1.5"] {
        assert_eq!(worker_threads(Front::Node, var(bad)), 1, "{bad}");
        let e = StoreConfig::from_vars(var(bad)).unwrap_err();
        assert!(
            e.to_string().contains("DDBLOCK_WORKER_THREADS must be")
                && e.to_string().contains("1 or more"),
            "{bad}: {e}"
        );
    }
}
