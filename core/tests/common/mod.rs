//! The core's test support: the shared `ddblock-test-support` crate (servers, tables, clocks,
//! items, the fault proxy, [`Env`], [`FaultyTable`]).
#![allow(unused_imports)]

pub use ddblock_test_support::env::{Env, FaultyTable};
pub use ddblock_test_support::faulty::{faulty, FaultyServer};
pub use ddblock_test_support::{
    client_for, laravel_item, n, new_table, on_servers, s, Item, ManualClock, Server,
};
