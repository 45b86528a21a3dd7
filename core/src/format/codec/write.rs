//! PHP's `serialize()` output format (ext/standard/var.c), byte for byte.

use super::numeric::php_float_serialize;
use super::value::{ObjectKind, PhpKey, PhpObject, PhpValue};

/// PHP's `serialize($v)` for a value: `N;`, `b:1;`, `i:5;`, `d:0.1;` (float
/// text as with the default `serialize_precision=-1`: `d:1.0E+25;`, `d:-0;`,
/// `d:INF;`, `d:NAN;`), `s:LEN:"bytes";` (LEN in bytes), `a:N:{key value
/// ...}`, `O:LEN:"Class":N:{props}`, `C:LEN:"Class":LEN:{payload}` and
/// `E:LEN:"Class:Case";`. Never writes `r:`/`R:` back-references: repeated
/// values are written out in full (PHP would reuse repeated objects).
pub fn serialize(v: &PhpValue) -> Vec<u8> {
    let mut out = Vec::new();
    write_value(&mut out, v);
    out
}

fn write_value(out: &mut Vec<u8>, v: &PhpValue) {
    match v {
        PhpValue::Null => out.extend_from_slice(b"N;"),
        PhpValue::Bool(b) => out.extend_from_slice(if *b { b"b:1;" } else { b"b:0;" }),
        PhpValue::Int(i) => {
            out.extend_from_slice(format!("i:{i};").as_bytes());
        }
        PhpValue::Float(f) => {
            out.extend_from_slice(b"d:");
            out.extend_from_slice(php_float_serialize(*f).as_bytes());
            out.push(b';');
        }
        PhpValue::String(s) => write_string(out, s),
        PhpValue::Array(entries) => {
            out.extend_from_slice(format!("a:{}:", entries.len()).as_bytes());
            write_entries(out, entries);
        }
        PhpValue::Object(o) => write_object(out, o),
    }
}

fn write_string(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(format!("s:{}:\"", s.len()).as_bytes());
    out.extend_from_slice(s);
    out.extend_from_slice(b"\";");
}

fn write_key(out: &mut Vec<u8>, k: &PhpKey) {
    match k {
        PhpKey::Int(i) => out.extend_from_slice(format!("i:{i};").as_bytes()),
        PhpKey::Str(s) => write_string(out, s),
    }
}

fn write_entries(out: &mut Vec<u8>, entries: &[(PhpKey, PhpValue)]) {
    out.push(b'{');
    for (k, v) in entries {
        write_key(out, k);
        write_value(out, v);
    }
    out.push(b'}');
}

fn write_object(out: &mut Vec<u8>, o: &PhpObject) {
    match &o.kind {
        ObjectKind::Object => {
            out.extend_from_slice(format!("O:{}:\"{}\":", o.class.len(), o.class).as_bytes());
            out.extend_from_slice(format!("{}:", o.properties.len()).as_bytes());
            write_entries(out, &o.properties);
        }
        ObjectKind::Custom(payload) => {
            out.extend_from_slice(format!("C:{}:\"{}\":", o.class.len(), o.class).as_bytes());
            out.extend_from_slice(format!("{}:{{", payload.len()).as_bytes());
            out.extend_from_slice(payload);
            out.push(b'}');
        }
        ObjectKind::Enum(case) => {
            let name = format!("{}:{case}", o.class);
            out.extend_from_slice(format!("E:{}:\"{name}\";", name.len()).as_bytes());
        }
    }
}
