//! The chaos run (`compat-tests/chaos/run.sh`): many lock holders in every language at once on one
//! table, through the fault proxy with every fault at once, a server restart and skewed clocks;
//! then [`checker::check`] judges the run from the proxy's journal of committed writes.

pub mod checker;
pub mod peers;
pub mod profile;
pub mod server;
pub mod trace;

/// The guarded resource (shared with the Rust peer, which writes it in its `chaos` op).
pub use ddblock_test_support::guarded;
