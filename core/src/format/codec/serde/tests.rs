//! Tests of the serde bridge.
use std::collections::{BTreeMap, HashMap};

use ::serde::{Deserialize, Serialize};

use super::super::{decode_stored, encode_stored, serialize, unserialize, PhpKey, StoredValue};
use super::*;

#[derive(Debug, Serialize, Deserialize, PartialEq)]
enum Shape {
    Empty,
    Circle(f64),
    Rect(u32, u32),
    Named { name: String, sides: u8 },
}

#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Order {
    id: u64,
    owner: String,
    total: f64,
    tags: Vec<String>,
    note: Option<String>,
    shapes: Vec<Shape>,
    counts: BTreeMap<String, i32>,
    #[serde(with = "bytes")]
    blob: Vec<u8>,
    unit: (),
}

mod bytes {
    pub fn serialize<S: ::serde::Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(v)
    }
    pub fn deserialize<'de, D: ::serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        struct V;
        impl ::serde::de::Visitor<'_> for V {
            type Value = Vec<u8>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E>(self, v: &[u8]) -> Result<Vec<u8>, E> {
                Ok(v.to_vec())
            }
            fn visit_str<E>(self, v: &str) -> Result<Vec<u8>, E> {
                Ok(v.as_bytes().to_vec())
            }
        }
        d.deserialize_bytes(V)
    }
}

fn order() -> Order {
    Order {
        id: 7,
        owner: "日本".into(),
        total: 12.5,
        tags: vec!["a".into(), "b".into()],
        note: None,
        shapes: vec![
            Shape::Empty,
            Shape::Circle(1.5),
            Shape::Rect(2, 3),
            Shape::Named {
                name: "tri".into(),
                sides: 3,
            },
        ],
        counts: [("x".to_owned(), 1), ("5".to_owned(), 2)]
            .into_iter()
            .collect(),
        blob: vec![0, 255, 34],
        unit: (),
    }
}

#[test]
fn struct_round_trips_through_php_bytes() {
    let o = order();
    let php = to_php(&o).unwrap();
    let bytes = serialize(&php);
    let back: Order = from_php(&unserialize(&bytes).unwrap()).unwrap();
    assert_eq!(back, o);
    // Through Laravel's stored form too.
    let StoredValue::String(text) = encode_stored(&to_php(&"x".to_owned()).unwrap()).unwrap()
    else {
        panic!("string should be S")
    };
    assert_eq!(text, "s:1:\"x\";");
}

#[test]
fn php_shapes() {
    let php = to_php(&order()).unwrap();
    let text = String::from_utf8_lossy(&serialize(&php)).into_owned();
    assert!(
        text.starts_with("a:9:{s:2:\"id\";i:7;s:5:\"owner\";s:6:\"日本\";"),
        "{text}"
    );
    assert!(text.contains("s:4:\"note\";N;"), "{text}");
    assert!(
        text.contains("i:0;s:5:\"Empty\";i:1;a:1:{s:6:\"Circle\";d:1.5;}"),
        "{text}"
    );
    assert!(
        text.contains("a:1:{s:4:\"Rect\";a:2:{i:0;i:2;i:1;i:3;}}"),
        "{text}"
    );
    // "5" becomes an int key, as in a PHP array.
    assert!(
        text.contains("s:6:\"counts\";a:2:{i:5;i:2;s:1:\"x\";i:1;}"),
        "{text}"
    );
    let raw = serialize(&php);
    let blob = b"s:4:\"blob\";s:3:\"\x00\xff\"\";";
    assert!(raw.windows(blob.len()).any(|w| w == blob), "{text}");
    assert!(text.ends_with("s:4:\"unit\";N;}"), "{text}");
}

#[test]
fn lenient_reads_after_laravel_storage() {
    // Laravel stores numeric strings as N and reads them back as numbers.
    let owner = decode_stored("12345").unwrap();
    assert_eq!(from_php::<String>(&owner).unwrap(), "12345");
    let f = decode_stored("1.5").unwrap();
    assert_eq!(from_php::<String>(&f).unwrap(), "1.5");
    assert_eq!(from_php::<f64>(&PhpValue::Int(3)).unwrap(), 3.0);
    assert_eq!(from_php::<i32>(&PhpValue::Float(3.0)).unwrap(), 3);
    assert!(from_php::<i32>(&PhpValue::Float(3.5)).is_err());
    assert_eq!(from_php::<u8>(&PhpValue::from("42")).unwrap(), 42);
    assert!(from_php::<u8>(&PhpValue::Int(300)).is_err());
    assert_eq!(from_php::<f64>(&PhpValue::from(" 1e3")).unwrap(), 1000.0);
    assert!(from_php::<bool>(&PhpValue::Int(1)).unwrap());
    let m: HashMap<String, i64> =
        from_php(&PhpValue::assoc([(PhpKey::Int(5), PhpValue::Int(1))])).unwrap();
    assert_eq!(m["5"], 1);
    let m: HashMap<u32, String> = from_php(&PhpValue::assoc([("7", PhpValue::from("x"))])).unwrap();
    assert_eq!(m[&7], "x");
    assert_eq!(from_php::<Option<i64>>(&PhpValue::Null).unwrap(), None);
    assert_eq!(
        from_php::<Vec<i64>>(&PhpValue::list([1.into(), 2.into()])).unwrap(),
        [1, 2]
    );
}

#[test]
fn objects_and_enums() {
    #[derive(Deserialize, Debug, PartialEq)]
    struct Point {
        x: i64,
        y: i64,
    }
    let p = unserialize(b"O:8:\"stdClass\":2:{s:1:\"x\";i:1;s:1:\"y\";i:2;}").unwrap();
    assert_eq!(from_php::<Point>(&p).unwrap(), Point { x: 1, y: 2 });
    #[derive(Deserialize, Debug, PartialEq)]
    enum Suit {
        Hearts,
        Spades,
    }
    let e = unserialize(b"E:11:\"Suit:Hearts\";").unwrap();
    assert_eq!(from_php::<Suit>(&e).unwrap(), Suit::Hearts);
    let c = unserialize(b"C:3:\"Foo\":2:{ab}").unwrap();
    assert!(from_php::<BTreeMap<String, i64>>(&c).is_err());
    assert!(from_php::<Point>(&PhpValue::from("nope")).is_err());
}

#[test]
fn to_php_errors_and_edges() {
    assert!(to_php(&u64::MAX).is_err());
    assert_eq!(to_php(&(i64::MAX as u64)).unwrap(), PhpValue::Int(i64::MAX));
    let mut m = BTreeMap::new();
    m.insert(vec![1], 2);
    assert!(to_php(&m).is_err());
    assert_eq!(to_php(&'c').unwrap(), PhpValue::from("c"));
    assert_eq!(to_php(&Some(5)).unwrap(), PhpValue::Int(5));
    // -0, leading zeros and "+1" stay string keys, as in PHP.
    let m: BTreeMap<&str, i32> = [("-0", 1), ("01", 2), ("+1", 3), ("-7", 4)]
        .into_iter()
        .collect();
    let php = to_php(&m).unwrap();
    assert_eq!(
        String::from_utf8(serialize(&php)).unwrap(),
        "a:4:{s:2:\"+1\";i:3;s:2:\"-0\";i:1;i:-7;i:4;s:2:\"01\";i:2;}"
    );
}
