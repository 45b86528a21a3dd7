//! docs/observability.md's table is generated from the core's table of what ddblock reports
//! (`ddblock::telemetry::INSTRUMENTS`), and the names follow OpenTelemetry's rules. To regenerate
//! after changing the table: `DDBLOCK_BLESS=1 cargo test -p ddblock --test telemetry_doc`.

use std::fmt::Write as _;

use ddblock::telemetry::{Kind, INSTRUMENTS};

#[test]
fn observability_md_is_generated_from_the_table() {
    let mut out = String::from(
        "| name | kind | unit | attributes | meaning |\n| --- | --- | --- | --- | --- |\n",
    );
    for i in INSTRUMENTS {
        let attrs: Vec<String> = i.attributes.iter().map(|a| format!("`{a}`")).collect();
        let unit = if i.unit.is_empty() {
            "—".to_owned()
        } else {
            format!("`{}`", i.unit)
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {unit} | {} | {} |",
            i.name,
            i.kind.as_str(),
            attrs.join(", "),
            i.meaning
        );
    }
    let generated = "generated from core/src/telemetry.rs by core/tests/telemetry_doc.rs";
    ddblock_test_support::generated(
        "docs/observability.md",
        &format!("<!-- instruments: {generated}; do not edit -->\n"),
        "<!-- instruments: end -->",
        &out,
        "cargo test -p ddblock --test telemetry_doc",
    );
}

/// OpenTelemetry's naming rules: lower case, dot-separated, ddblock's own namespace first; units
/// in UCUM (`s` for durations, `{thing}` for counts); metric names unique (a warning may share its
/// counter's name).
#[test]
fn names_follow_opentelemetry_rules() {
    let mut metrics = Vec::new();
    for i in INSTRUMENTS {
        assert!(i.name.starts_with("ddblock."), "{}", i.name);
        assert!(
            i.name.split('.').all(|p| !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')),
            "{}",
            i.name
        );
        match i.kind {
            Kind::Histogram => assert_eq!(i.unit, "s", "{}: durations in seconds", i.name),
            Kind::Counter => assert!(
                i.unit.starts_with('{') && i.unit.ends_with('}'),
                "{}: a count's unit is an annotation",
                i.name
            ),
            Kind::Span | Kind::Warning => assert_eq!(i.unit, "", "{}", i.name),
        }
        if matches!(i.kind, Kind::Counter | Kind::Histogram) {
            assert!(!metrics.contains(&i.name), "{} twice", i.name);
            metrics.push(i.name);
            assert!(
                i.attributes.contains(&"db.collection.name"),
                "{}: says which table",
                i.name
            );
        }
        assert!(
            !i.attributes.iter().any(|a| a.contains("owner")),
            "{}: never an owner",
            i.name
        );
    }
}
