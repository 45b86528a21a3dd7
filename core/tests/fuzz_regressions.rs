//! Inputs the fuzz targets (`fuzz/`) failed on, or that their properties were written to catch,
//! checked here on every `cargo test` so a fix cannot quietly regress. Each input is also in the
//! targets' seed corpus (`fuzz/seeds/TARGET/regress-NAME`).

use ddblock::codec::{self, CodecError, Limits};

/// The error for `input` under `limits`; panics without printing the (possibly huge) value.
fn refused(input: &[u8], limits: &Limits) -> CodecError {
    match codec::unserialize_with(input, limits) {
        Err(e) => e,
        Ok(_) => panic!("{} bytes decoded past {limits:?}", input.len()),
    }
}

/// `a:N:{i:0;E:..:"A:Cxxx..";i:1;R:2;...}`: one enum case with a long case name, then `refs`
/// back-references copying it.
fn enum_copies(case_len: usize, refs: usize) -> Vec<u8> {
    let name = format!("A:C{}", "x".repeat(case_len - 1));
    let mut s = format!("a:{}:{{i:0;E:{}:\"{name}\";", refs + 1, name.len());
    for i in 1..=refs {
        s.push_str(&format!("i:{i};R:2;"));
    }
    s.push('}');
    s.into_bytes()
}

/// Copies of an enum case made by back-references were charged for the class name only, not
/// the case name, so `max_bytes` did not bound them: 262 bytes decoded to 1212 string bytes
/// under a 512-byte limit, and a 4 MB value could ask for 100,000 copies of a 2 MB case name.
/// (Found by the `unserialize` target's limits property; regress-enum-case-copies.)
#[test]
fn enum_case_copies_count_against_max_bytes() {
    let input = enum_copies(201, 5);
    assert_eq!(
        input,
        include_bytes!("../../fuzz/seeds/unserialize/regress-enum-case-copies")
    );
    let tight = Limits {
        max_depth: 4,
        max_elements: 48,
        max_bytes: 512,
    };
    let e = refused(&input, &tight);
    assert!(e.message.contains("max_bytes"), "{e}");
    // Within the limit, the same shape still decodes, every copy intact.
    let v = codec::unserialize_with(&enum_copies(40, 5), &tight).unwrap();
    assert_eq!(v.as_array().map(<[_]>::len), Some(6));

    // Default limits: 51 copies of a 100 KB case name are 5.1 MB, over the 4 MB default,
    // from a 100 KB input.
    let input = enum_copies(100_000, 50);
    assert!(input.len() < 110_000);
    let e = refused(&input, &Limits::default());
    assert!(e.message.contains("max_bytes"), "{e}");
}

/// A zero whose exponent does not fit in 64 bits (`0E99999999999999999999`) is a valid DynamoDB
/// number (`check_dynamodb_number` accepts it: a zero passes any range check), but `same_as`
/// compared it as text, so it was not the same number as `0` or `00E99999999999999999999`,
/// unlike DynamoDB's `=`. A zero mantissa is zero whatever the exponent. (The `item` target's
/// `same_as` property; it skipped such zeros until the fix; seed regress-zero-huge-exponent.)
#[test]
fn zero_with_exponent_beyond_i64_is_zero() {
    use ddblock::StoredValue::{Number, String as Str};
    let n = |s: &str| Number(s.to_owned());
    let seed = include_bytes!("../../fuzz/seeds/item/regress-zero-huge-exponent");
    let huge = std::str::from_utf8(&seed[1..]).unwrap();
    assert_eq!(huge, "-.0E922337203685477223372030");
    assert!(codec::numeric::check_dynamodb_number(huge).is_ok());
    for zero in [
        "0",
        "-0",
        "0.0",
        "00E99999999999999999999",
        "0e-99999999999999999999",
        huge,
    ] {
        assert!(n(huge).same_as(&n(zero)), "{huge} = {zero}");
        assert!(n(zero).same_as(&n(huge)), "{zero} = {huge}");
    }
    assert!(!n(huge).same_as(&n("1")));
    assert!(!n("1").same_as(&n(huge)));
    assert!(!n(huge).same_as(&Str("0".to_owned())));
    // Still not numbers: an exponent marker without digits.
    assert!(!n("0E").same_as(&n("0")));
    assert!(!n("0E+").same_as(&n("0")));
    // A non-zero number with such an exponent is out of range and still compared as text.
    assert!(!n("1e9223372036854775807").same_as(&n("10e9223372036854775807")));
}
