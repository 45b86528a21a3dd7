//! Compare-and-set requests: a strongly consistent read with the version, and one conditional
//! write. The attributes Laravel ignores are in `format::versioned`.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::client::customize::CustomizableOperation;
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::types::AttributeValue;

use super::attr::{self, Item};
use super::build::{values, Cond, Sends, ALL_OLD};
use super::error::sdk_error;
use super::Table;
use crate::config::StoreConfig;
use crate::error::Result;
use crate::format::versioned::{
    Precondition, VersionedItem, VersionedWrite, VERSION_ATTRIBUTE, WRITES_ATTRIBUTE, WRITE_SLOTS,
};

/// The SDK's first retry of a conditional write waits up to this long (its default is up to
/// 1 s): a retry after a lost answer should come before other writers move the item on by
/// [`WRITE_SLOTS`] versions, so that our token is still there to recognise.
const CAS_INITIAL_BACKOFF: Duration = Duration::from_millis(10);

/// The answer to [`Table::put_versioned`].
#[derive(Debug)]
pub(crate) enum CasWrite {
    /// The item is written.
    Written,
    /// The condition failed. `retried`: an earlier attempt of this request got no answer (the
    /// SDK retried), so it may have landed. `old`: the item when the server returned it.
    Refused {
        retried: bool,
        old: Option<Box<VersionedItem>>,
    },
}

/// `op` with the SDK's retries of a conditional write (a quick first retry), its sends counted
/// by `sends`.
fn counted<T, E, B>(
    sends: &Sends,
    op: CustomizableOperation<T, E, B>,
    c: &StoreConfig,
) -> CustomizableOperation<T, E, B> {
    let retry = RetryConfig::standard()
        .with_max_attempts(c.max_attempts().unwrap_or(3))
        .with_initial_backoff(CAS_INITIAL_BACKOFF);
    sends.watch(op.config_override(aws_sdk_dynamodb::Config::builder().retry_config(retry)))
}

/// A versioned item as the format layer reads it.
fn versioned(c: &StoreConfig, i: &Item) -> VersionedItem {
    let version = match i.get(VERSION_ATTRIBUTE) {
        Some(AttributeValue::N(n)) => n.trim().parse::<u64>().ok(),
        _ => None,
    };
    let writes = match i.get(WRITES_ATTRIBUTE) {
        Some(AttributeValue::M(m)) => m
            .iter()
            .filter_map(|(slot, t)| Some((slot.parse::<u64>().ok()?, t.as_s().ok()?.clone())))
            .collect(),
        _ => HashMap::new(),
    };
    VersionedItem {
        item: attr::view(c, i),
        version,
        writes,
    }
}

/// The condition expression (with its names and values) of a precondition.
fn condition(pre: &Precondition) -> (&'static str, Vec<(&'static str, AttributeValue)>) {
    match pre {
        Precondition::Version(0) | Precondition::Seen(Some((0, None))) => {
            ("attribute_not_exists(#version)", vec![])
        }
        Precondition::Version(v) | Precondition::Seen(Some((v, None))) => {
            ("#version = :expected", vec![(":expected", num_u(*v))])
        }
        Precondition::Seen(None) => ("attribute_not_exists(#key)", vec![]),
        Precondition::Seen(Some((0, Some(seen)))) => (
            "attribute_not_exists(#version) AND #value = :seen",
            vec![(":seen", attr::stored(seen))],
        ),
        Precondition::Seen(Some((v, Some(seen)))) => (
            "#version = :expected AND #value = :seen",
            vec![(":expected", num_u(*v)), (":seen", attr::stored(seen))],
        ),
    }
}

impl Table {
    /// One strongly consistent GetItem with the version attributes (never a GSI: indexes lag).
    pub(crate) async fn get_versioned(&self, k: &str) -> Result<Option<VersionedItem>> {
        let c = self.config();
        let out = self.get_req(k, true).await?.send().await;
        let out = out.map_err(|e| sdk_error(c, "GetItem", e))?;
        Ok(out.item.map(|i| versioned(c, &i)))
    }

    /// ONE conditional write of version `version` with `token` in its slot: a PutItem of the
    /// whole item when the precondition expects no version (replacing whatever was there, as
    /// Laravel's `put`), else an UpdateItem `SET #value, #expires_at, #version, #writes.#slot`.
    /// `ReturnValuesOnConditionCheckFailure: ALL_OLD` either way.
    pub(crate) async fn put_versioned(&self, w: &VersionedWrite<'_>) -> Result<CasWrite> {
        let VersionedWrite {
            key: k,
            value,
            expires_at,
            pre,
            version,
            token,
        } = *w;
        let c = self.config();
        let slot = (version % WRITE_SLOTS).to_string();
        let (cond, pre_values) = condition(pre);
        let sends = Sends::default();
        let answer = if pre.version() == 0 {
            let mut item = attr::full_item(c, k, value, expires_at);
            item.insert(VERSION_ATTRIBUTE.to_owned(), num_u(version));
            item.insert(
                WRITES_ATTRIBUTE.to_owned(),
                AttributeValue::M(HashMap::from([(slot, AttributeValue::S(token.into()))])),
            );
            let req = self.put_req(item, cond).await?;
            let req = req
                .set_expression_attribute_values(values(pre_values))
                .return_values_on_condition_check_failure(ALL_OLD);
            let res = counted(&sends, req.customize(), c).send().await;
            self.answer("PutItem", res, false)?.map(|_| ())
        } else {
            let update = "SET #value = :value, #expires_at = :expires_at, #version = :version, \
                          #writes.#slot = :token";
            let req = self.update_req(k, update, cond).await?;
            let vals = [
                (":value", attr::stored(value)),
                (":expires_at", attr::num(expires_at)),
                (":version", num_u(version)),
                (":token", AttributeValue::S(token.into())),
            ];
            let req = req
                .set_expression_attribute_values(values(vals.into_iter().chain(pre_values)))
                .expression_attribute_names("#slot", slot)
                .return_values_on_condition_check_failure(ALL_OLD);
            let res = counted(&sends, req.customize(), c).send().await;
            self.answer("UpdateItem", res, false)?.map(|_| ())
        };
        Ok(match answer {
            Cond::Written(()) => CasWrite::Written,
            Cond::Refused(old) => CasWrite::Refused {
                retried: sends.count() > 1,
                old: old.map(|i| Box::new(versioned(c, &i))),
            },
        })
    }
}

/// A DynamoDB number attribute from an unsigned integer.
fn num_u(n: u64) -> AttributeValue {
    AttributeValue::N(n.to_string())
}
