//! The shared bad-input table (compat-tests/bad-input.json) through the Rust core: each case gets
//! the kind every other front gets too.

mod common;

use common::{client_for, new_table, Server};
use ddblock::format::input::ttl_from_f64;
use ddblock::{Error, Store, StoreConfig};
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

async fn run(c: &Value, endpoint: &str, table: &str) -> Result<(), Error> {
    let mut b = StoreConfig::builder()
        .endpoint(endpoint)
        .region("us-east-1");
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
            b.build().map(drop)
        }
        op => {
            let store = Store::with_client(client_for(endpoint), b.build()?);
            match op {
                "lock" => store.lock(&name_of(c), ttl(c)?).map(drop),
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
