//! The house rules outside the core (core/tests/layers.rs keeps the core's): every source file of
//! the repository, bindings and test house included, has at most 600 lines of code; no Rust crate
//! has a module cycle and no Python package an import cycle; the rooms of the test house import
//! one way. Generated files are exempt from the size rule. Run `cargo test -p ddblock-test-support --test house`.

use std::path::{Path, PathBuf};
use std::process::Command;

use ddblock_test_support::house::{
    code_lines, comment_marks, module_cycles, module_paths, python_import_cycles, rust_files,
    without_test_module, RustFile, MAX_CODE_LINES,
};
use ddblock_test_support::repo_root;

/// Files written by a generator, checked by their own drift tests instead.
const GENERATED: &[&str] = &[
    "bindings/node/native.js",                    // napi's loader
    "bindings/node/native.d.ts",                  // napi's types of the native module
    "bindings/python/python/ddblock/_native.pyi", // maturin generate-stubs
    "bindings/python/python/ddblock/_sync.py",    // tools/unasync.py from _aio.py
];

/// The tree checked: this checkout, or `DDBLOCK_HOUSE_ROOT` (another checkout, to show what the
/// rules say of it, e.g. an older commit in a `git worktree`).
fn root() -> PathBuf {
    std::env::var_os("DDBLOCK_HOUSE_ROOT").map_or_else(repo_root, PathBuf::from)
}

fn tracked() -> Vec<PathBuf> {
    let root = root();
    let out = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(&root)
        .output()
        .expect("git ls-files");
    assert!(out.status.success(), "git ls-files failed");
    String::from_utf8(out.stdout)
        .unwrap()
        .split('\0')
        .filter(|p| !p.is_empty() && !GENERATED.contains(p))
        .map(|p| root.join(p))
        .filter(|p| p.exists()) // deleted in the working tree, not yet in the index
        .collect()
}

fn over_limit(path: &Path, text: &str) -> Option<usize> {
    let marks = comment_marks(path)?;
    let text = if path.extension().is_some_and(|e| e == "rs") {
        without_test_module(text)
    } else {
        text
    };
    let n = code_lines(text, marks).len();
    (n > MAX_CODE_LINES).then_some(n)
}

#[test]
fn every_source_file_stays_small() {
    let root = root();
    let big: Vec<String> = tracked()
        .into_iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(&p).ok()?;
            let n = over_limit(&p, &text)?;
            Some(format!(
                "{} ({n} lines of code)",
                p.strip_prefix(&root).unwrap_or(&p).display()
            ))
        })
        .collect();
    assert!(
        big.is_empty(),
        "files over {MAX_CODE_LINES} lines of code (split them along their seams): {big:#?}"
    );
}

/// Each crate's module graphs: the library or main binary, and each binary under `src/bin/`.
fn graphs() -> Vec<(PathBuf, Vec<RustFile>)> {
    let mut out = Vec::new();
    for manifest in tracked().into_iter().filter(|p| p.ends_with("Cargo.toml")) {
        let src = manifest.parent().unwrap().join("src");
        if !src.is_dir() {
            continue;
        }
        let files = rust_files(&src);
        let (bins, main): (Vec<RustFile>, Vec<RustFile>) = files
            .into_iter()
            .partition(|f| f.module.first().is_some_and(|m| m == "bin"));
        out.push((src.clone(), main));
        let mut by_bin: std::collections::BTreeMap<String, Vec<RustFile>> = Default::default();
        for mut f in bins {
            f.module.remove(0); // `bin`
            let bin = f.module.first().cloned().unwrap_or_default();
            if f.path.parent().is_some_and(|d| d.ends_with("bin")) {
                f.module.clear(); // src/bin/x.rs is its binary's root
            } else {
                f.module.remove(0); // src/bin/x/...: modules of binary x
            }
            by_bin.entry(bin).or_default().push(f);
        }
        out.extend(by_bin.into_values().map(|fs| (src.join("bin"), fs)));
    }
    out
}

#[test]
fn no_module_cycles_in_any_crate() {
    let cycles: Vec<String> = graphs()
        .iter()
        .flat_map(|(src, files)| {
            module_cycles(files)
                .into_iter()
                .map(move |c| format!("{}: {}", src.display(), c.join(" -> ")))
        })
        .collect();
    assert!(cycles.is_empty(), "module cycles: {cycles:#?}");
}

#[test]
fn no_import_cycles_in_any_python_package() {
    let mut cycles = Vec::new();
    for init in tracked().into_iter().filter(|p| p.ends_with("__init__.py")) {
        let dir = init.parent().unwrap();
        let modules: Vec<(String, String)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "py"))
            .map(|p| {
                let name = p.file_stem().unwrap().to_string_lossy().into_owned();
                (name, std::fs::read_to_string(&p).unwrap())
            })
            .collect();
        for c in python_import_cycles(&modules) {
            cycles.push(format!("{}: {}", dir.display(), c.join(" -> ")));
        }
    }
    assert!(cycles.is_empty(), "import cycles: {cycles:#?}");
}

/// The rooms of the test house below the suites (compat-tests/README.md: "a suite uses the
/// support, the proxy, the Laravel peer and the spec; those use only the servers; nothing below
/// imports a suite"), and the suites.
const BELOW_THE_SUITES: &[&str] = &[
    "support",
    "fault-proxy",
    "laravel",
    "conformance",
    "servers",
];
const SUITES: &[&str] = &[
    "interop",
    "patterns",
    "chaos",
    "stuck-locks",
    "docs",
    "deploy",
    "bench",
    "packages",
];

/// The suites a file of a room below them names in its code: a Cargo path dependency, or a path
/// in a string (`"../chaos"`, `'compat-tests/bench/...'`). Comments and prose do not count.
fn suites_named(path: &Path, text: &str) -> Vec<&'static str> {
    let code: Vec<&str> = if path.ends_with("Cargo.toml") {
        text.lines().filter(|l| l.contains("path =")).collect()
    } else {
        match comment_marks(path) {
            Some(marks) => code_lines(text, marks),
            None => return Vec::new(),
        }
    };
    SUITES
        .iter()
        .copied()
        .filter(|suite| {
            code.iter().any(|l| {
                ["\"", "'"].iter().any(|q| {
                    l.split(q).skip(1).step_by(2).any(|lit| {
                        lit.contains(&format!("../{suite}"))
                            || lit.contains(&format!("compat-tests/{suite}"))
                    })
                })
            })
        })
        .collect()
}

#[test]
fn test_rooms_import_one_way() {
    let root = root();
    let mut wrong = Vec::new();
    for p in tracked() {
        let Ok(rel) = p.strip_prefix(root.join("compat-tests")) else {
            continue;
        };
        let room = rel.iter().next().unwrap().to_string_lossy().into_owned();
        if !BELOW_THE_SUITES.contains(&room.as_str()) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        for suite in suites_named(&p, &text) {
            wrong.push(format!(
                "compat-tests/{} names the suite {suite}",
                rel.display()
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "a room below the suites imports one: {wrong:#?}"
    );
}

#[test]
fn the_checks_can_fail() {
    let file = |module: &str, text: &str| RustFile {
        module: module.split("::").map(str::to_owned).collect(),
        path: PathBuf::from(format!("{module}.rs")),
        text: text.to_owned(),
    };
    let circle = [
        file("cmd", "use crate::run::child;"),
        file("run", "pub fn child() { crate::cmd::out(); }"),
    ];
    assert_eq!(module_cycles(&circle), [["cmd", "run", "cmd"]]);
    assert!(module_cycles(&circle[..1]).is_empty());
    // Siblings that import each other through `super::`, deep in the tree, in groups.
    let siblings = [
        file("lock", "mod fair; mod waiters;"),
        file("lock::fair", "use super::{waiters::Memory, Backoff};"),
        file("lock::waiters", "use super::super::lock::fair::RUN;"),
    ];
    assert_eq!(
        module_cycles(&siblings),
        [["lock::fair", "lock::waiters", "lock::fair"]]
    );
    assert!(module_cycles(&siblings[..2]).is_empty());
    // A parent and its children are not a circle (the parent declares them).
    let family = [
        file("lock", "use self::fair::Place; pub struct Lock;"),
        file("lock::fair", "use super::Lock;"),
    ];
    assert!(module_cycles(&family).is_empty());
    assert_eq!(
        module_paths(
            &["a".into(), "b".into()],
            "use super::{c::{D, e::F}, self as g}; crate::h::I; self::j::K; xcrate::no;"
        )
        .into_iter()
        .map(|p| p.join("::"))
        .collect::<Vec<_>>(),
        ["a", "a::b::j::K", "a::c::D", "a::c::e::F", "h::I"]
    );
    let long = "let x = 1;\n".repeat(MAX_CODE_LINES + 1);
    assert!(over_limit(Path::new("a.rs"), &long).is_some());
    assert!(over_limit(Path::new("a.py"), &long.replace("let ", "")).is_some());
    let comments = "// c\n\n".repeat(MAX_CODE_LINES + 1);
    assert!(over_limit(Path::new("a.rs"), &comments).is_none());
    let tests = format!("fn a() {{}}\n#[cfg(test)]\nmod tests {{\n{long}}}\n");
    assert!(over_limit(Path::new("a.rs"), &tests).is_none());
    assert!(over_limit(Path::new("a.json"), &long).is_none());
    let py = |n: &str, t: &str| (n.to_owned(), t.to_owned());
    let circle = [
        py("__init__", "from ._aio import A\nfrom ._base import B"),
        py("_base", "if TYPE_CHECKING:\n    from ._aio import A"),
        py("_aio", "from ._base import (\n    B,\n)"),
    ];
    assert_eq!(python_import_cycles(&circle), [["_aio", "_base", "_aio"]]);
    assert!(python_import_cycles(&[circle[0].clone(), circle[2].clone()]).is_empty());
    // (Built with format!, so that this file names no suite itself.)
    let (up, room) = ("..", "compat-tests");
    let cargo = format!("[dependencies]\nx = {{ path = \"{up}/stuck-locks\" }}\n");
    assert_eq!(
        suites_named(Path::new("Cargo.toml"), &cargo),
        ["stuck-locks"]
    );
    let py_code = format!("# {room}/chaos in prose\nrun(['python', '{room}/patterns/x.py'])\n");
    assert_eq!(suites_named(Path::new("a.py"), &py_code), ["patterns"]);
}
