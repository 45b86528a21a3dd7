//! The core's layers, checked on its source: arrows point one way, no module cycles, only the
//! request layer touches the AWS SDK, and modules stay small. The map is in CONTRIBUTING.md;
//! run `cargo test -p ddblock --test layers`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Each top-level module's layer; a module may use modules of lower layers only (and, within
/// its own layer, none of its neighbours).
const LAYERS: &[(&str, u8)] = &[
    ("time", 0),
    ("holder", 1),
    ("error", 2),
    ("format", 3),
    ("config", 4),
    ("aws", 5),
    ("dynamo", 6),
    ("s3", 6),
    ("store", 7),
    ("cache", 8),
    ("lock", 8),
    ("admin", 8),
    ("once", 8),
    ("cas", 8),
];

/// Lines of non-test code a module may have.
const MAX_LINES: usize = 600;

struct File {
    /// `lock::backend`, `format::codec::read::parser`, `lib`, ...
    module: Vec<String>,
    path: PathBuf,
    text: String,
}

fn files(dir: &Path, prefix: &[String], out: &mut Vec<File>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
        if path.is_dir() {
            let mut p = prefix.to_vec();
            p.push(name);
            files(&path, &p, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let mut module = prefix.to_vec();
            if name != "mod" && !(prefix.is_empty() && name == "lib") {
                module.push(name);
            }
            let text = fs::read_to_string(&path).unwrap();
            out.push(File { module, path, text });
        }
    }
}

fn src() -> Vec<File> {
    let mut out = Vec::new();
    files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &[],
        &mut out,
    );
    out
}

/// The code of a file without its `#[cfg(test)]` module and comments.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests {") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `crate::a::b` path in `code`, as its first two segments.
fn crate_paths(code: &str) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let before = code[..i].chars().last();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let rest = &code[i + "crate::".len()..];
        let segs: Vec<String> = rest
            .split("::")
            .map(|s| {
                s.chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect::<String>()
            })
            .take_while(|s| !s.is_empty())
            .take(2)
            .collect();
        if !segs.is_empty() {
            out.insert(segs);
        }
    }
    // `use crate::{a, b::c}` groups
    for (i, _) in code.match_indices("use crate::{") {
        let rest = &code[i + "use crate::{".len()..];
        let group = &rest[..rest.find("};").unwrap_or(rest.len())];
        for item in group.split(',') {
            let head = item.trim().split("::").next().unwrap_or("").trim();
            if !head.is_empty() {
                out.insert(vec![head.to_owned()]);
            }
        }
    }
    out
}

fn layer(top: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == top).map(|(_, l)| *l)
}

#[test]
fn arrows_point_down_only() {
    let mut wrong = Vec::new();
    for f in src() {
        let Some(top) = f.module.first() else {
            continue; // lib.rs re-exports everything
        };
        let own = layer(top).unwrap_or_else(|| panic!("{top} has no layer in LAYERS"));
        for p in crate_paths(&code(&f.text)) {
            let target = &p[0];
            if target == top {
                continue;
            }
            let Some(theirs) = layer(target) else {
                wrong.push(format!(
                    "{}: unknown module crate::{target}",
                    f.path.display()
                ));
                continue;
            };
            if theirs >= own {
                wrong.push(format!(
                    "{} ({top}, layer {own}) uses crate::{} (layer {theirs})",
                    f.path.display(),
                    p.join("::")
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "arrows pointing up or sideways:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_module_cycles() {
    // Nodes: modules two segments deep (`format::codec`, `lock::backend`); an edge a -> b for
    // each `crate::b` path in a's files, leaving out a module's edges to its own parent or
    // children (a parent declares its children).
    let node = |m: &[String]| m.iter().take(2).cloned().collect::<Vec<_>>().join("::");
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in src() {
        if f.module.is_empty() {
            continue;
        }
        let from = node(&f.module);
        for p in crate_paths(&code(&f.text)) {
            let to = p.join("::");
            let related = to == from
                || from.starts_with(&format!("{to}::"))
                || to.starts_with(&format!("{from}::"));
            if !related {
                edges.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    // Depth-first search for a back edge.
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(n) {
            Some(1) => {
                let start = stack.iter().position(|s| s == n).unwrap();
                let mut cycle = stack[start..].to_vec();
                cycle.push(n.to_owned());
                return Some(cycle);
            }
            Some(_) => return None,
            None => {}
        }
        state.insert(n.to_owned(), 1);
        stack.push(n.to_owned());
        for m in edges.get(n).into_iter().flatten() {
            // An edge to `a` also reaches `a`'s children's shared items through `a::mod`.
            if let Some(c) = visit(m, edges, state, stack) {
                return Some(c);
            }
        }
        stack.pop();
        state.insert(n.to_owned(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in edges.keys() {
        if let Some(cycle) = visit(n, &edges, &mut state, &mut Vec::new()) {
            panic!("module cycle: {}", cycle.join(" -> "));
        }
    }
}

#[test]
fn only_the_request_layer_touches_the_sdk() {
    // Each SDK crate belongs to one request layer; aws_config builds their configuration in
    // `aws/` (which uses no SDK crate, only their shared runtime types) and in both.
    let mut wrong = Vec::new();
    for f in src() {
        let top = f.module.first().map(String::as_str);
        let text = code(&f.text);
        let uses = |sdk: &str| text.contains(sdk);
        let ok = match top {
            None => true, // lib.rs re-exports the SDK for callers
            Some("aws") => !uses("aws_sdk_dynamodb") && !uses("aws_sdk_s3"),
            Some("dynamo") => !uses("aws_sdk_s3"),
            Some("s3") => !uses("aws_sdk_dynamodb"),
            Some(_) => !uses("aws_sdk_dynamodb") && !uses("aws_sdk_s3") && !uses("aws_config"),
        };
        if !ok {
            wrong.push(f.path.display().to_string());
        }
    }
    assert!(
        wrong.is_empty(),
        "outside core/src/dynamo/ (aws_sdk_dynamodb) and core/src/s3/ (aws_sdk_s3), these files \
         use an AWS SDK: {wrong:?}"
    );
}

#[test]
fn modules_stay_small() {
    let big: Vec<String> = src()
        .into_iter()
        .filter(|f| f.path.file_name().unwrap() != "tests.rs")
        .filter_map(|f| {
            let n = code(&f.text).lines().count();
            (n > MAX_LINES).then(|| format!("{} ({n} lines)", f.path.display()))
        })
        .collect();
    assert!(
        big.is_empty(),
        "modules over {MAX_LINES} lines of code: {big:?}"
    );
}

#[test]
fn the_checks_can_fail() {
    // A file of the format layer that used the store would be reported.
    let paths = crate_paths("use crate::store::Store;\nlet x = crate::lock::Lock::new();");
    assert!(paths.contains(&vec!["store".to_owned(), "Store".to_owned()]));
    assert!(paths.contains(&vec!["lock".to_owned(), "Lock".to_owned()]));
    assert!(layer("store").unwrap() > layer("format").unwrap());
    let grouped = crate_paths("use crate::{config::StoreConfig, error::Error};");
    assert!(grouped.contains(&vec!["config".to_owned()]));
    assert!(grouped.contains(&vec!["error".to_owned()]));
    assert!(
        code("let a = 1;\n#[cfg(test)]\nmod tests {\n use crate::store;\n}")
            .lines()
            .count()
            == 1
    );
}
