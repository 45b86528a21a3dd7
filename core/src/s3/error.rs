//! S3 failures as ddblock's error kinds.

use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};

use crate::config::StoreConfig;
use crate::error::Error;

/// Whether a conditional request was refused: 412 Precondition Failed, 409 (a concurrent
/// conditional write to the same key won), or 404 (the object to match is gone).
pub(super) fn condition_failed<E>(err: &SdkError<E, HttpResponse>) -> bool {
    match err {
        SdkError::ServiceError(se) => matches!(se.raw().status().as_u16(), 404 | 409 | 412),
        _ => false,
    }
}

/// Whether the server does not implement what was asked (501 NotImplemented).
pub(super) fn not_implemented<E: ProvideErrorMetadata>(err: &SdkError<E, HttpResponse>) -> bool {
    match err {
        SdkError::ServiceError(se) => {
            se.raw().status().as_u16() == 501 || se.err().code() == Some("NotImplemented")
        }
        _ => false,
    }
}

/// Maps an SDK failure of `operation` on `bucket` to ddblock's error kinds.
pub(super) fn s3_error<E>(
    cfg: &StoreConfig,
    bucket: &str,
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
    let chain = || DisplayErrorContext(&err).to_string();
    match &err {
        SdkError::ServiceError(se) => {
            let code = se.err().code().unwrap_or("Unknown").to_owned();
            let message = se.err().message().unwrap_or("").to_owned();
            match code.as_str() {
                "NoSuchBucket" => Error::Config(format!(
                    "S3 bucket `{bucket}` does not exist at {endpoint} ({operation}): create it, \
                     or fix the bucket name, endpoint or region"
                )),
                "SlowDown" | "Throttling" | "ThrottlingException" | "RequestLimitExceeded" => {
                    Error::Throttled {
                        operation,
                        code,
                        message,
                    }
                }
                _ => Error::Service {
                    operation,
                    code,
                    message,
                },
            }
        }
        SdkError::DispatchFailure(_) | SdkError::ConstructionFailure(_)
            if chain().to_ascii_lowercase().contains("credentials") =>
        {
            Error::Credentials {
                operation,
                endpoint,
                message: chain(),
            }
        }
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => {
            let message = chain();
            // Refused or unresolvable: the request never left.
            let never = ["connection refused", "dns error", "failed to lookup"]
                .iter()
                .any(|m| message.to_ascii_lowercase().contains(m));
            Error::Transport {
                operation,
                endpoint,
                message,
                sent: !never,
            }
        }
        SdkError::ConstructionFailure(_) => Error::Config(format!(
            "could not build the {operation} request: {}",
            chain()
        )),
        _ => Error::Service {
            operation,
            code: "Unknown".into(),
            message: chain(),
        },
    }
}
