//! Stale reads: eventually consistent GetItem / BatchGetItem answered from the history of the
//! writes the proxy forwarded; consistent reads and failed writes untouched.
//!
//! Made deterministic with the proxy's clock hook: writes are separated by
//! `advance_clock(10 s)` and reads are exactly 5–6 s stale (`stale_min_ms`..`stale_ms`), so the
//! read time falls between two known writes whatever the real timing.

mod common;

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::batch_get_item::BatchGetItemOutput;
use aws_sdk_dynamodb::types::{KeyType, KeysAndAttributes, ReturnValue};
use common::{each_backend, expect_code, s, stale_5_to_6s, Rig};
use ddblock_fault_proxy::FaultConfig;

#[tokio::test]
async fn stale_read_sees_previous_version_consistent_read_sees_latest() {
    each_backend(stale_5_to_6s(1), async |r: &Rig| {
        r.put_versions("k", &["v1", "v2"]).await;

        // Read time = now - 5..6 s: after v1 (10 s ago), before v2 (just now).
        r.expect_owner("k", None, Some("v1")).await;
        r.expect_owner("k", Some(false), Some("v1")).await;
        r.expect_owner("k", Some(true), Some("v2")).await;
        r.expect_stats(&[
            ("PutItem", "forwarded_ok", 2),
            ("GetItem", "stale_served", 2),
            ("GetItem", "forwarded_ok", 1),
        ]);
        // Once the read time is past the last write, eventual reads go upstream.
        r.ten_s_later();
        r.expect_owner("k", None, Some("v2")).await;
    })
    .await;
}

/// The Laravel bug: GetItem right after the PutItem that took the lock misses the owner.
#[tokio::test]
async fn eventual_read_right_after_first_write_misses_the_item() {
    let faults = FaultConfig {
        seed: 2,
        stale_ms: 61_000,
        stale_min_ms: 60_000,
        ..FaultConfig::default()
    };
    each_backend(faults, async |r: &Rig| {
        r.put("lock:a", "owner-1").await;
        // A minute stale: before the PutItem, when the lock item did not exist.
        r.expect_owner("lock:a", None, None).await;
        r.expect_owner("lock:a", Some(true), Some("owner-1")).await;
        r.expect_count("GetItem", "stale_served", 1);
    })
    .await;
}

#[tokio::test]
async fn delete_then_eventual_read_sees_the_old_item() {
    each_backend(stale_5_to_6s(3), async |r: &Rig| {
        r.put("k", "v1").await;
        r.ten_s_later();
        r.delete("k").await;

        r.expect_owner("k", None, Some("v1")).await;
        r.expect_owner("k", Some(true), None).await;
        r.expect_count("DeleteItem", "forwarded_ok", 1);
        r.expect_count("GetItem", "stale_served", 1);
    })
    .await;
}

#[tokio::test]
async fn failed_conditional_writes_stay_out_of_the_history() {
    each_backend(stale_5_to_6s(4), async |r: &Rig| {
        r.put("k", "v1").await;
        r.ten_s_later();
        r.put_if_absent_fails("k", "v2").await;
        r.ten_s_later();
        r.put("k", "v3").await;
        // Read time between the failed put and v3: still v1, never v2.
        r.expect_owner("k", None, Some("v1")).await;

        // Same for a failed conditional delete.
        r.ten_s_later();
        let deleted =
            r.c.delete_item()
                .table_name(&r.table)
                .key("key", s("k"))
                .condition_expression("#o = :o")
                .expression_attribute_names("#o", "owner")
                .expression_attribute_values(":o", s("somebody-else"))
                .send()
                .await;
        expect_code(deleted, "ConditionalCheckFailedException", r.name);
        r.ten_s_later();
        r.put("k", "v4").await;
        r.expect_owner("k", None, Some("v3")).await;

        let failed = "forwarded_error:ConditionalCheckFailedException";
        r.expect_count("PutItem", "forwarded_ok", 3);
        r.expect_count("PutItem", failed, 1);
        r.expect_count("DeleteItem", failed, 1);
        r.expect_count("GetItem", "stale_served", 2);
    })
    .await;
}

#[tokio::test]
async fn stale_probability_is_deterministic_for_a_seed() {
    let faults = FaultConfig {
        stale_probability: 0.5,
        ..stale_5_to_6s(1234)
    };
    each_backend(faults.clone(), async |r: &Rig| {
        r.put_versions("k", &["v1", "v2"]).await;
        let reads = async || {
            let mut seen = Vec::new();
            for _ in 0..32 {
                seen.push(r.owner("k", None).await.unwrap());
            }
            seen
        };

        let mut runs = Vec::new();
        for _ in 0..2 {
            r.p.set_config(faults.clone()).unwrap(); // re-seeds the RNG
            r.p.reset();
            let seen = reads().await;
            let stale = seen.iter().filter(|o| *o == "v1").count() as u64;
            assert!(seen.iter().all(|o| o == "v1" || o == "v2"), "{}", r.name);
            r.expect_count("GetItem", "stale_served", stale);
            r.expect_count("GetItem", "forwarded_ok", 32 - stale);
            runs.push(seen);
        }
        assert_eq!(runs[0], runs[1], "{}: same seed, same outcomes", r.name);
        let both = runs[0].iter().any(|o| o == "v1") && runs[0].iter().any(|o| o == "v2");
        assert!(both, "{}", r.name);

        // A different seed gives a different sequence.
        let other_seed = FaultConfig {
            seed: 99,
            ..faults.clone()
        };
        r.p.set_config(other_seed).unwrap();
        assert_ne!(reads().await, runs[0], "{}", r.name);
    })
    .await;
}

/// `(key, owner)` of each item a BatchGetItem answered for `table`, sorted.
fn batch_owners(out: BatchGetItemOutput, table: &str) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = out.responses().unwrap()[table]
        .iter()
        .map(|i| {
            let attr = |name: &str| i[name].as_s().unwrap().clone();
            (attr("key"), attr("owner"))
        })
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn batch_get_item_mixes_history_and_upstream() {
    each_backend(stale_5_to_6s(5), async |r: &Rig| {
        r.put("a", "a1").await;
        r.put("b", "b1").await;
        r.ten_s_later();
        r.put("a", "a2").await;

        let batch = async |keys: &[&str], consistent: bool| {
            let mut kaa = KeysAndAttributes::builder().consistent_read(consistent);
            for k in keys {
                kaa = kaa.keys(HashMap::from([("key".to_string(), s(k))]));
            }
            let req =
                r.c.batch_get_item()
                    .request_items(&r.table, kaa.build().unwrap());
            batch_owners(req.send().await.unwrap(), &r.table)
        };
        let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
            list.iter()
                .map(|(k, o)| (k.to_string(), o.to_string()))
                .collect()
        };

        // a: stale from history; b: unchanged since before the read time, so upstream; c: never written.
        let got = batch(&["a", "b", "c"], false).await;
        assert_eq!(got, pairs(&[("a", "a1"), ("b", "b1")]), "{}", r.name);
        // All keys served from history: answered without the upstream.
        let got = batch(&["a"], false).await;
        assert_eq!(got, pairs(&[("a", "a1")]), "{}", r.name);
        let got = batch(&["a", "b", "c"], true).await;
        assert_eq!(got, pairs(&[("a", "a2"), ("b", "b1")]), "{}", r.name);
        r.expect_stats(&[
            ("PutItem", "forwarded_ok", 3),
            ("BatchGetItem", "stale_served", 2),
            ("BatchGetItem", "forwarded_ok", 1),
        ]);
    })
    .await;
}

#[tokio::test]
async fn update_item_enters_the_history() {
    // History is kept for `stale_ms`: start with the wider window, narrow it later.
    let wide = FaultConfig {
        stale_ms: 16_000,
        stale_min_ms: 15_000,
        ..stale_5_to_6s(6)
    };
    each_backend(wide, async |r: &Rig| {
        r.put("k", "v1").await;
        r.ten_s_later();
        // No ReturnValues: the proxy reads the new item back with a consistent GetItem.
        r.set_owner("k", "v2", None).await;
        r.ten_s_later();
        // ALL_NEW: the new item comes from the response.
        r.set_owner("k", "v3", Some(ReturnValue::AllNew)).await;
        // 15-16 s ago: before the first update.
        r.expect_owner("k", None, Some("v1")).await;
        // 5-6 s ago: between the two updates, the state the proxy read back.
        r.p.set_config(stale_5_to_6s(6)).unwrap();
        r.expect_owner("k", None, Some("v2")).await;
        // Past the last write: upstream.
        r.ten_s_later();
        r.expect_owner("k", None, Some("v3")).await;
        r.expect_owner("k", Some(true), Some("v3")).await;
        r.expect_count("UpdateItem", "forwarded_ok", 2);
    })
    .await;
}

/// PutItem carries no Key map: the proxy learns the (composite) key schema by DescribeTable.
#[tokio::test]
async fn composite_key_schema_is_learned_for_put_item() {
    each_backend(stale_5_to_6s(7), async |r: &Rig| {
        let keys = [("pk", KeyType::Hash), ("sk", KeyType::Range)];
        let table = common::new_table_keys(&r.direct, &keys).await;
        let put = async |sk: &str, owner: &str| {
            let item = r.c.put_item().table_name(&table).item("pk", s("p"));
            let item = item.item("sk", s(sk)).item("owner", s(owner));
            item.send().await.unwrap();
        };
        put("1", "one-v1").await;
        put("2", "two-v1").await;
        r.ten_s_later();
        put("1", "one-v2").await;
        let owner = async |sk: &str| {
            let get = r.c.get_item().table_name(&table).key("sk", s(sk));
            let out = get.key("pk", s("p")).send().await.unwrap();
            out.item().unwrap()["owner"].as_s().unwrap().clone()
        };
        assert_eq!(owner("1").await, "one-v1", "{}", r.name);
        assert_eq!(owner("2").await, "two-v1", "{}", r.name);
        r.expect_count("GetItem", "stale_served", 1);
        r.expect_count("GetItem", "forwarded_ok", 1);
        // The proxy's own DescribeTable / GetItem calls are not counted.
        assert_eq!(r.p.stats().total("DescribeTable"), 0, "{}", r.name);
    })
    .await;
}
