//! The chaos run (`compat-tests/chaos.sh`): many lock holders in every language at once on one
//! table, through the fault proxy with every fault at once, a server restart and skewed clocks;
//! then [`checker::check`] judges the run from the proxy's journal of committed writes.

pub mod checker;
pub mod guarded;
pub mod profile;
