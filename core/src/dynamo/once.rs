//! The once-only guard's requests, each named by what it means. The item is a Laravel cache item
//! whose value is a claim counter; the attributes Laravel ignores are in `format::once`.

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};

use super::attr::{self, num, Item};
use super::build::{values, Cond, ALL_OLD};
use super::error::sdk_error;
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
        let req = self
            .update_req(
                k,
                "ADD #value :one SET #claim = if_not_exists(#claim, :token), \
                 #expires_at = if_not_exists(#expires_at, :expires_at)",
                "attribute_not_exists(#key) OR (#expires_at >= :now AND attribute_exists(#claim))",
            )
            .await?;
        let res = req
            .set_expression_attribute_values(values([
                (":one", num(1)),
                (":token", AttributeValue::S(token.to_owned())),
                (":expires_at", num(expires_at)),
                (":now", num(self.now())),
            ]))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ALL_OLD)
            .send()
            .await;
        // The condition only fails on an existing item: no old item means the server ignored
        // ALL_OLD.
        Ok(match self.answer("UpdateItem", res, true)? {
            Cond::Written(out) => {
                ClaimAdd::Applied(self.once_item(&out.attributes.unwrap_or_default()))
            }
            Cond::Refused(old) => ClaimAdd::Refused(old.map(|i| self.once_item(&i))),
        })
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
        item.insert(c.value_attribute().to_owned(), num(1));
        item.insert(c.expiration_attribute().to_owned(), num(expires_at));
        item.insert(
            CLAIM_ATTRIBUTE.to_owned(),
            AttributeValue::S(token.to_owned()),
        );
        let cond = "attribute_not_exists(#key) OR #expires_at < :now OR \
                    (#value = :zero AND attribute_not_exists(#claim))";
        let res = self
            .put_req(item, cond)
            .await?
            .set_expression_attribute_values(values([(":zero", num(0)), (":now", num(self.now()))]))
            .return_values_on_condition_check_failure(ALL_OLD)
            .send()
            .await;
        Ok(self.conditional(self.answer("PutItem", res, true)?))
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
        let req = self
            .update_req(
                k,
                "SET #done = :done_at, #expires_at = :expires_at",
                "#claim = :token",
            )
            .await?;
        let res = req
            .set_expression_attribute_values(values([
                (":done_at", num(done_at)),
                (":expires_at", num(expires_at)),
                (":token", AttributeValue::S(token.to_owned())),
            ]))
            .send()
            .await;
        Ok(matches!(
            self.answer("UpdateItem", res, false)?,
            Cond::Written(_)
        ))
    }

    /// Gives a claim back: UpdateItem `SET #value = :zero, #given_back = :token REMOVE #claim`
    /// conditioned on `#claim = :token AND attribute_not_exists(#done)`. The expiry stays.
    pub(crate) async fn give_back(&self, k: &str, token: &str) -> Result<Conditional> {
        let req = self
            .update_req(
                k,
                "SET #value = :zero, #given_back = :token REMOVE #claim",
                "#claim = :token AND attribute_not_exists(#done)",
            )
            .await?;
        let res = req
            .set_expression_attribute_values(values([
                (":zero", num(0)),
                (":token", AttributeValue::S(token.to_owned())),
            ]))
            .return_values_on_condition_check_failure(ALL_OLD)
            .send()
            .await;
        Ok(self.conditional(self.answer("UpdateItem", res, false)?))
    }

    /// One strongly consistent GetItem of a once item.
    pub(crate) async fn get_once(&self, k: &str) -> Result<Option<OnceItem>> {
        let out = self.get_req(k, true).await?.send().await;
        let out = out.map_err(|e| sdk_error(self.config(), "GetItem", e))?;
        Ok(out.item.map(|i| self.once_item(&i)))
    }

    /// A once item as the format layer reads it.
    fn once_item(&self, i: &Item) -> OnceItem {
        once_item(self.config(), i)
    }

    /// A conditional once write's answer.
    fn conditional<T>(&self, answer: Cond<T>) -> Conditional {
        match answer {
            Cond::Written(_) => Conditional::Written,
            Cond::Refused(old) => Conditional::Refused(old.map(|i| self.once_item(&i))),
        }
    }
}
