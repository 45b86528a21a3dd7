//! The lock object's body: a small JSON document with the lock item's facts.

use serde::{Deserialize, Serialize};

use crate::error::{CodecError, Result};
use crate::format::item;
use crate::holder::{Holder, StoredValue};

/// A lock as stored in S3 (see `docs/format.md#s3-lock-objects`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LockObject {
    /// The owner typed as Laravel stores it: `{"S": "s:16:\"...\";"}` or `{"N": "12345"}`.
    pub owner: Owner,
    /// Unix seconds the lock expires at.
    pub expires_at: i64,
    /// The acquire attempt that wrote it.
    pub attempt: String,
    /// The fencing token of this acquisition.
    pub fence: u64,
}

/// An owner with its DynamoDB-style type, so numeric owners compare as Laravel's do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Owner {
    /// A serialized PHP string.
    S(String),
    /// A number's text.
    N(String),
}

impl Owner {
    pub(crate) fn stored(&self) -> StoredValue {
        match self {
            Owner::S(s) => StoredValue::String(s.clone()),
            Owner::N(n) => StoredValue::Number(n.clone()),
        }
    }

    pub(crate) fn of(v: &StoredValue) -> Owner {
        match v {
            StoredValue::String(s) => Owner::S(s.clone()),
            StoredValue::Number(n) => Owner::N(n.clone()),
        }
    }
}

impl LockObject {
    /// The holder this object describes.
    pub(crate) fn holder(&self) -> Holder {
        let mut h = item::holder(Some(self.owner.stored()), Some(self.expires_at));
        h.fence = Some(self.fence);
        h
    }

    /// Whether `owner` holds it (compared as DynamoDB compares the owner attribute).
    pub(crate) fn is_owned_by(&self, owner: &StoredValue) -> bool {
        self.owner.stored().same_as(owner)
    }

    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    pub(crate) fn from_bytes(key: &str, body: &[u8]) -> Result<LockObject> {
        serde_json::from_slice(body).map_err(|e| {
            CodecError::new(format!(
                "S3 object {key:?} is not a ddblock lock object ({e}); delete it or fix the key"
            ))
            .into()
        })
    }
}
