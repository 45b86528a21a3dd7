//! The core's layers, checked on its source: arrows point one way, no module cycles, only the
//! request layer touches the AWS SDK, modules stay small, and the diagnostics crate (ddblock-admin)
//! is a layer above the core. The map is in CONTRIBUTING.md;
//! run `cargo test -p ddblock --test layers`.

use std::path::Path;

use ddblock_test_support::house::{
    crate_paths, module_cycles, rust_code, rust_files, RustFile, MAX_CODE_LINES as MAX_LINES,
};

/// Each top-level module's layer; a module may use modules of lower layers only (and, within
/// its own layer, none of its neighbours).
const LAYERS: &[(&str, u8)] = &[
    ("time", 0),
    ("holder", 1),
    ("error", 2),
    ("format", 3),
    ("config", 4),
    ("aws", 5),
    ("telemetry", 5),
    ("dynamo", 6),
    ("s3", 6),
    ("store", 7),
    ("cache", 8),
    ("lock", 8),
    ("sdk", 8),
    ("once", 8),
    ("cas", 8),
];

/// The core's files, with their module paths.
fn src() -> Vec<RustFile> {
    rust_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// The code of a file without its `#[cfg(test)]` module, blank lines and comments.
fn code(text: &str) -> String {
    rust_code(text)
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
    let cycles = module_cycles(&src());
    assert!(cycles.is_empty(), "module cycles: {cycles:?}");
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
            // The seam for crates that send their own requests: the shared runtime's types only.
            Some("aws" | "sdk") => !uses("aws_sdk_dynamodb") && !uses("aws_sdk_s3"),
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

/// The diagnostics crate (`admin/`, ddblock-admin) is a layer above the core: the core does not
/// depend on it, and within it only its request files touch the AWS SDKs.
#[test]
fn the_admin_crate_is_a_layer_above_the_core() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let core_manifest = std::fs::read_to_string(root.join("core/Cargo.toml")).unwrap();
    let deps = core_manifest
        .split("[dev-dependencies]")
        .next()
        .unwrap_or_default();
    // Without the dependency no code of the core can use it.
    assert!(
        !deps.contains("ddblock-admin"),
        "the core depends on ddblock-admin"
    );
    let requests = ["requests.rs", "s3_requests.rs"];
    let wrong: Vec<String> = rust_files(&root.join("admin/src"))
        .into_iter()
        .filter(|f| !requests.contains(&f.path.file_name().unwrap().to_str().unwrap()))
        .filter(|f| {
            let text = code(&f.text);
            text.contains("aws_sdk_dynamodb") || text.contains("aws_sdk_s3")
        })
        .map(|f| f.path.display().to_string())
        .collect();
    assert!(
        wrong.is_empty(),
        "outside admin/src/requests.rs and s3_requests.rs, these files use an AWS SDK: {wrong:?}"
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
