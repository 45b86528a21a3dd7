//! Single-item requests, each named by what it means. Every expression ddblock sends on one item
//! is written here (Laravel's conditions are quoted from `docs/format.md`).

use std::time::Instant;

use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};

use super::attr::{self, Item};
use super::error::{is_condition_failure, sdk_error};
use super::Table;
use crate::config::StoreConfig;
use crate::error::{Error, Result};
use crate::format::input::Amount;
use crate::format::item::{ItemView, Take, ATTEMPT_ATTRIBUTE, FENCE_ATTRIBUTE, SINCE_ATTRIBUTE};
use crate::holder::StoredValue;

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
    /// The condition failed. `Some(item)`: another value is stored (from `ALL_OLD`); `None`: no
    /// old item came back, which means "no item" on servers that honour `ALL_OLD`
    /// ([`Table::empty_old_means_absent`]) and "unknown" on the others.
    NotDeleted(Option<ItemView>),
}

impl Table {
    /// One GetItem of table key `k`.
    pub(crate) async fn get(&self, k: &str, consistent: bool) -> Result<Option<ItemView>> {
        let c = self.config();
        let out = self
            .client()
            .await?
            .get_item()
            .table_name(c.table())
            .set_key(Some(attr::key(c, k)))
            .consistent_read(consistent)
            .send()
            .await
            .map_err(|e| sdk_error(c, "GetItem", e))?;
        Ok(out.item.map(|i| attr::view(c, &i)))
    }

    /// Laravel's `put()`: an unconditional PutItem of the full item.
    pub(crate) async fn put(&self, k: &str, value: &StoredValue, expires_at: i64) -> Result<()> {
        let c = self.config();
        self.client()
            .await?
            .put_item()
            .table_name(c.table())
            .set_item(Some(attr::full_item(c, k, value, expires_at)))
            .send()
            .await
            .map_err(|e| sdk_error(c, "PutItem", e))?;
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
        let c = self.config();
        let res = self
            .client()
            .await?
            .put_item()
            .table_name(c.table())
            .set_item(Some(attr::full_item(c, k, value, expires_at)))
            .condition_expression("attribute_not_exists(#key) OR #expires_at < :now")
            .expression_attribute_names("#key", c.key_attribute())
            .expression_attribute_names("#expires_at", c.expiration_attribute())
            .expression_attribute_values(":now", attr::num(self.now()))
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) if is_condition_failure(&e) => Ok(false),
            Err(e) => Err(sdk_error(c, "PutItem", e)),
        }
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
        let c = self.config();
        const SET: &str = "SET #value = :owner, #expires_at = :expires_at, #attempt = :attempt, \
                           #fence = if_not_exists(#fence, :fence_base) + :one";
        let mut req = self
            .client()
            .await?
            .update_item()
            .table_name(c.table())
            .set_key(Some(attr::key(c, k)));
        req = match since_ms {
            None => req.update_expression(SET),
            Some(since) => req
                .update_expression(format!("{SET}, #since = :since"))
                .expression_attribute_names("#since", SINCE_ATTRIBUTE)
                .expression_attribute_values(":since", attr::num(since)),
        };
        let req = req
            .condition_expression("attribute_not_exists(#key) OR #expires_at < :now")
            .expression_attribute_names("#key", c.key_attribute())
            .expression_attribute_names("#value", c.value_attribute())
            .expression_attribute_names("#expires_at", c.expiration_attribute())
            .expression_attribute_names("#attempt", ATTEMPT_ATTRIBUTE)
            .expression_attribute_names("#fence", FENCE_ATTRIBUTE)
            .expression_attribute_values(":owner", attr::stored(owner))
            .expression_attribute_values(":expires_at", attr::num(expires_at))
            .expression_attribute_values(":attempt", AttributeValue::S(attempt.to_owned()))
            .expression_attribute_values(":fence_base", AttributeValue::N(fence_base.to_string()))
            .expression_attribute_values(":one", AttributeValue::N("1".into()))
            .expression_attribute_values(":now", attr::num(cutoff))
            .return_values(ReturnValue::UpdatedNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        // One try per call: the lock layer retries, so it sees every try's outcome. (With the
        // SDK retrying, a try that landed unanswered followed by throttled tries ends in a
        // throttling error that reads as "nothing written".)
        let dates = self.date_reader();
        let res = single_try(req.customize(), c, deadline)
            .interceptor(dates.clone())
            .send()
            .await;
        self.saw_clock(&dates);
        match res {
            Ok(out) => {
                let fence = out
                    .attributes
                    .as_ref()
                    .and_then(|a| a.get(FENCE_ATTRIBUTE))
                    .and_then(|v| v.as_n().ok())
                    .and_then(|n| n.parse::<u64>().ok());
                Ok(TakeLock::Written { fence })
            }
            Err(SdkError::ServiceError(se)) if se.err().is_conditional_check_failed_exception() => {
                let old = match se.into_err() {
                    UpdateItemError::ConditionalCheckFailedException(e) => e.item,
                    _ => None,
                };
                let old = old.filter(|i| !i.is_empty());
                self.learn_all_old(old.is_some());
                Ok(TakeLock::Exists(old.map(|i| attr::view(c, &i))))
            }
            Err(e) => Err(sdk_error(c, "UpdateItem", e)),
        }
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
        let c = self.config();
        let res = self
            .client()
            .await?
            .delete_item()
            .table_name(c.table())
            .set_key(Some(attr::key(c, k)))
            .condition_expression("#value = :owner AND #attempt = :attempt")
            .expression_attribute_names("#value", c.value_attribute())
            .expression_attribute_names("#attempt", ATTEMPT_ATTRIBUTE)
            .expression_attribute_values(":owner", attr::stored(owner))
            .expression_attribute_values(":attempt", AttributeValue::S(attempt.to_owned()))
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) if is_condition_failure(&e) => Ok(false),
            Err(e) => Err(sdk_error(c, "DeleteItem", e)),
        }
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
        let c = self.config();
        let res = self
            .client()
            .await?
            .update_item()
            .table_name(c.table())
            .set_key(Some(attr::key(c, k)))
            .update_expression(RELEASE_KEEPING_FENCE)
            .condition_expression("#value = :owner AND #attempt = :attempt")
            .expression_attribute_names("#value", c.value_attribute())
            .expression_attribute_names("#expires_at", c.expiration_attribute())
            .expression_attribute_names("#attempt", ATTEMPT_ATTRIBUTE)
            .expression_attribute_names("#since", SINCE_ATTRIBUTE)
            .expression_attribute_values(":owner", attr::stored(owner))
            .expression_attribute_values(":attempt", AttributeValue::S(attempt.to_owned()))
            .expression_attribute_values(":expires_at", attr::num(expires_at))
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) if is_condition_failure(&e) => Ok(false),
            Err(e) => Err(sdk_error(c, "UpdateItem", e)),
        }
    }

    /// ddblock's release: ONE DeleteItem conditioned on `#value = :owner` (the owner typed as
    /// stored), asking for the old item when the condition fails. No read first.
    pub(crate) async fn delete_if_value(
        &self,
        k: &str,
        value: &StoredValue,
    ) -> Result<DeleteIfValue> {
        let c = self.config();
        let res = self
            .client()
            .await?
            .delete_item()
            .table_name(c.table())
            .set_key(Some(attr::key(c, k)))
            .condition_expression("#value = :owner")
            .expression_attribute_names("#value", c.value_attribute())
            .expression_attribute_values(":owner", attr::stored(value))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match res {
            Ok(_) => Ok(DeleteIfValue::Deleted),
            Err(SdkError::ServiceError(se)) if se.err().is_conditional_check_failed_exception() => {
                let old = match se.into_err() {
                    DeleteItemError::ConditionalCheckFailedException(e) => e.item,
                    _ => None,
                };
                Ok(DeleteIfValue::NotDeleted(self.old_view(old)))
            }
            Err(e) => Err(sdk_error(c, "DeleteItem", e)),
        }
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
        let c = self.config();
        let res = self
            .client()
            .await?
            .update_item()
            .table_name(c.table())
            .set_key(Some(attr::key(c, k)))
            .update_expression(RELEASE_KEEPING_FENCE)
            .condition_expression("#value = :owner")
            .expression_attribute_names("#value", c.value_attribute())
            .expression_attribute_names("#expires_at", c.expiration_attribute())
            .expression_attribute_names("#attempt", ATTEMPT_ATTRIBUTE)
            .expression_attribute_names("#since", SINCE_ATTRIBUTE)
            .expression_attribute_values(":owner", attr::stored(value))
            .expression_attribute_values(":expires_at", attr::num(expires_at))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match res {
            Ok(_) => Ok(DeleteIfValue::Deleted),
            Err(SdkError::ServiceError(se)) if se.err().is_conditional_check_failed_exception() => {
                let old = match se.into_err() {
                    UpdateItemError::ConditionalCheckFailedException(e) => e.item,
                    _ => None,
                };
                Ok(DeleteIfValue::NotDeleted(self.old_view(old)))
            }
            Err(e) => Err(sdk_error(c, "UpdateItem", e)),
        }
    }

    /// The keep-fence `force_release`: the same UpdateItem as [`Self::expire_if_value`] whoever
    /// holds the lock, conditioned only on `attribute_exists(#key)` (so a missing item is not
    /// created); a missing item is not an error.
    pub(crate) async fn expire_any(&self, k: &str, expires_at: i64) -> Result<()> {
        let c = self.config();
        let res = self
            .client()
            .await?
            .update_item()
            .table_name(c.table())
            .set_key(Some(attr::key(c, k)))
            .update_expression(RELEASE_KEEPING_FENCE)
            .condition_expression("attribute_exists(#key)")
            .expression_attribute_names("#key", c.key_attribute())
            .expression_attribute_names("#value", c.value_attribute())
            .expression_attribute_names("#expires_at", c.expiration_attribute())
            .expression_attribute_names("#attempt", ATTEMPT_ATTRIBUTE)
            .expression_attribute_names("#since", SINCE_ATTRIBUTE)
            .expression_attribute_values(":expires_at", attr::num(expires_at))
            .send()
            .await;
        match res {
            Ok(_) => Ok(()),
            Err(e) if is_condition_failure(&e) => Ok(()),
            Err(e) => Err(sdk_error(c, "UpdateItem", e)),
        }
    }

    /// The old item of a failed release condition (`ALL_OLD`), noting that the server sent one.
    fn old_view(&self, old: Option<Item>) -> Option<ItemView> {
        let old = old.filter(|i| !i.is_empty());
        if old.is_some() {
            self.learn_all_old(true);
        }
        old.map(|i| attr::view(self.config(), &i))
    }

    /// One unconditional DeleteItem (Laravel's `forget()` and `forceRelease()`).
    pub(crate) async fn delete(&self, k: &str) -> Result<()> {
        let c = self.config();
        self.client()
            .await?
            .delete_item()
            .table_name(c.table())
            .set_key(Some(attr::key(c, k)))
            .send()
            .await
            .map_err(|e| sdk_error(c, "DeleteItem", e))?;
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
        let c = self.config();
        let dates = self.date_reader();
        let res = self
            .client()
            .await?
            .update_item()
            .table_name(c.table())
            .set_key(Some(attr::key(c, k)))
            .update_expression("SET #expires_at = :expires_at")
            .condition_expression(
                "attribute_exists(#key) AND #value = :owner AND #expires_at > :now",
            )
            .expression_attribute_names("#key", c.key_attribute())
            .expression_attribute_names("#value", c.value_attribute())
            .expression_attribute_names("#expires_at", c.expiration_attribute())
            .expression_attribute_values(":owner", attr::stored(value))
            .expression_attribute_values(":expires_at", attr::num(expires_at))
            .expression_attribute_values(":now", attr::num(self.now()))
            .customize()
            .interceptor(dates.clone())
            .send()
            .await;
        self.saw_clock(&dates);
        match res {
            Ok(_) => Ok(true),
            Err(e) if is_condition_failure(&e) => Ok(false),
            Err(e) => Err(sdk_error(c, "UpdateItem", e)),
        }
    }

    /// Laravel 13's `touch()`: UpdateItem `SET #expires_at = :expires_at` conditioned on
    /// `attribute_exists(#key) AND #expires_at > :now`. True when updated.
    pub(crate) async fn touch(&self, k: &str, expires_at: i64) -> Result<bool> {
        let c = self.config();
        let res = self
            .client()
            .await?
            .update_item()
            .table_name(c.table())
            .set_key(Some(attr::key(c, k)))
            .update_expression("SET #expires_at = :expires_at")
            .condition_expression("attribute_exists(#key) AND #expires_at > :now")
            .expression_attribute_names("#key", c.key_attribute())
            .expression_attribute_names("#expires_at", c.expiration_attribute())
            .expression_attribute_values(":expires_at", attr::num(expires_at))
            .expression_attribute_values(":now", attr::num(self.now()))
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) if is_condition_failure(&e) => Ok(false),
            Err(e) => Err(sdk_error(c, "UpdateItem", e)),
        }
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
        let res = self
            .client()
            .await?
            .update_item()
            .table_name(c.table())
            .set_key(Some(attr::key(c, k)))
            .update_expression(format!("SET #value = #value {op} :amount"))
            .condition_expression("attribute_exists(#key) AND #expires_at > :now")
            .expression_attribute_names("#key", c.key_attribute())
            .expression_attribute_names("#value", c.value_attribute())
            .expression_attribute_names("#expires_at", c.expiration_attribute())
            .expression_attribute_values(":now", attr::num(self.now()))
            .expression_attribute_values(":amount", AttributeValue::N(amount.number_text()))
            .return_values(ReturnValue::UpdatedNew)
            .send()
            .await;
        match res {
            Ok(out) => out
                .attributes
                .as_ref()
                .and_then(|a| a.get(c.value_attribute()))
                .and_then(|v| v.as_n().ok())
                .map(|n| Some(n.clone()))
                .ok_or_else(|| Error::Service {
                    operation: "UpdateItem",
                    code: "MissingAttributes".into(),
                    message:
                        "the server did not return the updated value (ReturnValues=UPDATED_NEW)"
                            .into(),
                }),
            Err(e) if is_condition_failure(&e) => Ok(None),
            Err(e) => Err(sdk_error(c, "UpdateItem", e)),
        }
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
