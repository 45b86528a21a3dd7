//! Request handling: fault decisions, forwarding, write history, stale reads, control endpoints.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Map, Value};

use crate::config::FaultConfig;
use crate::crc32::crc32;
use crate::history::{canonical_key, project, History, HistoryKey, Item, ItemState};
use crate::http1::{is_hop_header, Reply, Request, Response};
use crate::journal::{Delivery, Journal};
use crate::stats::{self, Counters};

const TARGET_PREFIX: &str = "DynamoDB_20120810.";
const ERROR_NS: &str = "com.amazonaws.dynamodb.v20120810#";
const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(60);

/// State shared by the accept loop, the connection tasks and the handle.
pub(crate) struct Shared {
    authority: String,
    client: Client<HttpConnector, Full<Bytes>>,
    config: Mutex<Arc<FaultConfig>>,
    rng: Mutex<StdRng>,
    pub(crate) counters: Counters,
    pub(crate) history: History,
    pub(crate) journal: Journal,
    schemas: Mutex<HashMap<String, Vec<String>>>,
    clock_start: Instant,
    clock_offset_us: AtomicI64,
    request_ids: AtomicU64,
    /// How far each operation's scripted fault sequence has been used.
    sequence_pos: Mutex<HashMap<String, usize>>,
}

impl Shared {
    pub(crate) fn new(authority: String, faults: FaultConfig) -> Shared {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Shared {
            authority,
            client,
            rng: Mutex::new(StdRng::seed_from_u64(faults.seed)),
            config: Mutex::new(Arc::new(faults)),
            counters: Counters::default(),
            history: History::default(),
            journal: Journal::default(),
            schemas: Mutex::new(HashMap::new()),
            clock_start: Instant::now(),
            clock_offset_us: AtomicI64::new(0),
            request_ids: AtomicU64::new(0),
            sequence_pos: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn config(&self) -> Arc<FaultConfig> {
        self.config
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replaces the fault config and re-seeds the RNG from it.
    pub(crate) fn set_config(&self, faults: FaultConfig) {
        let mut rng = self.rng.lock().unwrap_or_else(|e| e.into_inner());
        *rng = StdRng::seed_from_u64(faults.seed);
        self.sequence_pos
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        *self.config.lock().unwrap_or_else(|e| e.into_inner()) = Arc::new(faults);
    }

    /// The proxy clock in microseconds: real time since start plus test advances.
    pub(crate) fn now_us(&self) -> i64 {
        self.clock_start.elapsed().as_micros() as i64 + self.clock_offset_us.load(Ordering::SeqCst)
    }

    pub(crate) fn advance_clock(&self, by: Duration) {
        self.clock_offset_us
            .fetch_add(by.as_micros() as i64, Ordering::SeqCst);
    }

    fn learn_schema(&self, table: &str, key: &Item) {
        let mut names: Vec<String> = key.keys().cloned().collect();
        names.sort();
        let mut schemas = self.schemas.lock().unwrap_or_else(|e| e.into_inner());
        if schemas.get(table) != Some(&names) {
            schemas.insert(table.to_string(), names);
        }
    }

    /// Forgets the learned key schemas.
    pub(crate) fn clear_schemas(&self) {
        self.schemas
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    fn next_request_id(&self) -> String {
        format!(
            "FAULTPROXY{:016X}",
            self.request_ids.fetch_add(1, Ordering::SeqCst)
        )
    }
}

/// The random decisions for one request, all drawn at arrival under one lock.
#[derive(Debug, Default)]
struct Plan {
    extra_latency_ms: u64,
    latency: bool,
    throttle: bool,
    error500: bool,
    drop: bool,
    drop_request: bool,
    reset: bool,
    delay_response: bool,
    /// One entry per eventually consistent key read, in request order: the staleness in µs, if stale.
    stale: Vec<Option<i64>>,
}

fn op_selected(ops: &[String], op: &str) -> bool {
    ops.is_empty() || ops.iter().any(|o| o == op)
}

/// The next scripted fault for `op`, if its sequence is not used up.
fn scripted(sh: &Shared, cfg: &FaultConfig, op: &str) -> Option<String> {
    let faults = cfg.sequence.get(op)?;
    let mut pos = sh.sequence_pos.lock().unwrap_or_else(|e| e.into_inner());
    let i = pos.entry(op.to_owned()).or_insert(0);
    let fault = faults.get(*i)?.clone();
    *i += 1;
    Some(fault)
}

fn draw_plan(sh: &Shared, cfg: &FaultConfig, op: &str, eventual_reads: usize) -> Plan {
    if let Some(fault) = scripted(sh, cfg, op) {
        return Plan {
            latency: op_selected(&cfg.latency_ops, op),
            drop: fault == "drop",
            reset: fault == "reset",
            drop_request: fault == "drop_request",
            throttle: fault == "throttle",
            error500: fault == "error500",
            delay_response: fault == "delay",
            stale: vec![None; eventual_reads],
            ..Plan::default()
        };
    }
    let mut rng = sh.rng.lock().unwrap_or_else(|e| e.into_inner());
    let mut plan = Plan::default();
    if cfg.latency_jitter_ms > 0 {
        plan.extra_latency_ms = rng.random_range(0..=cfg.latency_jitter_ms);
    }
    plan.latency = op_selected(&cfg.latency_ops, op);
    if cfg.drop_request_rate > 0.0 && op_selected(&cfg.drop_request_ops, op) {
        plan.drop_request = rng.random_bool(cfg.drop_request_rate);
    }
    if cfg.reset_response_rate > 0.0 && op_selected(&cfg.reset_ops, op) {
        plan.reset = rng.random_bool(cfg.reset_response_rate);
    }
    plan.delay_response = cfg.delay_response_ms > 0 && op_selected(&cfg.delay_response_ops, op);
    if cfg.throttle_rate > 0.0 && op_selected(&cfg.throttle_ops, op) {
        plan.throttle = rng.random_bool(cfg.throttle_rate);
    }
    if cfg.error_500_rate > 0.0 && op_selected(&cfg.error_500_ops, op) {
        plan.error500 = rng.random_bool(cfg.error_500_rate);
    }
    if cfg.drop_response_rate > 0.0 && op_selected(&cfg.drop_ops, op) {
        plan.drop = rng.random_bool(cfg.drop_response_rate);
    }
    let (min_us, max_us) = (cfg.stale_min_ms as i64 * 1000, cfg.stale_ms as i64 * 1000);
    plan.stale = (0..eventual_reads)
        .map(|_| {
            if cfg.stale_enabled() && rng.random_bool(cfg.stale_probability) {
                Some(rng.random_range(min_us..=max_us))
            } else {
                None
            }
        })
        .collect();
    plan
}

fn is_consistent(v: &Item) -> bool {
    v.get("ConsistentRead").and_then(Value::as_bool) == Some(true)
}

/// How many eventually consistent key reads the request makes (GetItem, BatchGetItem).
fn count_eventual_reads(op: &str, body: &Item) -> usize {
    match op {
        "GetItem" if !is_consistent(body) && body.get("Key").is_some_and(Value::is_object) => 1,
        "BatchGetItem" => body
            .get("RequestItems")
            .and_then(Value::as_object)
            .map(|tables| {
                tables
                    .values()
                    .filter_map(Value::as_object)
                    .filter(|t| !is_consistent(t))
                    .map(|t| t.get("Keys").and_then(Value::as_array).map_or(0, Vec::len))
                    .sum()
            })
            .unwrap_or(0),
        _ => 0,
    }
}

fn json_response(sh: &Shared, status: u16, content_type: &str, body: Vec<u8>) -> Response {
    let crc = crc32(&body).to_string();
    Response {
        status,
        headers: vec![
            ("content-type".into(), content_type.as_bytes().to_vec()),
            ("x-amzn-requestid".into(), sh.next_request_id().into_bytes()),
            ("x-amz-crc32".into(), crc.into_bytes()),
        ],
        body: Bytes::from(body),
    }
}

fn ddb_response(sh: &Shared, status: u16, body: &Value) -> Response {
    json_response(
        sh,
        status,
        "application/x-amz-json-1.0",
        serde_json::to_vec(body).unwrap_or_default(),
    )
}

fn ddb_error(sh: &Shared, status: u16, short_type: &str, message: &str) -> Response {
    ddb_response(
        sh,
        status,
        &json!({"__type": format!("{ERROR_NS}{short_type}"), "message": message}),
    )
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

/// An upstream answer, fully read.
struct UpstreamResponse {
    status: u16,
    headers: Vec<(String, Vec<u8>)>,
    body: Bytes,
}

impl UpstreamResponse {
    fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    fn json(&self) -> Option<Item> {
        match serde_json::from_slice(&self.body).ok()? {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    fn into_response(self) -> Response {
        Response {
            status: self.status,
            headers: self.headers,
            body: self.body,
        }
    }
}

/// Sends a request upstream with the client's headers (Host rewritten, hop headers and
/// Accept-Encoding dropped so the proxy can read the answer).
async fn send_upstream(
    sh: &Shared,
    method: &str,
    path: &str,
    headers: &[(String, Vec<u8>)],
    target_override: Option<&str>,
    body: Bytes,
) -> Result<UpstreamResponse, String> {
    let uri = format!("http://{}{}", sh.authority, path);
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
        .header("host", sh.authority.as_str())
        .header("content-length", body.len().to_string());
    let req = builder
        .body(Full::new(body))
        .map_err(|e| format!("building upstream request: {e}"))?;
    let fut = async {
        let resp = sh
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
async fn internal_call(sh: &Shared, req: &Request, op: &str, body: Value) -> Option<Item> {
    let body = Bytes::from(serde_json::to_vec(&body).ok()?);
    let resp = send_upstream(sh, "POST", "/", &req.headers, Some(op), body)
        .await
        .ok()?;
    if !resp.ok() {
        return None;
    }
    resp.json()
}

/// The item's current state read with a consistent GetItem upstream.
async fn fetch_state(sh: &Shared, req: &Request, table: &str, key: &Item) -> ItemState {
    let body = json!({"TableName": table, "Key": key, "ConsistentRead": true});
    match internal_call(sh, req, "GetItem", body).await {
        Some(resp) => match resp.get("Item").and_then(Value::as_object) {
            Some(item) => ItemState::Present(item.clone()),
            None => ItemState::Absent,
        },
        None => ItemState::Unknown,
    }
}

/// The table's key attribute names: learned from Key maps, else DescribeTable, else the config.
async fn key_schema(sh: &Shared, req: &Request, table: &str, cfg: &FaultConfig) -> Vec<String> {
    if let Some(names) = sh
        .schemas
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(table)
    {
        return names.clone();
    }
    let described = internal_call(sh, req, "DescribeTable", json!({"TableName": table}))
        .await
        .and_then(|resp| {
            let schema = resp.get("Table")?.get("KeySchema")?.as_array()?;
            let mut names: Vec<String> = schema
                .iter()
                .filter_map(|e| e.get("AttributeName")?.as_str().map(String::from))
                .collect();
            names.sort();
            (!names.is_empty()).then_some(names)
        });
    match described {
        Some(names) => {
            sh.schemas
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(table.to_string(), names.clone());
            names
        }
        None => vec![cfg.key_attribute.clone()],
    }
}

/// What a successful write does to one item.
#[derive(Debug, Clone)]
enum Effect {
    Put(Item),
    Delete,
    /// Updated: new state from the response (ALL_NEW) or from a consistent read.
    Update {
        all_new: bool,
    },
}

#[derive(Debug, Clone)]
struct WriteEffect {
    table: String,
    key: Item,
    hkey: HistoryKey,
    effect: Effect,
}

fn key_of(item: &Item, names: &[String]) -> Option<Item> {
    names
        .iter()
        .map(|n| Some((n.clone(), item.get(n)?.clone())))
        .collect()
}

async fn put_effect(
    sh: &Shared,
    req: &Request,
    cfg: &FaultConfig,
    table: &str,
    item: &Item,
) -> Option<WriteEffect> {
    let names = key_schema(sh, req, table, cfg).await;
    let key = key_of(item, &names)?;
    let hkey = (table.to_string(), canonical_key(&key, None)?);
    Some(WriteEffect {
        table: table.to_string(),
        key,
        hkey,
        effect: Effect::Put(item.clone()),
    })
}

fn keyed_effect(table: &str, key: &Item, effect: Effect) -> Option<WriteEffect> {
    let hkey = (table.to_string(), canonical_key(key, None)?);
    Some(WriteEffect {
        table: table.to_string(),
        key: key.clone(),
        hkey,
        effect,
    })
}

fn str_field<'a>(v: &'a Item, name: &str) -> Option<&'a str> {
    v.get(name).and_then(Value::as_str)
}

fn obj_field<'a>(v: &'a Item, name: &str) -> Option<&'a Item> {
    v.get(name).and_then(Value::as_object)
}

/// The items a write request changes if it succeeds.
async fn write_effects(
    sh: &Shared,
    req: &Request,
    cfg: &FaultConfig,
    op: &str,
    body: &Item,
) -> Vec<WriteEffect> {
    let mut out = Vec::new();
    match op {
        "PutItem" => {
            if let (Some(table), Some(item)) =
                (str_field(body, "TableName"), obj_field(body, "Item"))
            {
                out.extend(put_effect(sh, req, cfg, table, item).await);
            }
        }
        "DeleteItem" | "UpdateItem" => {
            if let (Some(table), Some(key)) = (str_field(body, "TableName"), obj_field(body, "Key"))
            {
                let effect = if op == "DeleteItem" {
                    Effect::Delete
                } else {
                    Effect::Update {
                        all_new: str_field(body, "ReturnValues") == Some("ALL_NEW"),
                    }
                };
                out.extend(keyed_effect(table, key, effect));
            }
        }
        "BatchWriteItem" => {
            let Some(tables) = obj_field(body, "RequestItems") else {
                return out;
            };
            for (table, requests) in tables {
                for r in requests.as_array().into_iter().flatten() {
                    if let Some(item) = r
                        .get("PutRequest")
                        .and_then(|p| p.get("Item"))
                        .and_then(Value::as_object)
                    {
                        out.extend(put_effect(sh, req, cfg, table, item).await);
                    } else if let Some(key) = r
                        .get("DeleteRequest")
                        .and_then(|d| d.get("Key"))
                        .and_then(Value::as_object)
                    {
                        out.extend(keyed_effect(table, key, Effect::Delete));
                    }
                }
            }
        }
        "TransactWriteItems" => {
            for t in body
                .get("TransactItems")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let Some(t) = t.as_object() else { continue };
                if let Some(p) = obj_field(t, "Put") {
                    if let (Some(table), Some(item)) =
                        (str_field(p, "TableName"), obj_field(p, "Item"))
                    {
                        out.extend(put_effect(sh, req, cfg, table, item).await);
                    }
                }
                for (kind, effect) in [
                    ("Delete", Effect::Delete),
                    ("Update", Effect::Update { all_new: false }),
                ] {
                    if let Some(d) = obj_field(t, kind) {
                        if let (Some(table), Some(key)) =
                            (str_field(d, "TableName"), obj_field(d, "Key"))
                        {
                            out.extend(keyed_effect(table, key, effect));
                        }
                    }
                }
            }
        }
        _ => {}
    }
    out
}

/// Keys of BatchWriteItem requests the upstream returned as unprocessed.
async fn unprocessed_keys(
    sh: &Shared,
    req: &Request,
    cfg: &FaultConfig,
    resp: &Item,
) -> HashSet<HistoryKey> {
    let mut out = HashSet::new();
    let Some(tables) = obj_field(resp, "UnprocessedItems") else {
        return out;
    };
    for (table, requests) in tables {
        for r in requests.as_array().into_iter().flatten() {
            let key = if let Some(item) = r
                .get("PutRequest")
                .and_then(|p| p.get("Item"))
                .and_then(Value::as_object)
            {
                let names = key_schema(sh, req, table, cfg).await;
                key_of(item, &names)
            } else {
                r.get("DeleteRequest")
                    .and_then(|d| d.get("Key"))
                    .and_then(Value::as_object)
                    .cloned()
            };
            if let Some(k) = key.as_ref().and_then(|k| canonical_key(k, None)) {
                out.insert((table.clone(), k));
            }
        }
    }
    out
}

/// Records the effects of a write the upstream accepted.
async fn record_effects(
    sh: &Shared,
    req: &Request,
    cfg: &FaultConfig,
    op: &str,
    effects: Vec<WriteEffect>,
    resp: &UpstreamResponse,
) {
    let now = sh.now_us();
    let keep_us = cfg.stale_ms as i64 * 1000;
    let resp_json = resp.json().unwrap_or_default();
    let skipped = if op == "BatchWriteItem" {
        unprocessed_keys(sh, req, cfg, &resp_json).await
    } else {
        HashSet::new()
    };
    for e in effects {
        if skipped.contains(&e.hkey) {
            continue;
        }
        if !matches!(e.effect, Effect::Put(_)) {
            // A Key map the server accepted names exactly the table's key attributes.
            sh.learn_schema(&e.table, &e.key);
        }
        let state = match e.effect {
            Effect::Put(item) => ItemState::Present(item),
            Effect::Delete => ItemState::Absent,
            Effect::Update { all_new } => {
                match obj_field(&resp_json, "Attributes").filter(|_| all_new) {
                    Some(attrs) => ItemState::Present(attrs.clone()),
                    None => fetch_state(sh, req, &e.table, &e.key).await,
                }
            }
        };
        sh.history.record(e.hkey, now, state, keep_us);
    }
}

/// Serves an eventually consistent GetItem from history if the plan makes it stale.
fn stale_get_item(sh: &Shared, body: &Item, delay: i64) -> Option<Response> {
    let table = str_field(body, "TableName")?;
    let key = obj_field(body, "Key")?;
    let hkey = (table.to_string(), canonical_key(key, None)?);
    let state = sh.history.stale_state_at(&hkey, sh.now_us() - delay)?;
    let answer = match state {
        ItemState::Present(item) => json!({ "Item": project(&item, body)? }),
        _ => json!({}),
    };
    Some(ddb_response(sh, 200, &answer))
}

/// Splits an eventually consistent BatchGetItem into the keys served from history and the
/// request for the rest. `None` if nothing is served from history.
fn split_batch_get(
    sh: &Shared,
    body: &Item,
    stale: &[Option<i64>],
) -> Option<(BTreeMap<String, Vec<Value>>, Item)> {
    let tables = obj_field(body, "RequestItems")?;
    let now = sh.now_us();
    let mut draws = stale.iter();
    let mut served: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut any_served = false;
    let mut remaining = Map::new();
    for (table, entry) in tables {
        let Some(entry_obj) = entry.as_object() else {
            remaining.insert(table.clone(), entry.clone());
            continue;
        };
        let keys = entry_obj.get("Keys").and_then(Value::as_array);
        if is_consistent(entry_obj) || keys.is_none() {
            remaining.insert(table.clone(), entry.clone());
            continue;
        }
        let mut left = Vec::new();
        for key in keys.into_iter().flatten() {
            let draw = draws.next().copied().flatten();
            let answer = draw.and_then(|delay| {
                let hkey = (table.clone(), canonical_key(key.as_object()?, None)?);
                match sh.history.stale_state_at(&hkey, now - delay)? {
                    ItemState::Present(item) => {
                        Some(Some(Value::Object(project(&item, entry_obj)?)))
                    }
                    _ => Some(None),
                }
            });
            match answer {
                Some(found) => {
                    any_served = true;
                    let list = served.entry(table.clone()).or_default();
                    list.extend(found);
                }
                None => left.push(key.clone()),
            }
        }
        served.entry(table.clone()).or_default();
        if !left.is_empty() {
            let mut e = entry_obj.clone();
            e.insert("Keys".into(), Value::Array(left));
            remaining.insert(table.clone(), Value::Object(e));
        }
    }
    if !any_served {
        return None;
    }
    let mut rest = body.clone();
    rest.insert("RequestItems".into(), Value::Object(remaining));
    Some((served, rest))
}

fn upstream_unreachable(sh: &Shared, op: &str, err: &str) -> Reply {
    sh.counters.add(op, stats::UPSTREAM_UNREACHABLE);
    Reply::Send(ddb_error(
        sh,
        502,
        "ServiceUnavailable",
        &format!("fault-proxy: {err}"),
    ))
}

fn count_forwarded(sh: &Shared, op: &str, resp: &UpstreamResponse) {
    if resp.ok() {
        sh.counters.add(op, stats::FORWARDED_OK);
    } else {
        let t = error_short_type(resp.status, &resp.body);
        sh.counters
            .add(op, &format!("{}{t}", stats::FORWARDED_ERROR_PREFIX));
    }
}

/// Handles one client request.
pub(crate) async fn handle(sh: &Arc<Shared>, req: Request) -> Reply {
    let path_only = req.path.split('?').next().unwrap_or("");
    if path_only == "/__proxy" || path_only.starts_with("/__proxy/") {
        return Reply::Send(control(sh, &req));
    }
    let op = req
        .header("x-amz-target")
        .map(|t| t.strip_prefix(TARGET_PREFIX).unwrap_or(t).to_string())
        .unwrap_or_else(|| "(none)".to_string());
    let cfg = sh.config();
    let body: Option<Item> = match serde_json::from_slice(&req.body) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    };
    let reads = body.as_ref().map_or(0, |b| count_eventual_reads(&op, b));
    let plan = draw_plan(sh, &cfg, &op, reads);

    let delay = cfg.latency_ms + plan.extra_latency_ms;
    if delay > 0 && plan.latency {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    if plan.drop_request {
        sh.counters.add(&op, stats::DROPPED_REQUEST);
        return Reply::Close;
    }
    if plan.throttle {
        sh.counters.add(&op, stats::THROTTLED);
        return Reply::Send(ddb_error(
            sh,
            400,
            "ProvisionedThroughputExceededException",
            "fault-proxy: injected throttling (throttle_rate)",
        ));
    }
    if plan.error500 {
        sh.counters.add(&op, stats::ERROR_500);
        return Reply::Send(ddb_error(
            sh,
            500,
            "InternalServerError",
            "fault-proxy: injected internal server error (error_500_rate)",
        ));
    }

    // Stale reads.
    let mut forward_body = req.body.clone();
    let mut batch_served = None;
    if let Some(b) = &body {
        if op == "GetItem" {
            if let Some(Some(delay)) = plan.stale.first() {
                if let Some(resp) = stale_get_item(sh, b, *delay) {
                    sh.counters.add(&op, stats::STALE_SERVED);
                    return Reply::Send(resp);
                }
            }
        } else if op == "BatchGetItem" {
            if let Some((served, rest)) = split_batch_get(sh, b, &plan.stale) {
                let rest_empty = obj_field(&rest, "RequestItems").is_none_or(Map::is_empty);
                if rest_empty {
                    sh.counters.add(&op, stats::STALE_SERVED);
                    let answer = json!({"Responses": served, "UnprocessedKeys": {}});
                    return Reply::Send(ddb_response(sh, 200, &answer));
                }
                forward_body = Bytes::from(serde_json::to_vec(&rest).unwrap_or_default());
                batch_served = Some(served);
            }
        }
    }

    // Writes: learn the key schema and, if stale reads are on, the state before the first write.
    let effects = match &body {
        Some(b) => write_effects(sh, &req, &cfg, &op, b).await,
        None => Vec::new(),
    };
    if cfg.stale_enabled() {
        for e in &effects {
            if !sh.history.contains(&e.hkey) {
                let before = fetch_state(sh, &req, &e.table, &e.key).await;
                sh.history.set_baseline(e.hkey.clone(), before);
            }
        }
    }

    // With the journal on, writes to one item go upstream one at a time (commit order).
    let journaled = cfg.journal && !effects.is_empty();
    let item_lock = match effects.as_slice() {
        [one] if journaled && matches!(op.as_str(), "PutItem" | "UpdateItem" | "DeleteItem") => {
            Some(sh.journal.item_lock(&one.hkey))
        }
        _ => None,
    };
    let _serialized = match &item_lock {
        Some(l) => Some(l.lock().await),
        None => None,
    };
    let delivery = if plan.drop {
        Delivery::Dropped
    } else if plan.reset {
        Delivery::Reset
    } else if plan.delay_response {
        Delivery::Delayed
    } else {
        Delivery::Answered
    };
    let request_json = || body.clone().map(Value::Object).unwrap_or(Value::Null);
    let resp =
        match send_upstream(sh, &req.method, &req.path, &req.headers, None, forward_body).await {
            Ok(r) => r,
            Err(e) => {
                if journaled {
                    sh.journal.record(
                        &op,
                        request_json(),
                        0,
                        json!({"error": e}),
                        Delivery::Unreachable,
                    );
                }
                return upstream_unreachable(sh, &op, &e);
            }
        };
    if journaled {
        let answer = resp.json().map(Value::Object).unwrap_or(Value::Null);
        sh.journal
            .record(&op, request_json(), resp.status, answer, delivery);
    }
    drop(_serialized);
    if resp.ok() && !effects.is_empty() {
        record_effects(sh, &req, &cfg, &op, effects, &resp).await;
    }

    if plan.drop {
        sh.counters.add(&op, stats::DROPPED);
        return Reply::Close;
    }
    if plan.reset {
        sh.counters.add(&op, stats::RESET);
        return Reply::Reset;
    }
    if plan.delay_response {
        sh.counters.add(&op, stats::DELAYED);
        tokio::time::sleep(Duration::from_millis(cfg.delay_response_ms)).await;
    }

    match batch_served {
        Some(served) if resp.ok() => {
            sh.counters.add(&op, stats::STALE_SERVED);
            let mut merged = resp.json().unwrap_or_default();
            let responses = merged
                .entry("Responses")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(responses) = responses.as_object_mut() {
                for (table, items) in served {
                    let list = responses
                        .entry(table)
                        .or_insert_with(|| Value::Array(Vec::new()));
                    if let Some(list) = list.as_array_mut() {
                        list.extend(items);
                    }
                }
            }
            let body = serde_json::to_vec(&merged).unwrap_or_default();
            let crc = crc32(&body).to_string();
            let mut out = resp.into_response();
            for (name, value) in out.headers.iter_mut() {
                if name.eq_ignore_ascii_case("x-amz-crc32") {
                    *value = crc.clone().into_bytes();
                }
            }
            out.body = Bytes::from(body);
            Reply::Send(out)
        }
        _ => {
            count_forwarded(sh, &op, &resp);
            Reply::Send(resp.into_response())
        }
    }
}

/// `/__proxy/...`: stats, reset, config, clock.
fn control(sh: &Shared, req: &Request) -> Response {
    let (path, query) = req.path.split_once('?').unwrap_or((&req.path, ""));
    let body_json: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let ok = |v: Value| {
        json_response(
            sh,
            200,
            "application/json",
            serde_json::to_vec(&v).unwrap_or_default(),
        )
    };
    let bad = |status: u16, msg: String| {
        json_response(
            sh,
            status,
            "application/json",
            serde_json::to_vec(&json!({"error": msg})).unwrap_or_default(),
        )
    };
    match (req.method.as_str(), path) {
        ("GET", "/__proxy/stats") => {
            ok(serde_json::to_value(sh.counters.snapshot()).unwrap_or_default())
        }
        ("POST", "/__proxy/reset") => {
            let history = body_json.get("history").and_then(Value::as_bool) == Some(true)
                || query
                    .split('&')
                    .any(|kv| kv == "history=1" || kv == "history=true");
            sh.counters.reset();
            if body_json.get("journal").and_then(Value::as_bool) == Some(true) {
                sh.journal.clear();
            }
            if history {
                sh.history.clear();
                sh.clear_schemas();
            }
            ok(json!({"reset": true, "history_cleared": history}))
        }
        ("GET", "/__proxy/journal") => ok(Value::Array(sh.journal.snapshot())),
        ("GET", "/__proxy/config") => ok(serde_json::to_value(&*sh.config()).unwrap_or_default()),
        ("POST", "/__proxy/config") => match serde_json::from_slice::<FaultConfig>(&req.body) {
            Ok(cfg) => match cfg.validate() {
                Ok(()) => {
                    sh.set_config(cfg.clone());
                    ok(serde_json::to_value(&cfg).unwrap_or_default())
                }
                Err(e) => bad(400, e.to_string()),
            },
            Err(e) => bad(400, format!("invalid config JSON: {e}")),
        },
        ("POST", "/__proxy/clock") => match body_json.get("advance_ms").and_then(Value::as_u64) {
            Some(ms) => {
                sh.advance_clock(Duration::from_millis(ms));
                ok(json!({"now_ms": sh.now_us() / 1000}))
            }
            None => bad(400, "expected {\"advance_ms\": N}".into()),
        },
        _ => bad(
            404,
            format!(
                "unknown control endpoint {} {}; try GET /__proxy/stats, POST /__proxy/reset, \
                 GET|POST /__proxy/config, POST /__proxy/clock, GET /__proxy/journal",
                req.method, path
            ),
        ),
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

    #[test]
    fn eventual_read_counting() {
        let get: Item =
            serde_json::from_str(r#"{"TableName":"t","Key":{"key":{"S":"a"}}}"#).unwrap();
        assert_eq!(count_eventual_reads("GetItem", &get), 1);
        let get: Item = serde_json::from_str(
            r#"{"TableName":"t","Key":{"key":{"S":"a"}},"ConsistentRead":true}"#,
        )
        .unwrap();
        assert_eq!(count_eventual_reads("GetItem", &get), 0);
        let batch: Item = serde_json::from_str(
            r#"{"RequestItems":{"a":{"Keys":[{"k":{"S":"1"}},{"k":{"S":"2"}}]},
                "b":{"Keys":[{"k":{"S":"1"}}],"ConsistentRead":true}}}"#,
        )
        .unwrap();
        assert_eq!(count_eventual_reads("BatchGetItem", &batch), 2);
        assert_eq!(count_eventual_reads("PutItem", &batch), 0);
    }

    #[test]
    fn plans_are_deterministic_per_seed() {
        let cfg = FaultConfig {
            seed: 42,
            throttle_rate: 0.5,
            drop_response_rate: 0.5,
            drop_ops: vec!["PutItem".into()],
            stale_ms: 100,
            stale_probability: 0.5,
            latency_jitter_ms: 10,
            ..FaultConfig::default()
        };
        let run = || {
            let sh = Shared::new("127.0.0.1:9".into(), cfg.clone());
            (0..50)
                .map(|i| {
                    let op = if i % 2 == 0 { "PutItem" } else { "GetItem" };
                    let p = draw_plan(&sh, &cfg, op, i % 3);
                    (p.extra_latency_ms, p.throttle, p.drop, p.stale)
                })
                .collect::<Vec<_>>()
        };
        let a = run();
        assert_eq!(a, run());
        assert!(a.iter().any(|p| p.1) && a.iter().any(|p| !p.1));
        // The drop filter: GetItem (odd i) never drops.
        assert!(a.iter().skip(1).step_by(2).all(|p| !p.2));
        assert!(a.iter().step_by(2).any(|p| p.2));
        assert!(a
            .iter()
            .flat_map(|p| &p.3)
            .flatten()
            .all(|d| (0..=100_000).contains(d)));
    }
}
