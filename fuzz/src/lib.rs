//! Shared checks of ddblock's fuzz targets (`fuzz_targets/`): measuring decoded values against
//! [`Limits`], comparing values exactly (floats by bits, so NaN equals NaN and -0 differs from 0),
//! and splitting a fuzz input into text fields. Only ddblock's public API is used.
//!
//! Targets, what each checks and how to run them: `docs/reliability.md` (`fuzz/run.sh`).

use ddblock::codec::{Limits, ObjectKind, PhpKey, PhpValue};

/// Limits small enough that short fuzz inputs reach every limit check (depth, element count,
/// copied bytes), used beside [`Limits::default`].
pub const TIGHT: Limits = Limits {
    max_depth: 4,
    max_elements: 48,
    max_bytes: 512,
};

/// Limits no fuzz input reaches, for decoding our own re-serialized output: it may be longer
/// than the input it came from (back-references are written out in full).
pub const UNLIMITED: Limits = Limits {
    max_depth: 1 << 20,
    max_elements: usize::MAX,
    max_bytes: usize::MAX,
};

/// What [`Limits`] bound in a decoded value.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    /// Nesting of arrays and objects (`O:`): 0 for a scalar, 1 for a flat array.
    pub depth: usize,
    /// Every value: scalars, arrays, objects and each array element or property (keys not counted).
    pub elements: usize,
    /// String bytes: strings, string keys and property names, class names, `C:` payloads and
    /// enum case names.
    pub bytes: usize,
}

/// Measures `v` (recursively; `v` is at most as deep as the limits it was decoded with).
pub fn size(v: &PhpValue) -> Size {
    let mut s = Size::default();
    s.depth = measure(v, &mut s);
    s
}

fn measure(v: &PhpValue, s: &mut Size) -> usize {
    s.elements += 1;
    let entries = match v {
        PhpValue::Null | PhpValue::Bool(_) | PhpValue::Int(_) | PhpValue::Float(_) => return 0,
        PhpValue::String(b) => {
            s.bytes += b.len();
            return 0;
        }
        PhpValue::Array(entries) => entries,
        PhpValue::Object(o) => {
            s.bytes += o.class.len();
            match &o.kind {
                ObjectKind::Object => &o.properties,
                ObjectKind::Custom(payload) => {
                    s.bytes += payload.len();
                    return 0;
                }
                ObjectKind::Enum(case) => {
                    s.bytes += case.len();
                    return 0;
                }
            }
        }
    };
    let mut deepest = 0;
    for (k, child) in entries {
        if let PhpKey::Str(b) = k {
            s.bytes += b.len();
        }
        deepest = deepest.max(measure(child, s));
    }
    deepest + 1
}

/// Whether `size` is within `limits`; on failure, says which bound was broken.
pub fn check_within(size: Size, limits: &Limits) -> Result<(), String> {
    if size.depth > limits.max_depth {
        return Err(format!(
            "depth {} > max_depth {}",
            size.depth, limits.max_depth
        ));
    }
    if size.elements > limits.max_elements {
        return Err(format!(
            "{} elements > max_elements {}",
            size.elements, limits.max_elements
        ));
    }
    if size.bytes > limits.max_bytes {
        return Err(format!(
            "{} bytes > max_bytes {}",
            size.bytes, limits.max_bytes
        ));
    }
    Ok(())
}

/// Exact equality: like `==`, but floats compare by bit pattern (NaN = NaN, -0 ≠ 0).
pub fn same(a: &PhpValue, b: &PhpValue) -> bool {
    match (a, b) {
        (PhpValue::Float(x), PhpValue::Float(y)) => x.to_bits() == y.to_bits(),
        (PhpValue::Array(x), PhpValue::Array(y)) => same_entries(x, y),
        (PhpValue::Object(x), PhpValue::Object(y)) => {
            x.class == y.class && x.kind == y.kind && same_entries(&x.properties, &y.properties)
        }
        _ => a == b,
    }
}

fn same_entries(a: &[(PhpKey, PhpValue)], b: &[(PhpKey, PhpValue)]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|((ka, va), (kb, vb))| ka == kb && same(va, vb))
}

/// Splits a fuzz input into a flags byte and text fields separated by `0xFF`, a byte that never
/// occurs in UTF-8, so every field of a seed written as UTF-8 text comes back unchanged (a
/// mutated field that is not UTF-8 is read lossily). Missing fields are empty.
pub fn fields<const N: usize>(data: &[u8]) -> (u8, [String; N]) {
    let (flags, rest) = data.split_first().map_or((0, &[][..]), |(f, r)| (*f, r));
    let mut out: [String; N] = std::array::from_fn(|_| String::new());
    let mut parts = rest.splitn(N, |&b| b == 0xFF);
    for slot in out.iter_mut() {
        if let Some(p) = parts.next() {
            *slot = String::from_utf8_lossy(p).into_owned();
        }
    }
    (flags, out)
}

/// A signed number from up to 8 bytes of `text` (for fuzzed clocks): varied, including
/// negative and extreme values, without consuming another field.
pub fn number_from(text: &str) -> i64 {
    let mut b = [0u8; 8];
    for (d, s) in b.iter_mut().zip(text.bytes().rev()) {
        *d = s;
    }
    i64::from_le_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_count_what_limits_bound() {
        let v = ddblock::codec::unserialize(
            b"a:2:{s:1:\"k\";a:1:{i:0;s:3:\"abc\";}i:1;E:6:\"S:Hear\";}",
        )
        .unwrap();
        assert_eq!(
            size(&v),
            Size {
                depth: 2,
                elements: 4,
                bytes: 1 + 3 + 1 + 4
            }
        );
        assert!(check_within(size(&v), &TIGHT).is_ok());
        assert!(check_within(
            size(&v),
            &Limits {
                max_depth: 1,
                ..TIGHT
            }
        )
        .is_err());
    }

    #[test]
    fn fields_split_on_ff() {
        let (f, [a, b, c]) = fields::<3>(b"\x07one\xfftwo");
        assert_eq!(
            (f, a.as_str(), b.as_str(), c.as_str()),
            (7, "one", "two", "")
        );
        let (f, [a]) = fields::<1>(b"");
        assert_eq!((f, a.as_str()), (0, ""));
        // The last field keeps any further separators.
        let (_, [a, b]) = fields::<2>(b"\x00x\xffy\xffz");
        assert_eq!((a.as_str(), b.as_str()), ("x", "y\u{fffd}z"));
        assert!(!same(&PhpValue::Float(0.0), &PhpValue::Float(-0.0)));
        assert!(same(&PhpValue::Float(f64::NAN), &PhpValue::Float(f64::NAN)));
    }
}
