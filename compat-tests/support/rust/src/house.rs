//! The house rules every source file keeps, the core's and everyone else's: at most
//! [`MAX_CODE_LINES`] lines of code a file, and no module cycles in a Rust crate (paths through
//! `crate::`, `super::` and `self::` alike, between modules at any depth). The core's
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

/// Every path a file names from its crate's modules (`crate::`, `super::`, `self::`, groups
/// `{a, b::c}` included), resolved against the file's module path `module` to a path from the
/// crate root: `super::waiters::Memory` in `lock/fair.rs` is `lock::waiters::Memory`.
pub fn module_paths(module: &[String], code: &str) -> BTreeSet<Vec<String>> {
    fn ident(s: &str) -> usize {
        s.find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(s.len())
    }
    /// The paths of the tree at the start of `s` under `base`, and where the tree ends.
    fn tree(s: &str, base: Vec<String>, out: &mut BTreeSet<Vec<String>>) -> usize {
        let mut path = base;
        let mut i = 0;
        loop {
            let rest = &s[i..];
            if let Some(group) = rest.strip_prefix('{') {
                let mut j = 0;
                loop {
                    let g = &group[j..];
                    let lead = g.len() - g.trim_start().len();
                    j += lead + tree(&group[j + lead..], path.clone(), out);
                    let g = group[j..].trim_start();
                    j = group.len() - g.len();
                    match g.chars().next() {
                        Some(',') => j += 1,
                        Some('}') => return i + 1 + j + 1,
                        _ => return i + 1 + j,
                    }
                }
            }
            let n = ident(rest);
            if n == 0 {
                out.insert(path);
                return i;
            }
            if &rest[..n] != "self" {
                path.push(rest[..n].to_owned()); // `{self, ..}` is the module itself
            }
            i += n;
            match s[i..].strip_prefix("::") {
                Some(_) => i += 2,
                None => {
                    out.insert(path);
                    return i;
                }
            }
        }
    }
    let mut out = BTreeSet::new();
    let mut i = 0;
    while let Some(c) = code[i..].chars().next() {
        let boundary = code[..i]
            .chars()
            .next_back()
            .is_none_or(|p| !(p.is_alphanumeric() || p == '_' || p == ':' || p == '$'));
        let rest = &code[i..];
        let ups = (0..)
            .take_while(|k| rest[k * 7..].starts_with("super::"))
            .count();
        let base = match () {
            _ if !boundary => None,
            _ if rest.starts_with("crate::") => Some((Vec::new(), 7)),
            _ if rest.starts_with("self::") => Some((module.to_vec(), 6)),
            _ if ups > 0 && ups <= module.len() => {
                Some((module[..module.len() - ups].to_vec(), ups * 7))
            }
            _ => None,
        };
        match base {
            Some((base, len)) => i += len + tree(&rest[len..], base, &mut out),
            None => i += c.len_utf8(),
        }
    }
    out
}

/// The module cycles among a crate's files ([`cycles`]; empty: none). Nodes are the crate's
/// modules (its files); an edge a -> b for each path of a's code ([`module_paths`]) that names b or an item
/// of b, leaving out a module's edges to its ancestors and descendants (a parent declares its
/// children).
pub fn module_cycles(files: &[RustFile]) -> Vec<Vec<String>> {
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| f.module.clone()).collect();
    let name = |m: &[String]| m.join("::");
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files.iter().filter(|f| !f.module.is_empty()) {
        for p in module_paths(&f.module, &rust_code(&f.text)) {
            // The longest prefix of the path that is a module.
            let Some(to) = (0..=p.len())
                .rev()
                .map(|n| &p[..n])
                .find(|m| modules.contains(*m))
            else {
                continue;
            };
            let related = f.module.starts_with(to) || to.starts_with(&f.module);
            if !related {
                edges.entry(name(&f.module)).or_default().insert(name(to));
            }
        }
    }
    cycles(&edges)
}

/// The circles of a directed graph that a depth-first walk closes (one per edge back into the
/// walk's path), each as its nodes from one back to itself; empty when there is none.
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
        out: &mut Vec<Vec<String>>,
    ) {
        match state.get(n) {
            Some(1) => {
                let start = stack.iter().position(|s| s == n).unwrap();
                let mut cycle = stack[start..].to_vec();
                cycle.push(n.to_owned());
                out.push(cycle);
                return;
            }
            Some(_) => return,
            None => {}
        }
        state.insert(n.to_owned(), 1);
        stack.push(n.to_owned());
        for m in edges.get(n).into_iter().flatten() {
            visit(m, edges, state, stack, out);
        }
        stack.pop();
        state.insert(n.to_owned(), 2);
    }
    let (mut state, mut out) = (BTreeMap::new(), Vec::new());
    for n in edges.keys() {
        visit(n, edges, &mut state, &mut Vec::new(), &mut out);
    }
    out
}

/// The import circles among the modules of one Python package ([`cycles`]), given as (module name, text)
/// pairs: `from .x import y`, `from . import x, y` and `from .x.z import y` (at any indentation:
/// imports inside functions and `if TYPE_CHECKING:` close a circle too); edges to and from the
/// package's `__init__` are left out (it wires its modules).
pub fn python_import_cycles(modules: &[(String, String)]) -> Vec<Vec<String>> {
    let names: BTreeSet<&str> = modules.iter().map(|(n, _)| n.as_str()).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, text) in modules.iter().filter(|(n, _)| n != "__init__") {
        for line in text.lines().map(str::trim_start) {
            let Some(rest) = line.strip_prefix("from .") else {
                continue;
            };
            let (from, imported) = rest.split_once(" import ").unwrap_or((rest, ""));
            let targets: Vec<&str> = if from.is_empty() {
                imported
                    .split(',')
                    .map(|t| t.split(" as ").next().unwrap_or("").trim())
                    .collect()
            } else {
                vec![from.split('.').next().unwrap_or("")]
            };
            for t in targets
                .into_iter()
                .filter(|t| names.contains(t) && *t != "__init__")
            {
                if t != name {
                    edges.entry(name.clone()).or_default().insert(t.to_owned());
                }
            }
        }
    }
    cycles(&edges)
}
