//! The shared bad-input table (compat-tests/conformance/bad-input.json) through the Rust core: each case gets
//! the kind every other front gets too.

mod common;

use common::{client_for, faulty, new_table, s, Server};
use ddblock::format::input::ttl_from_f64;
use std::time::Duration;

use ddblock::{Error, Store, StoreConfig, Wait};
use ddblock_fault_proxy::FaultConfig;
use serde_json::Value;

fn cases() -> Vec<Value> {
    let text = std::fs::read_to_string(
        ddblock_test_support::repo_root().join("compat-tests/conformance/bad-input.json"),
    )
    .unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    v["cases"].as_array().unwrap().clone()
}

fn name_of(c: &Value) -> String {
    match c.get("name_repeat") {
        Some(r) => r[0]
            .as_str()
            .unwrap()
            .repeat(r[1].as_u64().unwrap() as usize),
        None => c["name"].as_str().unwrap_or_default().to_owned(),
    }
}

/// A ttl from the table's number, through the rule every front applies to numbers.
fn ttl(c: &Value) -> Result<i64, Error> {
    ttl_from_f64(c["ttl"].as_f64().unwrap())
}

/// Runs `c` with no AWS credentials anywhere: the SDK's default chain (what `Store::connect`
/// uses) finds none. This test binary has this one test, so changing the environment is safe.
async fn without_credentials(c: &Value, endpoint: &str, table: &str) -> Result<(), Error> {
    let saved: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| k.starts_with("AWS_") || k == "HOME")
        .collect();
    for (k, _) in &saved {
        std::env::remove_var(k);
    }
    let home = std::env::temp_dir().join(format!("ddblock-no-credentials-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    std::env::set_var("HOME", &home);
    std::env::set_var("AWS_EC2_METADATA_DISABLED", "true");
    let config = StoreConfig::builder()
        .endpoint(endpoint)
        .region("us-east-1")
        .table(table)
        .build()?;
    let result = match Store::connect(config).await {
        Ok(store) => op(c, &store).await,
        Err(e) => Err(e),
    };
    std::env::remove_var("AWS_EC2_METADATA_DISABLED");
    for (k, v) in saved {
        std::env::set_var(k, v);
    }
    result
}

/// The case's operation on `store`.
async fn op(c: &Value, store: &Store) -> Result<(), Error> {
    match c["op"].as_str().unwrap() {
        "lock" => store.lock(&name_of(c), ttl(c)?).map(drop),
        "acquire" => store.lock(&name_of(c), ttl(c)?)?.acquire().await.map(drop),
        "get" => store.get(c["key"].as_str().unwrap()).await.map(drop),
        "put" => {
            let v = c["value"].as_str().unwrap().into();
            store.put(c["key"].as_str().unwrap(), &v, ttl(c)?).await
        }
        "once" => store.once(&name_of(c), ttl(c)?).map(drop),
        "put_if_version" => {
            let v = c["value"].as_str().unwrap().into();
            let version = ddblock::cas::version_from_f64(c["version"].as_f64().unwrap())?;
            store
                .put_if_version(c["key"].as_str().unwrap(), &v, ttl(c)?, version)
                .await
                .map(drop)
        }
        other => panic!("unknown op {other}"),
    }
}

async fn run(c: &Value, endpoint: &str, table: &str) -> Result<(), Error> {
    // Keep the proxy alive until the case has run.
    let mut _proxy = None;
    let endpoint = match c["server"].as_str() {
        None => endpoint.to_owned(),
        Some("unreachable") => ddblock_test_support::closed_endpoint(),
        Some("throttling") => {
            let throttle = FaultConfig {
                throttle_rate: 1.0,
                ..FaultConfig::default()
            };
            let p = faulty(endpoint, throttle).await;
            let url = p.endpoint.clone();
            _proxy = Some(p);
            url
        }
        Some("no_credentials") => return without_credentials(c, endpoint, table).await,
        Some(other) => panic!("unknown server {other}"),
    };
    let endpoint = endpoint.as_str();
    if let Some(text) = c["stored"].as_str() {
        client_for(endpoint)
            .put_item()
            .table_name(table)
            .item("key", s(c["key"].as_str().unwrap()))
            .item("value", s(text))
            .send()
            .await
            .expect("raw PutItem");
    }
    let mut b = StoreConfig::builder()
        .endpoint(endpoint)
        .region("us-east-1")
        .prefix("")
        .max_attempts(2);
    b = b.table(match c["table"].as_str() {
        Some("missing") => "ddblock_no_such_table",
        _ => table,
    });
    match c["op"].as_str().unwrap() {
        "config" => {
            if let Some(l) = c["layout"].as_str() {
                b = b.layout(l.parse()?);
            }
            if let Some(e) = c["endpoint"].as_str() {
                b = b.endpoint(e);
            }
            if let Some(t) = c["table"].as_str() {
                b = b.table(t);
            }
            if let Some(m) = c["clock_skew_margin"].as_f64() {
                b = b.clock_skew_margin(std::time::Duration::from_secs_f64(m));
            }
            b.build().map(drop)
        }
        _ => op(c, &Store::with_client(client_for(endpoint), b.build()?)).await,
    }
}

#[tokio::test]
async fn every_bad_input_gets_its_kind() {
    let endpoint = Server::Moto.endpoint();
    let table = new_table(&client_for(&endpoint), "key").await;
    for c in cases() {
        let err = run(&c, &endpoint, &table)
            .await
            .expect_err(c["case"].as_str().unwrap());
        assert_eq!(
            err.kind().as_str(),
            c["kind"].as_str().unwrap(),
            "{}: {err}",
            c["case"]
        );
    }
}

/// The wait of an outcome case, from its number, "forever" or "NaN".
fn wait_of(c: &Value) -> Result<Wait, Error> {
    match &c["wait"] {
        Value::String(s) if s == "forever" => Ok(Wait::Forever),
        Value::String(s) if s == "NaN" => Wait::from_secs_f64(f64::NAN),
        v => Wait::from_secs_f64(v.as_f64().unwrap()),
    }
}

/// What an outcome case did, in the table's words.
#[derive(Debug, PartialEq)]
enum Outcome {
    Acquired(bool),
    Ok,
    Error(String),
    BodyError { attached: String },
}

/// The body of an outcome case: `Err("body")` for `raise`; `lose_lease` force-releases the lock
/// from a second handle and waits for the heartbeat to see it; `remove` force-releases it and
/// ends at once.
async fn body(c: &Value, store: &Store, lease: Option<ddblock::Lease>) -> Result<(), &'static str> {
    match c["body"].as_str().unwrap() {
        "ok" => Ok(()),
        "raise" => Err("body"),
        "lose_lease" => {
            let lease = lease.expect("a lease");
            store
                .lock(lease.lock().name(), 10)
                .unwrap()
                .force_release()
                .await
                .unwrap();
            tokio::time::timeout(Duration::from_secs(5), lease.lost())
                .await
                .expect("the heartbeat sees the lease lost");
            Ok(())
        }
        "remove" => {
            let lease = lease.expect("a lease");
            let other = store.lock(lease.lock().name(), 10).unwrap();
            assert!(other.force_release().await.unwrap(), "the lock was there");
            Ok(())
        }
        other => panic!("unknown body {other}"),
    }
}

async fn outcome(c: &Value, name: &str, store: &Store, direct: &Store) -> Outcome {
    let err = |e: Error| Outcome::Error(e.kind().as_str().to_owned());
    let ttl = ttl(c).unwrap();
    match c["op"].as_str().unwrap() {
        "acquire" => {
            if c["held_by_other"].as_bool() == Some(true) {
                assert!(direct
                    .lock(name, 60)
                    .unwrap()
                    .acquire()
                    .await
                    .unwrap()
                    .is_acquired());
            }
            let wait = match wait_of(c) {
                Ok(w) => w,
                Err(e) => return err(e),
            };
            match store.lock(name, ttl).unwrap().acquire_within(wait).await {
                Ok(o) => Outcome::Acquired(o.is_acquired()),
                Err(e) => err(e),
            }
        }
        "with_lock" => {
            let lock = store.lock(name, ttl).unwrap();
            let done = lock
                .with_lock(wait_of(c).unwrap(), |lease| body(c, direct, Some(lease)))
                .await;
            match done {
                Ok(Ok(())) => Outcome::Ok,
                Ok(Err(_)) => panic!("the body failed and nothing was attached"),
                Err(e) => match e.value {
                    Some(Err(_)) => Outcome::BodyError {
                        attached: e.error.kind().as_str().to_owned(),
                    },
                    _ => err(e.error),
                },
            }
        }
        "once_run" => {
            let once = store.once(name, ttl).unwrap();
            // Rust's idiom: `run` returns the handler's error and logs the give-back's; the
            // give-back's error is checked through `Claim::finish`, which `run` calls.
            let claim = match once.claim().await.unwrap() {
                ddblock::ClaimOutcome::Claimed(c) => c,
                other => panic!("not claimed: {other:?}"),
            };
            match body(c, direct, None).await {
                Ok(()) => match claim.finish(true).await {
                    Ok(()) => Outcome::Ok,
                    Err(e) => err(e),
                },
                Err(_) => match claim.finish(false).await {
                    Ok(()) => panic!("the handler failed and nothing was attached"),
                    Err(e) => Outcome::BodyError {
                        attached: e.kind().as_str().to_owned(),
                    },
                },
            }
        }
        other => panic!("unknown op {other}"),
    }
}

fn expected(c: &Value) -> Outcome {
    let e = &c["expect"];
    if let Some(a) = e["acquired"].as_bool() {
        Outcome::Acquired(a)
    } else if e["ok"].as_bool() == Some(true) {
        Outcome::Ok
    } else if let Some(k) = e["error"].as_str() {
        Outcome::Error(k.to_owned())
    } else {
        Outcome::BodyError {
            attached: e["attached"].as_str().unwrap().to_owned(),
        }
    }
}

/// The wait and lease cases of the shared table (its `outcomes`): the outcome every front gets.
#[tokio::test]
async fn every_wait_and_lease_case_has_its_outcome() {
    let endpoint = Server::Moto.endpoint();
    let table = new_table(&client_for(&endpoint), "key").await;
    let config = |endpoint: &str| {
        StoreConfig::builder()
            .endpoint(endpoint)
            .region("us-east-1")
            .prefix("")
            .table(&table)
            .build()
            .unwrap()
    };
    let direct = Store::with_client(client_for(&endpoint), config(&endpoint));
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(
            ddblock_test_support::repo_root().join("compat-tests/conformance/bad-input.json"),
        )
        .unwrap(),
    )
    .unwrap();
    for (i, c) in v["outcomes"].as_array().unwrap().iter().enumerate() {
        let case = c["case"].as_str().unwrap();
        let name = format!("{}-{i}", c["name"].as_str().unwrap());
        let faults: FaultConfig = c
            .get("faults")
            .map(|f| serde_json::from_value(f.clone()).expect("the case's faults"))
            .unwrap_or_default();
        let proxy = faulty(&endpoint, faults.clone()).await;
        let store = Store::with_client(proxy.client(), config(&proxy.endpoint));
        assert_eq!(
            outcome(c, &name, &store, &direct).await,
            expected(c),
            "{case}"
        );
        // The scripted faults happened (a case that passes without them proves nothing).
        let unseen = proxy
            .stats()
            .unseen_scripted(&faults.sequence)
            .map(|(op, f)| (op.to_owned(), f.to_owned()));
        assert_eq!(unseen, None, "{case}: a scripted fault never happened");
        if c["free_after"].as_bool() == Some(true) {
            let lock = direct.lock(&name, 10).unwrap();
            assert!(
                !lock.is_locked().await.unwrap(),
                "{case}: the lock is free after"
            );
        }
        proxy.shutdown().await;
    }
}
