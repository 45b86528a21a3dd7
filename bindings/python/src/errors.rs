//! ddblock's errors as Python exceptions (classes defined in `ddblock/exceptions.py`).
//!
//! Every [`ErrorKind`] is mapped by name in [`class_name`]. `ErrorKind` is `#[non_exhaustive]`,
//! so the match needs a wildcard arm: a kind added to the core later becomes the base class
//! `DdblockError` until it is mapped here, and two tests fail meanwhile (the unit test below and
//! `tests/test_errors.py`, both of which read the kinds from `core/src/error.rs`).

use ddblock::{Error, ErrorKind};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::convert::holder_to_py;

/// The module the exception classes live in.
const EXCEPTIONS: &str = "ddblock.exceptions";

/// The Python class of each kind.
pub fn class_name(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InvalidKey => "InvalidKey",
        ErrorKind::InvalidTtl => "InvalidTtl",
        ErrorKind::TableNotFound => "TableNotFound",
        ErrorKind::Throttled => "Throttled",
        ErrorKind::LockTimeout => "LockTimeout",
        ErrorKind::Codec => "CodecError",
        ErrorKind::Service => "ServiceError",
        ErrorKind::Transport => "TransportError",
        ErrorKind::Config => "ConfigError",
        ErrorKind::Unsupported => "UnsupportedError",
        // Only reachable for a kind the core added after this table was written (see module docs).
        _ => "DdblockError",
    }
}

/// The kind's name as the core spells it (`ErrorKind`'s variant name).
pub fn kind_name(kind: ErrorKind) -> String {
    format!("{kind:?}")
}

/// A core error as a Python exception, with its details as attributes (`kind`, `code`,
/// `operation`, ...). Takes the GIL if needed, so futures call it on their error path.
pub fn to_py(err: Error) -> PyErr {
    Python::attach(|py| build(py, &err).unwrap_or_else(|e| e))
}

fn build(py: Python<'_>, err: &Error) -> PyResult<PyErr> {
    let kind = err.kind();
    let class = match py.import(EXCEPTIONS) {
        Ok(m) => m.getattr(class_name(kind))?,
        // Only when `_native` is imported without its package.
        Err(_) => return Ok(PyRuntimeError::new_err(err.to_string())),
    };
    let attrs = PyDict::new(py);
    attrs.set_item("kind", kind_name(kind))?;
    match err {
        Error::InvalidKey { key, .. } => attrs.set_item("key", key)?,
        Error::InvalidTtl { ttl, .. } => attrs.set_item("ttl", ttl)?,
        Error::TableNotFound {
            table,
            endpoint,
            operation,
            ..
        } => {
            attrs.set_item("table", table)?;
            attrs.set_item("endpoint", endpoint)?;
            attrs.set_item("operation", *operation)?;
        }
        Error::Throttled {
            operation, code, ..
        }
        | Error::Service {
            operation, code, ..
        } => {
            attrs.set_item("operation", *operation)?;
            attrs.set_item("code", code)?;
        }
        Error::LockTimeout {
            name,
            waited,
            holder,
        } => {
            attrs.set_item("name", name)?;
            attrs.set_item("waited", waited.as_secs_f64())?;
            let holder = match holder {
                Some(h) => holder_to_py(py, h)?,
                None => py.None().into_bound(py),
            };
            attrs.set_item("holder", holder)?;
        }
        Error::Codec(c) => attrs.set_item("offset", c.offset)?,
        Error::Transport {
            operation,
            endpoint,
            ..
        } => {
            attrs.set_item("operation", *operation)?;
            attrs.set_item("endpoint", endpoint)?;
        }
        Error::Config(_) | Error::Unsupported(_) => {}
        // Error is #[non_exhaustive] too: a new variant still gets its class and message.
        _ => {}
    }
    let exc = class.call1((err.to_string(),))?;
    for (k, v) in attrs.iter() {
        exc.setattr(k.cast_into::<pyo3::types::PyString>()?, v)?;
    }
    Ok(PyErr::from_value(exc))
}

/// A `CodecError` raised by the binding itself (a Python value PHP cannot hold).
pub fn codec_error(message: impl Into<String>) -> PyErr {
    to_py(Error::Codec(ddblock::codec::CodecError::new(message)))
}

/// A `TypeError` for a Python value of a type that has no PHP form.
pub fn type_error(message: impl Into<String>) -> PyErr {
    PyTypeError::new_err(message.into())
}

/// A sample core error of each kind, for the tests of the mapping.
pub fn sample(kind: &str) -> Option<Error> {
    let e = match kind {
        "InvalidKey" => Error::InvalidKey {
            key: "k".into(),
            reason: "sample".into(),
        },
        "InvalidTtl" => Error::InvalidTtl {
            ttl: -1,
            reason: "sample".into(),
        },
        "TableNotFound" => Error::TableNotFound {
            table: "cache".into(),
            endpoint: "http://127.0.0.1:1".into(),
            key_attribute: "key".into(),
            operation: "GetItem",
        },
        "Throttled" => Error::Throttled {
            operation: "PutItem",
            code: "ThrottlingException".into(),
            message: "sample".into(),
        },
        "LockTimeout" => Error::LockTimeout {
            name: "orders".into(),
            waited: std::time::Duration::from_millis(1500),
            holder: None,
        },
        "Codec" => Error::Codec(ddblock::codec::CodecError::at("sample", 3)),
        "Service" => Error::Service {
            operation: "PutItem",
            code: "ValidationException".into(),
            message: "sample".into(),
        },
        "Transport" => Error::Transport {
            operation: "GetItem",
            endpoint: "http://127.0.0.1:1".into(),
            message: "sample".into(),
        },
        "Config" => Error::Config("sample".into()),
        "Unsupported" => Error::Unsupported("sample".into()),
        _ => return None,
    };
    Some(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The variant names of `pub enum ErrorKind` in the core's source.
    fn core_kinds() -> Vec<String> {
        let src = include_str!("../../../core/src/error.rs");
        let start = src
            .find("pub enum ErrorKind {")
            .expect("ErrorKind in core/src/error.rs");
        let body = &src[start..];
        let body = &body[body.find('{').unwrap() + 1..body.find('}').unwrap()];
        body.lines()
            .map(str::trim)
            .filter(|l| !l.starts_with("//") && !l.starts_with('#') && !l.is_empty())
            .map(|l| l.trim_end_matches(',').to_owned())
            .collect()
    }

    #[test]
    fn every_core_kind_has_its_own_class() {
        let ours: Vec<String> = ErrorKind::ALL.iter().map(|k| kind_name(*k)).collect();
        assert_eq!(
            core_kinds(),
            ours,
            "core/src/error.rs changed ErrorKind: map the new kind in bindings/python/src/errors.rs \
             (class_name, sample), ddblock/exceptions.py, the stubs and docs/python.md"
        );
        let mut classes: Vec<&str> = ErrorKind::ALL.iter().map(|k| class_name(*k)).collect();
        assert!(!classes.contains(&"DdblockError"));
        classes.sort_unstable();
        classes.dedup();
        assert_eq!(
            classes.len(),
            ErrorKind::ALL.len(),
            "two kinds share a class"
        );
        for k in ErrorKind::ALL {
            let e = sample(&kind_name(*k)).expect("a sample error of every kind");
            assert_eq!(e.kind(), *k);
        }
    }
}
