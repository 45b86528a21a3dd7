//! Locks in Laravel's `DynamoDbLock` format, released by ONE owner-conditioned request.
//!
//! The rules (own-write recovery, ambiguous outcomes, waiting, leases, fencing) are written once
//! here over `LockBackend` (`backend.rs`); the DynamoDB backend is `lock/dynamo.rs`.

mod attempt;
mod backend;
mod dynamo;
mod fair;
mod lease;
mod release;
mod s3;
mod wait;
mod waiters;

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::distr::{Alphanumeric, SampleString};
use tracing::Instrument as _;

use crate::config::{Backoff, StoreConfig};
use crate::error::{Error, Result};
use crate::format::input;
use crate::format::item::{self, is_expired, OWNER_LEN};
use crate::holder::{redact_owner, Holder, StoredValue};
use crate::store::Store;
use crate::telemetry;

use backend::LockBackend;
pub use input::{lock_ttl, DEFAULT_LOCK_TTL_SECS};
pub use lease::{Heartbeat, Held, Lease, LeaseSignal, WorkError};
pub use wait::{LockGuard, Wait};

/// What `acquire()` found.
#[derive(Debug, Clone, PartialEq)]
pub enum AcquireOutcome {
    /// We hold the lock until `expires_at`. `recovered` is true when this attempt's own earlier
    /// write had landed (its answer was lost) and its expiry stands.
    Acquired {
        /// Unix time the lock expires at.
        expires_at: i64,
        /// The item was this attempt's own earlier write.
        recovered: bool,
        /// The fencing token of this acquisition (see [`Lock::fence`]).
        fence: Option<u64>,
    },
    /// Someone else holds the lock (another owner, or the same owner through another handle or
    /// process, as in Laravel). A holder whose `expires_at` is already past is an expired lock
    /// still within the clock-skew margin: it can be taken over once the margin has passed.
    Held(Holder),
}

impl AcquireOutcome {
    /// True when the lock is ours.
    pub fn is_acquired(&self) -> bool {
        matches!(self, AcquireOutcome::Acquired { .. })
    }
}

/// What `release()` found.
#[derive(Debug, Clone, PartialEq)]
pub enum ReleaseOutcome {
    /// The lock was ours and is deleted.
    Released,
    /// There was no live lock item (already released, force-released, swept, or only an expired
    /// item of another owner).
    NotHeld,
    /// Another owner holds the lock now (ours expired and was taken over, or we never held it).
    HeldByOther(Holder),
}

impl ReleaseOutcome {
    /// True when this call deleted our lock.
    pub fn is_released(&self) -> bool {
        matches!(self, ReleaseOutcome::Released)
    }
    /// Its name in `ddblock.lock.release_outcome` (docs/observability.md).
    pub fn as_str(&self) -> &'static str {
        match self {
            ReleaseOutcome::Released => "released",
            ReleaseOutcome::NotHeld => "not_held",
            ReleaseOutcome::HeldByOther(_) => "other_owner",
        }
    }
}

/// A lock's name, key, owner and ttl, checked once (no request, no connection).
struct LockSpec {
    name: String,
    /// The name as warnings and debug events say it ([`StoreConfig::logged`]).
    logged: String,
    key: String,
    /// The key's identity across handles and stores of this process (endpoint, region, table,
    /// bucket, key): what its local waiters share.
    wait_key: Arc<str>,
    owner: String,
    stored_owner: StoredValue,
    ttl_secs: i64,
    margin: Duration,
    heartbeat_interval: Option<Duration>,
    /// Tries per acquire write when a try is refused before it could land (throttled, not
    /// connected): the SDK's `max_attempts` (default 3), applied by the lock layer itself.
    tries: u32,
    /// Where the lock lives, as its metrics say it.
    place: telemetry::Place,
}

impl LockSpec {
    fn new(
        cfg: &StoreConfig,
        name: &str,
        ttl_secs: i64,
        owner: Option<String>,
    ) -> Result<LockSpec> {
        let key = cfg.lock_key(name)?;
        let ttl_secs = lock_ttl(ttl_secs)?;
        let owner = owner.unwrap_or_else(random_owner);
        let stored_owner = item::stored_owner(&owner)?;
        let wait_key = format!(
            "{}\u{0}{}\u{0}{}\u{0}{}\u{0}{key}",
            cfg.endpoint().unwrap_or_default(),
            cfg.region().unwrap_or_default(),
            cfg.table(),
            cfg.s3_bucket().unwrap_or_default()
        )
        .into();
        Ok(LockSpec {
            name: name.to_owned(),
            logged: cfg.logged(name).to_owned(),
            key,
            wait_key,
            owner,
            stored_owner,
            ttl_secs,
            margin: cfg.clock_skew_margin(),
            tries: cfg.max_attempts().unwrap_or(3).max(1),
            heartbeat_interval: cfg.heartbeat_interval(),
            place: telemetry::Place::of(cfg),
        })
    }
}

/// What this handle knows of the lease it holds.
#[derive(Debug, Default, Clone, Copy)]
struct LeaseState {
    /// When the lease ends by the local monotonic clock (conservatively: from when the write was
    /// sent, minus a second for the whole-second expiry); `None` when this handle holds none.
    deadline: Option<Instant>,
    /// The fencing token of the acquisition.
    fence: Option<u64>,
    /// When the acquisition's write was sent (for the hold duration).
    acquired_at: Option<Instant>,
}

/// A named lock with an owner; cheap to clone (clones share the lease state). Creating one sends
/// nothing.
#[derive(Clone)]
pub struct Lock {
    backend: Arc<dyn LockBackend>,
    spec: Arc<LockSpec>,
    backoff: Backoff,
    state: Arc<Mutex<LeaseState>>,
    /// Set only through [`Lock::with_fixed_attempt`] (the conformance vectors).
    fixed_attempt: Option<Arc<FixedAttempt>>,
}

/// The attempt id and fence base every acquire of a handle uses instead of a fresh random id and
/// the clock (a test seam: [`Lock::with_fixed_attempt`]).
#[derive(Debug)]
struct FixedAttempt {
    id: String,
    fence_base: u64,
}

impl fmt::Debug for Lock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lock")
            .field("name", &self.spec.name)
            .field("key", &self.spec.key)
            .field("owner", &redact_owner(Some(&self.spec.owner)))
            .field("ttl_secs", &self.spec.ttl_secs)
            .finish()
    }
}

impl Store {
    /// A lock named `name` held for `ttl_secs` (0 means 86400, as Laravel) with a fresh random
    /// owner. The name and ttl are checked here; nothing is sent.
    pub fn lock(&self, name: &str, ttl_secs: i64) -> Result<Lock> {
        self.make_lock(name, ttl_secs, None)
    }

    /// A lock with a given owner (e.g. one shared with a PHP process).
    pub fn lock_with_owner(
        &self,
        name: &str,
        ttl_secs: i64,
        owner: impl Into<String>,
    ) -> Result<Lock> {
        self.make_lock(name, ttl_secs, Some(owner.into()))
    }

    /// A handle on a lock someone already holds as `owner` (Laravel's `restoreLock`), to release or refresh it.
    pub fn restore_lock(&self, name: &str, owner: impl Into<String>) -> Result<Lock> {
        self.make_lock(name, 0, Some(owner.into()))
    }

    /// A lock with an optional owner (a fresh random one when `None`): what every front calls.
    pub fn make_lock(&self, name: &str, ttl_secs: i64, owner: Option<String>) -> Result<Lock> {
        let spec = LockSpec::new(self.config(), name, ttl_secs, owner)?;
        Ok(Lock {
            backend: match self.bucket() {
                Some(bucket) => Arc::new(bucket.clone()),
                None => Arc::new(self.table().clone()),
            },
            spec: Arc::new(spec),
            backoff: self.config().backoff(),
            state: Arc::new(Mutex::new(LeaseState::default())),
            fixed_attempt: None,
        })
    }
}

impl Lock {
    /// The lock name as given.
    pub fn name(&self) -> &str {
        &self.spec.name
    }
    /// The name as warnings and debug events say it ([`StoreConfig::logged`]).
    pub(crate) fn logged_name(&self) -> &str {
        &self.spec.logged
    }
    /// The table key (prefix and layout applied).
    pub fn key(&self) -> &str {
        &self.spec.key
    }
    /// The attributes its spans and metrics carry (docs/observability.md): the table (or S3
    /// bucket) and the key layout; for a front that makes its own spans.
    pub fn telemetry_attributes(&self) -> [(&'static str, &str); 2] {
        self.spec.place.attributes()
    }
    /// This lock's owner token (share it to let another process release or refresh the lock).
    pub fn owner(&self) -> &str {
        &self.spec.owner
    }
    /// The owner as stored in the table (`N` for numeric owners, else PHP-serialized `S`).
    pub fn stored_owner(&self) -> &StoredValue {
        &self.spec.stored_owner
    }
    /// The ttl in seconds (0 was turned into 86400).
    pub fn ttl_secs(&self) -> i64 {
        self.spec.ttl_secs
    }
    /// The backoff `block()` waits with.
    pub fn backoff(&self) -> Backoff {
        self.backoff
    }
    /// The same lock with another backoff for `block()`; the backoff is checked.
    pub fn with_backoff(mut self, backoff: Backoff) -> Result<Lock> {
        backoff.validate()?;
        self.backoff = backoff;
        Ok(self)
    }

    /// Test seam for the conformance vectors (`core/tests/conformance.rs`): every acquire of this
    /// handle sends attempt id `id` and fence base `fence_base` (microseconds) instead of a fresh
    /// random id and the system clock, so its requests are predictable byte for byte. Not for
    /// production: acquires sharing an id would take each other's writes for their own.
    #[doc(hidden)]
    pub fn with_fixed_attempt(mut self, id: impl Into<String>, fence_base: u64) -> Lock {
        self.fixed_attempt = Some(Arc::new(FixedAttempt {
            id: id.into(),
            fence_base,
        }));
        self
    }

    /// The fencing token of this handle's current acquisition: it grows with every acquisition
    /// of this key by any ddblock front (see `docs/semantics.md` for the bound it relies on), so a
    /// resource that remembers the highest token it accepted can refuse a write from a holder whose
    /// lease ran out while it was paused. `None` when this handle holds no lease.
    pub fn fence(&self) -> Option<u64> {
        let s = self.lease_state();
        s.deadline.and(s.fence)
    }

    /// How long this handle's lease still lasts by the local monotonic clock (the write's send
    /// time plus the ttl, less a second for the whole-second expiry; refreshed by `refresh` and
    /// heartbeats); `None` when this handle holds no lease, zero once it has run out.
    pub fn remaining(&self) -> Option<Duration> {
        self.lease_state()
            .deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// Runs acquire `work` as one observed acquisition: its span and its metrics
    /// ([`telemetry`]); `waits`: it may wait (then a `Held` answer is a timeout).
    async fn observed_acquire(
        &self,
        waits: bool,
        work: impl Future<Output = Result<AcquireOutcome>>,
    ) -> Result<AcquireOutcome> {
        let at = &self.spec.place;
        let span = tracing::info_span!(
            "ddblock.lock.acquire",
            db.collection.name = at.collection(),
            ddblock.key_layout = at.layout(),
            ddblock.lock.outcome = tracing::field::Empty,
        );
        let seen = telemetry::Acquiring::begin(at, waits);
        let out = work.instrument(span.clone()).await;
        let (outcome, error) = match &out {
            Ok(AcquireOutcome::Acquired { .. }) => ("acquired", None),
            Ok(AcquireOutcome::Held(_)) if waits => ("timed_out", None),
            Ok(AcquireOutcome::Held(_)) => ("held", None),
            Err(Error::OutcomeUnknown { .. }) => ("unknown", None),
            Err(e) => ("error", Some(e.kind().as_str())),
        };
        span.record("ddblock.lock.outcome", outcome);
        seen.finish(outcome, error);
        out
    }

    /// Deletes the lock whoever holds it (Laravel's `forceRelease`); true when a lock item was
    /// there (false: nothing to release, e.g. a name that lost its backslashes in a shell).
    pub async fn force_release(&self) -> Result<bool> {
        let there = self.backend.force_release(&self.spec.key).await?;
        self.clear_lease();
        waiters::released(&self.spec.wait_key, None);
        Ok(there)
    }

    /// Extends our live lock to now + `ttl_secs` (the lock's own ttl when `None`; <= 0 means 86400),
    /// with Laravel 12.63's condition `attribute_exists(#key) AND #value = :owner AND #expires_at > :now`.
    /// False when the lock is not ours or has expired.
    pub async fn refresh(&self, ttl_secs: Option<i64>) -> Result<bool> {
        let ttl = match ttl_secs {
            None => self.spec.ttl_secs,
            Some(t) if t <= 0 => DEFAULT_LOCK_TTL_SECS,
            Some(t) => t,
        };
        let sent = Instant::now();
        let expires_at = item::expiry(self.backend.now(), ttl)?;
        let ok = self
            .backend
            .refresh(&self.spec.key, &self.spec.stored_owner, expires_at)
            .await?;
        if ok {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            s.deadline = Some(lease_deadline(sent, ttl));
        }
        Ok(ok)
    }

    /// Who holds the lock now (consistent read); `None` when free or expired (`now >= expires_at`).
    pub async fn current_holder(&self) -> Result<Option<Holder>> {
        let holder = self.backend.read(&self.spec.key).await?;
        let now = self.backend.now();
        Ok(holder.filter(|h| !is_expired(h.expires_at, now)))
    }

    /// Whether anyone holds the lock now (consistent read).
    pub async fn is_locked(&self) -> Result<bool> {
        Ok(self.current_holder().await?.is_some())
    }

    /// Whether `owner` holds the lock now (consistent read).
    pub async fn is_owned_by(&self, owner: &str) -> Result<bool> {
        let stored = item::stored_owner(owner)?;
        Ok(self.current_holder().await?.is_some_and(|h| h.is(&stored)))
    }

    /// Whether this lock's owner holds the lock now (consistent read).
    pub async fn is_owned(&self) -> Result<bool> {
        Ok(self
            .current_holder()
            .await?
            .is_some_and(|h| h.is(&self.spec.stored_owner)))
    }

    fn lease_state(&self) -> LeaseState {
        *self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn clear_lease(&self) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = LeaseState::default();
    }

    /// Records a lease that began (its write was sent) at `sent` and ends after `ttl_secs`.
    fn record_lease(&self, sent: Instant, ttl_secs: i64, fence: Option<u64>) {
        let now = self.backend.now();
        waiters::acquired(
            &self.spec.wait_key,
            &self.spec.owner,
            now.saturating_add(ttl_secs),
            now,
        );
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = LeaseState {
            deadline: Some(lease_deadline(sent, ttl_secs)),
            fence,
            acquired_at: Some(sent),
        };
    }
}

/// The local end of a lease whose write was sent at `sent` for `ttl_secs`: the expiry written is
/// `floor(now) + ttl`, which can be up to a second before `sent + ttl`.
fn lease_deadline(sent: Instant, ttl_secs: i64) -> Instant {
    let secs = u64::try_from(ttl_secs.saturating_sub(1)).unwrap_or(0);
    sent.checked_add(Duration::from_secs(secs))
        .unwrap_or_else(|| sent + Duration::from_secs(86_400 * 365 * 100))
}

/// A fresh owner token: 16 characters of `[A-Za-z0-9]` from the OS-seeded CSPRNG (Laravel's `Str::random()` shape).
pub fn random_owner() -> String {
    Alphanumeric.sample_string(&mut rand::rng(), OWNER_LEN)
}
