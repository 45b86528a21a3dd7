//! `to_php`: a serde `Serializer` building PHP values.

use std::fmt::Display;

use ::serde::ser::{self, Serialize};

use super::super::value::{PhpKey, PhpValue};
use super::super::CodecError;
use super::to_php;

// ---------------------------------------------------------------- to_php

pub(super) struct ValueSerializer;

pub(super) fn int_from<T: TryInto<i64> + Display + Copy>(v: T) -> Result<PhpValue, CodecError> {
    v.try_into().map(PhpValue::Int).map_err(|_| {
        CodecError::new(format!(
            "integer {v} does not fit in a PHP int (signed 64-bit); convert it to a string first"
        ))
    })
}

/// The integer methods of a `Serializer` to `$out`: what fits an `i64` as `$out::Int`, the wider
/// types through `$wide` (an error past PHP's range).
macro_rules! integers {
    ($out:ident, $wide:ident) => {
        integers!(@into $out, serialize_i8: i8, serialize_i16: i16, serialize_i32: i32,
            serialize_i64: i64, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32);
        integers!(@wide $out, $wide, serialize_i128: i128, serialize_u64: u64,
            serialize_u128: u128);
    };
    (@into $out:ident, $($m:ident: $t:ty),*) => {$(
        fn $m(self, v: $t) -> Result<$out, CodecError> {
            Ok($out::Int(v.into()))
        }
    )*};
    (@wide $out:ident, $wide:ident, $($m:ident: $t:ty),*) => {$(
        fn $m(self, v: $t) -> Result<$out, CodecError> {
            $wide(v)
        }
    )*};
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
    integers!(PhpValue, int_from);
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
pub(super) struct SeqSer {
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

/// The sequence serializers of [`SeqSer`]: each element pushed, the list built at the end.
macro_rules! seq_serializers {
    ($($trait:ident::$method:ident),*) => {$(
        impl ser::$trait for SeqSer {
            type Ok = PhpValue;
            type Error = CodecError;
            fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), CodecError> {
                self.push(v)
            }
            fn end(self) -> Result<PhpValue, CodecError> {
                self.finish()
            }
        }
    )*};
}
seq_serializers!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

/// Builds an associative array; with a variant name, wraps it.
pub(super) struct MapSer {
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

/// The struct serializers of [`MapSer`]: each field an entry named by the field.
macro_rules! struct_serializers {
    ($($trait:ident),*) => {$(
        impl ser::$trait for MapSer {
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
    )*};
}
struct_serializers!(SerializeStruct, SerializeStructVariant);

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
pub(super) struct KeySerializer;

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
    integers!(PhpKey, key_int);
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
