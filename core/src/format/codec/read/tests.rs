//! Tests of the decoder.
use super::super::serialize;
use super::*;

fn round(input: &str) -> String {
    let v = unserialize(input.as_bytes()).unwrap_or_else(|e| panic!("{input}: {e}"));
    String::from_utf8(serialize(&v)).unwrap()
}

fn err(input: &[u8]) -> CodecError {
    unserialize(input).expect_err(&String::from_utf8_lossy(input))
}

#[test]
fn scalars_and_lenient_php_forms() {
    assert_eq!(round("N;"), "N;");
    assert_eq!(round("i:+5;"), "i:5;");
    assert_eq!(round("i:-0;"), "i:0;");
    assert_eq!(round("d:.5;"), "d:0.5;");
    assert_eq!(round("d:5.;"), "d:5;");
    assert_eq!(round("d:1e400;"), "d:INF;");
    assert_eq!(round("s:01:\"a\";"), "s:1:\"a\";");
    assert_eq!(
        unserialize(b"S:3:\"\\61b\\FF\";").unwrap(),
        PhpValue::String(vec![b'a', b'b', 0xff])
    );
    assert_eq!(round("O:8:\"stdClass\":+0:{}"), "O:8:\"stdClass\":0:{}");
    assert_eq!(round("O:8:\"stdClass\"::{}"), "O:8:\"stdClass\":0:{}");
    assert_eq!(round("E:11:\"Suit:Hearts\";"), "E:11:\"Suit:Hearts\";");
}

#[test]
fn trailing_bytes_are_ignored_like_php() {
    assert_eq!(unserialize(b"i:5;garbage").unwrap(), PhpValue::Int(5));
    let (v, used) = unserialize_prefix(b"b:1;rest", &Limits::default()).unwrap();
    assert_eq!((v, used), (PhpValue::Bool(true), 4));
}

#[test]
fn back_reference_numbering_follows_php() {
    // Slots: 1 outer array, 2 object, 3 its property, 4 the r: itself,
    // 5 inner array, 6 the r: inside it.
    let php = "a:3:{i:0;O:8:\"stdClass\":1:{s:1:\"x\";i:1;}i:1;r:2;i:2;a:1:{i:0;r:2;}}";
    let obj = "O:8:\"stdClass\":1:{s:1:\"x\";i:1;}";
    assert_eq!(
        round(php),
        format!("a:3:{{i:0;{obj}i:1;{obj}i:2;a:1:{{i:0;{obj}}}}}")
    );
    // R: takes no slot; r: does (r:3 below is the r:2 slot, an object).
    assert_eq!(
        round("a:3:{i:0;O:8:\"stdClass\":0:{}i:1;r:2;i:2;r:3;}"),
        "a:3:{i:0;O:8:\"stdClass\":0:{}i:1;O:8:\"stdClass\":0:{}i:2;O:8:\"stdClass\":0:{}}"
    );
    assert_eq!(
        round("a:4:{i:0;s:3:\"str\";i:1;R:2;i:2;i:5;i:3;R:2;}"),
        "a:4:{i:0;s:3:\"str\";i:1;s:3:\"str\";i:2;i:5;i:3;s:3:\"str\";}"
    );
    // Enum cases and C: objects are objects for r:.
    assert_eq!(
        round("a:2:{i:0;E:6:\"S:Hear\";i:1;r:2;}"),
        "a:2:{i:0;E:6:\"S:Hear\";i:1;E:6:\"S:Hear\";}"
    );
}

#[test]
fn bad_back_references() {
    assert!(err(b"a:2:{i:0;i:7;i:1;r:2;}").message.contains("object"));
    assert!(err(b"a:1:{i:0;R:1;}").message.contains("cyclic"));
    assert!(err(b"O:8:\"stdClass\":1:{s:1:\"y\";r:1;}")
        .message
        .contains("cyclic"));
    assert!(err(b"a:2:{i:0;i:7;i:1;R:0;}")
        .message
        .contains("refers to value 0"));
    let e = err(b"a:2:{i:0;i:7;i:1;R:5;}");
    assert_eq!(e.offset, Some(17));
    assert!(e.to_string().ends_with("at byte 17"), "{e}");
    assert!(err(b"R:1;").message.contains("refers to value 1"));
}

#[test]
fn errors_point_at_the_problem() {
    assert_eq!(err(b"s:5:\"abc\";").offset, Some(10));
    assert_eq!(err(b"s:9:\"abc\";").offset, Some(5));
    assert_eq!(err(b"a:1:{i:0;i:1;").offset, Some(13));
    assert_eq!(err(b"x").offset, Some(0));
    assert_eq!(err(b"").offset, Some(0));
    assert_eq!(err(b"i:99999999999999999999;").offset, Some(2));
    assert_eq!(err(b"b:2;").offset, Some(2));
    assert!(err(b"a:1:{d:1;i:1;}").message.contains("array keys"));
    assert!(err(b"O:3:\"a b\":0:{}").message.contains("class name"));
    assert!(err(b"E:5:\"Suit:\";").message.contains("case"));
}

#[test]
fn limits_are_enforced() {
    let limits = Limits {
        max_depth: 2,
        max_bytes: 64,
        max_elements: 5,
    };
    assert!(unserialize_with(b"a:1:{i:0;a:1:{i:0;N;}}", &limits).is_ok());
    let e = unserialize_with(b"a:1:{i:0;a:1:{i:0;a:0:{}}}", &limits).unwrap_err();
    assert!(e.message.contains("max_depth"), "{e}");
    let e = unserialize_with(b"a:5:{i:0;N;i:1;N;i:2;N;i:3;N;i:4;N;}", &limits).unwrap_err();
    assert!(e.message.contains("max_elements"), "{e}");
    let e = unserialize_with(&[b' '; 65], &limits).unwrap_err();
    assert!(e.message.contains("65 bytes"), "{e}");
    // Copies made for back-references count too.
    let e = unserialize_with(b"a:3:{i:0;a:1:{i:0;N;}i:1;R:2;i:2;R:2;}", &limits).unwrap_err();
    assert!(e.message.contains("max_elements"), "{e}");
    // A reference can push a deep value deeper than max_depth.
    let e = unserialize_with(b"a:2:{i:0;a:1:{i:0;N;}i:1;a:1:{i:0;R:2;}}", &limits).unwrap_err();
    assert!(e.message.contains("max_depth"), "{e}");
}
