//! The one error type of ddblock, with kinds a caller (or a binding) can match on.
//! A leaf: imports only [`crate::holder`] (a lock timeout names the last holder) and
//! [`crate::time`] (for display).

use std::fmt;
use std::time::Duration;

use crate::holder::Holder;
use crate::time;

/// An encoding or decoding failure of a PHP value, with the input byte offset when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodecError {
    /// What was wrong (and, for encoding, what to do instead).
    pub message: String,
    /// Byte offset of the problem: in the input for decoding, in the serialized text for encoding.
    pub offset: Option<usize>,
}

impl CodecError {
    /// An error without a position.
    pub fn new(message: impl Into<String>) -> Self {
        CodecError {
            message: message.into(),
            offset: None,
        }
    }

    /// An error at a byte offset of the input.
    pub fn at(message: impl Into<String>, offset: usize) -> Self {
        CodecError {
            message: message.into(),
            offset: Some(offset),
        }
    }

    /// The same error, its message prefixed with where it happened (`value of key "k"`).
    pub fn context(self, what: impl fmt::Display) -> Self {
        CodecError {
            message: format!("{what}: {}", self.message),
            offset: self.offset,
        }
    }
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(at) => write!(f, "{} at byte {at}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for CodecError {}

/// Everything that can go wrong in ddblock; a failed lock condition is NOT an error but an outcome value.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The key or lock name is empty, or too long for a DynamoDB partition key once prefixed.
    #[error("invalid key {key:?}: {reason}")]
    InvalidKey {
        /// The key as given, before prefixing (truncated for display when very long).
        key: String,
        /// What is wrong and what to do.
        reason: String,
    },
    /// A ttl that cannot be turned into an expiry timestamp.
    #[error("invalid ttl {ttl}: {reason}")]
    InvalidTtl {
        /// The ttl as given, in seconds.
        ttl: i64,
        /// What is wrong and what to do.
        reason: String,
    },
    /// The table does not exist at the configured endpoint.
    #[error(
        "table `{table}` not found ({operation} at {endpoint}): create it with {create_hint} (one \
         string partition key named `{key_attribute}`), or fix the table name, endpoint or region"
    )]
    TableNotFound {
        /// Table name from the configuration.
        table: String,
        /// Endpoint the request went to (`default` for the SDK's own).
        endpoint: String,
        /// The partition key attribute the table needs.
        key_attribute: String,
        /// The DynamoDB operation that failed.
        operation: &'static str,
        /// How to create the table from the front in use (`ddblock create-table`,
        /// `store.create_table()`, ...; see `StoreConfigBuilder::create_table_hint`).
        create_hint: String,
    },
    /// DynamoDB kept throttling after the SDK's retries were used up.
    #[error(
        "throttled by DynamoDB on {operation} after the SDK's retries ({code}: {message}); slow down, \
         raise the table's capacity, or use on-demand billing"
    )]
    Throttled {
        /// The DynamoDB operation that failed.
        operation: &'static str,
        /// The service's error code.
        code: String,
        /// The service's message.
        message: String,
    },
    /// `block`/`with_lock` gave up waiting for a lock held by someone else.
    #[error("timed out after {} waiting for lock `{name}`{}", time::human(*.waited), holder_suffix(.holder))]
    LockTimeout {
        /// The lock name as given.
        name: String,
        /// How long we waited.
        waited: Duration,
        /// Who held the lock at the last attempt, when known.
        holder: Option<Box<Holder>>,
    },
    /// A conditional write got no answer after every retry, so whether it took effect is unknown;
    /// a lock acquire then sends a clean-up delete of its own attempt and says what it found.
    #[error(
        "the outcome of {operation} on lock `{name}` is unknown ({cause}); clean-up: {cleanup}"
    )]
    OutcomeUnknown {
        /// The DynamoDB operation whose answer never came.
        operation: &'static str,
        /// The lock name as given.
        name: String,
        /// The last error of the write (a timeout, a reset connection, a 5xx).
        cause: String,
        /// What the clean-up found: our item deleted, nothing of ours there, or it failed too.
        cleanup: String,
    },
    /// A held lock's lease ended before the work did: a refresh found it gone or another owner's,
    /// or no refresh succeeded before the local lease deadline.
    #[error("lost the lease on lock `{name}`: {reason}")]
    LeaseLost {
        /// The lock name as given.
        name: String,
        /// What was seen.
        reason: String,
    },
    /// A stored value could not be decoded from, or a value encoded to, PHP's format.
    #[error("{0}")]
    Codec(#[from] CodecError),
    /// DynamoDB answered with an error ddblock has no specific kind for.
    #[error("DynamoDB {operation} failed with {code}: {message}")]
    Service {
        /// The DynamoDB operation that failed.
        operation: &'static str,
        /// The service's error code, e.g. `ValidationException`.
        code: String,
        /// The service's message.
        message: String,
    },
    /// The request never got a DynamoDB answer: wrong endpoint, network down, timed out, or the
    /// endpoint answered with something that is not DynamoDB. Its text says whether the request
    /// may have reached the server (then its outcome is unknown, unless `message` settles it).
    #[error("{}", transport_text(operation, endpoint, message, *sent))]
    Transport {
        /// The DynamoDB operation that failed.
        operation: &'static str,
        /// Endpoint the request went to (`default` for the SDK's own).
        endpoint: String,
        /// What the SDK reported.
        message: String,
        /// Whether the request may have reached the server (false: the connection was never
        /// made, so nothing was applied).
        sent: bool,
    },
    /// No AWS credentials were found (nothing was sent).
    #[error(
        "no AWS credentials for {operation} at {endpoint}: {message}; set AWS_ACCESS_KEY_ID and \
         AWS_SECRET_ACCESS_KEY (any non-empty values for a local server), an AWS profile, or a role"
    )]
    Credentials {
        /// The DynamoDB operation that could not be signed.
        operation: &'static str,
        /// Endpoint the request was for (`the default AWS endpoint` for the SDK's own).
        endpoint: String,
        /// What the credentials provider chain reported.
        message: String,
    },
    /// The configuration is incomplete or contradictory, or the table cannot hold locks safely (a
    /// global table with multi-Region eventual consistency: docs/semantics.md "Multi-Region").
    #[error("configuration error: {0}")]
    Config(String),
    /// The operation does not exist for a DynamoDB store (as in Laravel).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// Another writer won where the caller cannot go on: a compare-and-set `update` still found
    /// the item changed after its last attempt, or a once-claim was no longer ours when marked
    /// done (it expired and another caller took it over).
    #[error("conflict on {key:?}: {message}")]
    Conflict {
        /// The cache key or event id as given.
        key: String,
        /// What happened and what to do.
        message: String,
    },
}

fn transport_text(operation: &str, endpoint: &str, message: &str, sent: bool) -> String {
    if sent {
        format!(
            "no DynamoDB answer from {endpoint} to {operation} (the request was sent): {message}; \
             check the endpoint URL, the network and the attempt/operation timeouts"
        )
    } else {
        format!(
            "could not reach DynamoDB at {endpoint} for {operation}: {message}; check the \
             endpoint URL, region and network, and the connect/operation timeouts"
        )
    }
}

fn holder_suffix(holder: &Option<Box<Holder>>) -> String {
    match holder {
        Some(h) => format!(" (held by {h})"),
        None => String::new(),
    }
}

/// The kind of an [`Error`], without its details: what bindings map to exception classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// See [`Error::InvalidKey`].
    InvalidKey,
    /// See [`Error::InvalidTtl`].
    InvalidTtl,
    /// See [`Error::TableNotFound`].
    TableNotFound,
    /// See [`Error::Throttled`].
    Throttled,
    /// See [`Error::LockTimeout`].
    LockTimeout,
    /// See [`Error::OutcomeUnknown`].
    OutcomeUnknown,
    /// See [`Error::LeaseLost`].
    LeaseLost,
    /// See [`Error::Codec`].
    Codec,
    /// See [`Error::Service`].
    Service,
    /// See [`Error::Transport`].
    Transport,
    /// See [`Error::Credentials`].
    Credentials,
    /// See [`Error::Config`].
    Config,
    /// See [`Error::Unsupported`].
    Unsupported,
    /// See [`Error::Conflict`].
    Conflict,
}

impl ErrorKind {
    /// Every kind, for bindings' tests that check each one is mapped.
    pub const ALL: &'static [ErrorKind] = &[
        ErrorKind::InvalidKey,
        ErrorKind::InvalidTtl,
        ErrorKind::TableNotFound,
        ErrorKind::Throttled,
        ErrorKind::LockTimeout,
        ErrorKind::OutcomeUnknown,
        ErrorKind::LeaseLost,
        ErrorKind::Codec,
        ErrorKind::Service,
        ErrorKind::Transport,
        ErrorKind::Credentials,
        ErrorKind::Config,
        ErrorKind::Unsupported,
        ErrorKind::Conflict,
    ];

    /// A stable snake_case name (`table_not_found`, `lock_timeout`, …) for JSON output and bindings.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidKey => "invalid_key",
            ErrorKind::InvalidTtl => "invalid_ttl",
            ErrorKind::TableNotFound => "table_not_found",
            ErrorKind::Throttled => "throttled",
            ErrorKind::LockTimeout => "lock_timeout",
            ErrorKind::OutcomeUnknown => "outcome_unknown",
            ErrorKind::LeaseLost => "lease_lost",
            ErrorKind::Codec => "codec",
            ErrorKind::Service => "service",
            ErrorKind::Transport => "transport",
            ErrorKind::Credentials => "credentials",
            ErrorKind::Config => "config",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Conflict => "conflict",
        }
    }
}

impl Error {
    /// The kind of this error, for matching without destructuring.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::InvalidKey { .. } => ErrorKind::InvalidKey,
            Error::InvalidTtl { .. } => ErrorKind::InvalidTtl,
            Error::TableNotFound { .. } => ErrorKind::TableNotFound,
            Error::Throttled { .. } => ErrorKind::Throttled,
            Error::LockTimeout { .. } => ErrorKind::LockTimeout,
            Error::OutcomeUnknown { .. } => ErrorKind::OutcomeUnknown,
            Error::LeaseLost { .. } => ErrorKind::LeaseLost,
            Error::Codec(_) => ErrorKind::Codec,
            Error::Service { .. } => ErrorKind::Service,
            Error::Transport { .. } => ErrorKind::Transport,
            Error::Credentials { .. } => ErrorKind::Credentials,
            Error::Config(_) => ErrorKind::Config,
            Error::Unsupported(_) => ErrorKind::Unsupported,
            Error::Conflict { .. } => ErrorKind::Conflict,
        }
    }

    /// Whether a failed conditional write may have taken effect anyway: no answer came (a
    /// timeout, a reset or dropped connection, an unreadable answer) or the server failed (5xx:
    /// DynamoDB documents that such a request may or may not have been applied).
    pub fn may_have_committed(&self) -> bool {
        match self {
            Error::Transport { sent, .. } => *sent,
            Error::Service { code, .. } => {
                matches!(code.as_str(), "InternalServerError" | "ServiceUnavailable")
            }
            Error::InvalidKey { .. }
            | Error::InvalidTtl { .. }
            | Error::TableNotFound { .. }
            | Error::Throttled { .. }
            | Error::LockTimeout { .. }
            | Error::OutcomeUnknown { .. }
            | Error::LeaseLost { .. }
            | Error::Codec(_)
            | Error::Credentials { .. }
            | Error::Config(_)
            | Error::Unsupported(_)
            | Error::Conflict { .. } => false,
        }
    }

    /// The service error code, for [`Error::Service`] and [`Error::Throttled`].
    pub fn code(&self) -> Option<&str> {
        match self {
            Error::Service { code, .. } | Error::Throttled { code, .. } => Some(code),
            _ => None,
        }
    }
}

/// Result with ddblock's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::ErrorKind;

    #[test]
    fn kinds_have_stable_names() {
        assert_eq!(ErrorKind::TableNotFound.as_str(), "table_not_found");
        assert_eq!(ErrorKind::LockTimeout.as_str(), "lock_timeout");
        assert_eq!(ErrorKind::InvalidTtl.as_str(), "invalid_ttl");
        let mut names: Vec<_> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 14, "ALL lists each kind once");
    }
}
