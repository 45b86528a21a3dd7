//! The Rust chaos worker: loops wait → guarded write → work → guarded write → release on random
//! keys through the core, one JSON line per cycle (see `ddblock_chaos::checker::Cycle`).
//! Configured by the `CHAOS_*` environment (`ddblock_chaos::profile::env`).

use std::fs::OpenOptions;
use std::io::Write;
use std::time::{Duration, Instant};

use ddblock::aws_sdk_dynamodb::config::retry::RetryConfig;
use ddblock::aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use ddblock::aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use ddblock::aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use ddblock::aws_sdk_dynamodb::types::AttributeValue;
use ddblock::aws_sdk_dynamodb::Client;
use ddblock::{ErrorKind, Store, StoreConfig};
use ddblock_chaos::checker::Cycle;
use ddblock_chaos::guarded;
use ddblock_chaos::profile::env;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is required"))
}

fn num(name: &str) -> u64 {
    var(name)
        .parse()
        .unwrap_or_else(|_| panic!("{name} must be a number"))
}

/// Keep this much of the lease before a guarded write (a write sent later might land after it).
const LEASE_SAFETY: Duration = Duration::from_millis(1500);

fn raw_client(endpoint: &str) -> Client {
    let conf = ddblock::aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "chaos"))
        .endpoint_url(endpoint)
        .retry_config(RetryConfig::standard().with_max_attempts(3))
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(2))
                .operation_attempt_timeout(Duration::from_secs(3))
                .build(),
        )
        .build();
    Client::from_conf(conf)
}

/// The SDK error's name: the service's error code, or the kind of failure.
fn sdk_kind<E: ProvideErrorMetadata, R>(e: &SdkError<E, R>) -> String {
    match e {
        SdkError::ServiceError(se) => se.err().code().unwrap_or("ServiceError").to_owned(),
        SdkError::TimeoutError(_) => "TimeoutError".into(),
        SdkError::DispatchFailure(_) => "DispatchFailure".into(),
        SdkError::ResponseError(_) => "ResponseError".into(),
        SdkError::ConstructionFailure(_) => "ConstructionFailure".into(),
        _ => "SdkError".into(),
    }
}

async fn guarded_write(
    client: &Client,
    table: &str,
    name: &str,
    owner: &str,
    fence: u64,
) -> Result<bool, String> {
    let res = client
        .update_item()
        .table_name(table)
        .key("key", AttributeValue::S(guarded::resource_key(name)))
        .update_expression(guarded::UPDATE)
        .condition_expression(guarded::CONDITION)
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

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let endpoint = var(env::ENDPOINT);
    let table = var(env::TABLE);
    let keys: Vec<String> = var(env::KEYS).split(',').map(str::to_owned).collect();
    let worker = var(env::WORKER);
    let ttl = num(env::TTL) as i64;
    let work = Duration::from_millis(num(env::WORK_MS));
    let wait = Duration::from_millis(num(env::WAIT_MS));
    let until = Instant::now() + Duration::from_millis(num(env::DURATION_MS));
    let target = num(env::ACQUISITIONS);
    let mut rng = StdRng::seed_from_u64(num(env::SEED));
    let mut out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(var(env::OUT))
        .expect("record file");
    let config = StoreConfig::builder()
        .table(&table)
        .endpoint(&endpoint)
        .prefix(var(env::PREFIX))
        .clock_skew_margin(Duration::from_secs(num(env::MARGIN)))
        .build()
        .expect("config");
    let store = Store::new(config);
    let client = raw_client(&endpoint);

    let mut acquired = 0;
    while acquired < target && Instant::now() < until {
        let name = &keys[rng.random_range(0..keys.len())];
        let lock = store.lock(name, ttl).expect("lock");
        let mut c = Cycle {
            lang: "rust".into(),
            worker: worker.clone(),
            name: name.clone(),
            owner: lock.owner().to_owned(),
            ..Cycle::default()
        };
        let left = until.saturating_duration_since(Instant::now());
        // The body runs as every front's does: the core's `enter` (acquire, heartbeat), then
        // `Held::finish` (release, and the one rule for the end of the lease).
        match lock.clone().enter(wait.min(left)).await {
            Ok(held) => {
                acquired += 1;
                c.acquire = "acquired".into();
                c.fence = held.lock().fence();
                let lock = held.lock();
                for i in 0..2 {
                    if i == 1 {
                        tokio::time::sleep(work).await;
                    }
                    let (Some(fence), Some(rem)) = (lock.fence(), lock.remaining()) else {
                        c.writes.push("skipped".into());
                        continue;
                    };
                    if rem < LEASE_SAFETY || held.lease().is_lost() {
                        c.writes.push("skipped".into());
                        continue;
                    }
                    c.writes.push(
                        match guarded_write(&client, &table, name, lock.owner(), fence).await {
                            Ok(true) => "accepted".into(),
                            Ok(false) => "refused".into(),
                            Err(kind) => {
                                c.errors.push(("guarded_write".into(), kind));
                                "error".into()
                            }
                        },
                    );
                }
                let left = lock.remaining().unwrap_or_default();
                let by_refresh = held.lease().is_lost();
                c.release = Some(match held.finish().await {
                    Ok(()) => "released".into(),
                    Err(e) if e.kind() == ErrorKind::LeaseLost => {
                        c.lease_left_ms = Some(left.as_millis() as u64);
                        c.lost_by_refresh = Some(by_refresh);
                        "lease_lost".into()
                    }
                    Err(e) => {
                        c.errors.push(("release".into(), e.kind().as_str().into()));
                        "error".into()
                    }
                });
            }
            Err(e) if e.kind() == ErrorKind::LockTimeout => c.acquire = "held".into(),
            Err(e) => {
                c.acquire = "error".into();
                c.errors.push(("acquire".into(), e.kind().as_str().into()));
            }
        }
        let line = serde_json::to_string(&c).expect("json");
        writeln!(out, "{line}").expect("write record");
    }
}
