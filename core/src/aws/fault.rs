//! One classifier of AWS SDK failures for the DynamoDB and S3 request layers: which ddblock error
//! a failure is, and whether the request was sent (the acquire's resend rule in `lock/attempt.rs`
//! depends on exactly that). Both SDKs share the runtime's `SdkError`, so one reading serves both;
//! only the service's own codes differ ([`Service`]).

use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_runtime_api::http::Response;
use aws_smithy_types::error::display::DisplayErrorContext;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;

use crate::config::StoreConfig;
use crate::error::Error;

/// Most bytes of an unexpected answer's body quoted in an error.
const BODY_QUOTE: usize = 120;

/// Error codes that mean "slow down", from DynamoDB and S3.
const THROTTLE_CODES: &[&str] = &[
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "Throttling",
    "SlowDown",
];

/// DynamoDB's answer on a global table with multi-Region strong consistency (MRSC) when a write
/// in another Region was changing the same item at the same moment: "the request was rejected"
/// (API reference; the AWS SDKs mark it retry-safe), so the write did not land.
pub(crate) const REPLICATED_WRITE_CONFLICT: &str = "ReplicatedWriteConflictException";

/// What the chain of a dispatch failure says when no byte was sent: the connection could not be
/// made (refused, unreachable, not resolvable, a connect timeout). hyper's client reports these
/// as "client error (Connect)", the SDK's connect timeout as "connect timeout".
const NEVER_CONNECTED: &[&str] = &[
    "client error (connect)",
    "connect timeout",
    "connection refused",
    "dns error",
    "failed to lookup",
];

/// The service a request went to, with what its own errors need.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Service<'a> {
    /// DynamoDB: a missing table is `TableNotFound`; an answer without `__type` is not DynamoDB.
    DynamoDb,
    /// S3, on `bucket`: a missing bucket is a configuration error.
    S3 {
        /// The bucket of the request.
        bucket: &'a str,
    },
}

/// Maps an SDK failure of `operation` to ddblock's error kinds, the same way for both services.
pub(crate) fn classify<E>(
    cfg: &StoreConfig,
    service: Service<'_>,
    operation: &'static str,
    err: SdkError<E, Response>,
) -> Error
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let endpoint = cfg
        .endpoint()
        .map(str::to_owned)
        .unwrap_or_else(|| "the default AWS endpoint".into());
    match &err {
        SdkError::ServiceError(se) => {
            let message = se.err().message().unwrap_or("").to_owned();
            let code = match (se.err().code(), service) {
                (Some(code), _) => code.to_owned(),
                // No `__type` in the answer: whatever answered is not DynamoDB.
                (None, Service::DynamoDb) => {
                    return Error::Transport {
                        operation,
                        endpoint,
                        message: not_the_service(service, se.raw()),
                        sent: true,
                    }
                }
                (None, Service::S3 { .. }) => "Unknown".to_owned(),
            };
            match (code.as_str(), service) {
                // moto 5.2.5 answers DescribeTimeToLive of a missing table with the code
                // `ResourceNotFound` (no `Exception`); every other server and operation with
                // `ResourceNotFoundException` (docs/compatibility.md#servers).
                ("ResourceNotFoundException" | "ResourceNotFound", Service::DynamoDb) => {
                    Error::TableNotFound {
                        table: cfg.table().to_owned(),
                        endpoint,
                        key_attribute: cfg.key_attribute().to_owned(),
                        operation,
                        create_hint: cfg.create_table_hint().to_owned(),
                    }
                }
                ("NoSuchBucket", Service::S3 { bucket }) => Error::Config(format!(
                    "S3 bucket `{bucket}` does not exist at {endpoint} ({operation}): create it, \
                     or fix the bucket name, endpoint or region"
                )),
                (REPLICATED_WRITE_CONFLICT, Service::DynamoDb) => Error::Service {
                    operation,
                    message: format!(
                        "{message} (a write in another Region was changing the same item at the \
                         same moment; this write did not land and may be sent again)"
                    ),
                    code,
                },
                (c, _) if THROTTLE_CODES.contains(&c) => Error::Throttled {
                    operation,
                    code,
                    message,
                },
                _ => Error::Service {
                    operation,
                    code,
                    message,
                },
            }
        }
        SdkError::DispatchFailure(_) | SdkError::ConstructionFailure(_)
            if is_missing_credentials(&err) =>
        {
            Error::Credentials {
                operation,
                endpoint,
                message: error_chain(&err),
            }
        }
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) => {
            let message = error_chain(&err);
            Error::Transport {
                operation,
                endpoint,
                sent: !never_connected(&message),
                message,
            }
        }
        // An answer came, so the request was sent.
        SdkError::ResponseError(re) => Error::Transport {
            operation,
            endpoint,
            message: format!(
                "{}; {}",
                error_chain(&err),
                not_the_service(service, re.raw())
            ),
            sent: true,
        },
        SdkError::ConstructionFailure(_) => Error::Config(format!(
            "could not build the {operation} request: {}",
            DisplayErrorContext(&err)
        )),
        // `SdkError` is non-exhaustive; a future variant is reported with its full context.
        _ => Error::Service {
            operation,
            code: "Unknown".into(),
            message: DisplayErrorContext(&err).to_string(),
        },
    }
}

/// Whether a write was refused before it could change anything, so sending it again cannot hide
/// one that landed: throttled, never connected, or a replicated write conflict (MRSC).
pub(crate) fn refused_before_landing(e: &Error) -> bool {
    match e {
        Error::Throttled { .. } | Error::Transport { sent: false, .. } => true,
        Error::Service { code, .. } => code == REPLICATED_WRITE_CONFLICT,
        _ => false,
    }
}

/// The service error code, when the server answered with one.
pub fn service_code<E: ProvideErrorMetadata, R>(err: &SdkError<E, R>) -> Option<&str> {
    match err {
        SdkError::ServiceError(se) => se.err().code(),
        _ => None,
    }
}

/// Whether no byte of the request left: the chain of a dispatch failure names a connection
/// that was never made.
fn never_connected(chain: &str) -> bool {
    let chain = chain.to_ascii_lowercase();
    NEVER_CONNECTED.iter().any(|m| chain.contains(m))
}

/// The identity resolver found no credentials (nothing was sent). The SDK reports e.g. "an error
/// occurred while loading credentials: failed to load IMDS session token" (a dispatch failure).
fn is_missing_credentials(err: &(dyn std::error::Error + 'static)) -> bool {
    error_chain(err).to_ascii_lowercase().contains("credential")
}

/// "the endpoint answered HTTP 404 with `<html>…`, which is not a DynamoDB answer".
fn not_the_service(service: Service<'_>, raw: &Response) -> String {
    let body = raw.body().bytes().unwrap_or_default();
    let text = String::from_utf8_lossy(&body[..body.len().min(BODY_QUOTE)]);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let more = if body.len() > BODY_QUOTE { "…" } else { "" };
    format!(
        "the endpoint answered HTTP {} with {}, which is not {} answer",
        raw.status().as_u16(),
        if text.is_empty() {
            "an empty body".to_owned()
        } else {
            format!("`{text}{more}`")
        },
        match service {
            Service::DynamoDb => "a DynamoDB",
            Service::S3 { .. } => "an S3",
        }
    )
}

/// The messages of an error and its sources, joined by `: ` (the SDK's Debug dump left out).
fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cur = Some(err);
    while let Some(e) = cur {
        let msg = e.to_string();
        if !msg.is_empty() && !parts.iter().any(|p| p.contains(&msg)) {
            parts.push(msg);
        }
        cur = e.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One rule for "was it sent" in both request layers: a connection never made is "not
    /// sent" however the transport words it (before, the S3 layer took a connect timeout and
    /// hyper's "client error (Connect)" for sent, the DynamoDB layer a refused connection).
    #[test]
    fn a_connection_never_made_was_not_sent() {
        for chain in [
            "dispatch failure: io error: client error (Connect): tcp connect error: Connection refused (os error 111)",
            "dispatch failure: connect timeout",
            "dispatch failure: dns error: failed to lookup address information",
            "Connection refused",
        ] {
            assert!(never_connected(chain), "{chain}");
        }
        for chain in [
            "dispatch failure: io error: connection closed before message completed",
            "timeout: HTTP read timeout occurred after 3s",
        ] {
            assert!(!never_connected(chain), "{chain}");
        }
    }
}
