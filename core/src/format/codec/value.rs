//! The PHP value model: what `serialize()` can express, kept byte-exact.

use std::fmt;

use super::numeric::php_float_serialize;

/// A PHP value as it appears in `serialize()` output.
///
/// Strings are byte strings (PHP strings are binary), arrays keep PHP's
/// insertion order, and objects are opaque records (never instantiated).
#[derive(Debug, Clone, PartialEq)]
pub enum PhpValue {
    /// `null` (`N;`).
    Null,
    /// `true`/`false` (`b:1;`/`b:0;`).
    Bool(bool),
    /// A PHP int, always 64-bit here (`i:42;`).
    Int(i64),
    /// A PHP float (`d:0.5;`), including INF, -INF and NAN.
    Float(f64),
    /// A binary-safe PHP string (`s:5:"hello";`).
    String(Vec<u8>),
    /// An ordered PHP array (`a:N:{...}`); lists have keys 0..n.
    Array(Vec<(PhpKey, PhpValue)>),
    /// An object (`O:`, `C:` or `E:`), kept as data only.
    Object(PhpObject),
}

/// A PHP array key or object property name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PhpKey {
    /// An integer key (`i:5;`).
    Int(i64),
    /// A byte-string key (`s:1:"a";`). PHP itself turns canonical decimal
    /// strings such as `"5"` into int keys; the decoder keeps what is written.
    Str(Vec<u8>),
}

/// An opaque PHP object: its class name and data, never instantiated.
#[derive(Debug, Clone, PartialEq)]
pub struct PhpObject {
    /// The class name as written (namespaces use `\`).
    pub class: String,
    /// Which serialized form the object uses.
    pub kind: ObjectKind,
    /// Properties for [`ObjectKind::Object`], in order. Names keep PHP's
    /// mangling: `"\0*\0name"` is protected, `"\0Class\0name"` private.
    /// Always empty for `Custom` and `Enum` (the serializer ignores it there).
    pub properties: Vec<(PhpKey, PhpValue)>,
}

/// The three object forms of PHP's `serialize()`.
#[derive(Debug, Clone, PartialEq)]
pub enum ObjectKind {
    /// `O:len:"Class":n:{props}`: plain objects and `__serialize()` data.
    Object,
    /// `C:len:"Class":len:{payload}`: a `Serializable` class's own payload,
    /// kept as raw bytes.
    Custom(Vec<u8>),
    /// `E:len:"Class:Case";`: an enum case (PHP 8.1+); holds the case name.
    Enum(String),
}

impl PhpValue {
    /// A PHP list (keys 0..n) from values.
    pub fn list<I: IntoIterator<Item = PhpValue>>(items: I) -> Self {
        PhpValue::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, v)| (PhpKey::Int(i as i64), v))
                .collect(),
        )
    }

    /// A PHP associative array with string keys, in the given order.
    pub fn assoc<K: Into<PhpKey>, I: IntoIterator<Item = (K, PhpValue)>>(entries: I) -> Self {
        PhpValue::Array(entries.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// The string's text when this is a valid UTF-8 string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            PhpValue::String(b) => std::str::from_utf8(b).ok(),
            _ => None,
        }
    }

    /// The raw bytes of a string.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            PhpValue::String(b) => Some(b),
            _ => None,
        }
    }

    /// The int value (no conversion from other types).
    pub fn as_int(&self) -> Option<i64> {
        match self {
            PhpValue::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The value of an int or float, as f64.
    pub fn as_float(&self) -> Option<f64> {
        match self {
            PhpValue::Int(i) => Some(*i as f64),
            PhpValue::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// The bool value (no conversion from other types).
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            PhpValue::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// Whether this is `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, PhpValue::Null)
    }

    /// The entries of an array.
    pub fn as_array(&self) -> Option<&[(PhpKey, PhpValue)]> {
        match self {
            PhpValue::Array(entries) => Some(entries),
            _ => None,
        }
    }

    /// Looks up an array entry (or object property) by key; the last
    /// matching entry wins, as a PHP array would have kept it.
    pub fn get(&self, key: impl Into<PhpKey>) -> Option<&PhpValue> {
        let key = key.into();
        let entries = match self {
            PhpValue::Array(entries) => entries,
            PhpValue::Object(o) => &o.properties,
            _ => return None,
        };
        entries
            .iter()
            .rev()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
    }
}

macro_rules! from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for PhpValue {
            fn from(v: $t) -> Self {
                PhpValue::Int(i64::from(v))
            }
        }
    )*};
}
from_int!(i8, i16, i32, i64, u8, u16, u32);

impl From<f64> for PhpValue {
    fn from(v: f64) -> Self {
        PhpValue::Float(v)
    }
}

impl From<bool> for PhpValue {
    fn from(v: bool) -> Self {
        PhpValue::Bool(v)
    }
}

impl From<&str> for PhpValue {
    fn from(v: &str) -> Self {
        PhpValue::String(v.as_bytes().to_vec())
    }
}

impl From<String> for PhpValue {
    fn from(v: String) -> Self {
        PhpValue::String(v.into_bytes())
    }
}

impl From<Vec<u8>> for PhpValue {
    fn from(v: Vec<u8>) -> Self {
        PhpValue::String(v)
    }
}

impl From<&[u8]> for PhpValue {
    fn from(v: &[u8]) -> Self {
        PhpValue::String(v.to_vec())
    }
}

impl From<Vec<PhpValue>> for PhpValue {
    fn from(v: Vec<PhpValue>) -> Self {
        PhpValue::list(v)
    }
}

impl<T: Into<PhpValue>> From<Option<T>> for PhpValue {
    fn from(v: Option<T>) -> Self {
        v.map_or(PhpValue::Null, Into::into)
    }
}

impl From<PhpObject> for PhpValue {
    fn from(v: PhpObject) -> Self {
        PhpValue::Object(v)
    }
}

impl From<i64> for PhpKey {
    fn from(v: i64) -> Self {
        PhpKey::Int(v)
    }
}

impl From<&str> for PhpKey {
    fn from(v: &str) -> Self {
        PhpKey::Str(v.as_bytes().to_vec())
    }
}

impl From<String> for PhpKey {
    fn from(v: String) -> Self {
        PhpKey::Str(v.into_bytes())
    }
}

impl From<&[u8]> for PhpKey {
    fn from(v: &[u8]) -> Self {
        PhpKey::Str(v.to_vec())
    }
}

/// Writes bytes as a quoted, escaped string (UTF-8 shown as is).
fn write_quoted(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    f.write_str("\"")?;
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => f.write_str("\\\"")?,
                '\\' => f.write_str("\\\\")?,
                c if c.is_control() => write!(f, "{}", c.escape_default())?,
                c => write!(f, "{c}")?,
            }
        }
        for b in chunk.invalid() {
            write!(f, "\\x{b:02x}")?;
        }
    }
    f.write_str("\"")
}

fn write_entries(f: &mut fmt::Formatter<'_>, entries: &[(PhpKey, PhpValue)]) -> fmt::Result {
    for (i, (k, v)) in entries.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{k} => {v}")?;
    }
    Ok(())
}

/// Human-friendly, PHP-like rendering: `null`, `true`, `42`, `1.5`,
/// `"text"`, `[0 => 1, "a" => 2]`, `stdClass {"p" => 1}`, `Suit::Hearts`.
impl fmt::Display for PhpValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PhpValue::Null => f.write_str("null"),
            PhpValue::Bool(b) => write!(f, "{b}"),
            PhpValue::Int(i) => write!(f, "{i}"),
            PhpValue::Float(x) => f.write_str(&php_float_serialize(*x)),
            PhpValue::String(s) => write_quoted(f, s),
            PhpValue::Array(entries) => {
                f.write_str("[")?;
                write_entries(f, entries)?;
                f.write_str("]")
            }
            PhpValue::Object(o) => write!(f, "{o}"),
        }
    }
}

impl fmt::Display for PhpObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ObjectKind::Object => {
                write!(f, "{} {{", self.class)?;
                write_entries(f, &self.properties)?;
                f.write_str("}")
            }
            ObjectKind::Custom(payload) => {
                write!(f, "{}(Serializable: ", self.class)?;
                write_quoted(f, payload)?;
                f.write_str(")")
            }
            ObjectKind::Enum(case) => write!(f, "{}::{case}", self.class),
        }
    }
}

impl fmt::Display for PhpKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PhpKey::Int(i) => write!(f, "{i}"),
            PhpKey::Str(s) => write_quoted(f, s),
        }
    }
}
