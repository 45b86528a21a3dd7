//! The fault proxy in front of the real local servers (moto and dynalite), driven by the
//! real `aws-sdk-dynamodb` client. Run with `./compat-tests/run-tests.sh` (it starts the
//! servers and exports `DDBLOCK_TEST_MOTO` / `DDBLOCK_TEST_DYNALITE`).
//!
//! Stale reads are made deterministic with the proxy's clock hook: writes are separated
//! by `advance_clock(10 s)` and reads are exactly 5–6 s stale (`stale_min_ms`..`stale_ms`),
//! so the read time falls between two known writes whatever the real timing.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType, KeysAndAttributes,
    ReturnValue, ScalarAttributeType, TableStatus,
};
use aws_sdk_dynamodb::Client;
use ddblock_fault_proxy::{start, FaultConfig, ProxyConfig, ProxyHandle, Stats};
use ddblock_test_support::Server;

const TEN_S: Duration = Duration::from_secs(10);

/// `(name, endpoint)` of each local server.
fn backends() -> Vec<(&'static str, String)> {
    Server::ALL
        .into_iter()
        .map(|server| (server.name(), server.endpoint()))
        .collect()
}

/// SDK client: test credentials, `attempts` tries with a short backoff, optional attempt timeout.
fn sdk(endpoint: &str, attempts: u32, attempt_timeout: Option<Duration>) -> Client {
    let mut timeouts = TimeoutConfig::builder().connect_timeout(Duration::from_secs(5));
    if let Some(t) = attempt_timeout {
        timeouts = timeouts.operation_attempt_timeout(t);
    }
    let conf = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new(
            "test",
            "test",
            None,
            None,
            "fault-proxy-tests",
        ))
        .endpoint_url(endpoint)
        .retry_config(
            RetryConfig::standard()
                .with_max_attempts(attempts)
                .with_initial_backoff(Duration::from_millis(5))
                .with_max_backoff(Duration::from_millis(20)),
        )
        .timeout_config(timeouts.build())
        .build();
    Client::from_conf(conf)
}

async fn proxy(upstream: &str, faults: FaultConfig) -> ProxyHandle {
    start(ProxyConfig {
        upstream: upstream.to_string(),
        listen: "127.0.0.1:0".into(),
        faults,
    })
    .await
    .expect("proxy starts")
}

/// Reads exactly 5–6 s stale, always (seeded).
fn stale_5_to_6s(seed: u64) -> FaultConfig {
    FaultConfig {
        seed,
        stale_ms: 6_000,
        stale_min_ms: 5_000,
        stale_probability: 1.0,
        ..FaultConfig::default()
    }
}

static TABLES: AtomicUsize = AtomicUsize::new(0);

/// A fresh table (`key` S hash key), created directly on the upstream, ACTIVE on return.
async fn new_table(upstream: &Client) -> String {
    ddblock_test_support::new_table(upstream, "key").await
}

/// A fresh table with these S key attributes, created directly on the upstream, ACTIVE on return.
async fn new_table_keys(upstream: &Client, keys: &[(&str, KeyType)]) -> String {
    let name = format!(
        "fp_{}_{}_{}",
        std::process::id(),
        TABLES.fetch_add(1, Ordering::SeqCst),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    );
    let mut create = upstream
        .create_table()
        .table_name(&name)
        .billing_mode(BillingMode::PayPerRequest);
    for (attr, key_type) in keys {
        create = create
            .attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name(*attr)
                    .attribute_type(ScalarAttributeType::S)
                    .build()
                    .unwrap(),
            )
            .key_schema(
                KeySchemaElement::builder()
                    .attribute_name(*attr)
                    .key_type(key_type.clone())
                    .build()
                    .unwrap(),
            );
    }
    create.send().await.expect("create table");
    for _ in 0..200 {
        let d = upstream
            .describe_table()
            .table_name(&name)
            .send()
            .await
            .unwrap();
        if d.table().and_then(|t| t.table_status()) == Some(&TableStatus::Active) {
            return name;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("table {name} did not become ACTIVE");
}

fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_string())
}

async fn put(c: &Client, table: &str, key: &str, owner: &str) {
    c.put_item()
        .table_name(table)
        .item("key", s(key))
        .item("owner", s(owner))
        .send()
        .await
        .expect("put");
}

/// The `owner` attribute of the item (None if there is no item).
async fn get_owner(c: &Client, table: &str, key: &str, consistent: Option<bool>) -> Option<String> {
    let out = c
        .get_item()
        .table_name(table)
        .key("key", s(key))
        .set_consistent_read(consistent)
        .send()
        .await
        .expect("get");
    out.item().map(|i| {
        i.get("owner")
            .expect("owner attribute")
            .as_s()
            .unwrap()
            .clone()
    })
}

fn counts(entries: &[(&str, &str, u64)]) -> Stats {
    let mut ops: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for (op, outcome, n) in entries {
        ops.entry(op.to_string())
            .or_default()
            .insert(outcome.to_string(), *n);
    }
    Stats { ops }
}

#[tokio::test]
async fn stale_read_sees_previous_version_consistent_read_sees_latest() {
    for (name, upstream) in backends() {
        let p = proxy(&upstream, stale_5_to_6s(1)).await;
        let c = sdk(&p.url(), 1, None);
        let table = new_table(&sdk(&upstream, 3, None)).await;

        put(&c, &table, "k", "v1").await;
        p.advance_clock(TEN_S);
        put(&c, &table, "k", "v2").await;

        // Read time = now - 5..6 s: after v1 (10 s ago), before v2 (just now).
        assert_eq!(
            get_owner(&c, &table, "k", None).await.as_deref(),
            Some("v1"),
            "{name}"
        );
        assert_eq!(
            get_owner(&c, &table, "k", Some(false)).await.as_deref(),
            Some("v1"),
            "{name}"
        );
        assert_eq!(
            get_owner(&c, &table, "k", Some(true)).await.as_deref(),
            Some("v2"),
            "{name}"
        );
        assert_eq!(
            p.stats(),
            counts(&[
                ("PutItem", "forwarded_ok", 2),
                ("GetItem", "stale_served", 2),
                ("GetItem", "forwarded_ok", 1),
            ]),
            "{name}"
        );
        // Once the read time is past the last write, eventual reads go upstream.
        p.advance_clock(TEN_S);
        assert_eq!(
            get_owner(&c, &table, "k", None).await.as_deref(),
            Some("v2"),
            "{name}"
        );
        p.shutdown().await;
    }
}

/// The Laravel bug: GetItem right after the PutItem that took the lock misses the owner.
#[tokio::test]
async fn eventual_read_right_after_first_write_misses_the_item() {
    for (name, upstream) in backends() {
        let faults = FaultConfig {
            seed: 2,
            stale_ms: 61_000,
            stale_min_ms: 60_000,
            ..FaultConfig::default()
        };
        let p = proxy(&upstream, faults).await;
        let c = sdk(&p.url(), 1, None);
        let table = new_table(&sdk(&upstream, 3, None)).await;

        put(&c, &table, "lock:a", "owner-1").await;
        // A minute stale: before the PutItem, when the lock item did not exist.
        assert_eq!(get_owner(&c, &table, "lock:a", None).await, None, "{name}");
        assert_eq!(
            get_owner(&c, &table, "lock:a", Some(true)).await.as_deref(),
            Some("owner-1"),
            "{name}"
        );
        assert_eq!(p.stats().count("GetItem", "stale_served"), 1, "{name}");
        p.shutdown().await;
    }
}

#[tokio::test]
async fn delete_then_eventual_read_sees_the_old_item() {
    for (name, upstream) in backends() {
        let p = proxy(&upstream, stale_5_to_6s(3)).await;
        let c = sdk(&p.url(), 1, None);
        let table = new_table(&sdk(&upstream, 3, None)).await;

        put(&c, &table, "k", "v1").await;
        p.advance_clock(TEN_S);
        c.delete_item()
            .table_name(&table)
            .key("key", s("k"))
            .send()
            .await
            .unwrap();

        assert_eq!(
            get_owner(&c, &table, "k", None).await.as_deref(),
            Some("v1"),
            "{name}"
        );
        assert_eq!(get_owner(&c, &table, "k", Some(true)).await, None, "{name}");
        assert_eq!(p.stats().count("DeleteItem", "forwarded_ok"), 1, "{name}");
        assert_eq!(p.stats().count("GetItem", "stale_served"), 1, "{name}");
        p.shutdown().await;
    }
}

#[tokio::test]
async fn failed_conditional_writes_stay_out_of_the_history() {
    for (name, upstream) in backends() {
        let p = proxy(&upstream, stale_5_to_6s(4)).await;
        let c = sdk(&p.url(), 1, None);
        let table = new_table(&sdk(&upstream, 3, None)).await;

        put(&c, &table, "k", "v1").await;
        p.advance_clock(TEN_S);
        let err = c
            .put_item()
            .table_name(&table)
            .item("key", s("k"))
            .item("owner", s("v2"))
            .condition_expression("attribute_not_exists(#k)")
            .expression_attribute_names("#k", "key")
            .send()
            .await
            .expect_err("the item exists");
        assert!(
            err.into_service_error()
                .is_conditional_check_failed_exception(),
            "{name}"
        );
        p.advance_clock(TEN_S);
        put(&c, &table, "k", "v3").await;
        // Read time between the failed put and v3: still v1, never v2.
        assert_eq!(
            get_owner(&c, &table, "k", None).await.as_deref(),
            Some("v1"),
            "{name}"
        );

        // Same for a failed conditional delete.
        p.advance_clock(TEN_S);
        let err = c
            .delete_item()
            .table_name(&table)
            .key("key", s("k"))
            .condition_expression("#o = :o")
            .expression_attribute_names("#o", "owner")
            .expression_attribute_values(":o", s("somebody-else"))
            .send()
            .await
            .expect_err("owner differs");
        assert!(
            err.into_service_error()
                .is_conditional_check_failed_exception(),
            "{name}"
        );
        p.advance_clock(TEN_S);
        put(&c, &table, "k", "v4").await;
        assert_eq!(
            get_owner(&c, &table, "k", None).await.as_deref(),
            Some("v3"),
            "{name}"
        );

        let st = p.stats();
        assert_eq!(st.count("PutItem", "forwarded_ok"), 3, "{name}");
        assert_eq!(
            st.count("PutItem", "forwarded_error:ConditionalCheckFailedException"),
            1,
            "{name}"
        );
        assert_eq!(
            st.count(
                "DeleteItem",
                "forwarded_error:ConditionalCheckFailedException"
            ),
            1,
            "{name}"
        );
        assert_eq!(st.count("GetItem", "stale_served"), 2, "{name}");
        p.shutdown().await;
    }
}

#[tokio::test]
async fn stale_probability_is_deterministic_for_a_seed() {
    for (name, upstream) in backends() {
        let faults = FaultConfig {
            stale_probability: 0.5,
            ..stale_5_to_6s(1234)
        };
        let p = proxy(&upstream, faults.clone()).await;
        let c = sdk(&p.url(), 1, None);
        let table = new_table(&sdk(&upstream, 3, None)).await;
        put(&c, &table, "k", "v1").await;
        p.advance_clock(TEN_S);
        put(&c, &table, "k", "v2").await;

        let mut runs = Vec::new();
        for _ in 0..2 {
            p.set_config(faults.clone()).unwrap(); // re-seeds the RNG
            p.reset();
            let mut seen = Vec::new();
            for _ in 0..32 {
                seen.push(get_owner(&c, &table, "k", None).await.unwrap());
            }
            let stale = seen.iter().filter(|o| *o == "v1").count() as u64;
            assert!(seen.iter().all(|o| o == "v1" || o == "v2"), "{name}");
            assert_eq!(p.stats().count("GetItem", "stale_served"), stale, "{name}");
            assert_eq!(
                p.stats().count("GetItem", "forwarded_ok"),
                32 - stale,
                "{name}"
            );
            runs.push(seen);
        }
        assert_eq!(runs[0], runs[1], "{name}: same seed, same outcomes");
        assert!(
            runs[0].iter().any(|o| o == "v1") && runs[0].iter().any(|o| o == "v2"),
            "{name}"
        );

        // A different seed gives a different sequence.
        p.set_config(FaultConfig {
            seed: 99,
            ..faults.clone()
        })
        .unwrap();
        let mut other = Vec::new();
        for _ in 0..32 {
            other.push(get_owner(&c, &table, "k", None).await.unwrap());
        }
        assert_ne!(other, runs[0], "{name}");
        p.shutdown().await;
    }
}

#[tokio::test]
async fn batch_get_item_mixes_history_and_upstream() {
    for (name, upstream) in backends() {
        let p = proxy(&upstream, stale_5_to_6s(5)).await;
        let c = sdk(&p.url(), 1, None);
        let table = new_table(&sdk(&upstream, 3, None)).await;
        put(&c, &table, "a", "a1").await;
        put(&c, &table, "b", "b1").await;
        p.advance_clock(TEN_S);
        put(&c, &table, "a", "a2").await;

        let batch = |keys: &[&str], consistent: bool| {
            let mut kaa = KeysAndAttributes::builder().consistent_read(consistent);
            for k in keys {
                kaa = kaa.keys(HashMap::from([("key".to_string(), s(k))]));
            }
            c.batch_get_item()
                .request_items(&table, kaa.build().unwrap())
                .send()
        };
        let owners = |out: aws_sdk_dynamodb::operation::batch_get_item::BatchGetItemOutput| {
            let mut v: Vec<(String, String)> = out.responses().unwrap()[&table]
                .iter()
                .map(|i| {
                    (
                        i["key"].as_s().unwrap().clone(),
                        i["owner"].as_s().unwrap().clone(),
                    )
                })
                .collect();
            v.sort();
            v
        };
        let pair = |k: &str, o: &str| (k.to_string(), o.to_string());

        // a: stale from history; b: unchanged since before the read time, so upstream; c: never written.
        let out = batch(&["a", "b", "c"], false).await.unwrap();
        assert_eq!(
            owners(out),
            vec![pair("a", "a1"), pair("b", "b1")],
            "{name}"
        );
        // All keys served from history: answered without the upstream.
        let out = batch(&["a"], false).await.unwrap();
        assert_eq!(owners(out), vec![pair("a", "a1")], "{name}");
        let out = batch(&["a", "b", "c"], true).await.unwrap();
        assert_eq!(
            owners(out),
            vec![pair("a", "a2"), pair("b", "b1")],
            "{name}"
        );
        assert_eq!(
            p.stats(),
            counts(&[
                ("PutItem", "forwarded_ok", 3),
                ("BatchGetItem", "stale_served", 2),
                ("BatchGetItem", "forwarded_ok", 1),
            ]),
            "{name}"
        );
        p.shutdown().await;
    }
}

#[tokio::test]
async fn update_item_enters_the_history() {
    for (name, upstream) in backends() {
        // History is kept for `stale_ms`: start with the wider window, narrow it later.
        let wide = FaultConfig {
            stale_ms: 16_000,
            stale_min_ms: 15_000,
            ..stale_5_to_6s(6)
        };
        let p = proxy(&upstream, wide).await;
        let c = sdk(&p.url(), 1, None);
        let table = new_table(&sdk(&upstream, 3, None)).await;
        put(&c, &table, "k", "v1").await;
        p.advance_clock(TEN_S);
        // No ReturnValues: the proxy reads the new item back with a consistent GetItem.
        c.update_item()
            .table_name(&table)
            .key("key", s("k"))
            .update_expression("SET #o = :o")
            .expression_attribute_names("#o", "owner")
            .expression_attribute_values(":o", s("v2"))
            .send()
            .await
            .unwrap();
        p.advance_clock(TEN_S);
        // ALL_NEW: the new item comes from the response.
        c.update_item()
            .table_name(&table)
            .key("key", s("k"))
            .update_expression("SET #o = :o")
            .expression_attribute_names("#o", "owner")
            .expression_attribute_values(":o", s("v3"))
            .return_values(ReturnValue::AllNew)
            .send()
            .await
            .unwrap();
        // 15-16 s ago: before the first update.
        assert_eq!(
            get_owner(&c, &table, "k", None).await.as_deref(),
            Some("v1"),
            "{name}"
        );
        // 5-6 s ago: between the two updates, the state the proxy read back.
        p.set_config(stale_5_to_6s(6)).unwrap();
        assert_eq!(
            get_owner(&c, &table, "k", None).await.as_deref(),
            Some("v2"),
            "{name}"
        );
        // Past the last write: upstream.
        p.advance_clock(TEN_S);
        assert_eq!(
            get_owner(&c, &table, "k", None).await.as_deref(),
            Some("v3"),
            "{name}"
        );
        assert_eq!(
            get_owner(&c, &table, "k", Some(true)).await.as_deref(),
            Some("v3"),
            "{name}"
        );
        assert_eq!(p.stats().count("UpdateItem", "forwarded_ok"), 2, "{name}");
        p.shutdown().await;
    }
}

/// PutItem carries no Key map: the proxy learns the (composite) key schema by DescribeTable.
#[tokio::test]
async fn composite_key_schema_is_learned_for_put_item() {
    for (name, upstream) in backends() {
        let p = proxy(&upstream, stale_5_to_6s(7)).await;
        let c = sdk(&p.url(), 1, None);
        let table = new_table_keys(
            &sdk(&upstream, 3, None),
            &[("pk", KeyType::Hash), ("sk", KeyType::Range)],
        )
        .await;
        let put2 = |sk: &'static str, owner: &'static str| {
            c.put_item()
                .table_name(&table)
                .item("pk", s("p"))
                .item("sk", s(sk))
                .item("owner", s(owner))
                .send()
        };
        put2("1", "one-v1").await.unwrap();
        put2("2", "two-v1").await.unwrap();
        p.advance_clock(TEN_S);
        put2("1", "one-v2").await.unwrap();
        let get = |sk: &'static str| {
            c.get_item()
                .table_name(&table)
                .key("sk", s(sk))
                .key("pk", s("p"))
                .send()
        };
        let owner = |out: aws_sdk_dynamodb::operation::get_item::GetItemOutput| {
            out.item().unwrap()["owner"].as_s().unwrap().clone()
        };
        assert_eq!(owner(get("1").await.unwrap()), "one-v1", "{name}");
        assert_eq!(owner(get("2").await.unwrap()), "two-v1", "{name}");
        let st = p.stats();
        assert_eq!(st.count("GetItem", "stale_served"), 1, "{name}");
        assert_eq!(st.count("GetItem", "forwarded_ok"), 1, "{name}");
        // The proxy's own DescribeTable / GetItem calls are not counted.
        assert_eq!(st.total("DescribeTable"), 0, "{name}");
        p.shutdown().await;
    }
}

#[tokio::test]
async fn counters_match_the_requests_made() {
    for (name, upstream) in backends() {
        let p = proxy(&upstream, FaultConfig::default()).await;
        let c = sdk(&p.url(), 1, None);
        let table = new_table(&sdk(&upstream, 3, None)).await;

        put(&c, &table, "a", "1").await;
        put(&c, &table, "b", "1").await;
        let err = c
            .put_item()
            .table_name(&table)
            .item("key", s("a"))
            .condition_expression("attribute_not_exists(#k)")
            .expression_attribute_names("#k", "key")
            .send()
            .await
            .unwrap_err();
        assert!(err
            .into_service_error()
            .is_conditional_check_failed_exception());
        get_owner(&c, &table, "a", None).await;
        get_owner(&c, &table, "b", Some(true)).await;
        get_owner(&c, &table, "zzz", None).await;
        c.delete_item()
            .table_name(&table)
            .key("key", s("a"))
            .send()
            .await
            .unwrap();
        c.describe_table().table_name(&table).send().await.unwrap();
        c.describe_table()
            .table_name("fp_no_such_table")
            .send()
            .await
            .unwrap_err();

        let expected = counts(&[
            ("PutItem", "forwarded_ok", 2),
            (
                "PutItem",
                "forwarded_error:ConditionalCheckFailedException",
                1,
            ),
            ("GetItem", "forwarded_ok", 3),
            ("DeleteItem", "forwarded_ok", 1),
            ("DescribeTable", "forwarded_ok", 1),
            (
                "DescribeTable",
                "forwarded_error:ResourceNotFoundException",
                1,
            ),
        ]);
        assert_eq!(p.stats(), expected, "{name}");
        assert_eq!(p.stats().total("PutItem"), 3);
        assert_eq!(p.stats().grand_total(), 9);
        // The same over HTTP.
        let (status, body) = http(&p, "GET", "/__proxy/stats", "").await;
        assert_eq!(status, 200);
        assert_eq!(
            serde_json::from_str::<Stats>(&body).unwrap(),
            expected,
            "{name}"
        );

        p.reset();
        assert_eq!(p.stats(), Stats::default(), "{name}");
        p.shutdown().await;
    }
}

#[tokio::test]
async fn throttle_rate_one_exhausts_the_sdk_retries() {
    for (name, upstream) in backends() {
        let faults = FaultConfig {
            throttle_rate: 1.0,
            ..FaultConfig::default()
        };
        let p = proxy(&upstream, faults).await;
        let direct = sdk(&upstream, 3, None);
        let table = new_table(&direct).await;
        let c = sdk(&p.url(), 3, None);
        let err = c
            .put_item()
            .table_name(&table)
            .item("key", s("k"))
            .send()
            .await
            .expect_err("always throttled");
        assert!(
            err.into_service_error()
                .is_provisioned_throughput_exceeded_exception(),
            "{name}"
        );
        assert_eq!(p.stats(), counts(&[("PutItem", "throttled", 3)]), "{name}");
        // Never forwarded.
        assert_eq!(
            get_owner(&direct, &table, "k", Some(true)).await,
            None,
            "{name}"
        );
        p.shutdown().await;
    }
}

#[tokio::test]
async fn error_500_rate_one_exhausts_the_sdk_retries() {
    for (name, upstream) in backends() {
        let faults = FaultConfig {
            error_500_rate: 1.0,
            error_500_ops: vec!["GetItem".into()],
            ..FaultConfig::default()
        };
        let p = proxy(&upstream, faults).await;
        let table = new_table(&sdk(&upstream, 3, None)).await;
        let c = sdk(&p.url(), 3, None);
        put(&c, &table, "k", "v").await; // not in error_500_ops
        let err = c
            .get_item()
            .table_name(&table)
            .key("key", s("k"))
            .send()
            .await
            .expect_err("always 500");
        assert!(
            err.into_service_error().is_internal_server_error(),
            "{name}"
        );
        assert_eq!(
            p.stats(),
            counts(&[("PutItem", "forwarded_ok", 1), ("GetItem", "error500", 3)]),
            "{name}"
        );
        p.shutdown().await;
    }
}

#[tokio::test]
async fn dropped_response_fails_the_client_but_the_write_lands() {
    for (name, upstream) in backends() {
        let faults = FaultConfig {
            drop_response_rate: 1.0,
            drop_ops: vec!["PutItem".into()],
            ..FaultConfig::default()
        };
        let p = proxy(&upstream, faults).await;
        let direct = sdk(&upstream, 3, None);
        let table = new_table(&direct).await;
        let c = sdk(&p.url(), 2, Some(Duration::from_secs(10)));
        let err = c
            .put_item()
            .table_name(&table)
            .item("key", s("k"))
            .item("owner", s("landed"))
            .send()
            .await
            .expect_err("no response");
        // The connection is closed without an answer: the SDK sees a dispatch (I/O)
        // failure ("connection closed before message completed"), retried like one.
        assert!(
            matches!(err, aws_sdk_dynamodb::error::SdkError::DispatchFailure(_)),
            "{name}: {err:?}"
        );
        // Both attempts reached the upstream and had their answers dropped.
        assert_eq!(p.stats(), counts(&[("PutItem", "dropped", 2)]), "{name}");
        assert_eq!(
            get_owner(&direct, &table, "k", Some(true)).await.as_deref(),
            Some("landed"),
            "{name}"
        );
        // Other operations are untouched.
        assert_eq!(
            get_owner(&c, &table, "k", Some(true)).await.as_deref(),
            Some("landed"),
            "{name}"
        );
        assert_eq!(p.stats().count("GetItem", "forwarded_ok"), 1, "{name}");
        p.shutdown().await;
    }
}

/// The journal lists each forwarded write with the server's answer; writes to one item in commit
/// order: replaying the successful ones reproduces the item the server holds.
#[tokio::test]
async fn journal_records_writes_in_commit_order() {
    for (name, upstream) in backends() {
        let faults = FaultConfig {
            journal: true,
            drop_response_rate: 0.3,
            drop_ops: vec!["UpdateItem".into()],
            seed: 11,
            ..FaultConfig::default()
        };
        let p = proxy(&upstream, faults).await;
        let direct = sdk(&upstream, 3, None);
        let table = new_table(&direct).await;
        let c = sdk(&p.url(), 1, Some(Duration::from_secs(10)));
        // 40 concurrent increments of one counter, each conditioned on the value it read last.
        let mut tasks = Vec::new();
        for i in 0..40 {
            let (c, table) = (c.clone(), table.clone());
            tasks.push(tokio::spawn(async move {
                let _ = c
                    .update_item()
                    .table_name(&table)
                    .key("key", s("counter"))
                    .update_expression("SET n = if_not_exists(n, :zero) + :one, latest = :i")
                    .expression_attribute_values(":zero", AttributeValue::N("0".into()))
                    .expression_attribute_values(":one", AttributeValue::N("1".into()))
                    .expression_attribute_values(":i", AttributeValue::N(i.to_string()))
                    .return_values(aws_sdk_dynamodb::types::ReturnValue::UpdatedNew)
                    .send()
                    .await;
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let journal = p.journal();
        assert_eq!(journal.len(), 40, "{name}");
        // In commit order, the counter the server returned goes 1, 2, 3, ... and the last entry's
        // `latest` is what the item holds, whether or not its answer reached the client.
        let seen: Vec<u64> = journal
            .iter()
            .map(|e| {
                assert_eq!(e["op"], "UpdateItem");
                assert_eq!(e["status"], 200, "{name}: {e}");
                e["response"]["Attributes"]["n"]["N"]
                    .as_str()
                    .unwrap()
                    .parse()
                    .unwrap()
            })
            .collect();
        assert_eq!(seen, (1..=40).collect::<Vec<u64>>(), "{name}");
        let dropped = journal
            .iter()
            .filter(|e| e["delivery"] == "dropped")
            .count() as u64;
        assert_eq!(dropped, p.stats().count("UpdateItem", "dropped"), "{name}");
        assert!(dropped > 0, "{name}: the seed drops some answers");
        let item = direct
            .get_item()
            .table_name(&table)
            .key("key", s("counter"))
            .consistent_read(true)
            .send()
            .await
            .unwrap()
            .item
            .unwrap();
        assert_eq!(
            Some(item["latest"].as_n().unwrap().as_str()),
            journal[39]["request"]["ExpressionAttributeValues"][":i"]["N"].as_str(),
            "{name}"
        );
        p.clear_journal();
        assert!(p.journal().is_empty());
        p.shutdown().await;
    }
}

#[tokio::test]
async fn latency_is_added_before_forwarding() {
    for (name, upstream) in backends() {
        let faults = FaultConfig {
            latency_ms: 150,
            latency_jitter_ms: 20,
            ..FaultConfig::default()
        };
        let p = proxy(&upstream, faults).await;
        let table = new_table(&sdk(&upstream, 3, None)).await;
        let c = sdk(&p.url(), 1, None);
        for _ in 0..3 {
            let t0 = Instant::now();
            get_owner(&c, &table, "k", None).await;
            assert!(
                t0.elapsed() >= Duration::from_millis(150),
                "{name}: {:?}",
                t0.elapsed()
            );
        }
        assert_eq!(p.stats().count("GetItem", "forwarded_ok"), 3, "{name}");
        p.shutdown().await;
    }
}

/// One request over a fresh connection (`Connection: close`): `(status, body)`.
async fn http(p: &ProxyHandle, method: &str, path: &str, body: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut conn = tokio::net::TcpStream::connect(p.addr()).await.unwrap();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    conn.write_all(req.as_bytes()).await.unwrap();
    let mut raw = String::new();
    conn.read_to_string(&mut raw).await.unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    (head[9..12].parse().unwrap(), body.to_string())
}

/// Reads one response (Content-Length framed) from a keep-alive connection.
fn read_response(r: &mut BufReader<std::net::TcpStream>) -> (u16, Vec<(String, String)>, String) {
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let status: u16 = line[9..12].parse().unwrap();
    let mut headers = Vec::new();
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (n, v) = l.split_once(':').unwrap();
        headers.push((n.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let len: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map(|(_, v)| v.parse().unwrap())
        .unwrap_or(0); // 1xx: no body
    let mut body = vec![0; len];
    r.read_exact(&mut body).unwrap();
    (status, headers, String::from_utf8(body).unwrap())
}

/// Control endpoints and the HTTP/1.1 server side, spoken by hand: keep-alive, a chunked
/// body with `Expect: 100-continue`, the JSON config, the clock hook, CRC headers.
#[tokio::test]
async fn control_endpoints_and_raw_http() {
    for (name, upstream) in backends() {
        let p = proxy(&upstream, FaultConfig::default()).await;
        let addr = p.addr();
        let name2 = name.to_string();
        tokio::task::spawn_blocking(move || {
            let name = name2;
            let conn = std::net::TcpStream::connect(addr).unwrap();
            let mut w = conn.try_clone().unwrap();
            let mut r = BufReader::new(conn);

            // A chunked ListTables, forwarded upstream.
            let date = "20260101T000000Z";
            let payload = "{}";
            write!(
                w,
                "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amz-json-1.0\r\n\
                 X-Amz-Target: DynamoDB_20120810.ListTables\r\nX-Amz-Date: {date}\r\n\
                 Authorization: AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/dynamodb/aws4_request, \
                 SignedHeaders=host;x-amz-date, Signature=00\r\n\
                 Transfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n"
            )
            .unwrap();
            let (status, _, _) = read_response(&mut r);
            assert_eq!(status, 100, "{name}: 100 Continue first");
            write!(w, "{:x}\r\n{payload}\r\n0\r\n\r\n", payload.len()).unwrap();
            let (status, _, body) = read_response(&mut r);
            assert_eq!(status, 200, "{name}: {body}");
            assert!(body.contains("TableNames"), "{name}: {body}");

            // Config over HTTP on the same connection: throttle everything.
            let cfg = r#"{"throttle_rate": 1.0, "seed": 5}"#;
            write!(
                w,
                "POST /__proxy/config HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{cfg}",
                cfg.len()
            )
            .unwrap();
            let (status, _, body) = read_response(&mut r);
            assert_eq!(status, 200, "{name}: {body}");
            let back: FaultConfig = serde_json::from_str(&body).unwrap();
            assert_eq!(back.throttle_rate, 1.0);
            assert_eq!(back.seed, 5);

            write!(
                w,
                "POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: DynamoDB_20120810.ListTables\r\n\
                 Content-Length: 2\r\n\r\n{{}}"
            )
            .unwrap();
            let (status, headers, body) = read_response(&mut r);
            assert_eq!(status, 400, "{name}");
            assert_eq!(
                body,
                r#"{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"fault-proxy: injected throttling (throttle_rate)"}"#
            );
            let crc = headers.iter().find(|(n, _)| n == "x-amz-crc32").unwrap();
            assert!(crc.1.parse::<u32>().is_ok(), "{name}");
        })
        .await
        .unwrap();

        assert_eq!(
            p.stats(),
            counts(&[
                ("ListTables", "forwarded_ok", 1),
                ("ListTables", "throttled", 1)
            ]),
            "{name}"
        );
        assert_eq!(p.config().throttle_rate, 1.0);

        let (status, body) = http(&p, "POST", "/__proxy/config", r#"{"throttle_rte": 1.0}"#).await;
        assert_eq!(status, 400, "{name}: {body}");
        let (status, _) = http(&p, "POST", "/__proxy/config", r#"{"throttle_rate": 2.0}"#).await;
        assert_eq!(status, 400, "{name}");
        let (status, body) = http(&p, "GET", "/__proxy/config", "").await;
        assert_eq!(status, 200);
        assert_eq!(serde_json::from_str::<FaultConfig>(&body).unwrap().seed, 5);
        let (status, body) = http(&p, "POST", "/__proxy/clock", r#"{"advance_ms": 60000}"#).await;
        assert_eq!(status, 200, "{name}: {body}");
        let now: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert!(now["now_ms"].as_u64().unwrap() >= 60_000);
        let (status, body) = http(&p, "POST", "/__proxy/reset", r#"{"history": true}"#).await;
        assert_eq!(status, 200, "{name}: {body}");
        assert_eq!(p.stats(), Stats::default());
        let (status, _) = http(&p, "GET", "/__proxy/nope", "").await;
        assert_eq!(status, 404);
        p.shutdown().await;
    }
}

/// The binary: first stdout line is the address; SIGTERM prints the final stats and exits 0.
#[tokio::test]
async fn binary_prints_address_and_final_stats() {
    let (_, upstream) = backends().remove(0);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_fault-proxy"))
        .args([
            "--upstream",
            &upstream,
            "--listen",
            "127.0.0.1:0",
            "--seed",
            "3",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn fault-proxy");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    let url = first
        .trim()
        .strip_prefix("listening ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");

    let c = sdk(&url, 1, None);
    c.list_tables()
        .send()
        .await
        .expect("list tables through the binary");

    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    assert!(child.wait().unwrap().success());
    let stats: Stats = serde_json::from_str(rest.trim()).unwrap();
    assert_eq!(stats, counts(&[("ListTables", "forwarded_ok", 1)]));
}
