//! A model of ddblock's lock protocol, and of stock Laravel's, checked with
//! [stateright](https://docs.rs/stateright): the item's states, each client as a state machine,
//! the faults (lost answers, delayed writes, stale reads, pauses, skewed clocks, TTL deletion),
//! and the properties `docs/semantics.md` states, each expected to hold or to fail per
//! configuration. What is modelled and every verdict: `docs/model.md`.

pub mod config;
pub mod model;
pub mod protocol;
pub mod run;
pub mod state;
pub mod table;
