//! What every single-item request starts and ends with: builders pre-filled with the table, the
//! key and the attribute names their expressions use, and the one reading of a conditional
//! write's answer (written, or refused with the old item).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use aws_sdk_dynamodb::client::customize::CustomizableOperation;
use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::config::interceptors::{
    BeforeTransmitInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::delete_item::{
    builders::DeleteItemFluentBuilder, DeleteItemError,
};
use aws_sdk_dynamodb::operation::get_item::builders::GetItemFluentBuilder;
use aws_sdk_dynamodb::operation::put_item::{builders::PutItemFluentBuilder, PutItemError};
use aws_sdk_dynamodb::operation::update_item::{
    builders::UpdateItemFluentBuilder, UpdateItemError,
};
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};

use super::attr::{self, Item};
use super::error::sdk_error;
use super::Table;
use crate::config::StoreConfig;
use crate::error::Result;
use crate::format::item::{ATTEMPT_ATTRIBUTE, FENCE_ATTRIBUTE, SINCE_ATTRIBUTE};
use crate::format::once::{CLAIM_ATTRIBUTE, DONE_ATTRIBUTE, GIVEN_BACK_ATTRIBUTE};
use crate::format::versioned::{VERSION_ATTRIBUTE, WRITES_ATTRIBUTE};

/// The attribute a placeholder `#name` of an expression stands for (Laravel's three configurable
/// attributes, and those ddblock adds and Laravel ignores).
fn attribute<'a>(c: &'a StoreConfig, placeholder: &str) -> Option<&'a str> {
    Some(match placeholder {
        "#key" => c.key_attribute(),
        "#value" => c.value_attribute(),
        "#expires_at" => c.expiration_attribute(),
        "#attempt" => ATTEMPT_ATTRIBUTE,
        "#fence" => FENCE_ATTRIBUTE,
        "#since" => SINCE_ATTRIBUTE,
        "#claim" => CLAIM_ATTRIBUTE,
        "#done" => DONE_ATTRIBUTE,
        "#given_back" => GIVEN_BACK_ATTRIBUTE,
        "#version" => VERSION_ATTRIBUTE,
        "#writes" => WRITES_ATTRIBUTE,
        _ => return None,
    })
}

/// `ExpressionAttributeNames` for exactly the placeholders `exprs` use (DynamoDB refuses unused
/// ones); a placeholder of no known attribute (`#slot`) is the caller's to add.
fn names(c: &StoreConfig, exprs: &[&str]) -> Option<HashMap<String, String>> {
    let mut out = HashMap::new();
    for e in exprs {
        for (i, _) in e.match_indices('#') {
            let len = e[i + 1..]
                .find(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
                .unwrap_or(e.len() - i - 1);
            let p = &e[i..=i + len];
            if let Some(a) = attribute(c, p) {
                out.insert(p.to_owned(), a.to_owned());
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

/// `ExpressionAttributeValues` from `(placeholder, value)` pairs.
pub(super) fn values<'a>(
    v: impl IntoIterator<Item = (&'a str, AttributeValue)>,
) -> Option<HashMap<String, AttributeValue>> {
    let v: HashMap<String, AttributeValue> =
        v.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    (!v.is_empty()).then_some(v)
}

/// A conditional write's answer.
#[derive(Debug)]
pub(super) enum Cond<T> {
    /// The write is done; the SDK's output.
    Written(T),
    /// The condition failed; the old item when the server returned it (`ALL_OLD`).
    Refused(Option<Item>),
}

impl<T> Cond<T> {
    /// The output of a write, mapped.
    pub(super) fn map<U>(self, f: impl FnOnce(T) -> U) -> Cond<U> {
        match self {
            Cond::Written(t) => Cond::Written(f(t)),
            Cond::Refused(old) => Cond::Refused(old),
        }
    }
}

/// The SDK errors of the writes, which carry the old item on a failed condition.
pub(super) trait Refusable:
    aws_sdk_dynamodb::error::ProvideErrorMetadata + std::error::Error + Send + Sync + 'static
{
    /// The condition failed.
    fn is_refusal(&self) -> bool;
    /// The old item of a failed condition, when the server returned it.
    fn old(self) -> Option<Item>;
}

macro_rules! refusable {
    ($($error:ty),*) => {$(
        impl Refusable for $error {
            fn is_refusal(&self) -> bool {
                self.is_conditional_check_failed_exception()
            }
            fn old(self) -> Option<Item> {
                match self {
                    Self::ConditionalCheckFailedException(e) => e.item,
                    _ => None,
                }
            }
        }
    )*};
}
refusable!(PutItemError, UpdateItemError, DeleteItemError);

impl Table {
    /// A GetItem of table key `k`.
    pub(super) async fn get_req(&self, k: &str, consistent: bool) -> Result<GetItemFluentBuilder> {
        let c = self.config();
        Ok(self
            .client()
            .await?
            .get_item()
            .table_name(c.table())
            .set_key(Some(attr::key(c, k)))
            .consistent_read(consistent))
    }

    /// A PutItem of `item` under `condition` (empty: none), with its attribute names.
    pub(super) async fn put_req(
        &self,
        item: Item,
        condition: &str,
    ) -> Result<PutItemFluentBuilder> {
        let c = self.config();
        Ok(self
            .client()
            .await?
            .put_item()
            .table_name(c.table())
            .set_item(Some(item))
            .set_condition_expression((!condition.is_empty()).then(|| condition.to_owned()))
            .set_expression_attribute_names(names(c, &[condition])))
    }

    /// An UpdateItem of table key `k` with `update` under `condition`, with their attribute names.
    pub(super) async fn update_req(
        &self,
        k: &str,
        update: &str,
        condition: &str,
    ) -> Result<UpdateItemFluentBuilder> {
        let c = self.config();
        Ok(self
            .client()
            .await?
            .update_item()
            .table_name(c.table())
            .set_key(Some(attr::key(c, k)))
            .update_expression(update)
            .condition_expression(condition)
            .set_expression_attribute_names(names(c, &[update, condition])))
    }

    /// A DeleteItem of table key `k` under `condition` (empty: none), with its attribute names.
    pub(super) async fn delete_req(
        &self,
        k: &str,
        condition: &str,
    ) -> Result<DeleteItemFluentBuilder> {
        let c = self.config();
        Ok(self
            .client()
            .await?
            .delete_item()
            .table_name(c.table())
            .set_key(Some(attr::key(c, k)))
            .set_condition_expression((!condition.is_empty()).then(|| condition.to_owned()))
            .set_expression_attribute_names(names(c, &[condition])))
    }

    /// The answer of a conditional write of `operation`: written, or refused with the old item
    /// when the server returned one (noting that it honours `ALL_OLD`); `only_on_item`: the
    /// condition can only fail on an existing item and the request asked for `ALL_OLD`, so a
    /// refusal without the old item proves the server ignores it.
    pub(super) fn answer<T, E: Refusable>(
        &self,
        operation: &'static str,
        res: std::result::Result<T, SdkError<E, HttpResponse>>,
        only_on_item: bool,
    ) -> Result<Cond<T>> {
        match res {
            Ok(out) => Ok(Cond::Written(out)),
            Err(SdkError::ServiceError(se)) if se.err().is_refusal() => {
                let old = se.into_err().old().filter(|i| !i.is_empty());
                if old.is_some() || only_on_item {
                    self.learn_all_old(old.is_some());
                }
                Ok(Cond::Refused(old))
            }
            Err(e) => Err(sdk_error(self.config(), operation, e)),
        }
    }
}

/// `ReturnValuesOnConditionCheckFailure: ALL_OLD`.
pub(super) const ALL_OLD: ReturnValuesOnConditionCheckFailure =
    ReturnValuesOnConditionCheckFailure::AllOld;

/// Counts the sends of one request, the SDK's own retries included (they happen inside
/// `send()`, unseen by the caller), and those that may have landed: every send but one the
/// server refused with a 4xx answer (throttled, or the condition failed), which changed nothing.
#[derive(Debug, Clone, Default)]
pub(super) struct Sends(Arc<[AtomicU32; 2]>);

impl Intercept for Sends {
    fn name(&self) -> &'static str {
        "ddblock-sends"
    }

    fn read_before_attempt(
        &self,
        _: &BeforeTransmitInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> std::result::Result<(), BoxError> {
        self.0[0].fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn read_after_attempt(
        &self,
        ctx: &FinalizerInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> std::result::Result<(), BoxError> {
        if !ctx.response().is_some_and(|r| r.status().is_client_error()) {
            self.0[1].fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }
}

impl Sends {
    /// `op`, its sends counted here.
    pub(super) fn watch<T, E, B>(
        &self,
        op: CustomizableOperation<T, E, B>,
    ) -> CustomizableOperation<T, E, B> {
        op.interceptor(self.clone())
    }

    /// How many sends the request took.
    pub(super) fn count(&self) -> u32 {
        self.0[0].load(Ordering::SeqCst)
    }

    /// Whether a send may have landed without its answer coming back (no answer, or a 5xx): a
    /// refusal after it may be that send's own doing.
    pub(super) fn maybe_landed_unanswered(&self) -> bool {
        self.0[1].load(Ordering::SeqCst) > 0
    }
}
