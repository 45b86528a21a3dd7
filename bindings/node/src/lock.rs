//! Locks: `store.lock(...)` and `NativeLock` (the core's `Lock`), the heartbeat and `withLock`'s
//! held lease (`NativeHeartbeat`, `NativeHeld`), and `NativeCancel`, through which an
//! `AbortSignal` drops an acquire in flight.

use std::future::Future;
use std::sync::Arc;

use ddblock::{Heartbeat, Held, LeaseSignal, Wait};
use napi::bindgen_prelude::{PromiseRaw, ToNapiValue};
use napi::Env;
use napi_derive::napi;
use tokio::sync::watch;

use crate::error::{self, promise, promise_on, IntoNapi, OrThrow, Result};
use crate::options::wait_of;
use crate::store::NativeStore;
use crate::value::Seconds;

#[napi]
impl NativeStore {
    /// A lock handle (no request yet). `ttl` in seconds (0 = 86400, as Laravel); `owner`
    /// defaults to a fresh random token. An invalid name, ttl or owner throws here.
    #[napi(
        catch_unwind,
        ts_args_type = "name: string, ttl?: number | undefined | null, owner?: string | undefined | null"
    )]
    pub fn lock(
        &self,
        env: &Env,
        name: String,
        ttl: Option<Seconds>,
        owner: Option<String>,
    ) -> napi::Result<NativeLock> {
        let ttl = ttl.map_or(0, |t| t.0);
        Ok(NativeLock {
            inner: self.inner.make_lock(&name, ttl, owner).or_throw(env)?,
        })
    }
}

/// Who holds a lock.
#[napi(object)]
pub struct Holder {
    /// The owner token (absent when the stored value is not a lock owner).
    pub owner: Option<String>,
    /// Unix time (seconds) the lock expires at; absent for an item without expiry.
    pub expires_at: Option<i64>,
    /// The fencing token of the holder's acquisition (absent for a lock Laravel wrote).
    pub fence: Option<i64>,
}

/// A named lock with an owner token; every method is one request (or a wait loop).
#[napi]
pub struct NativeLock {
    inner: ddblock::Lock,
}

#[napi]
impl NativeLock {
    /// The lock name as given.
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.inner.name().to_owned()
    }

    /// The item key of the lock in the table (prefix and layout applied), as Laravel writes it.
    #[napi(getter)]
    pub fn key(&self) -> String {
        self.inner.key().to_owned()
    }

    /// The owner token (share it to release from elsewhere with `restoreLock`).
    #[napi(getter)]
    pub fn owner(&self) -> String {
        self.inner.owner().to_owned()
    }

    /// The ttl in seconds (0 was turned into 86400).
    #[napi(getter)]
    pub fn ttl(&self) -> i64 {
        self.inner.ttl_secs()
    }

    /// The fencing token of this handle's acquisition (`null` when it holds none).
    #[napi(getter)]
    pub fn fence(&self) -> Option<i64> {
        self.inner.fence().and_then(|f| i64::try_from(f).ok())
    }

    /// Milliseconds this handle's lease still lasts by the local monotonic clock (`null`: none).
    #[napi]
    pub fn remaining_ms(&self) -> Option<f64> {
        self.inner.remaining().map(|d| d.as_secs_f64() * 1000.0)
    }

    /// Starts refreshing the held lock in the background (the core's heartbeat).
    #[napi]
    pub async fn heartbeat(&self) -> napi::Result<NativeHeartbeat> {
        let hb = self.inner.heartbeat();
        Ok(NativeHeartbeat {
            signal: hb.signal(),
            inner: tokio::sync::Mutex::new(Some(hb)),
        })
    }

    /// Takes the lock: one attempt without `waitMs` (or with 0); with it, watches and tries
    /// again for up to `waitMs` (`Infinity`: no limit). True when the lock is ours, false when
    /// someone else still holds it. When `cancel` is cancelled first, the acquire in flight is
    /// dropped (the core deletes its write if it landed) and the promise rejects with `ABORTED`.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        wait_ms: Option<f64>,
        cancel: Option<&NativeCancel>,
    ) -> napi::Result<PromiseRaw<'env, bool>> {
        self.waiting(env, wait_ms.unwrap_or(0.0), cancel, |l, wait| async move {
            Ok(l.acquire_within(wait).await?.is_acquired())
        })
    }

    /// Waits up to `timeoutMs` (0: one attempt; `Infinity`: no limit); resolves to the expiry
    /// (Unix seconds) or rejects with `LOCK_TIMEOUT` (Laravel's `block`), or with `ABORTED` when
    /// `cancel` is cancelled first (as `acquire`).
    #[napi(ts_return_type = "Promise<number>")]
    pub fn block<'env>(
        &self,
        env: &'env Env,
        timeout_ms: f64,
        cancel: Option<&NativeCancel>,
    ) -> napi::Result<PromiseRaw<'env, i64>> {
        self.waiting(env, timeout_ms, cancel, |l, wait| async move {
            l.block(wait).await.napi()
        })
    }

    /// Takes the lock as `block` does and starts its heartbeat: the start of `withLock` (the
    /// core's `Held`).
    #[napi(ts_return_type = "Promise<NativeHeld>")]
    pub fn enter<'env>(
        &self,
        env: &'env Env,
        timeout_ms: f64,
        cancel: Option<&NativeCancel>,
    ) -> napi::Result<PromiseRaw<'env, NativeHeld>> {
        self.waiting(env, timeout_ms, cancel, |l, wait| async move {
            let held = l.enter(wait).await?;
            Ok(NativeHeld {
                signal: held.lease().signal().clone(),
                inner: Arc::new(tokio::sync::Mutex::new(Some(held))),
            })
        })
    }

    /// ONE DeleteItem conditioned on our owner, answering what it found: `released`, `not_held`
    /// or `other_owner` (the core's release outcomes: `release()`'s boolean and its span's outcome).
    #[napi(ts_return_type = "Promise<'released' | 'not_held' | 'other_owner'>")]
    pub fn release<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, String>> {
        promise_on(env, &self.inner, |l| async move {
            Ok(l.release().await?.as_str().to_owned())
        })
    }

    /// Deletes the lock whoever holds it: true when a lock item was there.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn force_release<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, bool>> {
        promise_on(
            env,
            &self.inner,
            |l| async move { Ok(l.force_release().await?) },
        )
    }

    /// Extends our live lock to now + `ttl` (the lock's ttl by default); false when not ours.
    #[napi(ts_args_type = "ttl?: number", ts_return_type = "Promise<boolean>")]
    pub fn refresh<'env>(
        &self,
        env: &'env Env,
        ttl: Option<Seconds>,
    ) -> napi::Result<PromiseRaw<'env, bool>> {
        promise_on(env, &self.inner, |l| async move {
            Ok(l.refresh(ttl.map(|t| t.0)).await?)
        })
    }

    /// Whether anyone holds the lock now (consistent read).
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn is_locked<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, bool>> {
        promise_on(
            env,
            &self.inner,
            |l| async move { Ok(l.is_locked().await?) },
        )
    }

    /// Whether this owner holds the lock now (consistent read).
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn is_owned<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, bool>> {
        promise_on(env, &self.inner, |l| async move { Ok(l.is_owned().await?) })
    }

    /// Who holds the lock now (consistent read), or `null` when free or expired.
    #[napi(ts_return_type = "Promise<Holder | null>")]
    pub fn holder<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, Option<Holder>>> {
        promise_on(env, &self.inner, |l| async move {
            let h = l.current_holder().await?;
            Ok(h.map(|h| Holder {
                owner: h.owner,
                expires_at: h.expires_at,
                fence: h.fence.and_then(|f| i64::try_from(f).ok()),
            }))
        })
    }
}

impl NativeLock {
    /// The Promise of a wait (`acquire`, `block`, `enter`) for up to `ms` milliseconds, which
    /// rejects with `ABORTED` when `cancel` is cancelled first ([`cancellable`]). A bad wait
    /// throws here.
    fn waiting<'env, T, F>(
        &self,
        env: &'env Env,
        ms: f64,
        cancel: Option<&NativeCancel>,
        op: impl FnOnce(ddblock::Lock, Wait) -> F,
    ) -> napi::Result<PromiseRaw<'env, T>>
    where
        T: ToNapiValue + Send + 'static,
        F: Future<Output = Result<T>> + Send + 'static,
    {
        let wait = wait_of(ms).or_throw(env)?;
        let name = self.inner.name().to_owned();
        let cancel = cancel.map(NativeCancel::subscribe);
        let op = op(self.inner.clone(), wait);
        promise(env, async move { cancellable(&name, cancel, op).await })
    }
}

/// A running heartbeat: refreshes the lock until stopped.
#[napi]
pub struct NativeHeartbeat {
    inner: tokio::sync::Mutex<Option<Heartbeat>>,
    signal: LeaseSignal,
}

#[napi]
impl NativeHeartbeat {
    /// Resolves with the reason when the lease is lost, or `null` once stopped without a loss.
    #[napi]
    pub async fn lost(&self) -> Option<String> {
        self.signal.ended().await
    }

    /// Stops refreshing; resolves with the reason the lease was lost, or `null`.
    #[napi]
    pub async fn stop(&self) -> Option<String> {
        let hb = self.inner.lock().await.take();
        match hb {
            Some(hb) => hb.stop().await,
            None => self.signal.reason(),
        }
    }
}

/// A lock entered by `withLock` (the core's `Held`): its heartbeat runs until `finish`.
#[napi]
pub struct NativeHeld {
    inner: Arc<tokio::sync::Mutex<Option<Held>>>,
    signal: LeaseSignal,
}

#[napi]
impl NativeHeld {
    /// Rejects with `LEASE_LOST` when the lease is lost during the body; resolves once the
    /// lease ended kept.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn lost<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        promise_on(env, &self.signal, |signal| async move {
            signal.ended().await;
            Ok(signal.check()?)
        })
    }

    /// Ends the lease by the core's one rule: stops the heartbeat and releases; rejects with
    /// `LEASE_LOST`, or the release's error (again: nothing more).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn finish<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        promise_on(env, &self.inner, |inner| async move {
            let held = inner.lock().await.take();
            match held {
                Some(held) => Ok(held.finish().await?),
                None => Ok(()),
            }
        })
    }
}

/// A cancellation handle for `acquire` and `block`: `lib.js` cancels it when the caller's
/// `AbortSignal` aborts.
#[napi]
pub struct NativeCancel {
    cancelled: watch::Sender<bool>,
}

#[napi]
impl NativeCancel {
    /// A handle not cancelled yet.
    #[napi(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        NativeCancel {
            cancelled: watch::channel(false).0,
        }
    }

    /// Cancels the operations given this handle (those in flight and those started later).
    #[napi]
    pub fn cancel(&self) {
        self.cancelled.send_replace(true);
    }
}

impl NativeCancel {
    fn subscribe(&self) -> watch::Receiver<bool> {
        self.cancelled.subscribe()
    }
}

/// Runs `op` until it ends or `cancel` is cancelled; then `op` is dropped, which is the core's
/// cancellation (an acquire in flight deletes its write in the background if it landed), and the
/// result is an `ABORTED` error.
async fn cancellable<T>(
    name: &str,
    cancel: Option<watch::Receiver<bool>>,
    op: impl Future<Output = Result<T>>,
) -> Result<T> {
    let Some(mut cancel) = cancel else {
        return op.await;
    };
    let cancelled = async move {
        if cancel.wait_for(|c| *c).await.is_err() {
            // The handle was dropped without a cancel: never cancelled.
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        biased;
        () = cancelled => Err(error::aborted(name)),
        r = op => r,
    }
}
