//! ddblock's errors as Python exceptions (classes defined in `ddblock/exceptions.py`).
//!
//! Every [`ErrorKind`] is mapped in [`class_name`] and every [`Error`] variant in [`build`], with
//! no wildcard arm: a kind added to the core does not compile here until it is mapped.

use ddblock::{Error, ErrorKind};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::holder::holder_to_py;

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
        ErrorKind::OutcomeUnknown => "OutcomeUnknown",
        ErrorKind::LeaseLost => "LeaseLost",
        ErrorKind::Codec => "CodecError",
        ErrorKind::Service => "ServiceError",
        ErrorKind::Transport => "TransportError",
        ErrorKind::Credentials => "CredentialsError",
        ErrorKind::Config => "ConfigError",
        ErrorKind::Unsupported => "UnsupportedError",
        ErrorKind::Conflict => "ConflictError",
    }
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
    attrs.set_item("kind", kind.as_str())?;
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
        Error::OutcomeUnknown {
            operation, name, ..
        } => {
            attrs.set_item("operation", *operation)?;
            attrs.set_item("name", name)?;
        }
        Error::LeaseLost { name, .. } => attrs.set_item("name", name)?,
        Error::Codec(c) => attrs.set_item("offset", c.offset)?,
        Error::Transport {
            operation,
            endpoint,
            ..
        }
        | Error::Credentials {
            operation,
            endpoint,
            ..
        } => {
            attrs.set_item("operation", *operation)?;
            attrs.set_item("endpoint", endpoint)?;
        }
        Error::Conflict { key, .. } => attrs.set_item("key", key)?,
        Error::Config(_) | Error::Unsupported(_) => {}
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
pub fn sample(kind: ErrorKind) -> Error {
    match kind {
        ErrorKind::InvalidKey => Error::InvalidKey {
            key: "k".into(),
            reason: "sample".into(),
        },
        ErrorKind::InvalidTtl => Error::InvalidTtl {
            ttl: -1,
            reason: "sample".into(),
        },
        ErrorKind::TableNotFound => Error::TableNotFound {
            table: "cache".into(),
            endpoint: "http://127.0.0.1:1".into(),
            key_attribute: "key".into(),
            operation: "GetItem",
            create_hint: "store.create_table()".into(),
        },
        ErrorKind::Throttled => Error::Throttled {
            operation: "PutItem",
            code: "ThrottlingException".into(),
            message: "sample".into(),
        },
        ErrorKind::LockTimeout => Error::LockTimeout {
            name: "orders".into(),
            waited: std::time::Duration::from_millis(1500),
            holder: None,
        },
        ErrorKind::OutcomeUnknown => Error::OutcomeUnknown {
            operation: "UpdateItem",
            name: "orders".into(),
            cause: "sample".into(),
            cleanup: "sample".into(),
        },
        ErrorKind::LeaseLost => Error::LeaseLost {
            name: "orders".into(),
            reason: "sample".into(),
        },
        ErrorKind::Codec => Error::Codec(ddblock::CodecError::at("sample", 3)),
        ErrorKind::Service => Error::Service {
            operation: "PutItem",
            code: "ValidationException".into(),
            message: "sample".into(),
        },
        ErrorKind::Transport => Error::Transport {
            operation: "GetItem",
            endpoint: "http://127.0.0.1:1".into(),
            message: "sample".into(),
            sent: false,
        },
        ErrorKind::Credentials => Error::Credentials {
            operation: "GetItem",
            endpoint: "http://127.0.0.1:1".into(),
            message: "sample".into(),
        },
        ErrorKind::Config => Error::Config("sample".into()),
        ErrorKind::Unsupported => Error::Unsupported("sample".into()),
        ErrorKind::Conflict => Error::Conflict {
            key: "k".into(),
            message: "sample".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_own_class() {
        let mut classes: Vec<&str> = ErrorKind::ALL.iter().map(|k| class_name(*k)).collect();
        classes.sort_unstable();
        classes.dedup();
        assert_eq!(
            classes.len(),
            ErrorKind::ALL.len(),
            "two kinds share a class"
        );
        for k in ErrorKind::ALL {
            assert_eq!(sample(*k).kind(), *k);
        }
    }
}
