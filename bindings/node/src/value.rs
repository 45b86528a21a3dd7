//! JavaScript values ↔ PHP values (`ddblock::PhpValue`), converted on the JS thread.
//!
//! JS → PHP: `null`/`undefined` → null, boolean → bool, number → int when integral and within
//! ±2^53 (else float), bigint → int (must fit 64 bits), string → string, Buffer/Uint8Array →
//! binary string, array → list, plain object → assoc array (canonical integer keys become int
//! keys, as PHP does), `{ __phpClass, properties }` → object. Anything else is a `CODEC` error.
//!
//! PHP → JS: int → number, or bigint beyond ±(2^53 − 1); float → number; string → string when
//! UTF-8, else Buffer; array with keys 0..n in order → array, else object; object →
//! `{ __phpClass, properties }` (enums add `case`, `Serializable` ones `payload`).

use std::ptr;

use ddblock::codec::{Limits, ObjectKind};
use ddblock::{ErrorKind, ManyEntry, PhpKey, PhpObject, PhpValue};
use napi::bindgen_prelude::{BigInt, FromNapiValue, ToNapiValue, TypeName, ValidateNapiValue};
use napi::{sys, Result, ValueType};

use crate::error::{binding_error, Failure};

/// Deepest nesting accepted: the core decoder's own limit (anything deeper could not be read back).
fn max_depth() -> usize {
    Limits::default().max_depth
}
const MAX_SAFE: i64 = (1 << 53) - 1;

/// A PHP value crossing the boundary (argument or result).
pub struct JsPhp(pub PhpValue);

/// A cache read: `undefined` when missing or expired, else the value.
pub struct Cached(pub Option<PhpValue>);

/// A `CODEC` error for a value JavaScript cannot store (a `DdblockError`, built on this thread).
fn codec(env: sys::napi_env, msg: impl Into<String>) -> napi::Error {
    binding_error(ErrorKind::Codec, msg).into_napi(env)
}

fn check(env: sys::napi_env, status: sys::napi_status, what: &str) -> Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(codec(env, format!("{what} failed (napi status {status})")))
    }
}

unsafe fn type_of(env: sys::napi_env, v: sys::napi_value) -> Result<sys::napi_valuetype> {
    let mut t = 0;
    check(env, sys::napi_typeof(env, v, &mut t), "typeof")?;
    Ok(t)
}

unsafe fn named(env: sys::napi_env, obj: sys::napi_value, name: &str) -> Result<sys::napi_value> {
    let key = String::to_napi_value(env, name.to_owned())?;
    let mut out = ptr::null_mut();
    check(
        env,
        sys::napi_get_property(env, obj, key, &mut out),
        "get property",
    )?;
    Ok(out)
}

unsafe fn is_plain_object(env: sys::napi_env, v: sys::napi_value) -> Result<bool> {
    let mut proto = ptr::null_mut();
    check(
        env,
        sys::napi_get_prototype(env, v, &mut proto),
        "get prototype",
    )?;
    if type_of(env, proto)? == sys::ValueType::napi_null {
        return Ok(true);
    }
    let mut global = ptr::null_mut();
    check(env, sys::napi_get_global(env, &mut global), "get global")?;
    let object_proto = named(env, named(env, global, "Object")?, "prototype")?;
    let mut same = false;
    check(
        env,
        sys::napi_strict_equals(env, proto, object_proto, &mut same),
        "compare",
    )?;
    Ok(same)
}

/// PHP's array key for a JS property name: canonical decimal integers become int keys.
fn php_key(name: String) -> PhpKey {
    let canonical = name == "0"
        || (!name.starts_with('0') && !name.starts_with("-0") && name != "-")
            && name.parse::<i64>().is_ok();
    match name.parse::<i64>() {
        Ok(i) if canonical => PhpKey::Int(i),
        _ => PhpKey::Str(name.into_bytes()),
    }
}

/// A PHP array key as the JS property name it came from (an int key as its decimal text).
pub fn key_name(key: PhpKey) -> String {
    match key {
        PhpKey::Int(i) => i.to_string(),
        PhpKey::Str(s) => String::from_utf8_lossy(&s).into_owned(),
    }
}

unsafe fn own_entries(
    env: sys::napi_env,
    obj: sys::napi_value,
    depth: usize,
    int_keys: bool,
) -> Result<Vec<(PhpKey, PhpValue)>> {
    let mut names = ptr::null_mut();
    check(
        env,
        sys::napi_get_all_property_names(
            env,
            obj,
            sys::KeyCollectionMode::own_only,
            sys::KeyFilter::enumerable | sys::KeyFilter::skip_symbols,
            sys::KeyConversion::numbers_to_strings,
            &mut names,
        ),
        "list properties",
    )?;
    let mut len = 0;
    check(
        env,
        sys::napi_get_array_length(env, names, &mut len),
        "length",
    )?;
    let mut out = Vec::with_capacity(len as usize);
    for i in 0..len {
        let mut k = ptr::null_mut();
        check(env, sys::napi_get_element(env, names, i, &mut k), "get key")?;
        let mut v = ptr::null_mut();
        check(
            env,
            sys::napi_get_property(env, obj, k, &mut v),
            "get value",
        )?;
        let name = String::from_napi_value(env, k)?;
        let key = if int_keys {
            php_key(name)
        } else {
            PhpKey::Str(name.into_bytes())
        };
        out.push((key, from_js(env, v, depth + 1)?));
    }
    Ok(out)
}

/// Converts one JS value to a PHP value.
unsafe fn from_js(env: sys::napi_env, v: sys::napi_value, depth: usize) -> Result<PhpValue> {
    if depth > max_depth() {
        return Err(codec(
            env,
            format!(
                "value nested deeper than {} levels (a cycle?) cannot be stored: PHP values read \
             back by ddblock are at most that deep",
                max_depth()
            ),
        ));
    }
    match type_of(env, v)? {
        sys::ValueType::napi_undefined | sys::ValueType::napi_null => Ok(PhpValue::Null),
        sys::ValueType::napi_boolean => Ok(PhpValue::Bool(bool::from_napi_value(env, v)?)),
        sys::ValueType::napi_number => {
            let n = f64::from_napi_value(env, v)?;
            if n.fract() == 0.0 && n.abs() <= MAX_SAFE as f64 {
                Ok(PhpValue::Int(n as i64))
            } else {
                Ok(PhpValue::Float(n))
            }
        }
        sys::ValueType::napi_bigint => {
            let (i, lossless) = BigInt::from_napi_value(env, v)?.get_i64();
            if lossless {
                Ok(PhpValue::Int(i))
            } else {
                Err(codec(env, "bigint out of PHP's 64-bit int range"))
            }
        }
        sys::ValueType::napi_string => Ok(PhpValue::String(
            String::from_napi_value(env, v)?.into_bytes(),
        )),
        sys::ValueType::napi_object => {
            let mut flag = false;
            check(env, sys::napi_is_buffer(env, v, &mut flag), "is buffer")?;
            if flag {
                let mut data = ptr::null_mut();
                let mut len = 0;
                check(
                    env,
                    sys::napi_get_buffer_info(env, v, &mut data, &mut len),
                    "buffer",
                )?;
                let bytes = if len == 0 {
                    Vec::new()
                } else {
                    std::slice::from_raw_parts(data as *const u8, len).to_vec()
                };
                return Ok(PhpValue::String(bytes));
            }
            let mut is_array = false;
            check(env, sys::napi_is_array(env, v, &mut is_array), "is array")?;
            if is_array {
                let mut len = 0;
                check(env, sys::napi_get_array_length(env, v, &mut len), "length")?;
                let mut items = Vec::with_capacity(len as usize);
                for i in 0..len {
                    let mut e = ptr::null_mut();
                    check(env, sys::napi_get_element(env, v, i, &mut e), "get element")?;
                    items.push(from_js(env, e, depth + 1)?);
                }
                return Ok(PhpValue::list(items));
            }
            if !is_plain_object(env, v)? {
                return Err(codec(
                    env,
                    "only null, booleans, numbers, bigints, strings, Buffers, arrays and plain \
                     objects can be stored (convert Dates, Maps, class instances first)",
                ));
            }
            let class = named(env, v, "__phpClass")?;
            if type_of(env, class)? == sys::ValueType::napi_string {
                let class = String::from_napi_value(env, class)?;
                let props = named(env, v, "properties")?;
                let properties = match type_of(env, props)? {
                    sys::ValueType::napi_undefined | sys::ValueType::napi_null => Vec::new(),
                    sys::ValueType::napi_object => own_entries(env, props, depth, false)?,
                    _ => return Err(codec(env, "`properties` of a PHP object must be an object")),
                };
                return Ok(PhpValue::Object(PhpObject {
                    class,
                    kind: ObjectKind::Object,
                    properties,
                }));
            }
            Ok(PhpValue::Array(own_entries(env, v, depth, true)?))
        }
        _ => Err(codec(
            env,
            "functions, symbols and other exotic values cannot be stored",
        )),
    }
}

unsafe fn object() -> impl Fn(sys::napi_env) -> Result<sys::napi_value> {
    |env| {
        let mut o = ptr::null_mut();
        check(env, sys::napi_create_object(env, &mut o), "create object")?;
        Ok(o)
    }
}

unsafe fn set(
    env: sys::napi_env,
    obj: sys::napi_value,
    key: &[u8],
    v: sys::napi_value,
) -> Result<()> {
    let k = String::to_napi_value(env, String::from_utf8_lossy(key).into_owned())?;
    check(env, sys::napi_set_property(env, obj, k, v), "set property")
}

unsafe fn entries_to_object(
    env: sys::napi_env,
    entries: Vec<(PhpKey, PhpValue)>,
) -> Result<sys::napi_value> {
    let o = object()(env)?;
    for (k, v) in entries {
        let js = to_js(env, v)?;
        match k {
            PhpKey::Int(i) => set(env, o, i.to_string().as_bytes(), js)?,
            PhpKey::Str(s) => set(env, o, &s, js)?,
        }
    }
    Ok(o)
}

/// Converts one PHP value to a JS value.
unsafe fn to_js(env: sys::napi_env, v: PhpValue) -> Result<sys::napi_value> {
    match v {
        PhpValue::Null => {
            let mut out = ptr::null_mut();
            check(env, sys::napi_get_null(env, &mut out), "null")?;
            Ok(out)
        }
        PhpValue::Bool(b) => bool::to_napi_value(env, b),
        PhpValue::Int(i) if (-MAX_SAFE..=MAX_SAFE).contains(&i) => {
            f64::to_napi_value(env, i as f64)
        }
        PhpValue::Int(i) => BigInt::to_napi_value(env, BigInt::from(i)),
        PhpValue::Float(f) => f64::to_napi_value(env, f),
        PhpValue::String(bytes) => match String::from_utf8(bytes) {
            Ok(s) => String::to_napi_value(env, s),
            Err(e) => {
                let bytes = e.into_bytes();
                let mut data = ptr::null_mut();
                let mut out = ptr::null_mut();
                check(
                    env,
                    sys::napi_create_buffer_copy(
                        env,
                        bytes.len(),
                        bytes.as_ptr().cast(),
                        &mut data,
                        &mut out,
                    ),
                    "create buffer",
                )?;
                Ok(out)
            }
        },
        PhpValue::Array(entries) => {
            let is_list = entries
                .iter()
                .enumerate()
                .all(|(i, (k, _))| *k == PhpKey::Int(i as i64));
            if !is_list {
                return entries_to_object(env, entries);
            }
            let mut arr = ptr::null_mut();
            check(
                env,
                sys::napi_create_array_with_length(env, entries.len(), &mut arr),
                "array",
            )?;
            for (i, (_, v)) in entries.into_iter().enumerate() {
                let js = to_js(env, v)?;
                check(
                    env,
                    sys::napi_set_element(env, arr, i as u32, js),
                    "set element",
                )?;
            }
            Ok(arr)
        }
        PhpValue::Object(o) => {
            let out = object()(env)?;
            set(
                env,
                out,
                b"__phpClass",
                String::to_napi_value(env, o.class)?,
            )?;
            set(
                env,
                out,
                b"properties",
                entries_to_object(env, o.properties)?,
            )?;
            match o.kind {
                ObjectKind::Object => {}
                ObjectKind::Enum(case) => {
                    set(env, out, b"case", String::to_napi_value(env, case)?)?
                }
                ObjectKind::Custom(payload) => {
                    let mut data = ptr::null_mut();
                    let mut buf = ptr::null_mut();
                    check(
                        env,
                        sys::napi_create_buffer_copy(
                            env,
                            payload.len(),
                            payload.as_ptr().cast(),
                            &mut data,
                            &mut buf,
                        ),
                        "create buffer",
                    )?;
                    set(env, out, b"payload", buf)?
                }
            }
            Ok(out)
        }
    }
}

impl TypeName for JsPhp {
    fn type_name() -> &'static str {
        "unknown"
    }
    fn value_type() -> ValueType {
        ValueType::Unknown
    }
}

impl ValidateNapiValue for JsPhp {}

impl FromNapiValue for JsPhp {
    unsafe fn from_napi_value(env: sys::napi_env, v: sys::napi_value) -> Result<Self> {
        from_js(env, v, 0).map(JsPhp)
    }
}

impl ToNapiValue for JsPhp {
    unsafe fn to_napi_value(env: sys::napi_env, v: Self) -> Result<sys::napi_value> {
        to_js(env, v.0)
    }
}

impl TypeName for Cached {
    fn type_name() -> &'static str {
        "unknown"
    }
    fn value_type() -> ValueType {
        ValueType::Unknown
    }
}

impl ToNapiValue for Cached {
    unsafe fn to_napi_value(env: sys::napi_env, v: Self) -> Result<sys::napi_value> {
        match v.0 {
            Some(v) => to_js(env, v),
            None => {
                let mut out = ptr::null_mut();
                check(env, sys::napi_get_undefined(env, &mut out), "undefined")?;
                Ok(out)
            }
        }
    }
}

/// Values of several keys, as a JS object in the order asked: the value, `undefined` when
/// missing, or a `DdblockError` (code `CODEC`) for a key whose item is not a Laravel value.
pub struct Many(pub Vec<(String, ManyEntry)>);

impl TypeName for Many {
    fn type_name() -> &'static str {
        "Record<string, unknown>"
    }
    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl ToNapiValue for Many {
    unsafe fn to_napi_value(env: sys::napi_env, v: Self) -> Result<sys::napi_value> {
        let o = object()(env)?;
        for (k, v) in v.0 {
            let js = match v {
                Ok(v) => Cached::to_napi_value(env, Cached(v))?,
                Err(e) => Failure::Core(e).into_js(env)?,
            };
            set(env, o, k.as_bytes(), js)?;
        }
        Ok(o)
    }
}

/// A ttl in whole seconds from a JS number (the core's rule); anything else is INVALID_TTL with
/// a message that says what was given, not napi's conversion error.
pub struct Seconds(pub i64);

impl TypeName for Seconds {
    fn type_name() -> &'static str {
        "number"
    }
    fn value_type() -> ValueType {
        ValueType::Number
    }
}

impl ValidateNapiValue for Seconds {}

impl FromNapiValue for Seconds {
    unsafe fn from_napi_value(env: sys::napi_env, v: sys::napi_value) -> Result<Self> {
        let t = type_of(env, v)?;
        if t != sys::ValueType::napi_number {
            return Err(binding_error(
                ErrorKind::InvalidTtl,
                format!(
                    "invalid ttl: a ttl is a whole number of seconds (a number), not a {}",
                    js_type_name(t)
                ),
            )
            .into_napi(env));
        }
        let f = f64::from_napi_value(env, v)?;
        ddblock::format::input::ttl_from_f64(f)
            .map(Seconds)
            .map_err(|e| Failure::Core(e).into_napi(env))
    }
}

/// The name of a JS type, for messages.
fn js_type_name(t: sys::napi_valuetype) -> &'static str {
    match t {
        sys::ValueType::napi_undefined => "undefined",
        sys::ValueType::napi_null => "null",
        sys::ValueType::napi_boolean => "boolean",
        sys::ValueType::napi_number => "number",
        sys::ValueType::napi_string => "string",
        sys::ValueType::napi_symbol => "symbol",
        sys::ValueType::napi_object => "object",
        sys::ValueType::napi_function => "function",
        sys::ValueType::napi_external => "external",
        sys::ValueType::napi_bigint => "bigint",
        _ => "value",
    }
}

/// Key → value pairs from a plain JS object, for `putMany`.
pub struct Entries(pub Vec<(String, PhpValue)>);

impl TypeName for Entries {
    fn type_name() -> &'static str {
        "Record<string, unknown>"
    }
    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl ValidateNapiValue for Entries {}

impl FromNapiValue for Entries {
    unsafe fn from_napi_value(env: sys::napi_env, v: sys::napi_value) -> Result<Self> {
        if type_of(env, v)? != sys::ValueType::napi_object {
            return Err(codec(env, "putMany takes an object of key → value"));
        }
        let entries = own_entries(env, v, 0, false)?
            .into_iter()
            .map(|(k, v)| (key_name(k), v))
            .collect();
        Ok(Entries(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_like_names_become_int_keys_as_in_php() {
        assert_eq!(php_key("0".into()), PhpKey::Int(0));
        assert_eq!(php_key("42".into()), PhpKey::Int(42));
        assert_eq!(php_key("-7".into()), PhpKey::Int(-7));
        assert_eq!(php_key("07".into()), PhpKey::Str(b"07".to_vec()));
        assert_eq!(php_key("-0".into()), PhpKey::Str(b"-0".to_vec()));
        assert_eq!(php_key("1.5".into()), PhpKey::Str(b"1.5".to_vec()));
        assert_eq!(
            php_key("99999999999999999999".into()),
            PhpKey::Str(b"99999999999999999999".to_vec())
        );
    }
}
