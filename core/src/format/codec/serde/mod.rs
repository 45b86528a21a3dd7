//! serde bridge: Rust values to and from [`PhpValue`], shaped as PHP code
//! would build them, so a Rust struct round-trips through PHP's format.
//!
//! Mapping (`to_php`): bool/ints/floats/strings as themselves (`u64` above
//! `PHP_INT_MAX` and out-of-range 128-bit ints are errors), bytes as binary
//! strings, `None`/`()`/unit structs as `null`, sequences and tuples as
//! lists (keys 0..n), structs as associative arrays keyed by field name,
//! maps as arrays (canonical decimal string keys such as `"5"` become int
//! keys, as PHP would store them), and enums externally tagged like
//! serde_json: `"Variant"` for unit variants, `["Variant" => value]`
//! otherwise.
//!
//! `from_php` accepts that shape and is lenient where Laravel's storage
//! changes types: ints are accepted for floats, integral floats and
//! `FILTER_VALIDATE_INT` strings for ints, numeric strings for floats, ints
//! and floats for strings (PHP's `(string)` text), int keys for string keys,
//! `0`/`1` for bools, and plain objects (`O:`) as maps of their properties
//! (mangled names included). Enum cases (`E:`) read as their case name;
//! `Serializable` payloads (`C:`) cannot be read.

use std::fmt::Display;

use ::serde::de;
use ::serde::ser::{self, Serialize};

use super::value::PhpValue;
use super::CodecError;

mod de_impl;
mod ser_impl;
#[cfg(test)]
mod tests;

use de_impl::Deser;
use ser_impl::ValueSerializer;

/// Converts any `Serialize` value to the PHP value PHP code would build.
pub fn to_php<T: Serialize + ?Sized>(v: &T) -> Result<PhpValue, CodecError> {
    v.serialize(ValueSerializer)
}

/// Converts a PHP value into a Rust type, leniently (see module docs).
pub fn from_php<T: de::DeserializeOwned>(v: &PhpValue) -> Result<T, CodecError> {
    T::deserialize(Deser(v))
}

impl ser::Error for CodecError {
    fn custom<T: Display>(msg: T) -> Self {
        CodecError::new(msg.to_string())
    }
}

impl de::Error for CodecError {
    fn custom<T: Display>(msg: T) -> Self {
        CodecError::new(msg.to_string())
    }
}
