//! A small HTTP/1.1 server side: keep-alive, Content-Length and chunked request
//! bodies, `Expect: 100-continue`. Enough for DynamoDB clients (Rust SDK, PHP
//! curl, botocore, Node), and it lets the proxy drop a response by closing the
//! socket.

use std::future::Future;
use std::io;

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 64 * 1024 * 1024;
const MAX_HEADERS: usize = 128;

/// A fully read request.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub method: String,
    /// Path and query, as sent.
    pub path: String,
    /// Header names lower-cased, in arrival order.
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Bytes,
}

impl Request {
    /// The first header of that (lower-case) name, if it is valid UTF-8.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| std::str::from_utf8(v).ok())
    }
}

/// A response to write.
#[derive(Debug, Clone)]
pub(crate) struct Response {
    pub status: u16,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Bytes,
}

/// What to do with the client connection after handling a request.
#[derive(Debug)]
pub(crate) enum Reply {
    /// Write this response.
    Send(Response),
    /// Close the connection without answering.
    Close,
    /// Reset the connection (RST) without answering.
    Reset,
}

/// Serves one client connection until it closes, fails, or `shutdown` turns true while idle;
/// `handle` answers each request.
pub(crate) async fn serve_connection<H, F>(
    mut stream: TcpStream,
    mut shutdown: watch::Receiver<bool>,
    handle: H,
) where
    H: Fn(Request) -> F,
    F: Future<Output = Reply>,
{
    let mut buf = BytesMut::with_capacity(16 * 1024);
    loop {
        let req = match read_request(&mut stream, &mut buf, &mut shutdown).await {
            Ok(Some(r)) => r,
            Ok(None) => return,
            Err(ReadError::Io(_)) => return,
            Err(ReadError::Bad(status, msg)) => {
                let resp = Response {
                    status,
                    headers: vec![("content-type".into(), b"text/plain".to_vec())],
                    body: Bytes::from(msg),
                };
                let _ = write_response(&mut stream, &resp, false).await;
                return;
            }
        };
        let keep_alive = req.keep_alive;
        match handle(req.request).await {
            Reply::Close => return,
            Reply::Reset => {
                // SO_LINGER 0: closing sends RST instead of FIN ("connection reset by peer").
                // Deprecated because a non-zero linger blocks the thread on drop; zero does not.
                #[allow(deprecated)]
                let _ = stream.set_linger(Some(std::time::Duration::ZERO));
                return;
            }
            Reply::Send(resp) => {
                if write_response(&mut stream, &resp, keep_alive)
                    .await
                    .is_err()
                    || !keep_alive
                {
                    return;
                }
            }
        }
    }
}

struct Incoming {
    request: Request,
    keep_alive: bool,
}

enum ReadError {
    Io(#[allow(dead_code)] io::Error),
    Bad(u16, String),
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> Self {
        ReadError::Io(e)
    }
}

fn eof() -> ReadError {
    ReadError::Io(io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "connection closed mid-request",
    ))
}

/// Reads more bytes into `buf`; `Ok(0)` at EOF.
async fn read_more(stream: &mut TcpStream, buf: &mut BytesMut) -> io::Result<usize> {
    buf.reserve(8 * 1024);
    stream.read_buf(buf).await
}

async fn fill_to(stream: &mut TcpStream, buf: &mut BytesMut, need: usize) -> Result<(), ReadError> {
    while buf.len() < need {
        if read_more(stream, buf).await? == 0 {
            return Err(eof());
        }
    }
    Ok(())
}

async fn read_line(stream: &mut TcpStream, buf: &mut BytesMut) -> Result<Bytes, ReadError> {
    loop {
        if let Some(pos) = buf.windows(2).position(|w| w == b"\r\n") {
            let line = buf.split_to(pos).freeze();
            buf.advance(2);
            return Ok(line);
        }
        if buf.len() > MAX_HEAD {
            return Err(ReadError::Bad(400, "line too long".into()));
        }
        if read_more(stream, buf).await? == 0 {
            return Err(eof());
        }
    }
}

async fn read_request(
    stream: &mut TcpStream,
    buf: &mut BytesMut,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<Option<Incoming>, ReadError> {
    // Head.
    let (method, path, version, headers, head_len) = loop {
        if !buf.is_empty() {
            let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut parsed = httparse::Request::new(&mut slots);
            match parsed.parse(buf) {
                Ok(httparse::Status::Complete(n)) => {
                    let headers: Vec<(String, Vec<u8>)> = parsed
                        .headers
                        .iter()
                        .map(|h| (h.name.to_ascii_lowercase(), h.value.to_vec()))
                        .collect();
                    break (
                        parsed.method.unwrap_or("GET").to_string(),
                        parsed.path.unwrap_or("/").to_string(),
                        parsed.version.unwrap_or(1),
                        headers,
                        n,
                    );
                }
                Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => {
                    return Err(ReadError::Bad(431, "request head too large".into()));
                }
                Ok(httparse::Status::Partial) => {}
                Err(e) => return Err(ReadError::Bad(400, format!("bad request: {e}"))),
            }
        }
        let n = if buf.is_empty() {
            // Idle between requests: this is where shutdown closes the connection.
            tokio::select! {
                r = read_more(stream, buf) => r?,
                _ = async { let _ = shutdown.wait_for(|down| *down).await; } => return Ok(None),
            }
        } else {
            read_more(stream, buf).await?
        };
        if n == 0 {
            return if buf.is_empty() { Ok(None) } else { Err(eof()) };
        }
    };
    buf.advance(head_len);

    let request_header = |name: &str| -> Option<String> {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| String::from_utf8_lossy(v).to_ascii_lowercase())
    };
    let connection = request_header("connection").unwrap_or_default();
    let keep_alive = if version == 0 {
        connection.contains("keep-alive")
    } else {
        !connection.contains("close")
    };
    let expect_continue = request_header("expect").is_some_and(|e| e.contains("100-continue"));
    let chunked = request_header("transfer-encoding").is_some_and(|te| te.contains("chunked"));

    // Body.
    let body = if chunked {
        if expect_continue && buf.is_empty() {
            stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
        }
        let mut body = BytesMut::new();
        loop {
            let line = read_line(stream, buf).await?;
            let size_hex = std::str::from_utf8(&line)
                .ok()
                .map(|s| s.split(';').next().unwrap_or("").trim().to_string())
                .unwrap_or_default();
            let size = usize::from_str_radix(&size_hex, 16)
                .map_err(|_| ReadError::Bad(400, format!("bad chunk size {size_hex:?}")))?;
            if size == 0 {
                // Trailers, up to the empty line.
                while !read_line(stream, buf).await?.is_empty() {}
                break;
            }
            if body.len() + size > MAX_BODY {
                return Err(ReadError::Bad(413, "body too large".into()));
            }
            fill_to(stream, buf, size + 2).await?;
            body.extend_from_slice(&buf[..size]);
            buf.advance(size + 2);
        }
        body.freeze()
    } else {
        let len = match request_header("content-length") {
            Some(v) => v
                .trim()
                .parse::<usize>()
                .map_err(|_| ReadError::Bad(400, format!("bad content-length {v:?}")))?,
            None => 0,
        };
        if len > MAX_BODY {
            return Err(ReadError::Bad(413, "body too large".into()));
        }
        if expect_continue && len > buf.len() {
            stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
        }
        fill_to(stream, buf, len).await?;
        buf.split_to(len).freeze()
    };

    Ok(Some(Incoming {
        request: Request {
            method,
            path,
            headers,
            body,
        },
        keep_alive,
    }))
}

/// Headers that describe one hop's framing, never copied between hops.
pub(crate) fn is_hop_header(name: &str) -> bool {
    matches!(
        name,
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "transfer-encoding"
            | "te"
            | "trailer"
            | "upgrade"
            | "content-length"
            | "expect"
    )
}

async fn write_response(
    stream: &mut TcpStream,
    resp: &Response,
    keep_alive: bool,
) -> io::Result<()> {
    let reason = http::StatusCode::from_u16(resp.status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Unknown");
    let mut out = Vec::with_capacity(256 + resp.body.len());
    out.extend_from_slice(format!("HTTP/1.1 {} {}\r\n", resp.status, reason).as_bytes());
    for (name, value) in &resp.headers {
        if is_hop_header(&name.to_ascii_lowercase()) {
            continue;
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(format!("content-length: {}\r\n", resp.body.len()).as_bytes());
    if !keep_alive {
        out.extend_from_slice(b"connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&resp.body);
    stream.write_all(&out).await?;
    stream.flush().await
}
