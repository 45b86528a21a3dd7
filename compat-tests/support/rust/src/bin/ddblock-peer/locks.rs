//! The `lock.*` ops: one core call each, answered with the fields PROTOCOL.md names (the same
//! operations the conformance vectors in compat-tests/conformance/v2/ describe on the wire).

use std::time::Duration;

use ddblock::{codec, AcquireOutcome, Backoff, ErrorKind, Lock, Store, StoredValue, Wait};
use serde_json::json;

use crate::request::{php_out, Failure, Req};
use crate::{fields, Fields};

/// The lock a request names, with its `ttl` and optional `owner`.
fn lock_of(s: &Store, req: &Req) -> Result<Lock, Failure> {
    let owner = req.opt_str("owner")?.map(str::to_owned);
    Ok(s.make_lock(req.str("name")?, req.int("ttl")?, owner)?)
}

/// `lock.acquire`: one attempt; `fence` when acquired.
pub async fn acquire(s: &Store, req: &Req) -> Result<Fields, Failure> {
    let lock = lock_of(s, req)?;
    Ok(match lock.acquire().await? {
        AcquireOutcome::Acquired { fence, .. } => {
            let mut out = fields(json!({"acquired": true, "owner": lock.owner()}));
            if let Some(f) = fence {
                out.insert("fence".into(), json!(f));
            }
            out
        }
        AcquireOutcome::Held(_) => fields(json!({"acquired": false, "owner": lock.owner()})),
    })
}

/// `lock.block`: waits up to `seconds` (polling every `sleep_ms` when given, as Laravel's
/// `betweenBlockedAttemptsSleepFor`); false when the wait ran out.
pub async fn block(s: &Store, req: &Req) -> Result<Fields, Failure> {
    let mut lock = lock_of(s, req)?;
    if let Some(ms) = req.opt_int("sleep_ms")? {
        let every = Duration::from_millis(
            u64::try_from(ms).map_err(|_| Failure::bad("field 'sleep_ms' must be 0 or more"))?,
        );
        lock = lock.with_backoff(Backoff {
            initial: every,
            max: every,
            multiplier: 1.0,
            jitter: 0.0,
        })?;
    }
    let wait = Wait::from_secs_f64(req.num("seconds")?)?;
    let acquired = match lock.block(wait).await {
        Ok(_) => true,
        Err(e) if e.kind() == ErrorKind::LockTimeout => false,
        Err(e) => return Err(e.into()),
    };
    Ok(fields(json!({"acquired": acquired, "owner": lock.owner()})))
}

/// `lock.release`: the lock restored from its owner, then released.
pub async fn release(s: &Store, req: &Req) -> Result<Fields, Failure> {
    let lock = s.restore_lock(req.str("name")?, req.str("owner")?)?;
    let released = lock.release().await?.is_released();
    Ok(fields(json!({ "released": released })))
}

/// `lock.refresh`: extends the owner's live lock to now + `ttl`.
pub async fn refresh(s: &Store, req: &Req) -> Result<Fields, Failure> {
    let lock = s.restore_lock(req.str("name")?, req.str("owner")?)?;
    let refreshed = lock.refresh(Some(req.int("ttl")?)).await?;
    Ok(fields(json!({ "refreshed": refreshed })))
}

/// `lock.forceRelease`: deletes the lock whoever holds it.
pub async fn force_release(s: &Store, req: &Req) -> Result<Fields, Failure> {
    s.lock(req.str("name")?, 0)?.force_release().await?;
    Ok(Fields::new())
}

/// `lock.get`: the stored owner as Laravel's `getCurrentOwner()` reads it (the store's `get` of
/// the lock item: unserialized, `null` when missing or expired).
pub async fn get(s: &Store, req: &Req) -> Result<Fields, Failure> {
    let holder = s.lock(req.str("name")?, 0)?.current_holder().await?;
    let value = match holder.and_then(|h| h.value) {
        Some(StoredValue::Number(t) | StoredValue::String(t)) => {
            Some(codec::decode_stored(&t).map_err(ddblock::Error::from)?)
        }
        None => None,
    };
    Ok(fields(json!({ "value": php_out(value.as_ref()) })))
}

/// `lock.holder`: who holds the lock now (consistent read), `null` when free or expired.
pub async fn holder(s: &Store, req: &Req) -> Result<Fields, Failure> {
    let holder = s.lock(req.str("name")?, 0)?.current_holder().await?;
    let h = holder.map(|h| json!({"owner": h.owner, "expires_at": h.expires_at}));
    Ok(fields(json!({ "holder": h })))
}

/// `lock.key`: the lock's item key under the configured prefix and layout.
pub fn key(s: &Store, req: &Req) -> Result<Fields, Failure> {
    Ok(fields(json!({ "key": s.lock_key(req.str("name")?)? })))
}
