//! Single-object requests, each named by what it means; every condition is S3's own
//! (`If-None-Match: *`, `If-Match: <ETag>`), so a change lands only on the object version read.

use aws_sdk_s3::error::SdkError;
use aws_sdk_s3::operation::get_object::GetObjectError;
use aws_sdk_s3::primitives::ByteStream;

use super::error::{condition_failed, not_implemented, s3_error};
use super::object::LockObject;
use super::Bucket;
use crate::error::{Error, Result};

/// S3's limit on an object key, in bytes.
const MAX_OBJECT_KEY_BYTES: usize = 1024;

/// A lock object as read, with the ETag a conditional change must name.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    /// The lock.
    pub object: LockObject,
    /// The object version's ETag.
    pub etag: String,
}

/// The answer to a conditional delete.
#[derive(Debug)]
pub(crate) enum Delete {
    /// Deleted.
    Deleted,
    /// The object changed (412) or is gone (404).
    Refused,
    /// The server does not take `If-Match` on DeleteObject (501 NotImplemented): release by a
    /// conditional overwrite instead.
    Unsupported,
}

/// The answer to a conditional put.
#[derive(Debug)]
pub(crate) enum Put {
    /// Written; the new ETag.
    Written,
    /// The condition failed (412), a concurrent conditional write won (409), or the object to
    /// replace is gone (404): read again.
    Refused,
}

fn checked(key: &str) -> Result<&str> {
    if key.len() > MAX_OBJECT_KEY_BYTES {
        return Err(Error::InvalidKey {
            key: key.chars().take(64).collect(),
            reason: format!(
                "it is {} bytes, and S3 object keys are at most {MAX_OBJECT_KEY_BYTES} bytes; use a \
                 shorter lock name",
                key.len()
            ),
        });
    }
    Ok(key)
}

impl Bucket {
    /// One GetObject (S3 reads are strongly consistent); `None` when there is no object.
    pub(crate) async fn read(&self, key: &str) -> Result<Option<Stored>> {
        let c = self.config();
        let res = self
            .client()
            .await?
            .get_object()
            .bucket(self.name())
            .key(checked(key)?)
            .send()
            .await;
        let out = match res {
            Ok(out) => out,
            Err(SdkError::ServiceError(se)) if matches!(se.err(), GetObjectError::NoSuchKey(_)) => {
                return Ok(None)
            }
            Err(e) => return Err(s3_error(c, self.name(), "GetObject", e)),
        };
        let etag = out.e_tag().unwrap_or_default().to_owned();
        let body = out.body.collect().await.map_err(|e| Error::Transport {
            operation: "GetObject",
            endpoint: c
                .endpoint()
                .unwrap_or("the default AWS endpoint")
                .to_owned(),
            message: format!("the object's body could not be read: {e}"),
            sent: true,
        })?;
        Ok(Some(Stored {
            object: LockObject::from_bytes(key, &body.into_bytes())?,
            etag,
        }))
    }

    /// Creates the lock object only if there is none: PutObject with `If-None-Match: *`.
    pub(crate) async fn create(&self, key: &str, object: &LockObject) -> Result<Put> {
        self.put(key, object, None).await
    }

    /// Replaces the lock object only if it is still the version read: PutObject with
    /// `If-Match: <etag>`.
    pub(crate) async fn replace(&self, key: &str, object: &LockObject, etag: &str) -> Result<Put> {
        self.put(key, object, Some(etag)).await
    }

    /// PutObject of `object` with `If-Match: <etag>`, or `If-None-Match: *` without one.
    async fn put(&self, key: &str, object: &LockObject, etag: Option<&str>) -> Result<Put> {
        let req = self
            .client()
            .await?
            .put_object()
            .bucket(self.name())
            .key(checked(key)?)
            .content_type("application/json")
            .body(ByteStream::from(object.to_bytes()));
        let req = match etag {
            Some(etag) => req.if_match(etag),
            None => req.if_none_match("*"),
        };
        match req.send().await {
            Ok(_) => Ok(Put::Written),
            Err(e) if condition_failed(&e) => Ok(Put::Refused),
            Err(e) => Err(s3_error(self.config(), self.name(), "PutObject", e)),
        }
    }

    /// Deletes the lock object only if it is still the version read: DeleteObject with
    /// `If-Match: <etag>`.
    pub(crate) async fn delete_if(&self, key: &str, etag: &str) -> Result<Delete> {
        let res = self
            .client()
            .await?
            .delete_object()
            .bucket(self.name())
            .key(checked(key)?)
            .if_match(etag)
            .send()
            .await;
        match res {
            Ok(_) => Ok(Delete::Deleted),
            Err(e) if condition_failed(&e) => Ok(Delete::Refused),
            Err(e) if not_implemented(&e) => Ok(Delete::Unsupported),
            Err(e) => Err(s3_error(self.config(), self.name(), "DeleteObject", e)),
        }
    }

    /// Deletes the lock object whatever it holds (force release).
    pub(crate) async fn delete(&self, key: &str) -> Result<()> {
        self.client()
            .await?
            .delete_object()
            .bucket(self.name())
            .key(checked(key)?)
            .send()
            .await
            .map_err(|e| s3_error(self.config(), self.name(), "DeleteObject", e))?;
        Ok(())
    }
}
