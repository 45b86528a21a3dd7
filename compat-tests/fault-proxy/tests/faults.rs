//! Injected faults as the SDK sees them: throttling and 500s (never forwarded), dropped answers
//! (the write lands), added latency, and the journal of what the server really did.

mod common;

use std::time::{Duration, Instant};

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use common::{each_backend, each_backend_with, expect_code, s, Retries, Rig, ONE_ATTEMPT};
use ddblock_fault_proxy::FaultConfig;

/// Three attempts, no attempt timeout.
const THREE_ATTEMPTS: Retries = Retries {
    attempts: 3,
    attempt_timeout: None,
};

/// Throttled requests are answered by the proxy, never forwarded: every attempt is throttled.
#[tokio::test]
async fn throttle_rate_one_exhausts_the_sdk_retries() {
    let faults = FaultConfig {
        throttle_rate: 1.0,
        ..FaultConfig::default()
    };
    each_backend_with(faults, THREE_ATTEMPTS, async |r: &Rig| {
        let put = r.c.put_item().table_name(&r.table).item("key", s("k"));
        let code = "ProvisionedThroughputExceededException";
        expect_code(put.send().await, code, r.name);
        r.expect_stats(&[("PutItem", "throttled", 3)]);
        // Never forwarded.
        r.expect_direct_owner("k", None).await;
    })
    .await;
}

/// With the journal on, a write refused before forwarding is journaled too (status 0,
/// `not_forwarded`, and why): it was sent, and never landed.
#[tokio::test]
async fn journal_records_writes_refused_before_forwarding() {
    let faults = FaultConfig {
        journal: true,
        throttle_rate: 1.0,
        ..FaultConfig::default()
    };
    each_backend_with(faults, THREE_ATTEMPTS, async |r: &Rig| {
        let put = r.c.put_item().table_name(&r.table).item("key", s("k"));
        expect_code(
            put.send().await,
            "ProvisionedThroughputExceededException",
            r.name,
        );
        let journal = r.p.journal();
        assert_eq!(journal.len(), 3, "{}: {journal:?}", r.name);
        for e in &journal {
            assert_eq!(e["op"], "PutItem", "{}", r.name);
            assert_eq!(e["status"], 0, "{}", r.name);
            assert_eq!(e["delivery"], "not_forwarded", "{}", r.name);
            assert_eq!(e["response"]["not_forwarded"], "throttled", "{}", r.name);
            assert_eq!(e["request"]["Item"]["key"]["S"], "k", "{}", r.name);
        }
        r.expect_direct_owner("k", None).await;
    })
    .await;
}

/// 500s only for the operations listed: PutItem goes through, each GetItem attempt gets a 500.
#[tokio::test]
async fn error_500_rate_one_exhausts_the_sdk_retries() {
    let faults = FaultConfig {
        error_500_rate: 1.0,
        error_500_ops: vec!["GetItem".into()],
        ..FaultConfig::default()
    };
    each_backend_with(faults, THREE_ATTEMPTS, async |r: &Rig| {
        r.put("k", "v").await; // not in error_500_ops
        let get = r.c.get_item().table_name(&r.table).key("key", s("k"));
        expect_code(get.send().await, "InternalServerError", r.name);
        r.expect_stats(&[("PutItem", "forwarded_ok", 1), ("GetItem", "error500", 3)]);
    })
    .await;
}

/// The ambiguous write: the server applied it, the client never heard back.
#[tokio::test]
async fn dropped_response_fails_the_client_but_the_write_lands() {
    let faults = FaultConfig {
        drop_response_rate: 1.0,
        drop_ops: vec!["PutItem".into()],
        ..FaultConfig::default()
    };
    let retries = Retries {
        attempts: 2,
        attempt_timeout: Some(Duration::from_secs(10)),
    };
    each_backend_with(faults, retries, async |r: &Rig| {
        let put = r.c.put_item().table_name(&r.table).item("key", s("k"));
        let err = put
            .item("owner", s("landed"))
            .send()
            .await
            .expect_err("no response");
        // The connection is closed without an answer: the SDK sees a dispatch (I/O)
        // failure ("connection closed before message completed"), retried like one.
        assert!(
            matches!(err, SdkError::DispatchFailure(_)),
            "{}: {err:?}",
            r.name
        );
        // Both attempts reached the upstream and had their answers dropped.
        r.expect_stats(&[("PutItem", "dropped", 2)]);
        r.expect_direct_owner("k", Some("landed")).await;
        // Other operations are untouched.
        r.expect_owner("k", Some(true), Some("landed")).await;
        r.expect_count("GetItem", "forwarded_ok", 1);
    })
    .await;
}

/// The journal lists each forwarded write with the server's answer; writes to one item in commit
/// order: replaying the successful ones reproduces the item the server holds.
#[tokio::test]
async fn journal_records_writes_in_commit_order() {
    let faults = FaultConfig {
        journal: true,
        drop_response_rate: 0.3,
        drop_ops: vec!["UpdateItem".into()],
        seed: 11,
        ..FaultConfig::default()
    };
    let retries = Retries {
        attempt_timeout: Some(Duration::from_secs(10)),
        ..ONE_ATTEMPT
    };
    each_backend_with(faults, retries, async |r: &Rig| {
        let n = |v: u64| AttributeValue::N(v.to_string());
        // 40 concurrent increments of one counter, each conditioned on the value it read last.
        let mut tasks = Vec::new();
        for i in 0..40 {
            let update =
                r.c.update_item()
                    .table_name(&r.table)
                    .key("key", s("counter"))
                    .update_expression("SET n = if_not_exists(n, :zero) + :one, latest = :i")
                    .expression_attribute_values(":zero", n(0))
                    .expression_attribute_values(":one", n(1))
                    .expression_attribute_values(":i", n(i))
                    .return_values(ReturnValue::UpdatedNew);
            tasks.push(tokio::spawn(async move {
                let _ = update.send().await;
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let journal = r.p.journal();
        assert_eq!(journal.len(), 40, "{}", r.name);
        // In commit order, the counter the server returned goes 1, 2, 3, ... and the last entry's
        // `latest` is what the item holds, whether or not its answer reached the client.
        let seen: Vec<u64> = journal
            .iter()
            .map(|e| {
                assert_eq!(e["op"], "UpdateItem");
                assert_eq!(e["status"], 200, "{}: {e}", r.name);
                let counter = e["response"]["Attributes"]["n"]["N"].as_str().unwrap();
                counter.parse().unwrap()
            })
            .collect();
        assert_eq!(seen, (1..=40).collect::<Vec<u64>>(), "{}", r.name);
        let dropped = journal
            .iter()
            .filter(|e| e["delivery"] == "dropped")
            .count() as u64;
        r.expect_count("UpdateItem", "dropped", dropped);
        assert!(dropped > 0, "{}: the seed drops some answers", r.name);
        let get = r
            .direct
            .get_item()
            .table_name(&r.table)
            .key("key", s("counter"));
        let item = get
            .consistent_read(true)
            .send()
            .await
            .unwrap()
            .item
            .unwrap();
        assert_eq!(
            Some(item["latest"].as_n().unwrap().as_str()),
            journal[39]["request"]["ExpressionAttributeValues"][":i"]["N"].as_str(),
            "{}",
            r.name
        );
        r.p.clear_journal();
        assert!(r.p.journal().is_empty());
    })
    .await;
}

/// Every request waits `latency_ms` (plus jitter) before it is handled.
#[tokio::test]
async fn latency_is_added_before_forwarding() {
    let faults = FaultConfig {
        latency_ms: 150,
        latency_jitter_ms: 20,
        ..FaultConfig::default()
    };
    each_backend(faults, async |r: &Rig| {
        for _ in 0..3 {
            let t0 = Instant::now();
            r.owner("k", None).await;
            let took = t0.elapsed();
            assert!(took >= Duration::from_millis(150), "{}: {took:?}", r.name);
        }
        r.expect_count("GetItem", "forwarded_ok", 3);
    })
    .await;
}

/// What no local server has, made by the proxy: a global table's `DescribeTable` fields, a denied
/// action (`deny_ops`), and MRSC's `ReplicatedWriteConflictException` (scripted; not forwarded,
/// so the write did not land).
#[tokio::test]
async fn global_table_fields_denials_and_replicated_conflicts() {
    let mut described = serde_json::Map::new();
    described.insert(
        "Replicas".into(),
        serde_json::json!([{"RegionName": "eu-west-1"}, {"RegionName": "us-east-1"}]),
    );
    described.insert("MultiRegionConsistency".into(), "STRONG".into());
    let faults = FaultConfig {
        describe_table: described,
        sequence: [("PutItem".to_owned(), vec!["replicated_conflict".to_owned()])].into(),
        ..FaultConfig::default()
    };
    each_backend(faults, async |r: &Rig| {
        let t = r.c.describe_table().table_name(&r.table).send().await;
        let t = t.expect("described").table.expect("a table");
        let regions: Vec<_> = t
            .replicas()
            .iter()
            .filter_map(|x| x.region_name())
            .collect();
        assert_eq!(regions, ["eu-west-1", "us-east-1"], "{}", r.name);
        assert_eq!(
            t.multi_region_consistency().map(|c| c.as_str()),
            Some("STRONG"),
            "{}",
            r.name
        );
        let put = r.c.put_item().table_name(&r.table).item("key", s("k"));
        expect_code(put.send().await, "ReplicatedWriteConflictException", r.name);
        r.expect_direct_owner("k", None).await;
        r.expect_stats(&[
            ("DescribeTable", "forwarded_ok", 1),
            ("PutItem", "replicated_conflict", 1),
        ]);
    })
    .await;
    let faults = FaultConfig {
        deny_ops: vec!["DescribeTable".into()],
        ..FaultConfig::default()
    };
    each_backend(faults, async |r: &Rig| {
        let described = r.c.describe_table().table_name(&r.table).send().await;
        expect_code(described, "AccessDeniedException", r.name);
        r.put("k", "v").await; // other operations go through
        r.expect_stats(&[
            ("DescribeTable", "access_denied", 1),
            ("PutItem", "forwarded_ok", 1),
        ]);
    })
    .await;
}
