//! SDK failures as ddblock's error kinds: every SDK error variant mapped explicitly.

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};

use crate::config::StoreConfig;
use crate::error::Error;

/// Most bytes of an unexpected answer's body quoted in an error.
const BODY_QUOTE: usize = 120;

/// Maps an SDK failure of `operation` to ddblock's error kinds.
pub(super) fn sdk_error<E>(
    cfg: &StoreConfig,
    operation: &'static str,
    err: SdkError<E, HttpResponse>,
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
            let Some(code) = se.err().code().map(str::to_owned) else {
                // No `__type` in the answer: whatever answered is not DynamoDB.
                return Error::Transport {
                    operation,
                    endpoint,
                    message: not_dynamodb(se.raw()),
                    sent: true,
                };
            };
            let message = se.err().message().unwrap_or("").to_owned();
            match code.as_str() {
                "ResourceNotFoundException" => Error::TableNotFound {
                    table: cfg.table().to_owned(),
                    endpoint,
                    key_attribute: cfg.key_attribute().to_owned(),
                    operation,
                    create_hint: cfg.create_table_hint().to_owned(),
                },
                "ProvisionedThroughputExceededException"
                | "ThrottlingException"
                | "RequestLimitExceeded"
                | "Throttling" => Error::Throttled {
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
        SdkError::ResponseError(re) => Error::Transport {
            operation,
            endpoint,
            message: format!("{}; {}", error_chain(&err), not_dynamodb(re.raw())),
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

/// Whether an SDK error is DynamoDB's ConditionalCheckFailedException.
pub(super) fn is_condition_failure<E: ProvideErrorMetadata, R>(err: &SdkError<E, R>) -> bool {
    service_code(err) == Some("ConditionalCheckFailedException")
}

/// The service error code (`__type`), when the server answered with one.
pub(super) fn service_code<E: ProvideErrorMetadata, R>(err: &SdkError<E, R>) -> Option<&str> {
    match err {
        SdkError::ServiceError(se) => se.err().code(),
        _ => None,
    }
}

/// The request failed before any byte was sent: the connection could not be made (refused,
/// unreachable, a connect timeout). hyper's client reports these as "client error (Connect)", the
/// SDK's connect timeout as "connect timeout".
fn never_connected(chain: &str) -> bool {
    chain.contains("client error (Connect)") || chain.contains("connect timeout")
}

/// The identity resolver found no credentials (nothing was sent). The SDK reports e.g. "an error
/// occurred while loading credentials: failed to load IMDS session token" (a dispatch failure).
fn is_missing_credentials(err: &(dyn std::error::Error + 'static)) -> bool {
    let chain = error_chain(err).to_ascii_lowercase();
    chain.contains("loading credentials")
        || chain.contains("no credentials")
        || chain.contains("credential provider")
        || chain.contains("credentials provider")
}

/// "the endpoint answered HTTP 404 with `<html>…`, which is not a DynamoDB answer".
fn not_dynamodb(raw: &HttpResponse) -> String {
    let body = raw.body().bytes().unwrap_or_default();
    let text = String::from_utf8_lossy(&body[..body.len().min(BODY_QUOTE)]);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let more = if body.len() > BODY_QUOTE { "…" } else { "" };
    format!(
        "the endpoint answered HTTP {} with {}, which is not a DynamoDB answer",
        raw.status().as_u16(),
        if text.is_empty() {
            "an empty body".to_owned()
        } else {
            format!("`{text}{more}`")
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
