//! `ddblock-cold-raw ENDPOINT TABLE KEY`: the raw `aws-sdk-dynamodb` baseline of the cold-start
//! figure (compat-tests/packages/cold_start.py): one fresh process loads the SDK config, builds a
//! client, takes one lock the way Laravel's `DynamoDbLock::acquire` does (a PutItem conditioned on
//! `attribute_not_exists(#key) OR #expires_at < :now`) and releases it (a DeleteItem conditioned on
//! the owner). Like the ddblock CLI it is compared with: one current-thread Tokio runtime, the
//! config from the environment, the SDK crates and features of the core (the workspace's).

use std::time::{SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::types::AttributeValue;

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_owned())
}

fn n(v: u64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

async fn take_and_release(endpoint: &str, table: &str, key: &str) -> Result<(), String> {
    let conf = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .load()
        .await;
    let client = aws_sdk_dynamodb::Client::new(&conf);
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|e| e.to_string())?;
    let now = since.as_secs();
    // Laravel's owner: a random 16-character string, stored PHP-serialized.
    let token = u64::from(since.subsec_nanos()) ^ (u64::from(std::process::id()) << 32);
    let owner = format!("s:16:\"{token:016x}\";");
    client
        .put_item()
        .table_name(table)
        .item("key", s(key))
        .item("value", s(&owner))
        .item("expires_at", n(now + 10))
        .condition_expression("attribute_not_exists(#key) OR #expires_at < :now")
        .expression_attribute_names("#key", "key")
        .expression_attribute_names("#expires_at", "expires_at")
        .expression_attribute_values(":now", n(now))
        .send()
        .await
        .map_err(|e| format!("acquire: {e:?}"))?;
    client
        .delete_item()
        .table_name(table)
        .key("key", s(key))
        .condition_expression("#value = :owner")
        .expression_attribute_names("#value", "value")
        .expression_attribute_values(":owner", s(&owner))
        .send()
        .await
        .map_err(|e| format!("release: {e:?}"))?;
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [endpoint, table, key] = args.as_slice() else {
        eprintln!("usage: ddblock-cold-raw ENDPOINT TABLE KEY");
        std::process::exit(2);
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| {
            eprintln!("ddblock-cold-raw: cannot start the async runtime: {e}");
            std::process::exit(1);
        });
    if let Err(e) = rt.block_on(take_and_release(endpoint, table, key)) {
        eprintln!("ddblock-cold-raw: {e}");
        std::process::exit(1);
    }
}
