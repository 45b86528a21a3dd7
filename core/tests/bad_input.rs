//! The shared bad-input table (compat-tests/bad-input.json) through the Rust core: each case gets
//! the kind every other front gets too.

mod common;

use common::{client_for, new_table, s, Server};
use ddblock::format::input::ttl_from_f64;
use ddblock::{Error, Store, StoreConfig};
use ddblock_fault_proxy::{FaultConfig, ProxyConfig};
use serde_json::Value;

fn cases() -> Vec<Value> {
    let text = std::fs::read_to_string(
        ddblock_test_support::repo_root().join("compat-tests/bad-input.json"),
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
            let p = ddblock_fault_proxy::start(ProxyConfig {
                upstream: endpoint.into(),
                listen: "127.0.0.1:0".into(),
                faults: FaultConfig {
                    throttle_rate: 1.0,
                    ..FaultConfig::default()
                },
            })
            .await
            .expect("proxy");
            let url = p.url();
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
