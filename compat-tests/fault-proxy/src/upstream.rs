//! Upstream: forwarding requests to the DynamoDB server (the client's and the proxy's own) and
//! reading its whole answer.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

use crate::history::Item;
use crate::http1::{is_hop_header, Request, Response};
use crate::stats;

/// The `X-Amz-Target` prefix of DynamoDB operations.
pub(crate) const TARGET_PREFIX: &str = "DynamoDB_20120810.";
const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(60);

/// The server behind the proxy, and a pooled HTTP/1.1 client to it.
pub(crate) struct Upstream {
    authority: String,
    client: Client<HttpConnector, Full<Bytes>>,
}

/// An upstream answer, fully read.
pub(crate) struct UpstreamResponse {
    pub(crate) status: u16,
    headers: Vec<(String, Vec<u8>)>,
    body: Bytes,
}

impl UpstreamResponse {
    pub(crate) fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The body as a JSON object, if it is one.
    pub(crate) fn json(&self) -> Option<Item> {
        match serde_json::from_slice(&self.body).ok()? {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    /// The counter outcome of a forwarded request: `forwarded_ok` or `forwarded_error:<type>`.
    pub(crate) fn outcome(&self) -> String {
        if self.ok() {
            stats::FORWARDED_OK.to_string()
        } else {
            let t = error_short_type(self.status, &self.body);
            format!("{}{t}", stats::FORWARDED_ERROR_PREFIX)
        }
    }

    pub(crate) fn into_response(self) -> Response {
        Response {
            status: self.status,
            headers: self.headers,
            body: self.body,
        }
    }
}

/// The short `__type` of an error body (`ConditionalCheckFailedException`), else `HTTP<status>`.
fn error_short_type(status: u16, body: &[u8]) -> String {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("__type").and_then(Value::as_str).map(String::from))
        .map(|t| t.rsplit('#').next().unwrap_or(&t).to_string())
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| format!("HTTP{status}"))
}

impl Upstream {
    /// `authority` is the upstream's `host:port`.
    pub(crate) fn new(authority: String) -> Upstream {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Upstream { authority, client }
    }

    /// Sends a request upstream with the client's headers (Host rewritten, hop headers and
    /// Accept-Encoding dropped so the proxy can read the answer).
    pub(crate) async fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(String, Vec<u8>)],
        target_override: Option<&str>,
        body: Bytes,
    ) -> Result<UpstreamResponse, String> {
        let uri = format!("http://{}{}", self.authority, path);
        let mut builder = http::Request::builder().method(method).uri(&uri);
        for (name, value) in headers {
            if is_hop_header(name) || name == "host" || name == "accept-encoding" {
                continue;
            }
            if target_override.is_some() && name == "x-amz-target" {
                continue;
            }
            builder = builder.header(name.as_str(), value.as_slice());
        }
        if let Some(op) = target_override {
            builder = builder.header("x-amz-target", format!("{TARGET_PREFIX}{op}"));
        }
        builder = builder
            .header("host", self.authority.as_str())
            .header("content-length", body.len().to_string());
        let req = builder
            .body(Full::new(body))
            .map_err(|e| format!("building upstream request: {e}"))?;
        let fut = async {
            let resp = self
                .client
                .request(req)
                .await
                .map_err(|e| format!("upstream request failed: {e}"))?;
            let status = resp.status().as_u16();
            let headers = resp
                .headers()
                .iter()
                .map(|(n, v)| (n.as_str().to_string(), v.as_bytes().to_vec()))
                .collect();
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| format!("reading upstream body: {e}"))?
                .to_bytes();
            Ok(UpstreamResponse {
                status,
                headers,
                body,
            })
        };
        tokio::time::timeout(UPSTREAM_TIMEOUT, fut)
            .await
            .map_err(|_| "upstream timed out".to_string())?
    }

    /// A request the proxy makes on its own (DescribeTable, consistent GetItem), with the
    /// client's credentials headers. `None` on any failure.
    pub(crate) async fn call(&self, req: &Request, op: &str, body: Value) -> Option<Item> {
        let body = Bytes::from(serde_json::to_vec(&body).ok()?);
        let resp = self
            .send("POST", "/", &req.headers, Some(op), body)
            .await
            .ok()?;
        if !resp.ok() {
            return None;
        }
        resp.json()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_error_types() {
        let body = br#"{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"x"}"#;
        assert_eq!(
            error_short_type(400, body),
            "ConditionalCheckFailedException"
        );
        assert_eq!(error_short_type(400, br#"{"__type":"Plain"}"#), "Plain");
        assert_eq!(error_short_type(503, b"<html>"), "HTTP503");
    }
}
