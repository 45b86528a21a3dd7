//! Shared helpers of the fault-proxy tests: SDK clients, proxies, and a [`Rig`] (a proxy in
//! front of one local server, clients through it and direct, a fresh table) that each test runs
//! once per server with [`each_backend`].
//!
//! The tests run against the real local servers (moto and dynalite) with the real
//! `aws-sdk-dynamodb` client. Run them with `./compat-tests/run-tests.sh` (it starts the servers
//! and exports `DDBLOCK_TEST_MOTO` / `DDBLOCK_TEST_DYNALITE`).

// Each test file uses its own part of this module.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::time::Duration;

use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::{KeyType, ReturnValue, ScalarAttributeType};
use aws_sdk_dynamodb::Client;
use ddblock_fault_proxy::{start, FaultConfig, ProxyConfig, ProxyHandle, Stats};
pub use ddblock_test_support::s;
use ddblock_test_support::Server;

/// How far the tests move the proxy clock between two writes.
pub const TEN_S: Duration = Duration::from_secs(10);

/// `(name, endpoint)` of each local server.
pub fn backends() -> Vec<(&'static str, String)> {
    Server::ALL
        .into_iter()
        .map(|server| (server.name(), server.endpoint()))
        .collect()
}

/// SDK client: test credentials, `attempts` tries with a short backoff, optional attempt timeout.
pub fn sdk(endpoint: &str, attempts: u32, attempt_timeout: Option<Duration>) -> Client {
    let mut timeouts = TimeoutConfig::builder().connect_timeout(Duration::from_secs(5));
    if let Some(t) = attempt_timeout {
        timeouts = timeouts.operation_attempt_timeout(t);
    }
    let conf = ddblock_test_support::sdk::client_config(endpoint)
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

/// Reads exactly 5–6 s stale, always (seeded).
pub fn stale_5_to_6s(seed: u64) -> FaultConfig {
    FaultConfig {
        seed,
        stale_ms: 6_000,
        stale_min_ms: 5_000,
        stale_probability: 1.0,
        ..FaultConfig::default()
    }
}

/// Stats holding exactly these `(op, outcome, count)` entries.
pub fn counts(entries: &[(&str, &str, u64)]) -> Stats {
    let mut ops: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for (op, outcome, n) in entries {
        ops.entry(op.to_string())
            .or_default()
            .insert(outcome.to_string(), *n);
    }
    Stats {
        ops,
        ..Stats::default()
    }
}

/// Asserts that `result` failed with the service error `code` (`context` names the case).
pub fn expect_code<T: Debug, E, R>(result: Result<T, SdkError<E, R>>, code: &str, context: &str)
where
    E: ProvideErrorMetadata + Debug,
    R: Debug,
{
    let err = result.expect_err(code);
    let got = err.as_service_error().and_then(|e| e.code());
    assert_eq!(got, Some(code), "{context}: {err:?}");
}

/// A fresh table with these S key attributes, created directly on `server`, ACTIVE on return.
pub async fn new_table_keys(server: &Client, keys: &[(&str, KeyType)]) -> String {
    let name = ddblock_test_support::unique("fp_");
    let keys: Vec<_> = keys
        .iter()
        .map(|(attr, key_type)| (*attr, ScalarAttributeType::S, key_type.clone()))
        .collect();
    ddblock_test_support::create_keyed_table(server, &name, &keys).await;
    name
}

/// The `owner` attribute of the item (None if there is no item).
pub async fn get_owner(
    c: &Client,
    table: &str,
    key: &str,
    consistent: Option<bool>,
) -> Option<String> {
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

/// How the rig's client is configured.
#[derive(Debug, Clone, Copy)]
pub struct Retries {
    pub attempts: u32,
    pub attempt_timeout: Option<Duration>,
}

/// One attempt, no attempt timeout.
pub const ONE_ATTEMPT: Retries = Retries {
    attempts: 1,
    attempt_timeout: None,
};

/// A proxy in front of one local server, a client through it, one direct, and a fresh table
/// (`key` S hash key) created directly on the server.
pub struct Rig {
    /// The server's name, for assertion messages.
    pub name: &'static str,
    pub upstream: String,
    pub p: ProxyHandle,
    /// Through the proxy.
    pub c: Client,
    /// Straight to the server (3 attempts).
    pub direct: Client,
    pub table: String,
}

/// Runs `test` once per local server, on a [`Rig`] with a one-attempt client.
pub async fn each_backend(faults: FaultConfig, test: impl AsyncFn(&Rig)) {
    each_backend_with(faults, ONE_ATTEMPT, test).await;
}

/// Runs `test` once per local server, on a [`Rig`] whose client retries as `retries` says.
pub async fn each_backend_with(faults: FaultConfig, retries: Retries, test: impl AsyncFn(&Rig)) {
    for (name, upstream) in backends() {
        let rig = Rig::start(name, upstream, faults.clone(), retries).await;
        test(&rig).await;
        rig.p.shutdown().await;
    }
}

impl Rig {
    pub async fn start(
        name: &'static str,
        upstream: String,
        faults: FaultConfig,
        retries: Retries,
    ) -> Rig {
        let p = start(ProxyConfig {
            upstream: upstream.clone(),
            listen: "127.0.0.1:0".into(),
            faults,
        })
        .await
        .expect("proxy starts");
        let c = sdk(&p.url(), retries.attempts, retries.attempt_timeout);
        let direct = sdk(&upstream, 3, None);
        let table = ddblock_test_support::new_table(&direct, "key").await;
        Rig {
            name,
            upstream,
            p,
            c,
            direct,
            table,
        }
    }

    /// PutItem `{key, owner}` through the proxy.
    pub async fn put(&self, key: &str, owner: &str) {
        self.c
            .put_item()
            .table_name(&self.table)
            .item("key", s(key))
            .item("owner", s(owner))
            .send()
            .await
            .expect("put");
    }

    /// Moves the proxy clock 10 s forward: the writes before and after are 10 s apart.
    pub fn ten_s_later(&self) {
        self.p.advance_clock(TEN_S);
    }

    /// Puts each owner of `key` in turn, 10 s apart on the proxy clock.
    pub async fn put_versions(&self, key: &str, owners: &[&str]) {
        for (i, owner) in owners.iter().enumerate() {
            if i > 0 {
                self.ten_s_later();
            }
            self.put(key, owner).await;
        }
    }

    /// A PutItem `{key, owner}` conditioned on the item not existing, expected to fail.
    pub async fn put_if_absent_fails(&self, key: &str, owner: &str) {
        let result = self
            .c
            .put_item()
            .table_name(&self.table)
            .item("key", s(key))
            .item("owner", s(owner))
            .condition_expression("attribute_not_exists(#k)")
            .expression_attribute_names("#k", "key")
            .send()
            .await;
        expect_code(result, "ConditionalCheckFailedException", self.name);
    }

    /// DeleteItem through the proxy.
    pub async fn delete(&self, key: &str) {
        let deleted = self
            .c
            .delete_item()
            .table_name(&self.table)
            .key("key", s(key));
        deleted.send().await.expect("delete");
    }

    /// UpdateItem `SET owner = :o` through the proxy.
    pub async fn set_owner(&self, key: &str, owner: &str, return_values: Option<ReturnValue>) {
        self.c
            .update_item()
            .table_name(&self.table)
            .key("key", s(key))
            .update_expression("SET #o = :o")
            .expression_attribute_names("#o", "owner")
            .expression_attribute_values(":o", s(owner))
            .set_return_values(return_values)
            .send()
            .await
            .expect("update");
    }

    /// The `owner` of `key` read through the proxy (`consistent`: the `ConsistentRead` sent).
    pub async fn owner(&self, key: &str, consistent: Option<bool>) -> Option<String> {
        get_owner(&self.c, &self.table, key, consistent).await
    }

    /// Asserts the `owner` of `key` read through the proxy.
    pub async fn expect_owner(&self, key: &str, consistent: Option<bool>, expected: Option<&str>) {
        let got = self.owner(key, consistent).await;
        assert_eq!(
            got.as_deref(),
            expected,
            "{}: {key} ({consistent:?})",
            self.name
        );
    }

    /// Asserts the `owner` of `key` read directly on the server (consistent).
    pub async fn expect_direct_owner(&self, key: &str, expected: Option<&str>) {
        let got = get_owner(&self.direct, &self.table, key, Some(true)).await;
        assert_eq!(
            got.as_deref(),
            expected,
            "{}: {key} on the server",
            self.name
        );
    }

    /// Asserts one counter of the proxy.
    pub fn expect_count(&self, op: &str, outcome: &str, n: u64) {
        let got = self.p.stats().count(op, outcome);
        assert_eq!(got, n, "{}: {op} {outcome}", self.name);
    }

    /// Asserts all counters of the proxy: exactly these `(op, outcome, count)` entries (the
    /// count of eventually consistent reads aside: `Stats::eventual_reads`).
    pub fn expect_stats(&self, entries: &[(&str, &str, u64)]) {
        assert_eq!(self.p.stats().ops, counts(entries).ops, "{}", self.name);
    }
}
