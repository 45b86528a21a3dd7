//! Errors that say what is wrong (issue 16: what a new user meets first), against real servers:
//! an item that is not a Laravel value names its key, `many` answers each key on its own (a
//! corrupt item fails its key only), a missing table says how to create it, and an endpoint that
//! is not DynamoDB says what came back.

mod common;

use std::time::Duration;

use common::{laravel_item, on_servers, s, Env, Server};
use ddblock::aws_sdk_dynamodb::types::AttributeValue;
use ddblock::{ErrorKind, KeyLayout, PhpValue, Store, StoreConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

fn php_s(v: &str) -> PhpValue {
    PhpValue::String(v.as_bytes().to_vec())
}

async fn items_that_are_not_laravel_values_say_so(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let t = env.now();
    for (key, value) in [
        ("bool", AttributeValue::Bool(true)),
        ("list", AttributeValue::L(vec![s("x")])),
        ("bin", AttributeValue::B(vec![1u8, 2].into())),
    ] {
        env.put_raw(laravel_item(&format!("app_{key}"), value, t + 60))
            .await;
        let err = store.get(key).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Codec, "{err}");
        let msg = err.to_string();
        assert!(msg.contains(&format!("{key:?}")), "names the key: {msg}");
        assert!(msg.contains("not a Laravel cache value"), "{msg}");
    }
    // An expiry that is not a number names the key and the attribute.
    env.put_raw(std::collections::HashMap::from([
        ("key".to_owned(), s("app_weird")),
        ("value".to_owned(), s("s:1:\"v\";")),
        ("expires_at".to_owned(), s("tomorrow")),
    ]))
    .await;
    let msg = store.get("weird").await.unwrap_err().to_string();
    assert!(
        msg.contains("\"weird\"") && msg.contains("expires_at"),
        "{msg}"
    );
}

async fn many_answers_each_key_on_its_own(server: Server) {
    let env = Env::new(server).await;
    let store = env.store(KeyLayout::Laravel12);
    let t = env.now();
    store.put("good", &php_s("ok"), 60).await.unwrap();
    env.put_raw(laravel_item("app_corrupt", s("s:99:\"short\";"), t + 60))
        .await;
    env.put_raw(laravel_item("app_flag", AttributeValue::Bool(true), t + 60))
        .await;
    let got = store
        .many(&["good", "corrupt", "missing", "flag"])
        .await
        .unwrap();
    assert_eq!(got[0].1.as_ref().unwrap(), &Some(php_s("ok")));
    let corrupt = got[1].1.as_ref().unwrap_err();
    assert_eq!(corrupt.kind(), ErrorKind::Codec);
    assert!(corrupt.to_string().contains("\"corrupt\""), "{corrupt}");
    assert_eq!(got[2].1.as_ref().unwrap(), &None);
    assert_eq!(got[3].1.as_ref().unwrap_err().kind(), ErrorKind::Codec);
}

async fn a_missing_table_says_how_to_create_it(server: Server) {
    let env = Env::new(server).await;
    let store = Store::with_client(
        env.client.clone(),
        env.config().table("no_such_table").build().unwrap(),
    );
    let err = store.get("k").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TableNotFound);
    assert!(
        err.to_string().contains("Admin::new(&store).create_table("),
        "{err}"
    );
    let hinted = Store::with_client(
        env.client.clone(),
        env.config()
            .table("no_such_table")
            .create_table_hint("`make table`")
            .build()
            .unwrap(),
    );
    let err = hinted.get("k").await.unwrap_err();
    assert!(err.to_string().contains("`make table`"), "{err}");
}

on_servers!(
    items_that_are_not_laravel_values_say_so,
    many_answers_each_key_on_its_own,
    a_missing_table_says_how_to_create_it,
);

/// A server that answers every request with an HTML page, like a web server on the wrong port.
async fn html_server(status: &'static str) -> String {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = l.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                let _ = sock.read(&mut buf).await;
                let body = "<html><body>Not Found: this is not DynamoDB</body></html>";
                let resp = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
            });
        }
    });
    endpoint
}

#[tokio::test]
async fn an_endpoint_that_is_not_dynamodb_says_what_came_back() {
    for status in ["404 Not Found", "200 OK"] {
        let endpoint = html_server(status).await;
        let cfg = StoreConfig::builder()
            .endpoint(&endpoint)
            .region("us-east-1")
            .max_attempts(1)
            .operation_timeout(Duration::from_secs(5))
            .build()
            .unwrap();
        let client = common::client_for(&endpoint);
        let store = Store::with_client(client, cfg);
        let err = store.get("k").await.unwrap_err();
        let msg = err.to_string();
        assert_eq!(err.kind(), ErrorKind::Transport, "{msg}");
        assert!(!msg.contains("Unknown: "), "not an empty 'Unknown': {msg}");
        assert!(
            msg.contains("this is not DynamoDB"),
            "quotes the body: {msg}"
        );
        if status.starts_with("404") {
            assert!(msg.contains("HTTP 404"), "names the status: {msg}");
        }
    }
}
