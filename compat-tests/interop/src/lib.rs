//! Test support for checking ddblock against Laravel's real PHP code (and, later, for benchmarks).
//!
//! - [`PhpHarness`] (`harness/`): one long-lived `php compat-tests/laravel/harness.php` process
//!   running Laravel 8.83's unmodified `DynamoDbStore`/`DynamoDbLock` with a chosen key layout and
//!   prefix, with a typed async method per command of its JSON-lines protocol
//!   (compat-tests/support/peers/PROTOCOL.md).
//! - [`store`] and [`store_config`] (`store.rs`): ddblock stores on a table; the local servers,
//!   clients and tables come from `ddblock-test-support` ([`Server`], [`client_for`],
//!   [`new_table`]).
//! - [`Interop`] (`world.rs`): all of it for one test: a fresh table, a Rust [`Store`] and a PHP
//!   harness on it, both with the same layout and prefix, plus raw item access; and
//!   [`interop_tests!`], one test per server, layout and scenario.
//! - `expect.rs`: what Laravel writes, stated independently of ddblock's code (table keys,
//!   serialized owners); `wire.rs`: values across the protocol; `time.rs`: the real clock.
//!
//! PHP values cross the protocol as base64 of PHP `serialize()` text; this crate converts them to
//! and from [`PhpValue`] with `ddblock::codec`.
#![warn(missing_docs)]

mod expect;
mod harness;
mod macros;
mod store;
mod time;
mod wire;
mod world;

pub use ddblock;
#[doc(no_inline)]
pub use ddblock::{PhpValue, Store};
pub use ddblock_test_support::{
    client_for, delete_table, laravel_item, new_table, repo_root, Item, Server,
};

pub use expect::{in_range, laravel_cache_key, laravel_lock_key, serialized_owner, value_attr};
pub use harness::{HarnessError, PhpHarness, PhpLock};
pub use store::{laravel_view, store, store_config};
pub use time::{now, sleep_until_after};
pub use wire::{attr_from_wire, expires_at, from_b64, item_from_wire, php_str, to_b64};
pub use world::Interop;
