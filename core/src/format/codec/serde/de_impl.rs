//! `from_php`: a serde `Deserializer` over PHP values.

use ::serde::de::{self, DeserializeSeed, IntoDeserializer, Unexpected, Visitor};

use super::super::numeric::{filter_validate_int, parse_numeric_float, php_float_to_string};
use super::super::value::{ObjectKind, PhpKey, PhpValue};
use super::super::CodecError;
// -------------------------------------------------------------- from_php

/// Deserializes from a borrowed PHP value. Implements `Deserializer<'de>`
/// for every `'de` because it never hands out borrowed data.
pub(super) struct Deser<'a>(pub(super) &'a PhpValue);

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

pub(super) struct Seq<'a>(std::slice::Iter<'a, (PhpKey, PhpValue)>);

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

pub(super) struct Map<'a> {
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

pub(super) struct Enum<'a> {
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

pub(super) struct Variant<'a>(Option<&'a PhpValue>);

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
