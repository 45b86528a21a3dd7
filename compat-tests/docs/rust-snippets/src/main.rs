//! `doc-snippets ID`: runs the Rust code block ID of the docs (see build.rs), as written.

use std::process::{ExitCode, Termination};

include!(concat!(env!("OUT_DIR"), "/snippets.rs"));

fn report(t: impl Termination) -> ExitCode {
    t.report()
}

fn main() -> ExitCode {
    let id = std::env::args().nth(1).unwrap_or_default();
    run(&id).unwrap_or_else(|| {
        eprintln!("doc-snippets: no Rust code block {id:?} in README.md or docs/*.md");
        ExitCode::from(2)
    })
}
