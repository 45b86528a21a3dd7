//! Failures below DynamoDB's API: unreachable endpoints and throttling after the SDK's retries.

use std::time::Duration;

use ddblock::{ErrorKind, PhpValue, Store, StoreConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

async fn store_at(endpoint: &str, attempts: u32) -> Store {
    let cfg = StoreConfig::builder()
        .endpoint(endpoint)
        .region("us-east-1")
        .connect_timeout(Duration::from_millis(500))
        .operation_timeout(Duration::from_secs(5))
        .max_attempts(attempts)
        .build()
        .unwrap();
    Store::connect(cfg).await.unwrap()
}

#[tokio::test]
async fn unreachable_endpoint_names_the_endpoint() {
    // The static test credentials keep aws-config from probing instance metadata.
    std::env::set_var("AWS_ACCESS_KEY_ID", "test");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "test");
    let endpoint = ddblock_test_support::closed_endpoint();
    let store = store_at(&endpoint, 1).await;
    let err = store.get("k").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Transport, "{err}");
    let msg = err.to_string();
    assert!(msg.contains(&endpoint), "{msg}");
    assert!(
        msg.contains("Connection refused"),
        "says what happened: {msg}"
    );
    assert!(!msg.contains("DispatchFailure {"), "no Debug dump: {msg}");
    let lock = store.lock("l", 10).unwrap();
    assert_eq!(
        lock.acquire().await.unwrap_err().kind(),
        ErrorKind::Transport
    );
}

/// A server that answers every request with DynamoDB's throttling error, counting requests.
async fn throttling_server() -> (String, tokio::sync::mpsc::UnboundedReceiver<()>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", l.local_addr().unwrap());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = l.accept().await else {
                return;
            };
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                let mut seen = Vec::new();
                // Read headers and the declared body, then answer; keep the connection alive.
                loop {
                    let Ok(k) = sock.read(&mut buf).await else {
                        return;
                    };
                    if k == 0 {
                        return;
                    }
                    seen.extend_from_slice(&buf[..k]);
                    let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") else {
                        continue;
                    };
                    let head = String::from_utf8_lossy(&seen[..end]).to_ascii_lowercase();
                    let len = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    if seen.len() < end + 4 + len {
                        continue;
                    }
                    seen.drain(..end + 4 + len);
                    let _ = tx.send(());
                    let body = r#"{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"The level of configured provisioned throughput for the table was exceeded."}"#;
                    let resp = format!(
                        "HTTP/1.1 400 Bad Request\r\ncontent-type: application/x-amz-json-1.0\r\ncontent-length: {}\r\n\r\n{}",
                        body.len(),
                        body
                    );
                    if sock.write_all(resp.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (endpoint, rx)
}

#[tokio::test]
async fn throttling_surfaces_after_the_sdk_retries() {
    std::env::set_var("AWS_ACCESS_KEY_ID", "test");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "test");
    let (endpoint, mut requests) = throttling_server().await;
    let store = store_at(&endpoint, 3).await;
    let err = store.put("k", &PhpValue::Int(1), 10).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Throttled, "{err}");
    assert_eq!(err.code(), Some("ProvisionedThroughputExceededException"));
    let mut n = 0;
    while requests.try_recv().is_ok() {
        n += 1;
    }
    assert_eq!(n, 3, "the SDK retried before giving up");
    // A throttled acquire was refused, not lost: a plain error, no clean-up, no OutcomeUnknown.
    let lock = store.lock("l", 10).unwrap();
    let err = lock.acquire().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Throttled, "{err}");
    let mut n = 0;
    while requests.try_recv().is_ok() {
        n += 1;
    }
    // The lock's first operation describes the table (once per process: its Regions), sent once
    // and throttled too; the lock goes on without asking again on each try.
    assert_eq!(
        n, 4,
        "one DescribeTable, then one UpdateItem tried three times; no clean-up DeleteItem"
    );
}
