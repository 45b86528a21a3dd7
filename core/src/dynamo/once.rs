//! The once-only guard's requests, each named by what it means. The item is a Laravel cache item
//! whose value is a claim counter; the attributes Laravel ignores are in `format::once`.

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};

use super::attr::{self, Item};
use super::error::{is_condition_failure, sdk_error};
use super::Table;
use crate::config::StoreConfig;
use crate::error::Result;
use crate::format::item::parse_timestamp;
use crate::format::once::{OnceItem, CLAIM_ATTRIBUTE, DONE_ATTRIBUTE, GIVEN_BACK_ATTRIBUTE};

/// The answer to [`Table::claim_add`].
#[derive(Debug)]
pub(crate) enum ClaimAdd {
    /// The counter went up; the item after the update.
    Applied(OnceItem),
    /// The condition failed: the item is expired, given back, or a claim without a token. `Some`
    /// with the old item when the server returned it (`ALL_OLD`); `None` when it did not.
    Refused(Option<OnceItem>),
}

/// The answer to [`Table::claim_fresh`] and [`Table::give_back`].
#[derive(Debug)]
pub(crate) enum Conditional {
    /// The write is done.
    Written,
    /// The condition failed; the old item when the server returned it.
    Refused(Option<OnceItem>),
}

/// A once item as the format layer reads it.
fn once_item(c: &StoreConfig, i: &Item) -> OnceItem {
    let num = |name: &str| match i.get(name) {
        Some(AttributeValue::N(n)) => parse_timestamp(n),
        _ => None,
    };
    let text = |name: &str| match i.get(name) {
        Some(AttributeValue::S(s)) => Some(s.clone()),
        _ => None,
    };
    OnceItem {
        claims: num(c.value_attribute()),
        expires_at: num(c.expiration_attribute()),
        claim: text(CLAIM_ATTRIBUTE),
        done_at: num(DONE_ATTRIBUTE),
        given_back: text(GIVEN_BACK_ATTRIBUTE),
    }
}

impl Table {
    /// A claim: ONE UpdateItem `ADD #value :one SET #claim = if_not_exists(#claim, :token),
    /// #expires_at = if_not_exists(#expires_at, :expires_at)` with `ReturnValues: ALL_NEW`,
    /// conditioned on `attribute_not_exists(#key) OR (#expires_at >= :now AND
    /// attribute_exists(#claim))`: a new item, or a live one some ddblock caller claimed. The
    /// token is set only by the update that creates the item, so it names the caller that saw 1.
    pub(crate) async fn claim_add(
        &self,
        k: &str,
        token: &str,
        expires_at: i64,
    ) -> Result<ClaimAdd> {
        let c = self.config();
        let res = self
            .client()
            .await?
            .update_item()
            .table_name(c.table())
            .set_key(Some(attr::key(c, k)))
            .update_expression(
                "ADD #value :one SET #claim = if_not_exists(#claim, :token), \
                 #expires_at = if_not_exists(#expires_at, :expires_at)",
            )
            .condition_expression(
                "attribute_not_exists(#key) OR (#expires_at >= :now AND attribute_exists(#claim))",
            )
            .expression_attribute_names("#key", c.key_attribute())
            .expression_attribute_names("#value", c.value_attribute())
            .expression_attribute_names("#expires_at", c.expiration_attribute())
            .expression_attribute_names("#claim", CLAIM_ATTRIBUTE)
            .expression_attribute_values(":one", attr::num(1))
            .expression_attribute_values(":token", AttributeValue::S(token.to_owned()))
            .expression_attribute_values(":expires_at", attr::num(expires_at))
            .expression_attribute_values(":now", attr::num(self.now()))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match res {
            Ok(out) => Ok(ClaimAdd::Applied(once_item(
                c,
                &out.attributes.unwrap_or_default(),
            ))),
            Err(SdkError::ServiceError(se)) if se.err().is_conditional_check_failed_exception() => {
                let old = match se.into_err() {
                    UpdateItemError::ConditionalCheckFailedException(e) => e.item,
                    _ => None,
                };
                // The condition only fails on an existing item: no old item means the server
                // ignored ALL_OLD.
                let old = old.filter(|i| !i.is_empty());
                self.learn_all_old(old.is_some());
                Ok(ClaimAdd::Refused(old.map(|i| once_item(c, &i))))
            }
            Err(e) => Err(sdk_error(c, "UpdateItem", e)),
        }
    }

    /// A claim over an expired or given-back item: a PutItem of `{key, value: 1, expires_at,
    /// ddblock_claim: token}` conditioned on `attribute_not_exists(#key) OR #expires_at < :now OR
    /// (#value = :zero AND attribute_not_exists(#claim))`.
    pub(crate) async fn claim_fresh(
        &self,
        k: &str,
        token: &str,
        expires_at: i64,
    ) -> Result<Conditional> {
        let c = self.config();
        let mut item = attr::key(c, k);
        item.insert(c.value_attribute().to_owned(), attr::num(1));
        item.insert(c.expiration_attribute().to_owned(), attr::num(expires_at));
        item.insert(
            CLAIM_ATTRIBUTE.to_owned(),
            AttributeValue::S(token.to_owned()),
        );
        let res = self
            .client()
            .await?
            .put_item()
            .table_name(c.table())
            .set_item(Some(item))
            .condition_expression(
                "attribute_not_exists(#key) OR #expires_at < :now OR \
                 (#value = :zero AND attribute_not_exists(#claim))",
            )
            .expression_attribute_names("#key", c.key_attribute())
            .expression_attribute_names("#value", c.value_attribute())
            .expression_attribute_names("#expires_at", c.expiration_attribute())
            .expression_attribute_names("#claim", CLAIM_ATTRIBUTE)
            .expression_attribute_values(":zero", attr::num(0))
            .expression_attribute_values(":now", attr::num(self.now()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match res {
            Ok(_) => Ok(Conditional::Written),
            Err(SdkError::ServiceError(se)) if se.err().is_conditional_check_failed_exception() => {
                let old = match se.into_err() {
                    PutItemError::ConditionalCheckFailedException(e) => e.item,
                    _ => None,
                };
                let old = old.filter(|i| !i.is_empty());
                self.learn_all_old(old.is_some());
                Ok(Conditional::Refused(old.map(|i| once_item(c, &i))))
            }
            Err(e) => Err(sdk_error(c, "PutItem", e)),
        }
    }

    /// Marks a claim done: UpdateItem `SET #done = :done_at, #expires_at = :expires_at`
    /// conditioned on `#claim = :token` (so a retry after a lost answer succeeds again, and a
    /// claim taken over by someone else is left alone). True when ours.
    pub(crate) async fn mark_done(
        &self,
        k: &str,
        token: &str,
        done_at: i64,
        expires_at: i64,
    ) -> Result<bool> {
        let c = self.config();
        let res = self
            .client()
            .await?
            .update_item()
            .table_name(c.table())
            .set_key(Some(attr::key(c, k)))
            .update_expression("SET #done = :done_at, #expires_at = :expires_at")
            .condition_expression("#claim = :token")
            .expression_attribute_names("#done", DONE_ATTRIBUTE)
            .expression_attribute_names("#expires_at", c.expiration_attribute())
            .expression_attribute_names("#claim", CLAIM_ATTRIBUTE)
            .expression_attribute_values(":done_at", attr::num(done_at))
            .expression_attribute_values(":expires_at", attr::num(expires_at))
            .expression_attribute_values(":token", AttributeValue::S(token.to_owned()))
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) if is_condition_failure(&e) => Ok(false),
            Err(e) => Err(sdk_error(c, "UpdateItem", e)),
        }
    }

    /// Gives a claim back: UpdateItem `SET #value = :zero, #given_back = :token REMOVE #claim`
    /// conditioned on `#claim = :token AND attribute_not_exists(#done)`. The expiry stays.
    pub(crate) async fn give_back(&self, k: &str, token: &str) -> Result<Conditional> {
        let c = self.config();
        let res = self
            .client()
            .await?
            .update_item()
            .table_name(c.table())
            .set_key(Some(attr::key(c, k)))
            .update_expression("SET #value = :zero, #given_back = :token REMOVE #claim")
            .condition_expression("#claim = :token AND attribute_not_exists(#done)")
            .expression_attribute_names("#value", c.value_attribute())
            .expression_attribute_names("#given_back", GIVEN_BACK_ATTRIBUTE)
            .expression_attribute_names("#claim", CLAIM_ATTRIBUTE)
            .expression_attribute_names("#done", DONE_ATTRIBUTE)
            .expression_attribute_values(":zero", attr::num(0))
            .expression_attribute_values(":token", AttributeValue::S(token.to_owned()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match res {
            Ok(_) => Ok(Conditional::Written),
            Err(SdkError::ServiceError(se)) if se.err().is_conditional_check_failed_exception() => {
                let old = match se.into_err() {
                    UpdateItemError::ConditionalCheckFailedException(e) => e.item,
                    _ => None,
                };
                let old = old.filter(|i| !i.is_empty());
                if old.is_some() {
                    self.learn_all_old(true);
                }
                Ok(Conditional::Refused(old.map(|i| once_item(c, &i))))
            }
            Err(e) => Err(sdk_error(c, "UpdateItem", e)),
        }
    }

    /// One strongly consistent GetItem of a once item.
    pub(crate) async fn get_once(&self, k: &str) -> Result<Option<OnceItem>> {
        let c = self.config();
        let out = self
            .client()
            .await?
            .get_item()
            .table_name(c.table())
            .set_key(Some(attr::key(c, k)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| sdk_error(c, "GetItem", e))?;
        Ok(out.item.map(|i| once_item(c, &i)))
    }
}
