//! Without the `extension-module` feature (plain `cargo test`/`cargo build`), pyo3 links
//! libpython; an rpath to it lets the test binary run without `LD_LIBRARY_PATH`. The extension
//! module that maturin builds links nothing and gets no rpath.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_EXTENSION_MODULE").is_none() {
        pyo3_build_config::add_libpython_rpath_link_args();
    }
}
