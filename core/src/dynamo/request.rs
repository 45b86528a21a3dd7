//! Single-item requests, each named by what it means. Every expression ddblock sends on one item
//! is written here (Laravel's conditions are quoted from `docs/format.md`).

use std::time::Instant;

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};

use super::attr::{self, num, stored, Item};
use super::build::{values, Cond, Refusable, Sends, ALL_OLD};
use super::error::sdk_error;
use super::Table;
use crate::config::StoreConfig;
use crate::error::{Error, Result};
use crate::format::input::Amount;
use crate::format::item::{ItemView, Take, FENCE_ATTRIBUTE};
use crate::holder::StoredValue;

/// Laravel's `add()` condition, which ddblock's acquire shares: no item, or an expired one.
const FREE: &str = "attribute_not_exists(#key) OR #expires_at < :now";
/// The clean-up's condition: this owner's item, written by this attempt.
const THIS_ATTEMPT: &str = "#value = :owner AND #attempt = :attempt";
/// Laravel 13's `touch()` condition, and with the owner, 12.63's lock `refresh()`'s.
const LIVE: &str = "attribute_exists(#key) AND #expires_at > :now";

/// The update of a keep-fence release: expired, no owner, no attempt id, no waiter's stamp (it
/// belongs to the holder that leaves: one left behind would mislead the next holder's waiters);
/// `ddblock_fence` stays.
const RELEASE_KEEPING_FENCE: &str = "SET #expires_at = :expires_at REMOVE #value, #attempt, #since";

/// The answer to [`Table::take_lock`].
#[derive(Debug)]
pub(crate) enum TakeLock {
    /// The lock item is ours, with this fencing token.
    Written {
        /// The fencing token the write set.
        fence: Option<u64>,
    },
    /// The condition failed: a live lock item is there (`None`: the server did not return it).
    Exists(Option<ItemView>),
}

/// The answer to [`Table::delete_if_value`] and [`Table::expire_if_value`].
#[derive(Debug)]
pub(crate) enum DeleteIfValue {
    /// The item was there with that value and is deleted (or, for `expire_if_value`, expired).
    Deleted,
    /// The condition failed. `old`: `Some(item)`: another value is stored (from `ALL_OLD`);
    /// `None`: no old item came back, which means "no item" on servers that honour `ALL_OLD`
    /// ([`Table::empty_old_means_absent`]) and "unknown" on the others. `resent`: an earlier send
    /// of this request (the SDK's retry) may have landed unanswered, so the refusal may be its
    /// own doing; false: the first send found it so.
    NotDeleted {
        /// The item the refusal found, when known.
        old: Option<ItemView>,
        /// An earlier send may have landed unanswered.
        resent: bool,
    },
    /// No answer settled it: the request failed after a send that may have landed unanswered
    /// (every answer lost, or a lost answer and then refusals before the server): its error.
    Unsettled(Error),
}

impl Table {
    /// One GetItem of table key `k`.
    pub(crate) async fn get(&self, k: &str, consistent: bool) -> Result<Option<ItemView>> {
        let c = self.config();
        let out = self.get_req(k, consistent).await?.send().await;
        let out = out.map_err(|e| sdk_error(c, "GetItem", e))?;
        Ok(out.item.map(|i| attr::view(c, &i)))
    }

    /// Laravel's `put()`: an unconditional PutItem of the full item.
    pub(crate) async fn put(&self, k: &str, value: &StoredValue, expires_at: i64) -> Result<()> {
        let c = self.config();
        let item = attr::full_item(c, k, value, expires_at);
        let res = self.put_req(item, "").await?.send().await;
        res.map_err(|e| sdk_error(c, "PutItem", e))?;
        Ok(())
    }

    /// Laravel's `add()`: a PutItem conditioned on `attribute_not_exists(#key) OR
    /// #expires_at < :now`. True when written.
    pub(crate) async fn put_if_free(
        &self,
        k: &str,
        value: &StoredValue,
        expires_at: i64,
    ) -> Result<bool> {
        let item = attr::full_item(self.config(), k, value, expires_at);
        let req = self.put_req(item, FREE).await?;
        let res = req
            .set_expression_attribute_values(values([(":now", num(self.now()))]))
            .send()
            .await;
        Ok(matches!(
            self.answer("PutItem", res, false)?,
            Cond::Written(_)
        ))
    }

    /// ddblock's acquire: ONE UpdateItem writing Laravel's lock item (value = the owner as stored,
    /// expires_at) plus `ddblock_attempt` (this attempt's id) and `ddblock_fence` (the fencing
    /// token: `if_not_exists(#fence, :fence_base) + :one`, so it grows by one per acquisition while
    /// the item exists, and starts from the acquirer's clock in microseconds after a delete), with
    /// Laravel's `add()` condition `attribute_not_exists(#key) OR #expires_at < :now` where `:now`
    /// is `cutoff` (now minus the clock-skew margin). The old item comes back on a failed
    /// condition (`ALL_OLD`). `deadline` bounds the whole operation, the SDK's retries included.
    /// An acquisition that waited also sets `ddblock_since` (when it began waiting, Unix ms), which
    /// other waiters read to let the longest waiting go first.
    pub(crate) async fn take_lock(&self, t: &Take<'_>) -> Result<TakeLock> {
        let Take {
            key: k,
            owner,
            attempt,
            expires_at,
            cutoff,
            fence_base,
            since_ms,
            deadline,
        } = *t;
        const SET: &str = "SET #value = :owner, #expires_at = :expires_at, #attempt = :attempt, \
                           #fence = if_not_exists(#fence, :fence_base) + :one";
        let update = match since_ms {
            None => SET.to_owned(),
            Some(_) => format!("{SET}, #since = :since"),
        };
        let vals = [
            (":owner", stored(owner)),
            (":expires_at", num(expires_at)),
            (":attempt", AttributeValue::S(attempt.to_owned())),
            (":fence_base", AttributeValue::N(fence_base.to_string())),
            (":one", num(1)),
            (":now", num(cutoff)),
        ];
        let since = since_ms.map(|s| (":since", num(s)));
        let req = self.update_req(k, &update, FREE).await?;
        let req = req
            .set_expression_attribute_values(values(vals.into_iter().chain(since)))
            .return_values(ReturnValue::UpdatedNew)
            .return_values_on_condition_check_failure(ALL_OLD);
        // One try per call: the lock layer retries, so it sees every try's outcome. (With the
        // SDK retrying, a try that landed unanswered followed by throttled tries ends in a
        // throttling error that reads as "nothing written".)
        let dates = self.date_reader();
        let res = single_try(req.customize(), self.config(), deadline)
            .interceptor(dates.clone())
            .send()
            .await;
        self.saw_clock(&dates);
        Ok(match self.answer("UpdateItem", res, true)? {
            Cond::Written(out) => TakeLock::Written {
                fence: out
                    .attributes
                    .as_ref()
                    .and_then(|a| a.get(FENCE_ATTRIBUTE))
                    .and_then(|v| v.as_n().ok())
                    .and_then(|n| n.parse::<u64>().ok()),
            },
            Cond::Refused(old) => TakeLock::Exists(self.view(old)),
        })
    }

    /// The clean-up of an acquire attempt whose outcome is unknown: a DeleteItem of the lock item
    /// only if it is this attempt's write (`#value = :owner AND #attempt = :attempt`). True when
    /// it deleted it.
    pub(crate) async fn delete_attempt(
        &self,
        k: &str,
        owner: &StoredValue,
        attempt: &str,
    ) -> Result<bool> {
        let req = self.delete_req(k, THIS_ATTEMPT).await?;
        let res = req
            .set_expression_attribute_values(values([
                (":owner", stored(owner)),
                (":attempt", AttributeValue::S(attempt.to_owned())),
            ]))
            .send()
            .await;
        Ok(matches!(
            self.answer("DeleteItem", res, false)?,
            Cond::Written(_)
        ))
    }

    /// The keep-fence clean-up of an acquire whose outcome stayed unknown: the keep-fence
    /// release's UpdateItem under the clean-up's condition (this owner AND this attempt), so the
    /// fence survives it as it survives a release. `false`: not ours (nothing written).
    pub(crate) async fn expire_attempt(
        &self,
        k: &str,
        owner: &StoredValue,
        attempt: &str,
        expires_at: i64,
    ) -> Result<bool> {
        let req = self
            .update_req(k, RELEASE_KEEPING_FENCE, THIS_ATTEMPT)
            .await?;
        let res = req
            .set_expression_attribute_values(values([
                (":owner", stored(owner)),
                (":attempt", AttributeValue::S(attempt.to_owned())),
                (":expires_at", num(expires_at)),
            ]))
            .send()
            .await;
        Ok(matches!(
            self.answer("UpdateItem", res, false)?,
            Cond::Written(_)
        ))
    }

    /// ddblock's release: ONE DeleteItem conditioned on `#value = :owner` (the owner typed as
    /// stored), asking for the old item when the condition fails. No read first.
    pub(crate) async fn delete_if_value(
        &self,
        k: &str,
        value: &StoredValue,
    ) -> Result<DeleteIfValue> {
        let sends = Sends::default();
        let req = self.delete_req(k, "#value = :owner").await?;
        let req = req
            .set_expression_attribute_values(values([(":owner", stored(value))]))
            .return_values_on_condition_check_failure(ALL_OLD);
        let res = sends.watch(req.customize()).send().await;
        self.released("DeleteItem", res, &sends)
    }

    /// ddblock's keep-fence release: ONE UpdateItem `SET #expires_at = :expires_at REMOVE #value,
    /// #attempt, #since` conditioned on `#value = :owner`, as [`Self::delete_if_value`] (old item
    /// on a failed condition). The item stays, expired and without an owner, with its
    /// `ddblock_fence`; `expires_at` is [`crate::format::item::released_expiry`].
    pub(crate) async fn expire_if_value(
        &self,
        k: &str,
        value: &StoredValue,
        expires_at: i64,
    ) -> Result<DeleteIfValue> {
        let req = self
            .update_req(k, RELEASE_KEEPING_FENCE, "#value = :owner")
            .await?;
        let sends = Sends::default();
        let req = req
            .set_expression_attribute_values(values([
                (":owner", stored(value)),
                (":expires_at", num(expires_at)),
            ]))
            .return_values_on_condition_check_failure(ALL_OLD);
        let res = sends.watch(req.customize()).send().await;
        self.released("UpdateItem", res, &sends)
    }

    /// The keep-fence `force_release`: the same UpdateItem as [`Self::expire_if_value`] whoever
    /// holds the lock, conditioned only on `attribute_exists(#key)` (so a missing item is not
    /// created). False when there was no item (refused): not an error.
    pub(crate) async fn expire_any(&self, k: &str, expires_at: i64) -> Result<bool> {
        let req = self
            .update_req(k, RELEASE_KEEPING_FENCE, "attribute_exists(#key)")
            .await?;
        let res = req
            .set_expression_attribute_values(values([(":expires_at", num(expires_at))]))
            .send()
            .await;
        Ok(matches!(
            self.answer("UpdateItem", res, false)?,
            Cond::Written(_)
        ))
    }

    /// The `force_release`: one unconditional DeleteItem asking for the old item (`ReturnValues:
    /// ALL_OLD`, which every server returns on a delete). True when an item was there.
    pub(crate) async fn delete_any(&self, k: &str) -> Result<bool> {
        let res = self
            .delete_req(k, "")
            .await?
            .return_values(ReturnValue::AllOld)
            .send()
            .await;
        let out = res.map_err(|e| sdk_error(self.config(), "DeleteItem", e))?;
        Ok(out.attributes.is_some_and(|a| !a.is_empty()))
    }

    /// A release's answer: deleted (or expired), or not, with the old item when it came back
    /// and whether an earlier send may have landed; or unsettled, when it failed after a send
    /// that may have landed.
    fn released<T, E: Refusable>(
        &self,
        operation: &'static str,
        res: std::result::Result<T, SdkError<E, HttpResponse>>,
        sends: &Sends,
    ) -> Result<DeleteIfValue> {
        Ok(match self.answer(operation, res, false) {
            Ok(Cond::Written(_)) => DeleteIfValue::Deleted,
            Ok(Cond::Refused(old)) => DeleteIfValue::NotDeleted {
                old: self.view(old),
                resent: sends.maybe_landed_unanswered(),
            },
            // A connection never made sent nothing.
            Err(e @ Error::Transport { sent: false, .. }) => return Err(e),
            Err(e) if sends.maybe_landed_unanswered() => DeleteIfValue::Unsettled(e),
            Err(e) => return Err(e),
        })
    }

    /// An old item as the format layer reads it.
    fn view(&self, old: Option<Item>) -> Option<ItemView> {
        old.map(|i| attr::view(self.config(), &i))
    }

    /// One unconditional DeleteItem (Laravel's `forget()`).
    pub(crate) async fn delete(&self, k: &str) -> Result<()> {
        let res = self.delete_req(k, "").await?.send().await;
        res.map_err(|e| sdk_error(self.config(), "DeleteItem", e))?;
        Ok(())
    }

    /// Laravel 12.63's lock `refresh()`: UpdateItem `SET #expires_at = :expires_at` conditioned
    /// on `attribute_exists(#key) AND #value = :owner AND #expires_at > :now`. True when updated.
    pub(crate) async fn refresh_if_value(
        &self,
        k: &str,
        value: &StoredValue,
        expires_at: i64,
    ) -> Result<bool> {
        let dates = self.date_reader();
        let cond = "attribute_exists(#key) AND #value = :owner AND #expires_at > :now";
        let req = self
            .update_req(k, "SET #expires_at = :expires_at", cond)
            .await?;
        let res = req
            .set_expression_attribute_values(values([
                (":owner", stored(value)),
                (":expires_at", num(expires_at)),
                (":now", num(self.now())),
            ]))
            .customize()
            .interceptor(dates.clone())
            .send()
            .await;
        self.saw_clock(&dates);
        Ok(matches!(
            self.answer("UpdateItem", res, false)?,
            Cond::Written(_)
        ))
    }

    /// Laravel 13's `touch()`: UpdateItem `SET #expires_at = :expires_at` conditioned on
    /// `attribute_exists(#key) AND #expires_at > :now`. True when updated.
    pub(crate) async fn touch(&self, k: &str, expires_at: i64) -> Result<bool> {
        let req = self
            .update_req(k, "SET #expires_at = :expires_at", LIVE)
            .await?;
        let res = req
            .set_expression_attribute_values(values([
                (":expires_at", num(expires_at)),
                (":now", num(self.now())),
            ]))
            .send()
            .await;
        Ok(matches!(
            self.answer("UpdateItem", res, false)?,
            Cond::Written(_)
        ))
    }

    /// Laravel's `increment`/`decrement`: UpdateItem `SET #value = #value + :amount` (or `-`)
    /// conditioned on `attribute_exists(#key) AND #expires_at > :now`, `ReturnValues:
    /// UPDATED_NEW`. The new number text, or `None` when the key is missing or expired.
    pub(crate) async fn add_to_number(
        &self,
        k: &str,
        negate: bool,
        amount: Amount,
    ) -> Result<Option<String>> {
        let c = self.config();
        let op = if negate { '-' } else { '+' };
        let update = format!("SET #value = #value {op} :amount");
        let req = self.update_req(k, &update, LIVE).await?;
        let res = req
            .set_expression_attribute_values(values([
                (":now", num(self.now())),
                (":amount", AttributeValue::N(amount.number_text())),
            ]))
            .return_values(ReturnValue::UpdatedNew)
            .send()
            .await;
        let Cond::Written(out) = self.answer("UpdateItem", res, false)? else {
            return Ok(None);
        };
        out.attributes
            .as_ref()
            .and_then(|a| a.get(c.value_attribute()))
            .and_then(|v| v.as_n().ok())
            .map(|n| Some(n.clone()))
            .ok_or_else(|| Error::Service {
                operation: "UpdateItem",
                code: "MissingAttributes".into(),
                message: "the server did not return the updated value (ReturnValues=UPDATED_NEW)"
                    .into(),
            })
    }
}

/// An operation sent once (no SDK retries), ending by `deadline` plus one attempt timeout when
/// there is a deadline: the caller retries, knowing every try's outcome.
fn single_try<T, E, B>(
    op: aws_sdk_dynamodb::client::customize::CustomizableOperation<T, E, B>,
    cfg: &StoreConfig,
    deadline: Option<Instant>,
) -> aws_sdk_dynamodb::client::customize::CustomizableOperation<T, E, B> {
    let mut b = aws_sdk_dynamodb::config::Builder::default().retry_config(RetryConfig::disabled());
    if let Some(budget) = deadline_budget(cfg, deadline) {
        b = b.timeout_config(TimeoutConfig::builder().operation_timeout(budget).build());
    }
    op.config_override(b)
}

/// The operation timeout that ends an operation by `deadline` plus one attempt timeout.
fn deadline_budget(cfg: &StoreConfig, deadline: Option<Instant>) -> Option<std::time::Duration> {
    let left = deadline?.saturating_duration_since(Instant::now());
    let mut budget = left + cfg.attempt_timeout().unwrap_or_default();
    if let Some(t) = cfg.operation_timeout() {
        budget = budget.min(t);
    }
    Some(budget)
}
