//! The requests of the provider probe (`s3_probe.rs`): writes of scratch bytes under each
//! condition the lock relies on, answered as what the server did (written, refused with which
//! status, not implemented), not as lock outcomes; the bucket's versioning state; removing every
//! version of the scratch object. Nothing here reads or writes a lock object: the probe names its
//! own key.

use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::operation::get_object::GetObjectError;
use aws_sdk_s3::primitives::ByteStream;
use ddblock::{Result, Store, StoreConfig};

/// The s3 lock backend's bucket: the store's configuration and S3 client.
pub(crate) struct Bucket {
    cfg: StoreConfig,
    name: String,
    client: aws_sdk_s3::Client,
}

impl Bucket {
    /// The bucket of `store`, `None` when its locks live in the table.
    pub(crate) async fn of(store: &Store) -> ddblock::Result<Option<Bucket>> {
        let cfg = store.config().clone();
        let (Some(name), Some(client)) = (cfg.s3_bucket(), store.s3_client().await?) else {
            return Ok(None);
        };
        Ok(Some(Bucket {
            name: name.to_owned(),
            client,
            cfg,
        }))
    }

    /// The configuration.
    pub(crate) fn config(&self) -> &StoreConfig {
        &self.cfg
    }

    /// The bucket name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }
}

/// `operation` failed: ddblock's error kinds.
fn s3_error<E>(
    b: &Bucket,
    operation: &'static str,
    err: SdkError<E, HttpResponse>,
) -> ddblock::Error
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    ddblock::sdk::s3_error(&b.cfg, &b.name, operation, err)
}

/// 412, 409 or 404: how S3 refuses a conditional request.
fn condition_failed<E>(err: &SdkError<E, HttpResponse>) -> bool {
    matches!(err, SdkError::ServiceError(se) if matches!(se.raw().status().as_u16(), 404 | 409 | 412))
}

/// 501 NotImplemented: the server does not take this condition.
fn not_implemented<E: ProvideErrorMetadata>(err: &SdkError<E, HttpResponse>) -> bool {
    matches!(err, SdkError::ServiceError(se)
        if se.raw().status().as_u16() == 501 || se.err().code() == Some("NotImplemented"))
}

/// The condition of a probe write.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Condition<'a> {
    /// None: a plain overwrite (or delete).
    Always,
    /// `If-None-Match: *`: only if there is no object.
    IfAbsent,
    /// `If-Match: <etag>`: only if the object is this version.
    IfMatch(&'a str),
}

/// What the server answered to a probe write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    /// 2xx: done; the version id the server named (versioned buckets), if any.
    Done {
        /// `x-amz-version-id` of the answer: the new version, or the delete marker.
        version: Option<String>,
    },
    /// Refused as a failed condition: 412, 409 or 404.
    Refused(u16),
    /// 501 NotImplemented: the server does not take this condition here.
    NotImplemented,
}

/// A bucket's versioning state, as GetBucketVersioning tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Versioning {
    /// No status: versioning has never been enabled.
    Never,
    /// `Enabled`.
    Enabled,
    /// `Suspended`: it was enabled once.
    Suspended,
    /// A status this code does not know.
    Other(String),
}

/// The HTTP status of a refusal, when the answer is one: a failed condition (412, 409, 404),
/// but not a missing bucket (404 `NoSuchBucket`), which is an error.
fn refusal<E: ProvideErrorMetadata>(err: &SdkError<E, HttpResponse>) -> Option<u16> {
    match err {
        SdkError::ServiceError(se)
            if condition_failed(err) && se.err().code() != Some("NoSuchBucket") =>
        {
            Some(se.raw().status().as_u16())
        }
        _ => None,
    }
}

/// The `<Status>` of a GetBucketVersioning answer's XML, read from its text.
fn status_element(xml: &str) -> Option<&str> {
    let start = xml.find("<Status>")? + "<Status>".len();
    let len = xml[start..].find("</Status>")?;
    Some(xml[start..start + len].trim())
}

impl Bucket {
    /// PutObject of `body` to `key` under `cond`.
    pub(crate) async fn probe_put(
        &self,
        key: &str,
        body: Vec<u8>,
        cond: Condition<'_>,
    ) -> Result<Answer> {
        let req = self
            .client
            .put_object()
            .bucket(self.name())
            .key(key)
            .content_type("application/json")
            .body(ByteStream::from(body));
        let req = match cond {
            Condition::Always => req,
            Condition::IfAbsent => req.if_none_match("*"),
            Condition::IfMatch(etag) => req.if_match(etag),
        };
        match req.send().await {
            Ok(out) => Ok(Answer::Done {
                version: out.version_id().map(str::to_owned),
            }),
            Err(e) => match refusal(&e) {
                Some(status) => Ok(Answer::Refused(status)),
                None if not_implemented(&e) => Ok(Answer::NotImplemented),
                None => Err(s3_error(self, "PutObject", e)),
            },
        }
    }

    /// DeleteObject of `key`, with `If-Match: <etag>` when given.
    pub(crate) async fn probe_delete(&self, key: &str, if_match: Option<&str>) -> Result<Answer> {
        let req = self
            .client
            .delete_object()
            .bucket(self.name())
            .key(key)
            .set_if_match(if_match.map(str::to_owned));
        match req.send().await {
            Ok(out) => Ok(Answer::Done {
                version: out.version_id().map(str::to_owned),
            }),
            Err(e) => match refusal(&e) {
                Some(status) => Ok(Answer::Refused(status)),
                None if not_implemented(&e) => Ok(Answer::NotImplemented),
                None => Err(s3_error(self, "DeleteObject", e)),
            },
        }
    }

    /// The current ETag of `key` from a GetObject (as the lock reads it); `None` when there is no
    /// object, `Some("")` when the answer had no ETag.
    pub(crate) async fn probe_etag(&self, key: &str) -> Result<Option<String>> {
        let res = self
            .client
            .get_object()
            .bucket(self.name())
            .key(key)
            .send()
            .await;
        match res {
            Ok(out) => Ok(Some(out.e_tag().unwrap_or_default().to_owned())),
            Err(SdkError::ServiceError(se)) if matches!(se.err(), GetObjectError::NoSuchKey(_)) => {
                Ok(None)
            }
            Err(e) => Err(s3_error(self, "GetObject", e)),
        }
    }

    /// Removes one version of `key` for good (DeleteObject with `versionId`).
    pub(crate) async fn probe_delete_version(&self, key: &str, version: &str) -> Result<()> {
        self.client
            .delete_object()
            .bucket(self.name())
            .key(key)
            .version_id(version)
            .send()
            .await
            .map_err(|e| s3_error(self, "DeleteObject", e))?;
        Ok(())
    }

    /// The bucket's versioning state (GetBucketVersioning).
    pub(crate) async fn versioning(&self) -> Result<Versioning> {
        let res = self
            .client
            .get_bucket_versioning()
            .bucket(self.name())
            .send()
            .await;
        let status = match res {
            Ok(out) => out.status().map(|s| s.as_str().to_owned()),
            Err(e) => {
                // moto 5.2 names the answer's root element `GetBucketVersioningResponse` (AWS:
                // `VersioningConfiguration`), which the SDK refuses to parse; its `Status`
                // element says the same, so a 2xx versioning document is read as text.
                let text = e
                    .raw_response()
                    .filter(|r| r.status().is_success())
                    .and_then(|r| r.body().bytes())
                    .and_then(|b| std::str::from_utf8(b).ok())
                    .filter(|t| t.contains("Versioning"));
                match text {
                    Some(t) => status_element(t).map(str::to_owned),
                    None => return Err(s3_error(self, "GetBucketVersioning", e)),
                }
            }
        };
        Ok(match status.as_deref() {
            None | Some("") => Versioning::Never,
            Some("Enabled") => Versioning::Enabled,
            Some("Suspended") => Versioning::Suspended,
            Some(other) => Versioning::Other(other.to_owned()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::status_element;

    #[test]
    fn reads_the_status_element() {
        let moto = r#"<?xml version="1.0" encoding="utf-8"?>
<GetBucketVersioningResponse xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Enabled</Status></GetBucketVersioningResponse>"#;
        assert_eq!(status_element(moto), Some("Enabled"));
        let never = r#"<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"/>"#;
        assert_eq!(status_element(never), None);
        assert_eq!(status_element("<Status>Suspended"), None);
    }
}
