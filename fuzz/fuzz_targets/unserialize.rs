//! PHP's `unserialize()` on arbitrary bytes, with the default limits, tight ones, and a byte
//! limit equal to the input's length.
//!
//! Checks, beyond "no panic, no hang, no runaway memory" (libFuzzer's `-timeout` and
//! `-rss_limit_mb`): every value returned is within the `Limits` it was decoded with (depth,
//! element count, string bytes, after back-references are copied); error offsets lie inside the
//! input; trailing bytes are ignored (the used prefix alone decodes to the same value); the three
//! entry points agree; and tighter limits only ever refuse, never change a value.
#![no_main]

use ddblock::codec::{unserialize, unserialize_prefix, unserialize_with, Limits, PhpValue};
use ddblock_fuzz::{check_within, same, size, TIGHT};
use libfuzzer_sys::fuzz_target;

fn decode(data: &[u8], limits: &Limits) -> Option<PhpValue> {
    match unserialize_prefix(data, limits) {
        Ok((v, used)) => {
            assert!(
                (1..=data.len()).contains(&used),
                "used {used} of {} bytes",
                data.len()
            );
            if let Err(broken) = check_within(size(&v), limits) {
                panic!("decoded value breaks its limits ({limits:?}): {broken}");
            }
            let (alone, used_alone) = unserialize_prefix(&data[..used], limits)
                .unwrap_or_else(|e| panic!("the used prefix alone does not decode: {e}"));
            assert!(
                same(&alone, &v) && used_alone == used,
                "trailing bytes changed the value"
            );
            let whole = unserialize_with(data, limits).expect("unserialize_with agrees");
            assert!(same(&whole, &v), "unserialize_with gave another value");
            // Rendering never panics.
            let _ = (v.to_string(), format!("{v:?}"));
            Some(v)
        }
        Err(e) => {
            if let Some(at) = e.offset {
                assert!(at <= data.len(), "error offset {at} beyond the input: {e}");
            }
            assert!(!e.message.is_empty());
            assert!(
                unserialize_with(data, limits).is_err(),
                "unserialize_with agrees"
            );
            None
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let default = decode(data, &Limits::default());
    match (unserialize(data), &default) {
        (Ok(v), Some(d)) => assert!(same(&v, d), "unserialize differs from the default limits"),
        (Err(_), None) => {}
        _ => panic!("unserialize and unserialize_with(default) disagree"),
    }
    // A byte limit equal to the input's length: only values copied by back-references can
    // exceed it, so any copy the decoder forgets to charge shows here first.
    let input_sized = Limits {
        max_bytes: data.len(),
        ..Limits::default()
    };
    for limits in [TIGHT, input_sized] {
        if let Some(v) = decode(data, &limits) {
            let d = default
                .as_ref()
                .expect("accepted under tighter limits but refused under the defaults");
            assert!(same(&v, d), "tighter limits changed the decoded value");
        }
    }
});
