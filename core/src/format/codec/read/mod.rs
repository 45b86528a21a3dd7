//! PHP's `unserialize()` (ext/standard/var_unserializer.re) for untrusted
//! input: same grammar, opaque objects, hard limits, errors with offsets.
//!
//! Parsing builds a flat arena of nodes first (so back-references can name
//! any earlier value), then materializes the tree, copying referenced values
//! while charging the copies against the limits.

mod builder;
mod parser;
#[cfg(test)]
mod tests;

use builder::Builder;
use parser::Parser;

use super::value::PhpValue;
use super::CodecError;

/// Resource limits for [`unserialize_with`]; input beyond them is an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Deepest allowed nesting of arrays/objects (PHP's own default,
    /// `unserialize_max_depth`, is 4096; 64 is plenty for cache values).
    /// Decoding, serializing and dropping recurse once per level, so keep
    /// it in the hundreds at most.
    pub max_depth: usize,
    /// Largest accepted input in bytes; also caps the total string bytes
    /// after back-references are copied. DynamoDB items are at most 400 KB.
    pub max_bytes: usize,
    /// Most values (every scalar, array, object and element counts),
    /// including copies made for back-references.
    pub max_elements: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_depth: 64,
            max_bytes: 4 << 20,
            max_elements: 100_000,
        }
    }
}

/// PHP's `unserialize($bytes)` with [`Limits::default`].
///
/// See [`unserialize_prefix`] for the accepted format.
pub fn unserialize(bytes: &[u8]) -> Result<PhpValue, CodecError> {
    unserialize_with(bytes, &Limits::default())
}

/// PHP's `unserialize($bytes)` with explicit limits. Like PHP, bytes after
/// the first complete value are ignored (PHP 8.2 silently, 8.3+ with a
/// warning), e.g. `i:5;garbage` is 5.
pub fn unserialize_with(bytes: &[u8], limits: &Limits) -> Result<PhpValue, CodecError> {
    unserialize_prefix(bytes, limits).map(|(v, _)| v)
}

/// Decodes the serialized value at the start of `bytes`, returning it and
/// the number of bytes it used (the caller decides about trailing bytes).
///
/// Accepts PHP's grammar: `N;`, `b:0;`/`b:1;`, `i:[+-]DIGITS;`,
/// `d:FLOAT;` (`1`, `1.5`, `.5`, `5.`, `1e5`, `NAN`, `INF`, `-INF`),
/// `s:LEN:"bytes";`, `S:LEN:"esc";` (`\hh` escapes), `a:N:{(key value)*}`
/// with `i:`/`s:`/`S:` keys, `O:LEN:"Class":N:{(key value)*}`,
/// `C:LEN:"Class":LEN:{payload}`, `E:LEN:"Class:Case";`, and the
/// back-references `r:N;`/`R:N;`. Lengths may have leading zeros, as in PHP.
///
/// Back-references name the Nth value slot (1-based) in PHP's `var_hash`
/// order: every value gets a slot when it starts, in document order,
/// including array elements, object properties and `r:` itself, except
/// `R:` and array/property keys; a `C:` payload is opaque and has none.
/// `r:` must point to an object (PHP rejects anything else). The target is
/// copied into place (PHP would share it); copies count against the limits.
///
/// Deliberate differences from PHP, all errors here: integers outside i64
/// (PHP clamps them with a warning), references to a value that contains
/// them (cycles, which a copy cannot express), and class names that are not
/// UTF-8. Unlike PHP, unknown classes and enum cases are accepted, since
/// objects are never instantiated. Duplicate array keys and numeric-string
/// keys (`s:1:"5"`) are kept as written (PHP would merge or convert them).
pub fn unserialize_prefix(bytes: &[u8], limits: &Limits) -> Result<(PhpValue, usize), CodecError> {
    if bytes.len() > limits.max_bytes {
        return Err(CodecError::at(
            format!(
                "input is {} bytes, more than the limit of {} bytes",
                bytes.len(),
                limits.max_bytes
            ),
            limits.max_bytes,
        ));
    }
    if bytes.is_empty() {
        return Err(CodecError::at("empty input is not a serialized value", 0));
    }
    let mut p = Parser {
        input: bytes,
        pos: 0,
        limits,
        nodes: Vec::new(),
        slots: Vec::new(),
        has_refs: false,
    };
    let root = p.parse_value(0)?;
    let used = p.pos;
    let mut b = Builder {
        nodes: p.nodes,
        copy: p.has_refs,
        elements_left: limits.max_elements,
        bytes_left: limits.max_bytes,
        max_depth: limits.max_depth,
    };
    let value = b.build(root, 0)?;
    Ok((value, used))
}
