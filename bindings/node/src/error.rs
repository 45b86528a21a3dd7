//! ddblock errors → JavaScript errors with a stable `code`.
//!
//! napi-rs rejects a Promise with an `Error` whose `code` is its own status, so the code travels
//! at the start of the message, `"CODE: message"` or `"SERVICE[ServiceCode]: message"`, and the
//! thin `lib.js` layer turns it into a `DdblockError` with `code` (and `serviceCode`).

use ddblock::ErrorKind;

/// The stable JavaScript code of a core error kind: the core's snake_case name in upper case
/// (`ErrorKind::as_str` matches every kind, so no kind can silently become generic here).
pub fn code_of(kind: ErrorKind) -> String {
    kind.as_str().to_ascii_uppercase()
}

/// The message napi-rs carries: `CODE: message` or `CODE[serviceCode]: message`.
pub fn tagged(code: &str, service_code: Option<&str>, message: &str) -> String {
    match service_code {
        Some(s) => format!("{code}[{s}]: {message}"),
        None => format!("{code}: {message}"),
    }
}

/// Converts a core error (kind, service code and message kept).
pub fn to_napi(e: ddblock::Error) -> napi::Error {
    napi::Error::from_reason(tagged(&code_of(e.kind()), e.code(), &e.to_string()))
}

/// An error raised by the binding itself (bad option, unconvertible value).
pub fn binding_error(kind: ErrorKind, message: impl AsRef<str>) -> napi::Error {
    napi::Error::from_reason(tagged(&code_of(kind), None, message.as_ref()))
}

/// `?`-friendly conversion of core results.
pub trait IntoNapi<T> {
    /// Maps the error with [`to_napi`].
    fn napi(self) -> napi::Result<T>;
}

impl<T> IntoNapi<T> for ddblock::Result<T> {
    fn napi(self) -> napi::Result<T> {
        self.map_err(to_napi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind the core knows, with the code JavaScript sees (the list in docs/node.md and
    /// lib.d.ts). `code_of` goes through the core's exhaustive `ErrorKind::as_str`, so a new kind
    /// gets its own code rather than a generic one.
    #[test]
    fn every_known_kind_has_its_code() {
        let known = [
            (ErrorKind::InvalidKey, "INVALID_KEY"),
            (ErrorKind::InvalidTtl, "INVALID_TTL"),
            (ErrorKind::TableNotFound, "TABLE_NOT_FOUND"),
            (ErrorKind::Throttled, "THROTTLED"),
            (ErrorKind::LockTimeout, "LOCK_TIMEOUT"),
            (ErrorKind::OutcomeUnknown, "OUTCOME_UNKNOWN"),
            (ErrorKind::LeaseLost, "LEASE_LOST"),
            (ErrorKind::Codec, "CODEC"),
            (ErrorKind::Service, "SERVICE"),
            (ErrorKind::Transport, "TRANSPORT"),
            (ErrorKind::Credentials, "CREDENTIALS"),
            (ErrorKind::Config, "CONFIG"),
            (ErrorKind::Unsupported, "UNSUPPORTED"),
            (ErrorKind::Conflict, "CONFLICT"),
        ];
        assert_eq!(known.len(), ErrorKind::ALL.len());
        for (kind, code) in known {
            assert_eq!(code_of(kind), code);
        }
    }

    #[test]
    fn service_code_travels_in_the_message() {
        let e = to_napi(ddblock::Error::Service {
            operation: "PutItem",
            code: "ValidationException".into(),
            message: "bad".into(),
        });
        assert!(e
            .reason
            .starts_with("SERVICE[ValidationException]: DynamoDB PutItem"));
        let e = to_napi(ddblock::Error::Config("x".into()));
        assert_eq!(e.reason, "CONFIG: configuration error: x");
    }
}
