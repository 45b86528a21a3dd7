//! The house rules outside the core (core/tests/layers.rs keeps the core's): every source file of
//! the repository, bindings and test house included, has at most 600 lines of code, and no Rust
//! crate has a module cycle. Generated files are exempt. Run `cargo test -p ddblock-test-support --test house`.

use std::path::{Path, PathBuf};
use std::process::Command;

use ddblock_test_support::house::{
    code_lines, comment_marks, module_cycle, rust_files, without_test_module, RustFile,
    MAX_CODE_LINES,
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
    let root = root();
    let mut out = Vec::new();
    for manifest in tracked().into_iter().filter(|p| p.ends_with("Cargo.toml")) {
        let src = manifest.parent().unwrap().join("src");
        if !src.is_dir() || src.starts_with(root.join("core")) {
            continue; // the core has its own, stricter, check
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
        .filter_map(|(src, files)| {
            module_cycle(files).map(|c| format!("{}: {}", src.display(), c.join(" -> ")))
        })
        .collect();
    assert!(cycles.is_empty(), "module cycles: {cycles:#?}");
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
    assert_eq!(module_cycle(&circle).unwrap(), ["cmd", "run", "cmd"]);
    assert!(module_cycle(&circle[..1]).is_none());
    let long = "let x = 1;\n".repeat(MAX_CODE_LINES + 1);
    assert!(over_limit(Path::new("a.rs"), &long).is_some());
    assert!(over_limit(Path::new("a.py"), &long.replace("let ", "")).is_some());
    let comments = "// c\n\n".repeat(MAX_CODE_LINES + 1);
    assert!(over_limit(Path::new("a.rs"), &comments).is_none());
    let tests = format!("fn a() {{}}\n#[cfg(test)]\nmod tests {{\n{long}}}\n");
    assert!(over_limit(Path::new("a.rs"), &tests).is_none());
    assert!(over_limit(Path::new("a.json"), &long).is_none());
}
