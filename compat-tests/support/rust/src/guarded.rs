//! The guarded resource every chaos worker writes while it holds a lock, in every language the
//! same request: one UpdateItem on the item `res_<lock name>` that records the writer and its
//! fencing token, accepted only if no higher token was accepted before. The stock Laravel control
//! group has no token and writes unconditionally. The chaos checker reads these items back.

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;

/// The resource item's table key for a lock name.
pub fn resource_key(name: &str) -> String {
    format!("res_{name}")
}

/// The guarded write's update expression.
pub const UPDATE: &str =
    "SET #fence = :fence, #owner = :owner, #writes = if_not_exists(#writes, :zero) + :one";
/// The guarded write's condition: no higher token accepted before.
pub const CONDITION: &str = "attribute_not_exists(#fence) OR #fence <= :fence";
/// The control group's write (no token).
pub const CONTROL_UPDATE: &str =
    "SET #owner = :owner, #writes = if_not_exists(#writes, :zero) + :one";

/// Sends the guarded write for lock `name` as `owner` with token `fence`: `Ok(true)` accepted,
/// `Ok(false)` refused by the fence condition, `Err` the SDK error's name (see [`sdk_kind`]).
pub async fn write(
    client: &Client,
    table: &str,
    name: &str,
    owner: &str,
    fence: u64,
) -> Result<bool, String> {
    let res = client
        .update_item()
        .table_name(table)
        .key("key", AttributeValue::S(resource_key(name)))
        .update_expression(UPDATE)
        .condition_expression(CONDITION)
        .expression_attribute_names("#fence", "fence")
        .expression_attribute_names("#owner", "owner")
        .expression_attribute_names("#writes", "writes")
        .expression_attribute_values(":fence", AttributeValue::N(fence.to_string()))
        .expression_attribute_values(":owner", AttributeValue::S(owner.to_owned()))
        .expression_attribute_values(":zero", AttributeValue::N("0".into()))
        .expression_attribute_values(":one", AttributeValue::N("1".into()))
        .send()
        .await;
    match res {
        Ok(_) => Ok(true),
        Err(SdkError::ServiceError(se)) if se.err().is_conditional_check_failed_exception() => {
            Ok(false)
        }
        Err(e) => Err(sdk_kind(&e)),
    }
}

/// The counter item's table key for a lock name: each critical section reads its number and
/// writes it back plus one, unguarded and straight to the server (`DDB_COUNTER_ENDPOINT`), so two
/// holders at once would lose an update; the chaos run holds the sum against the sections.
pub fn counter_key(name: &str) -> String {
    format!("cnt_{name}")
}

/// The counter's number (0 when absent), read consistently.
pub async fn counter_read(client: &Client, table: &str, name: &str) -> Result<i64, String> {
    let res = client
        .get_item()
        .table_name(table)
        .key("key", AttributeValue::S(counter_key(name)))
        .consistent_read(true)
        .send()
        .await
        .map_err(|e| sdk_kind(&e))?;
    Ok(res
        .item()
        .and_then(|i| i.get("n"))
        .and_then(|v| v.as_n().ok())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0))
}

/// Writes the counter's number, unconditionally.
pub async fn counter_write(client: &Client, table: &str, name: &str, n: i64) -> Result<(), String> {
    client
        .put_item()
        .table_name(table)
        .item("key", AttributeValue::S(counter_key(name)))
        .item("n", AttributeValue::N(n.to_string()))
        .send()
        .await
        .map_err(|e| sdk_kind(&e))?;
    Ok(())
}

/// The SDK error's name: the service's error code, or the kind of failure.
pub fn sdk_kind<E: ProvideErrorMetadata, R>(e: &SdkError<E, R>) -> String {
    match e {
        SdkError::ServiceError(se) => se.err().code().unwrap_or("ServiceError").to_owned(),
        SdkError::TimeoutError(_) => "TimeoutError".into(),
        SdkError::DispatchFailure(_) => "DispatchFailure".into(),
        SdkError::ResponseError(_) => "ResponseError".into(),
        SdkError::ConstructionFailure(_) => "ConstructionFailure".into(),
        _ => "SdkError".into(),
    }
}
