//! Collects the ```rust blocks of README.md and docs/*.md into one module per block, so one
//! binary holds them all and `doc-snippets ID` runs one, as written, as its own process. A block
//! preceded by `<!-- not run: REASON -->` is left out. IDs: page stem (lower case) and line.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..");
    let mut pages: Vec<PathBuf> = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    println!("cargo:rerun-if-changed={}", root.join("docs").display());
    let mut modules = String::new();
    let mut arms = String::new();
    for page in &pages {
        println!("cargo:rerun-if-changed={}", page.display());
        let text = std::fs::read_to_string(page).expect("page");
        let lines: Vec<&str> = text.split('\n').collect();
        let stem = page
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .to_lowercase()
            .replace('-', "_");
        let mut i = 0;
        while i < lines.len() {
            if lines[i].trim_end() != "```rust" {
                i += 1;
                continue;
            }
            let start = i;
            let skipped = start > 0 && lines[start - 1].trim().starts_with("<!-- not run:");
            i += 1;
            let mut body = String::new();
            while i < lines.len() && lines[i].trim_end() != "```" {
                body.push_str(lines[i]);
                body.push('\n');
                i += 1;
            }
            i += 1;
            if skipped {
                continue;
            }
            let id = format!("{stem}_{}", start + 1);
            writeln!(
                modules,
                "#[allow(dead_code, unused_imports)]\n// {}:{}\nmod {id} {{\n{body}\n    pub(super) fn run() -> impl std::process::Termination {{\n        main()\n    }}\n}}\n",
                page.display(),
                start + 1
            )
            .unwrap();
            writeln!(arms, "        \"{id}\" => Some(report({id}::run())),").unwrap();
        }
    }
    let out = format!(
        "{modules}\n/// Runs snippet `id`; `None` when there is none.\npub fn run(id: &str) -> Option<std::process::ExitCode> {{\n    match id {{\n{arms}        _ => None,\n    }}\n}}\n"
    );
    let dest = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("snippets.rs");
    std::fs::write(dest, out).unwrap();
}
