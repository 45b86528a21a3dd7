//! The codec module of `ddblock`, compiled on its own for fuzzing.

#[path = "../../src/codec/mod.rs"]
pub mod codec;
