//! The once-only guard: exactly one caller, across processes and languages, processes an event
//! that is delivered at least once (SQS, EventBridge, webhooks retried by their sender).
//!
//! A claim is ONE `UpdateItem` that adds 1 to a counter in a Laravel cache item (so PHP's
//! `Cache::get($event)` reads it) and sets a claim token only if none is there: the caller whose
//! update creates the item sees 1 and its own token, and wins; everyone after sees 2, 3, ... and
//! someone else's token. The token also makes a claim safe under the SDK's retries: a retry of a
//! claim whose answer was lost sees 2 but its own token, and still wins. The winner marks the
//! event done when its handler succeeded (later deliveries are skipped until the done record
//! expires) or gives the claim back when it failed (the next delivery claims it). A claim that is
//! neither expires after its ttl and is taken over. Items: `docs/format.md#once-only-guard-items`.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use rand::distr::{Alphanumeric, SampleString};

use crate::dynamo::{ClaimAdd, Conditional};
use crate::error::{Error, Result};
use crate::format::item;
use crate::format::once::{once_ttl, OnceItem};
use crate::store::Store;

pub use crate::format::once::{OnceState, OnceStatus, DEFAULT_DONE_TTL_SECS};

/// Rounds of claim-then-take-over when items keep expiring or vanishing under us.
const CLAIM_ATTEMPTS: usize = 4;
/// Length of a claim token (62^16: no two claims ever share one).
const TOKEN_LEN: usize = 16;

/// The guard of one event id; cheap to clone. Creating one sends nothing.
#[derive(Clone)]
pub struct Once {
    store: Store,
    spec: Arc<OnceSpec>,
}

struct OnceSpec {
    event_id: String,
    /// The event id as warnings and debug events say it ([`crate::StoreConfig::logged`]).
    logged: String,
    key: String,
    claim_ttl: i64,
    done_ttl: i64,
}

impl fmt::Debug for Once {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Once")
            .field("event_id", &self.spec.event_id)
            .field("key", &self.spec.key)
            .field("claim_ttl", &self.spec.claim_ttl)
            .field("done_ttl", &self.spec.done_ttl)
            .finish()
    }
}

/// What [`Once::claim`] found.
#[derive(Debug)]
pub enum ClaimOutcome {
    /// This caller won: run the handler, then [`Claim::done`] or [`Claim::give_back`].
    Claimed(Claim),
    /// Someone else has it (`InProgress`) or it was already handled (`Done`): skip it.
    Skipped(OnceStatus),
}

impl ClaimOutcome {
    /// True when this caller won the claim.
    pub fn is_claimed(&self) -> bool {
        matches!(self, ClaimOutcome::Claimed(_))
    }

    /// The claim, when won.
    pub fn claim(&self) -> Option<&Claim> {
        match self {
            ClaimOutcome::Claimed(c) => Some(c),
            ClaimOutcome::Skipped(_) => None,
        }
    }

    /// Why the event was skipped, when it was.
    pub fn skipped(&self) -> Option<&OnceStatus> {
        match self {
            ClaimOutcome::Claimed(_) => None,
            ClaimOutcome::Skipped(s) => Some(s),
        }
    }
}

/// A won claim: the right (and the duty) to handle the event.
#[derive(Debug, Clone)]
pub struct Claim {
    once: Once,
    token: String,
    expires_at: i64,
    recovered: bool,
}

/// What [`Once::run`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum OnceRun<T> {
    /// This caller claimed the event, the work succeeded and the event is marked done.
    Ran(T),
    /// The work did not run: someone else has it, or it was already done.
    Skipped(OnceStatus),
}

impl Store {
    /// The once-only guard of `event_id` (a cache key: the counter is the cache entry of that
    /// key, so pick a namespace such as `once:<id>`). A claim lasts `claim_ttl_secs` (longer than
    /// the handler runs; afterwards another delivery takes it over); a done event is remembered
    /// [`DEFAULT_DONE_TTL_SECS`] (see [`Once::with_done_ttl`]). Sends nothing.
    pub fn once(&self, event_id: &str, claim_ttl_secs: i64) -> Result<Once> {
        Ok(Once {
            store: self.clone(),
            spec: Arc::new(OnceSpec {
                event_id: event_id.to_owned(),
                logged: self.config().logged(event_id).to_owned(),
                key: self.cache_key(event_id)?,
                claim_ttl: once_ttl("claim", claim_ttl_secs)?,
                done_ttl: DEFAULT_DONE_TTL_SECS,
            }),
        })
    }
}

impl Once {
    /// The same guard, remembering a done event for `secs` (redeliveries within it are skipped).
    pub fn with_done_ttl(self, secs: i64) -> Result<Once> {
        let s = &self.spec;
        Ok(Once {
            store: self.store.clone(),
            spec: Arc::new(OnceSpec {
                event_id: s.event_id.clone(),
                logged: s.logged.clone(),
                key: s.key.clone(),
                claim_ttl: s.claim_ttl,
                done_ttl: once_ttl("done", secs)?,
            }),
        })
    }

    /// The event id as given.
    pub fn event_id(&self) -> &str {
        &self.spec.event_id
    }
    /// The table key (prefix and layout applied, as a cache key).
    pub fn key(&self) -> &str {
        &self.spec.key
    }
    /// How long a claim lasts, in seconds.
    pub fn claim_ttl_secs(&self) -> i64 {
        self.spec.claim_ttl
    }
    /// How long a done event is remembered, in seconds.
    pub fn done_ttl_secs(&self) -> i64 {
        self.spec.done_ttl
    }

    /// Claims the event: ONE UpdateItem (`ADD` on the counter, `ReturnValues: ALL_NEW`) in the
    /// usual case; over an expired or given-back item, one conditional PutItem more.
    pub async fn claim(&self) -> Result<ClaimOutcome> {
        let out = self.try_claim().await;
        let (outcome, error) = match &out {
            Ok(ClaimOutcome::Claimed(_)) => ("claimed", None),
            Ok(ClaimOutcome::Skipped(status)) => (status.state.as_str(), None),
            Err(e) => ("error", Some(e.kind().as_str())),
        };
        crate::telemetry::once_claim(self.store.config(), outcome, error);
        out
    }

    /// [`Once::claim`]'s requests.
    async fn try_claim(&self) -> Result<ClaimOutcome> {
        let table = self.store.table();
        let key = &self.spec.key;
        let token = Alphanumeric.sample_string(&mut rand::rng(), TOKEN_LEN);
        for _ in 0..CLAIM_ATTEMPTS {
            let now = self.store.now();
            let expires_at = item::expiry(now, self.spec.claim_ttl)?;
            let old = match table.claim_add(key, &token, expires_at).await? {
                ClaimAdd::Applied(item) if item.claim.as_deref() == Some(&token) => {
                    // 1: we created it. More: our own update whose answer was lost, retried.
                    let recovered = item.claims != Some(1);
                    return Ok(self.won(token, &item, expires_at, recovered));
                }
                ClaimAdd::Applied(item) => {
                    let status = item.status(self.store.now());
                    if matches!(status.state, OnceState::InProgress | OnceState::Done) {
                        tracing::debug!(event = %self.spec.logged, state = %status.state, "skipped");
                        return Ok(ClaimOutcome::Skipped(status));
                    }
                    continue; // expired between the server's check and ours: try again
                }
                ClaimAdd::Refused(Some(old)) => old,
                // The server ignored ALL_OLD (dynalite): one consistent read tells why.
                ClaimAdd::Refused(None) => match table.get_once(key).await? {
                    Some(old) => old,
                    None => continue, // deleted in between
                },
            };
            if !old.is_free(self.store.now()) {
                // Live and claimed without a token: Laravel's `Cache::add($key, 1, $ttl)`.
                return Ok(ClaimOutcome::Skipped(old.status(self.store.now())));
            }
            // Expired or given back: replace it with our claim.
            let mine = |i: &OnceItem| i.claim.as_deref() == Some(token.as_str());
            match table.claim_fresh(key, &token, expires_at).await? {
                Conditional::Written => {
                    return Ok(self.won(token, &OnceItem::default(), expires_at, false));
                }
                // Our own put, whose answer was lost, retried by the SDK.
                Conditional::Refused(Some(i)) if mine(&i) => {
                    return Ok(self.won(token, &i, expires_at, true))
                }
                Conditional::Refused(None) => {
                    if let Some(i) = table.get_once(key).await?.filter(|i| mine(i)) {
                        return Ok(self.won(token, &i, expires_at, true));
                    }
                }
                Conditional::Refused(Some(_)) => {} // someone else took it over: look again
            }
        }
        Ok(ClaimOutcome::Skipped(self.status().await?))
    }

    fn won(
        &self,
        token: String,
        item: &OnceItem,
        expires_at: i64,
        recovered: bool,
    ) -> ClaimOutcome {
        tracing::debug!(event = %self.spec.logged, recovered, "claimed");
        ClaimOutcome::Claimed(Claim {
            once: self.clone(),
            token,
            expires_at: item.expires_at.unwrap_or(expires_at),
            recovered,
        })
    }

    /// The error of marking done a delivery that did not win the claim (`status`: what its
    /// claim found), for fronts whose claim objects also stand for a skipped delivery.
    pub fn not_claimed(&self, status: &OnceStatus) -> Error {
        Error::Conflict {
            key: self.spec.event_id.clone(),
            message: format!(
                "this delivery did not claim the event (it was {}), so it cannot mark it done",
                status.state
            ),
        }
    }

    /// Where the event stands (one strongly consistent GetItem).
    pub async fn status(&self) -> Result<OnceStatus> {
        let now = self.store.now();
        Ok(match self.store.table().get_once(&self.spec.key).await? {
            Some(item) => item.status(now),
            None => OnceStatus::free(),
        })
    }

    /// Claims the event and, if won, runs `work`: on success the event is marked done
    /// ([`Claim::done`]; an error if the claim was lost meanwhile), on failure the claim is given
    /// back (best effort) and the work's error returned, so a redelivery runs it again. A future
    /// dropped while the work runs leaves the claim until it expires.
    pub async fn run<F, Fut, T, E>(&self, work: F) -> std::result::Result<OnceRun<T>, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = std::result::Result<T, E>>,
        E: From<Error>,
    {
        let claim = match self.claim().await? {
            ClaimOutcome::Claimed(c) => c,
            ClaimOutcome::Skipped(s) => return Ok(OnceRun::Skipped(s)),
        };
        match work().await {
            Ok(v) => {
                claim.finish(true).await?;
                Ok(OnceRun::Ran(v))
            }
            Err(e) => {
                if let Err(gb) = claim.finish(false).await {
                    tracing::warn!(name: "ddblock.once.give_back_failed", event = %self.spec.logged, error = %gb,
                        "could not give the claim back after the work failed; it frees itself at its expiry");
                }
                Err(e)
            }
        }
    }
}

impl Claim {
    /// The event id.
    pub fn event_id(&self) -> &str {
        self.once.event_id()
    }
    /// When the claim expires (Unix seconds): finish before, or another delivery takes over.
    pub fn expires_at(&self) -> i64 {
        self.expires_at
    }
    /// True when an earlier attempt of this claim landed but its answer was lost (the SDK's
    /// retry saw a counter above 1 and our own token).
    pub fn recovered(&self) -> bool {
        self.recovered
    }

    /// Ends the handler's claim, the one rule of every front's `once`: after a handler that
    /// succeeded, marks the event done ([`Claim::done`]; [`Error::Conflict`] when the claim was
    /// lost meanwhile); after one that failed, gives the claim back so a redelivery runs it
    /// ([`Claim::give_back`]; a claim no longer ours is left as it is). An error of the give-back
    /// is returned for the front to attach to the handler's error, which stays the one raised:
    /// the claim then frees itself at its expiry.
    pub async fn finish(&self, handler_ok: bool) -> Result<()> {
        if handler_ok {
            return self.done().await;
        }
        if !self.give_back().await? {
            tracing::debug!(event = %self.once.spec.logged, "the claim was no longer ours to give back");
        }
        Ok(())
    }

    /// Marks the event done: ONE UpdateItem setting `ddblock_done` and the expiry to now + the
    /// done ttl, conditioned on our token. [`Error::Conflict`] when the claim is no longer ours.
    pub async fn done(&self) -> Result<()> {
        let s = &self.once.spec;
        let now = self.once.store.now();
        let expires_at = item::expiry(now, s.done_ttl)?;
        let table = self.once.store.table();
        if table
            .mark_done(&s.key, &self.token, now, expires_at)
            .await?
        {
            tracing::debug!(event = %s.logged, "done");
            return Ok(());
        }
        Err(Error::Conflict {
            key: s.event_id.clone(),
            message: format!(
                "the claim was no longer ours when marking the event done: it was given back, or \
                 it expired (claim ttl {} s) and another delivery claimed it, so the handler may \
                 have run twice; use a claim ttl longer than the handler can run",
                s.claim_ttl
            ),
        })
    }

    /// Gives the claim back so the next delivery claims the event: ONE UpdateItem (counter to 0,
    /// token removed) conditioned on our token and not done. False when it was no longer ours
    /// (expired and taken over, or done); a retry after a lost answer still reports true.
    pub async fn give_back(&self) -> Result<bool> {
        let s = &self.once.spec;
        let table = self.once.store.table();
        let old = match table.give_back(&s.key, &self.token).await? {
            Conditional::Written => return Ok(true),
            Conditional::Refused(Some(old)) => Some(old),
            Conditional::Refused(None) if table.empty_old_means_absent() => None,
            Conditional::Refused(None) => table.get_once(&s.key).await?,
        };
        Ok(old.is_some_and(|o| o.given_back.as_deref() == Some(self.token.as_str())))
    }
}
