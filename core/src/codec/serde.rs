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

use ::serde::de::{self, DeserializeSeed, IntoDeserializer, Unexpected, Visitor};
use ::serde::ser::{self, Serialize};

use super::numeric::{filter_validate_int, parse_numeric_float, php_float_to_string};
use super::value::{ObjectKind, PhpKey, PhpValue};
use super::CodecError;

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

// ---------------------------------------------------------------- to_php

struct ValueSerializer;

fn int_from<T: TryInto<i64> + Display + Copy>(v: T) -> Result<PhpValue, CodecError> {
    v.try_into().map(PhpValue::Int).map_err(|_| {
        CodecError::new(format!(
            "integer {v} does not fit in a PHP int (signed 64-bit); convert it to a string first"
        ))
    })
}

fn tagged(variant: &str, value: PhpValue) -> PhpValue {
    PhpValue::Array(vec![(PhpKey::from(variant), value)])
}

impl ser::Serializer for ValueSerializer {
    type Ok = PhpValue;
    type Error = CodecError;
    type SerializeSeq = SeqSer;
    type SerializeTuple = SeqSer;
    type SerializeTupleStruct = SeqSer;
    type SerializeTupleVariant = SeqSer;
    type SerializeMap = MapSer;
    type SerializeStruct = MapSer;
    type SerializeStructVariant = MapSer;

    fn serialize_bool(self, v: bool) -> Result<PhpValue, CodecError> {
        Ok(PhpValue::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> Result<PhpValue, CodecError> {
        Ok(PhpValue::Int(v.into()))
    }
    fn serialize_i16(self, v: i16) -> Result<PhpValue, CodecError> {
        Ok(PhpValue::Int(v.into()))
    }
    fn serialize_i32(self, v: i32) -> Result<PhpValue, CodecError> {
        Ok(PhpValue::Int(v.into()))
    }
    fn serialize_i64(self, v: i64) -> Result<PhpValue, CodecError> {
        Ok(PhpValue::Int(v))
    }
    fn serialize_i128(self, v: i128) -> Result<PhpValue, CodecError> {
        int_from(v)
    }
    fn serialize_u8(self, v: u8) -> Result<PhpValue, CodecError> {
        Ok(PhpValue::Int(v.into()))
    }
    fn serialize_u16(self, v: u16) -> Result<PhpValue, CodecError> {
        Ok(PhpValue::Int(v.into()))
    }
    fn serialize_u32(self, v: u32) -> Result<PhpValue, CodecError> {
        Ok(PhpValue::Int(v.into()))
    }
    fn serialize_u64(self, v: u64) -> Result<PhpValue, CodecError> {
        int_from(v)
    }
    fn serialize_u128(self, v: u128) -> Result<PhpValue, CodecError> {
        int_from(v)
    }
    fn serialize_f32(self, v: f32) -> Result<PhpValue, CodecError> {
        Ok(PhpValue::Float(v.into()))
    }
    fn serialize_f64(self, v: f64) -> Result<PhpValue, CodecError> {
        Ok(PhpValue::Float(v))
    }
    fn serialize_char(self, v: char) -> Result<PhpValue, CodecError> {
        Ok(PhpValue::String(v.to_string().into_bytes()))
    }
    fn serialize_str(self, v: &str) -> Result<PhpValue, CodecError> {
        Ok(PhpValue::from(v))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<PhpValue, CodecError> {
        Ok(PhpValue::String(v.to_vec()))
    }
    fn serialize_none(self) -> Result<PhpValue, CodecError> {
        Ok(PhpValue::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<PhpValue, CodecError> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<PhpValue, CodecError> {
        Ok(PhpValue::Null)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<PhpValue, CodecError> {
        Ok(PhpValue::Null)
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<PhpValue, CodecError> {
        Ok(PhpValue::from(variant))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<PhpValue, CodecError> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<PhpValue, CodecError> {
        Ok(tagged(variant, v.serialize(self)?))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<SeqSer, CodecError> {
        Ok(SeqSer::new(None, len))
    }
    fn serialize_tuple(self, len: usize) -> Result<SeqSer, CodecError> {
        Ok(SeqSer::new(None, Some(len)))
    }
    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<SeqSer, CodecError> {
        Ok(SeqSer::new(None, Some(len)))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<SeqSer, CodecError> {
        Ok(SeqSer::new(Some(variant), Some(len)))
    }
    fn serialize_map(self, len: Option<usize>) -> Result<MapSer, CodecError> {
        Ok(MapSer::new(None, len))
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<MapSer, CodecError> {
        Ok(MapSer::new(None, Some(len)))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<MapSer, CodecError> {
        Ok(MapSer::new(Some(variant), Some(len)))
    }
}

/// Builds a list; with a variant name, wraps it as `[variant => list]`.
struct SeqSer {
    variant: Option<&'static str>,
    items: Vec<PhpValue>,
}

impl SeqSer {
    fn new(variant: Option<&'static str>, len: Option<usize>) -> Self {
        SeqSer {
            variant,
            items: Vec::with_capacity(len.unwrap_or(0).min(4096)),
        }
    }
    fn push<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), CodecError> {
        self.items.push(to_php(v)?);
        Ok(())
    }
    fn finish(self) -> Result<PhpValue, CodecError> {
        let list = PhpValue::list(self.items);
        Ok(match self.variant {
            Some(variant) => tagged(variant, list),
            None => list,
        })
    }
}

impl ser::SerializeSeq for SeqSer {
    type Ok = PhpValue;
    type Error = CodecError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), CodecError> {
        self.push(v)
    }
    fn end(self) -> Result<PhpValue, CodecError> {
        self.finish()
    }
}

impl ser::SerializeTuple for SeqSer {
    type Ok = PhpValue;
    type Error = CodecError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), CodecError> {
        self.push(v)
    }
    fn end(self) -> Result<PhpValue, CodecError> {
        self.finish()
    }
}

impl ser::SerializeTupleStruct for SeqSer {
    type Ok = PhpValue;
    type Error = CodecError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), CodecError> {
        self.push(v)
    }
    fn end(self) -> Result<PhpValue, CodecError> {
        self.finish()
    }
}

impl ser::SerializeTupleVariant for SeqSer {
    type Ok = PhpValue;
    type Error = CodecError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), CodecError> {
        self.push(v)
    }
    fn end(self) -> Result<PhpValue, CodecError> {
        self.finish()
    }
}

/// Builds an associative array; with a variant name, wraps it.
struct MapSer {
    variant: Option<&'static str>,
    entries: Vec<(PhpKey, PhpValue)>,
    key: Option<PhpKey>,
}

impl MapSer {
    fn new(variant: Option<&'static str>, len: Option<usize>) -> Self {
        MapSer {
            variant,
            entries: Vec::with_capacity(len.unwrap_or(0).min(4096)),
            key: None,
        }
    }
    fn field<T: Serialize + ?Sized>(&mut self, key: &str, v: &T) -> Result<(), CodecError> {
        self.entries.push((PhpKey::from(key), to_php(v)?));
        Ok(())
    }
    fn finish(self) -> Result<PhpValue, CodecError> {
        let map = PhpValue::Array(self.entries);
        Ok(match self.variant {
            Some(variant) => tagged(variant, map),
            None => map,
        })
    }
}

impl ser::SerializeMap for MapSer {
    type Ok = PhpValue;
    type Error = CodecError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), CodecError> {
        self.key = Some(k.serialize(KeySerializer)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), CodecError> {
        let key = self
            .key
            .take()
            .ok_or_else(|| CodecError::new("map value serialized before its key"))?;
        self.entries.push((key, to_php(v)?));
        Ok(())
    }
    fn end(self) -> Result<PhpValue, CodecError> {
        self.finish()
    }
}

impl ser::SerializeStruct for MapSer {
    type Ok = PhpValue;
    type Error = CodecError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), CodecError> {
        self.field(key, v)
    }
    fn end(self) -> Result<PhpValue, CodecError> {
        self.finish()
    }
}

impl ser::SerializeStructVariant for MapSer {
    type Ok = PhpValue;
    type Error = CodecError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), CodecError> {
        self.field(key, v)
    }
    fn end(self) -> Result<PhpValue, CodecError> {
        self.finish()
    }
}

/// A string key as PHP stores it: canonical decimal integers (`"5"`,
/// `"-3"`, not `"05"`, `"-0"` or `"+1"`) become int keys
/// (`ZEND_HANDLE_NUMERIC_STR`).
fn php_string_key(s: &str) -> PhpKey {
    match s.parse::<i64>() {
        Ok(i) if i.to_string() == s => PhpKey::Int(i),
        _ => PhpKey::from(s),
    }
}

fn key_error() -> CodecError {
    CodecError::new("PHP array keys must be strings or integers")
}

/// Serializes map keys: strings, chars, integers, bools (as 0/1, like PHP)
/// and unit variants (their name).
struct KeySerializer;

impl ser::Serializer for KeySerializer {
    type Ok = PhpKey;
    type Error = CodecError;
    type SerializeSeq = ser::Impossible<PhpKey, CodecError>;
    type SerializeTuple = ser::Impossible<PhpKey, CodecError>;
    type SerializeTupleStruct = ser::Impossible<PhpKey, CodecError>;
    type SerializeTupleVariant = ser::Impossible<PhpKey, CodecError>;
    type SerializeMap = ser::Impossible<PhpKey, CodecError>;
    type SerializeStruct = ser::Impossible<PhpKey, CodecError>;
    type SerializeStructVariant = ser::Impossible<PhpKey, CodecError>;

    fn serialize_bool(self, v: bool) -> Result<PhpKey, CodecError> {
        Ok(PhpKey::Int(v.into()))
    }
    fn serialize_i8(self, v: i8) -> Result<PhpKey, CodecError> {
        Ok(PhpKey::Int(v.into()))
    }
    fn serialize_i16(self, v: i16) -> Result<PhpKey, CodecError> {
        Ok(PhpKey::Int(v.into()))
    }
    fn serialize_i32(self, v: i32) -> Result<PhpKey, CodecError> {
        Ok(PhpKey::Int(v.into()))
    }
    fn serialize_i64(self, v: i64) -> Result<PhpKey, CodecError> {
        Ok(PhpKey::Int(v))
    }
    fn serialize_i128(self, v: i128) -> Result<PhpKey, CodecError> {
        key_int(v)
    }
    fn serialize_u8(self, v: u8) -> Result<PhpKey, CodecError> {
        Ok(PhpKey::Int(v.into()))
    }
    fn serialize_u16(self, v: u16) -> Result<PhpKey, CodecError> {
        Ok(PhpKey::Int(v.into()))
    }
    fn serialize_u32(self, v: u32) -> Result<PhpKey, CodecError> {
        Ok(PhpKey::Int(v.into()))
    }
    fn serialize_u64(self, v: u64) -> Result<PhpKey, CodecError> {
        key_int(v)
    }
    fn serialize_u128(self, v: u128) -> Result<PhpKey, CodecError> {
        key_int(v)
    }
    fn serialize_f32(self, _: f32) -> Result<PhpKey, CodecError> {
        Err(key_error())
    }
    fn serialize_f64(self, _: f64) -> Result<PhpKey, CodecError> {
        Err(key_error())
    }
    fn serialize_char(self, v: char) -> Result<PhpKey, CodecError> {
        Ok(php_string_key(v.encode_utf8(&mut [0; 4])))
    }
    fn serialize_str(self, v: &str) -> Result<PhpKey, CodecError> {
        Ok(php_string_key(v))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<PhpKey, CodecError> {
        Ok(match std::str::from_utf8(v) {
            Ok(s) => php_string_key(s),
            Err(_) => PhpKey::Str(v.to_vec()),
        })
    }
    fn serialize_none(self) -> Result<PhpKey, CodecError> {
        Err(key_error())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<PhpKey, CodecError> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<PhpKey, CodecError> {
        Err(key_error())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<PhpKey, CodecError> {
        Err(key_error())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<PhpKey, CodecError> {
        Ok(php_string_key(variant))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<PhpKey, CodecError> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<PhpKey, CodecError> {
        Err(key_error())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, CodecError> {
        Err(key_error())
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, CodecError> {
        Err(key_error())
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, CodecError> {
        Err(key_error())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, CodecError> {
        Err(key_error())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, CodecError> {
        Err(key_error())
    }
    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, CodecError> {
        Err(key_error())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, CodecError> {
        Err(key_error())
    }
}

fn key_int<T: TryInto<i64> + Display + Copy>(v: T) -> Result<PhpKey, CodecError> {
    match int_from(v)? {
        PhpValue::Int(i) => Ok(PhpKey::Int(i)),
        _ => Err(key_error()),
    }
}

// -------------------------------------------------------------- from_php

/// Deserializes from a borrowed PHP value. Implements `Deserializer<'de>`
/// for every `'de` because it never hands out borrowed data.
struct Deser<'a>(&'a PhpValue);

fn unexpected(v: &PhpValue) -> Unexpected<'_> {
    match v {
        PhpValue::Null => Unexpected::Unit,
        PhpValue::Bool(b) => Unexpected::Bool(*b),
        PhpValue::Int(i) => Unexpected::Signed(*i),
        PhpValue::Float(f) => Unexpected::Float(*f),
        PhpValue::String(s) => match std::str::from_utf8(s) {
            Ok(s) => Unexpected::Str(s),
            Err(_) => Unexpected::Bytes(s),
        },
        PhpValue::Array(_) => Unexpected::Other("PHP array"),
        PhpValue::Object(_) => Unexpected::Other("PHP object"),
    }
}

fn is_list(entries: &[(PhpKey, PhpValue)]) -> bool {
    entries
        .iter()
        .enumerate()
        .all(|(i, (k, _))| *k == PhpKey::Int(i as i64))
}

fn key_value(k: &PhpKey) -> PhpValue {
    match k {
        PhpKey::Int(i) => PhpValue::Int(*i),
        PhpKey::Str(s) => PhpValue::String(s.clone()),
    }
}

impl<'a> Deser<'a> {
    fn invalid<V: de::Expected>(&self, exp: &V) -> CodecError {
        de::Error::invalid_type(unexpected(self.0), exp)
    }

    /// Properties of a plain object, entries of an array.
    fn entries(&self) -> Option<&'a [(PhpKey, PhpValue)]> {
        match self.0 {
            PhpValue::Array(entries) => Some(entries),
            PhpValue::Object(o) if o.kind == ObjectKind::Object => Some(&o.properties),
            _ => None,
        }
    }

    fn int<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        let lenient = match self.0 {
            PhpValue::Int(i) => Some(*i),
            // Integral floats in [-2^63, 2^63) convert exactly.
            PhpValue::Float(f)
                if f.fract() == 0.0 && *f >= i64::MIN as f64 && *f < -(i64::MIN as f64) =>
            {
                Some(*f as i64)
            }
            PhpValue::String(s) => filter_validate_int(s),
            _ => None,
        };
        match lenient {
            Some(i) => visitor.visit_i64(i),
            None => Err(self.invalid(&visitor)),
        }
    }

    fn float<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        match self.0 {
            PhpValue::Int(i) => visitor.visit_f64(*i as f64),
            PhpValue::Float(f) => visitor.visit_f64(*f),
            PhpValue::String(s) => match parse_numeric_float(s) {
                Some(f) => visitor.visit_f64(f),
                None => Err(self.invalid(&visitor)),
            },
            _ => Err(self.invalid(&visitor)),
        }
    }

    fn string<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        match self.0 {
            PhpValue::String(s) => match std::str::from_utf8(s) {
                Ok(s) => visitor.visit_str(s),
                Err(_) => visitor.visit_bytes(s),
            },
            PhpValue::Int(i) => visitor.visit_string(i.to_string()),
            PhpValue::Float(f) => visitor.visit_string(php_float_to_string(*f)),
            _ => Err(self.invalid(&visitor)),
        }
    }
}

impl<'de> de::Deserializer<'de> for Deser<'_> {
    type Error = CodecError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        match self.0 {
            PhpValue::Null => visitor.visit_unit(),
            PhpValue::Bool(b) => visitor.visit_bool(*b),
            PhpValue::Int(i) => visitor.visit_i64(*i),
            PhpValue::Float(f) => visitor.visit_f64(*f),
            PhpValue::String(_) => self.string(visitor),
            PhpValue::Array(entries) if is_list(entries) => visitor.visit_seq(Seq(entries.iter())),
            PhpValue::Object(o) => match &o.kind {
                ObjectKind::Enum(case) => visitor.visit_str(case),
                ObjectKind::Object => visitor.visit_map(Map::new(&o.properties)),
                ObjectKind::Custom(_) => Err(CodecError::new(format!(
                    "cannot read a {} object (Serializable, C: format): its payload is opaque",
                    o.class
                ))),
            },
            PhpValue::Array(entries) => visitor.visit_map(Map::new(entries)),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        match self.0 {
            PhpValue::Bool(b) => visitor.visit_bool(*b),
            PhpValue::Int(0) => visitor.visit_bool(false),
            PhpValue::Int(1) => visitor.visit_bool(true),
            _ => Err(self.invalid(&visitor)),
        }
    }

    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        self.int(visitor)
    }
    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        self.int(visitor)
    }
    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        self.int(visitor)
    }
    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        self.int(visitor)
    }
    fn deserialize_i128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        self.int(visitor)
    }
    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        self.int(visitor)
    }
    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        self.int(visitor)
    }
    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        self.int(visitor)
    }
    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        self.int(visitor)
    }
    fn deserialize_u128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        self.int(visitor)
    }
    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        self.float(visitor)
    }
    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        self.float(visitor)
    }
    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        self.string(visitor)
    }
    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        self.string(visitor)
    }
    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        self.string(visitor)
    }
    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        self.string(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        match self.0 {
            PhpValue::String(s) => visitor.visit_bytes(s),
            _ => self.deserialize_seq(visitor),
        }
    }
    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        match self.0 {
            PhpValue::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        match self.0 {
            PhpValue::Null => visitor.visit_unit(),
            _ => Err(self.invalid(&visitor)),
        }
    }
    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, CodecError> {
        self.deserialize_unit(visitor)
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, CodecError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        match self.0 {
            PhpValue::Array(entries) => visitor.visit_seq(Seq(entries.iter())),
            _ => Err(self.invalid(&visitor)),
        }
    }
    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _: usize,
        visitor: V,
    ) -> Result<V::Value, CodecError> {
        self.deserialize_seq(visitor)
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value, CodecError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        match self.entries() {
            Some(entries) => visitor.visit_map(Map::new(entries)),
            None => Err(self.invalid(&visitor)),
        }
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, CodecError> {
        match self.entries() {
            Some(entries) if !entries.is_empty() && is_list(entries) => {
                visitor.visit_seq(Seq(entries.iter()))
            }
            Some(entries) => visitor.visit_map(Map::new(entries)),
            None => Err(self.invalid(&visitor)),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, CodecError> {
        match self.0 {
            PhpValue::String(_) => visitor.visit_enum(Enum {
                variant: self.0.clone(),
                value: None,
            }),
            PhpValue::Object(o) => match &o.kind {
                ObjectKind::Enum(case) => visitor.visit_enum(Enum {
                    variant: PhpValue::from(case.as_str()),
                    value: None,
                }),
                _ => Err(self.invalid(&visitor)),
            },
            PhpValue::Array(entries) => match entries.as_slice() {
                [(key, value)] => visitor.visit_enum(Enum {
                    variant: key_value(key),
                    value: Some(value),
                }),
                _ => Err(CodecError::new(
                    "expected an enum as a variant name or a one-entry array [variant => value]",
                )),
            },
            _ => Err(self.invalid(&visitor)),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, CodecError> {
        visitor.visit_unit()
    }
}

struct Seq<'a>(std::slice::Iter<'a, (PhpKey, PhpValue)>);

impl<'de> de::SeqAccess<'de> for Seq<'_> {
    type Error = CodecError;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, CodecError> {
        match self.0.next() {
            Some((_, v)) => seed.deserialize(Deser(v)).map(Some),
            None => Ok(None),
        }
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

struct Map<'a> {
    iter: std::slice::Iter<'a, (PhpKey, PhpValue)>,
    value: Option<&'a PhpValue>,
}

impl<'a> Map<'a> {
    fn new(entries: &'a [(PhpKey, PhpValue)]) -> Self {
        Map {
            iter: entries.iter(),
            value: None,
        }
    }
}

impl<'de> de::MapAccess<'de> for Map<'_> {
    type Error = CodecError;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, CodecError> {
        match self.iter.next() {
            Some((k, v)) => {
                self.value = Some(v);
                seed.deserialize(Deser(&key_value(k))).map(Some)
            }
            None => Ok(None),
        }
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, CodecError> {
        let v = self
            .value
            .take()
            .ok_or_else(|| CodecError::new("map value requested before its key"))?;
        seed.deserialize(Deser(v))
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

struct Enum<'a> {
    variant: PhpValue,
    value: Option<&'a PhpValue>,
}

impl<'de, 'a> de::EnumAccess<'de> for Enum<'a> {
    type Error = CodecError;
    type Variant = Variant<'a>;
    fn variant_seed<S: DeserializeSeed<'de>>(
        self,
        seed: S,
    ) -> Result<(S::Value, Variant<'a>), CodecError> {
        let name = seed.deserialize(Deser(&self.variant))?;
        Ok((name, Variant(self.value)))
    }
}

struct Variant<'a>(Option<&'a PhpValue>);

impl<'de> de::VariantAccess<'de> for Variant<'_> {
    type Error = CodecError;
    fn unit_variant(self) -> Result<(), CodecError> {
        match self.0 {
            None | Some(PhpValue::Null) => Ok(()),
            Some(v) => Err(de::Error::invalid_type(unexpected(v), &"unit variant")),
        }
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<T::Value, CodecError> {
        match self.0 {
            Some(v) => seed.deserialize(Deser(v)),
            None => seed.deserialize(().into_deserializer()),
        }
    }
    fn tuple_variant<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, CodecError> {
        match self.0 {
            Some(v) => de::Deserializer::deserialize_seq(Deser(v), visitor),
            None => Err(de::Error::invalid_type(
                Unexpected::UnitVariant,
                &"tuple variant",
            )),
        }
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, CodecError> {
        match self.0 {
            Some(v) => de::Deserializer::deserialize_struct(Deser(v), "", fields, visitor),
            None => Err(de::Error::invalid_type(
                Unexpected::UnitVariant,
                &"struct variant",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use ::serde::{Deserialize, Serialize};

    use super::super::{decode_stored, encode_stored, serialize, unserialize, StoredValue};
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
        let m: HashMap<u32, String> =
            from_php(&PhpValue::assoc([("7", PhpValue::from("x"))])).unwrap();
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
}
