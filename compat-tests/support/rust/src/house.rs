//! The house rules every source file keeps, the core's and everyone else's: at most
//! [`MAX_CODE_LINES`] lines of code a file, and no module cycles in a Rust crate. The core's
//! stricter layer rules (core/tests/layers.rs) and the check of every other room
//! (compat-tests/support/rust/tests/house.rs) both read the tree through these functions.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Lines of code (not blank, not only a comment, not in a Rust `#[cfg(test)] mod tests`) a file may have.
pub const MAX_CODE_LINES: usize = 600;

/// One Rust source file of a crate, with its module path.
pub struct RustFile {
    /// `lock::backend`, `format::codec::read::parser`; empty for `lib.rs` / `main.rs`.
    pub module: Vec<String>,
    /// Where it is.
    pub path: PathBuf,
    /// Its text.
    pub text: String,
}

/// Every `.rs` file under `src` (a crate's `src/`), with its module path.
pub fn rust_files(src: &Path) -> Vec<RustFile> {
    fn walk(dir: &Path, prefix: &[String], out: &mut Vec<RustFile>) {
        let mut entries: Vec<PathBuf> = fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                let mut p = prefix.to_vec();
                p.push(name);
                walk(&path, &p, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let mut module = prefix.to_vec();
                let root = prefix.is_empty() && (name == "lib" || name == "main");
                if name != "mod" && !root {
                    module.push(name);
                }
                let text = fs::read_to_string(&path).unwrap();
                out.push(RustFile { module, path, text });
            }
        }
    }
    let mut out = Vec::new();
    walk(src, &[], &mut out);
    out
}

/// The comment syntax of a source file, by its extension; `None` for what is not source code.
pub fn comment_marks(path: &Path) -> Option<&'static [&'static str]> {
    // `* ` and a lone `*` continue a block comment; `*x = 1;` is code.
    const C: &[&str] = &["//", "/*", "* ", "*/"];
    const HASH: &[&str] = &["#"];
    match path.extension()?.to_str()? {
        "rs" | "js" | "mjs" | "cjs" | "ts" | "php" => Some(C),
        "py" | "pyi" | "sh" => Some(HASH),
        _ => None,
    }
}

/// A Rust file's text without its `#[cfg(test)] mod tests` tail (tests may be long).
pub fn without_test_module(text: &str) -> &str {
    match text.find("#[cfg(test)]\nmod tests {") {
        Some(i) => &text[..i],
        None => text,
    }
}

/// The lines of code of `text`: not blank and not only a comment (by `marks`).
pub fn code_lines<'a>(text: &'a str, marks: &[&str]) -> Vec<&'a str> {
    text.lines()
        .filter(|l| {
            let t = l.trim_start();
            let comment =
                marks.iter().any(|m| t.starts_with(m)) || (t == "*" && marks.contains(&"* "));
            !t.is_empty() && !comment
        })
        .collect()
}

/// The code of a Rust file, as the checks read it: no test module, no blank or comment lines.
pub fn rust_code(text: &str) -> String {
    code_lines(
        without_test_module(text),
        comment_marks(Path::new("x.rs")).unwrap(),
    )
    .join("\n")
}

/// Every `crate::a::b` path in `code`, as its first two segments (and each head of a
/// `use crate::{a, b::c}` group).
pub fn crate_paths(code: &str) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let before = code[..i].chars().last();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let segs: Vec<String> = code[i + "crate::".len()..]
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

/// The first module cycle among a crate's files, if any. Nodes are modules two segments deep;
/// an edge a -> b for each `crate::b` path in a's files, leaving out a module's edges to its
/// parent or children (a parent declares its children).
pub fn module_cycle(files: &[RustFile]) -> Option<Vec<String>> {
    let node = |m: &[String]| m.iter().take(2).cloned().collect::<Vec<_>>().join("::");
    let nodes: BTreeSet<String> = files.iter().map(|f| node(&f.module)).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files.iter().filter(|f| !f.module.is_empty()) {
        let from = node(&f.module);
        for p in crate_paths(&rust_code(&f.text)) {
            // `crate::a::b` is module a::b when a file holds it, else item b of module a.
            let to = match p.join("::") {
                to if nodes.contains(&to) => to,
                _ => p[0].clone(),
            };
            let related = to == from
                || from.starts_with(&format!("{to}::"))
                || to.starts_with(&format!("{from}::"));
            if !related {
                edges.entry(from.clone()).or_default().insert(to);
            }
        }
    }
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
            if let Some(c) = visit(m, edges, state, stack) {
                return Some(c);
            }
        }
        stack.pop();
        state.insert(n.to_owned(), 2);
        None
    }
    let mut state = BTreeMap::new();
    edges
        .keys()
        .find_map(|n| visit(n, &edges, &mut state, &mut Vec::new()))
}
