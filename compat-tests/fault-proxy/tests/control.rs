//! Counting, the control endpoints and the HTTP/1.1 server side spoken by hand, and the
//! `fault-proxy` binary.

mod common;

use std::io::{BufRead, BufReader, Read, Write};

use common::{backends, counts, each_backend, sdk, Rig};
use ddblock_fault_proxy::{FaultConfig, ProxyHandle, Stats};

#[tokio::test]
async fn counters_match_the_requests_made() {
    each_backend(FaultConfig::default(), async |r: &Rig| {
        r.put("a", "1").await;
        r.put("b", "1").await;
        r.put_if_absent_fails("a", "2").await;
        r.owner("a", None).await;
        r.owner("b", Some(true)).await;
        r.owner("zzz", None).await;
        r.delete("a").await;
        let describe = |table: &str| r.c.describe_table().table_name(table).send();
        describe(&r.table).await.unwrap();
        describe("fp_no_such_table").await.unwrap_err();

        let mut expected = counts(&[
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
        // The reads of "a" and "zzz" did not ask for ConsistentRead.
        expected.eventual_reads = 2;
        assert_eq!(r.p.stats(), expected, "{}", r.name);
        assert_eq!(r.p.stats().total("PutItem"), 3);
        assert_eq!(r.p.stats().grand_total(), 9);
        // The same over HTTP.
        let (status, body) = http(&r.p, "GET", "/__proxy/stats", "").await;
        assert_eq!(status, 200);
        let over_http: Stats = serde_json::from_str(&body).unwrap();
        assert_eq!(over_http, expected, "{}", r.name);

        r.p.reset();
        r.expect_stats(&[]);
    })
    .await;
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

/// Over one keep-alive connection: a chunked ListTables with `Expect: 100-continue`, a config
/// change to throttle everything, and a throttled ListTables (with its CRC header).
fn raw_http_session(addr: std::net::SocketAddr, name: &str) {
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
}

/// Control endpoints and the HTTP/1.1 server side, spoken by hand: keep-alive, a chunked
/// body with `Expect: 100-continue`, the JSON config, the clock hook, CRC headers.
#[tokio::test]
async fn control_endpoints_and_raw_http() {
    each_backend(FaultConfig::default(), async |r: &Rig| {
        let (addr, name) = (r.p.addr(), r.name);
        tokio::task::spawn_blocking(move || raw_http_session(addr, name))
            .await
            .unwrap();
        r.expect_stats(&[
            ("ListTables", "forwarded_ok", 1),
            ("ListTables", "throttled", 1),
        ]);
        assert_eq!(r.p.config().throttle_rate, 1.0);

        let expect = async |method: &str, path: &str, body: &str, status: u16| {
            let (got, answer) = http(&r.p, method, path, body).await;
            assert_eq!(got, status, "{name}: {method} {path} {body}: {answer}");
            answer
        };
        expect("POST", "/__proxy/config", r#"{"throttle_rte": 1.0}"#, 400).await;
        expect("POST", "/__proxy/config", r#"{"throttle_rate": 2.0}"#, 400).await;
        let body = expect("GET", "/__proxy/config", "", 200).await;
        assert_eq!(serde_json::from_str::<FaultConfig>(&body).unwrap().seed, 5);
        let body = expect("POST", "/__proxy/clock", r#"{"advance_ms": 60000}"#, 200).await;
        let now: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert!(now["now_ms"].as_u64().unwrap() >= 60_000);
        expect("POST", "/__proxy/reset", r#"{"history": true}"#, 200).await;
        assert_eq!(r.p.stats(), Stats::default());
        expect("GET", "/__proxy/nope", "", 404).await;
    })
    .await;
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
