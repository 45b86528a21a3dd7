//! Feeds arbitrary bytes to the PHP unserializer and Laravel's read rule:
//! no panics, and whatever decodes must re-serialize stably.
#![no_main]

use std::collections::BTreeMap;

use ddblock_codec_fuzz::codec;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(v) = codec::unserialize(data) {
        let bytes = codec::serialize(&v);
        let again = codec::unserialize(&bytes).expect("re-serialized value must decode");
        assert_eq!(codec::serialize(&again), bytes);
        let _ = codec::encode_stored(&v);
        let _: Result<BTreeMap<String, String>, _> = codec::from_php(&v);
        let _: Result<Vec<Option<f64>>, _> = codec::from_php(&v);
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = codec::decode_stored(text);
    }
});
