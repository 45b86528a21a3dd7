//! A request's fields, read without panicking (a missing or mistyped field is a [`Failure`]);
//! PHP values as they cross the protocol (`base64(serialize(value))`); and the failure answer.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use ddblock::{codec, PhpValue};
use serde_json::{json, Map, Value};

/// One request: the JSON object of its line.
pub struct Req(pub Map<String, Value>);

/// Why a request failed; answered as `{"ok":false,"error":...[,"kind":...]}`.
#[derive(Debug)]
pub enum Failure {
    /// A core error: answered with its kind (`lock_timeout`, `throttled`, ...).
    Core(ddblock::Error),
    /// The request itself is wrong (a field missing or of the wrong type).
    Bad(String),
    /// An op this peer does not run.
    Unsupported(String),
    /// Anything else (a file the op reads or writes, a panic).
    Other(String),
}

impl Failure {
    /// A bad request.
    pub fn bad(message: impl Into<String>) -> Failure {
        Failure::Bad(message.into())
    }

    /// The answer line.
    pub fn to_json(&self) -> Value {
        match self {
            Failure::Core(e) => {
                let kind = e.kind().as_str();
                json!({"ok": false, "error": format!("{kind}: {e}"), "kind": kind})
            }
            Failure::Bad(m) => json!({"ok": false, "error": format!("invalid_request: {m}")}),
            Failure::Unsupported(op) => json!({"ok": false, "error": format!("unsupported: {op}")}),
            Failure::Other(m) => json!({"ok": false, "error": format!("error: {m}")}),
        }
    }
}

impl From<ddblock::Error> for Failure {
    fn from(e: ddblock::Error) -> Failure {
        Failure::Core(e)
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        Failure::Other(format!("io: {e}"))
    }
}

/// A field's value, or `None` when it is absent or `null`.
fn present<'a>(req: &'a Req, name: &str) -> Option<&'a Value> {
    req.0.get(name).filter(|v| !v.is_null())
}

/// A number field as a whole number (`5` or `5.0`).
fn whole(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
            .map(|f| f as i64)
    })
}

impl Req {
    /// A required string field.
    pub fn str(&self, name: &str) -> Result<&str, Failure> {
        self.opt_str(name)?
            .ok_or_else(|| Failure::bad(format!("field '{name}' (a string) is required")))
    }

    /// An optional string field.
    pub fn opt_str(&self, name: &str) -> Result<Option<&str>, Failure> {
        match present(self, name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(Failure::bad(format!("field '{name}' must be a string"))),
        }
    }

    /// A required whole-number field.
    pub fn int(&self, name: &str) -> Result<i64, Failure> {
        self.opt_int(name)?
            .ok_or_else(|| Failure::bad(format!("field '{name}' (a whole number) is required")))
    }

    /// An optional whole-number field.
    pub fn opt_int(&self, name: &str) -> Result<Option<i64>, Failure> {
        match present(self, name) {
            None => Ok(None),
            Some(v) => whole(v)
                .map(Some)
                .ok_or_else(|| Failure::bad(format!("field '{name}' must be a whole number"))),
        }
    }

    /// A required count (a whole number, 0 or more).
    pub fn count(&self, name: &str) -> Result<u64, Failure> {
        u64::try_from(self.int(name)?)
            .map_err(|_| Failure::bad(format!("field '{name}' must be 0 or more")))
    }

    /// An optional count, `default` when absent.
    pub fn count_or(&self, name: &str, default: u64) -> Result<u64, Failure> {
        match self.opt_int(name)? {
            None => Ok(default),
            Some(n) => u64::try_from(n)
                .map_err(|_| Failure::bad(format!("field '{name}' must be 0 or more"))),
        }
    }

    /// An optional number field (fractions allowed).
    pub fn opt_num(&self, name: &str) -> Result<Option<f64>, Failure> {
        match present(self, name) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .map(Some)
                .ok_or_else(|| Failure::bad(format!("field '{name}' must be a number"))),
        }
    }

    /// A required number field.
    pub fn num(&self, name: &str) -> Result<f64, Failure> {
        self.opt_num(name)?
            .ok_or_else(|| Failure::bad(format!("field '{name}' (a number) is required")))
    }

    /// An optional boolean field, false when absent.
    pub fn flag(&self, name: &str) -> Result<bool, Failure> {
        match present(self, name) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(Failure::bad(format!(
                "field '{name}' must be true or false"
            ))),
        }
    }

    /// A required non-empty list of strings.
    pub fn strings(&self, name: &str) -> Result<Vec<String>, Failure> {
        let list = match present(self, name) {
            Some(Value::Array(items)) => items,
            _ => {
                return Err(Failure::bad(format!(
                    "field '{name}' (a list of strings) is required"
                )))
            }
        };
        let out: Option<Vec<String>> = list.iter().map(|v| v.as_str().map(str::to_owned)).collect();
        match out {
            Some(v) if !v.is_empty() => Ok(v),
            Some(_) => Err(Failure::bad(format!("field '{name}' must not be empty"))),
            None => Err(Failure::bad(format!(
                "field '{name}' must hold strings only"
            ))),
        }
    }

    /// A PHP value field: `base64(serialize(value))`.
    pub fn php(&self, name: &str) -> Result<PhpValue, Failure> {
        let text = self.str(name)?;
        let bytes = B64
            .decode(text)
            .map_err(|e| Failure::bad(format!("field '{name}' is not base64: {e}")))?;
        codec::unserialize(&bytes).map_err(|e| Failure::Core(e.into()))
    }
}

/// A PHP value as it crosses the protocol: `base64(serialize(value))`; `null` when `None`.
pub fn php_out(value: Option<&PhpValue>) -> String {
    B64.encode(codec::serialize(value.unwrap_or(&PhpValue::Null)))
}
