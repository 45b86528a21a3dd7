//! The lock conformance vectors (`compat-tests/conformance/v2/<layout>/<operation>.json`, the wire
//! format spec in docs/format.md) run against the core through its public API: for every case,
//! the table is set to the case's `before` item, the operation runs with the case's fixed clock,
//! clock-skew margin, attempt id and fence base (`Lock::with_fixed_attempt`, a hidden test seam)
//! through a client whose interceptor records each serialized request (the SDK's own retries off),
//! and the recorded requests (operation and body, as sent), the outcome and the `after` item must
//! be the vector's. A case with `faults` runs through the fault proxy, which forwards the
//! operations of `answers_lost` and drops their answers, drops the requests of `requests_lost`,
//! and gives the next requests of an operation the faults its `sequence` lists (with the SDK's
//! retries on where `sdk_attempts` says, as a release's resend needs). The PHP driver
//! runs the same files (bindings/php/tests/ConformanceTest.php), so a request shape that changes
//! in one implementation and not in the other fails one of the two.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use ddblock::{
    AcquireOutcome, Clock, Error, ErrorKind, Holder, KeyLayout, ReleaseMode, ReleaseOutcome, Store,
    StoreConfig,
};
use ddblock_fault_proxy::FaultConfig;
use ddblock_test_support::faulty::{faulty, FaultyServer};
use ddblock_test_support::sdk::client_config;
use ddblock_test_support::{new_table, Server as LocalServer};
use serde_json::{json, Value};

/// The vectors' table name; each run works on a fresh table and writes this name back into the
/// recorded requests before comparing.
const VECTOR_TABLE: &str = "cache";

/// One recorded request: the operation (from `X-Amz-Target`) and the JSON body as sent.
#[derive(Debug, Clone)]
struct Sent {
    operation: String,
    body: Value,
}

/// Records every request of the lock protocol the SDK is about to transmit (retries included).
#[derive(Debug, Clone, Default)]
struct Recorder(Arc<Mutex<Vec<Sent>>>);

impl Recorder {
    fn take(&self) -> Vec<Sent> {
        std::mem::take(&mut *self.0.lock().expect("recorder"))
    }
}

impl Intercept for Recorder {
    fn name(&self) -> &'static str {
        "conformance-recorder"
    }

    fn read_before_transmit(
        &self,
        context: &BeforeTransmitInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let request = context.request();
        let target = request
            .headers()
            .get("x-amz-target")
            .ok_or("request without X-Amz-Target")?;
        let operation = target.rsplit('.').next().unwrap_or(target).to_owned();
        // The once-per-process check of the table's Regions (docs/semantics.md "Multi-Region")
        // is not a request of the lock protocol: the PHP driver sends none, and which case comes
        // first in a process decides where it falls.
        if operation == "DescribeTable" {
            return Ok(());
        }
        let bytes = request.body().bytes().ok_or("request body is a stream")?;
        let body = serde_json::from_slice(bytes)?;
        self.0
            .lock()
            .expect("recorder")
            .push(Sent { operation, body });
        Ok(())
    }
}

/// The case's `now`.
#[derive(Debug)]
struct FixedClock(i64);

impl Clock for FixedClock {
    fn now(&self) -> i64 {
        self.0
    }
}

fn client(endpoint: &str, recorder: Option<Recorder>) -> Client {
    client_sending(endpoint, recorder, 1)
}

/// A client that sends a request up to `sends` times: the vectors list the requests of the
/// protocol, so the SDK's own retries are off unless a case's `faults.sdk_attempts` says.
fn client_sending(endpoint: &str, recorder: Option<Recorder>, sends: u32) -> Client {
    let retry = match sends {
        0 | 1 => RetryConfig::disabled(),
        n => RetryConfig::standard()
            .with_max_attempts(n)
            .with_initial_backoff(Duration::from_millis(10)),
    };
    let mut conf = client_config(endpoint).retry_config(retry);
    if let Some(r) = recorder {
        conf = conf.interceptor(r);
    }
    Client::from_conf(conf.build())
}

fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../compat-tests/conformance/v2")
}

/// Every vector file, sorted: (path, document).
fn vector_files() -> Vec<(PathBuf, Value)> {
    let mut files = Vec::new();
    for layout in ["laravel8", "laravel11", "laravel12"] {
        let dir = vectors_dir().join(layout);
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("dir entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        entries.sort();
        for path in entries {
            let text = std::fs::read_to_string(&path).expect("vector file");
            let doc: Value =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            files.push((path, doc));
        }
    }
    files
}

fn to_attr(v: &Value) -> AttributeValue {
    match (v.get("S"), v.get("N")) {
        (Some(Value::String(s)), _) => AttributeValue::S(s.clone()),
        (_, Some(Value::String(n))) => AttributeValue::N(n.clone()),
        _ => panic!("vectors hold S and N values only, not {v}"),
    }
}

fn to_item(v: &Value) -> HashMap<String, AttributeValue> {
    v.as_object()
        .expect("an item is an object")
        .iter()
        .map(|(k, a)| (k.clone(), to_attr(a)))
        .collect()
}

fn from_item(item: &HashMap<String, AttributeValue>) -> Value {
    let map = item
        .iter()
        .map(|(k, a)| {
            let v = match a {
                AttributeValue::S(s) => json!({ "S": s }),
                AttributeValue::N(n) => json!({ "N": n }),
                other => json!({ "unexpected": format!("{other:?}") }),
            };
            (k.clone(), v)
        })
        .collect();
    Value::Object(map)
}

fn holder_json(h: &Holder) -> Value {
    json!({ "owner": h.owner, "expires_at": h.expires_at })
}

/// Whether the recorded requests are the expected ones, in order. An expected request marked
/// `"optional": true` (a read only an implementation that reports more than Laravel's API needs)
/// may be absent.
fn compare_requests(expected: &[Value], sent: &[Sent]) -> Result<(), String> {
    let mut i = 0;
    for (n, exp) in expected.iter().enumerate() {
        let optional = exp.get("optional") == Some(&Value::Bool(true));
        let same = sent
            .get(i)
            .is_some_and(|s| s.operation == exp["operation"] && s.body == exp["body"]);
        if same {
            i += 1;
        } else if !optional {
            return Err(match sent.get(i) {
                Some(s) => format!(
                    "request {n}: expected {} {}\n            sent {} {}",
                    exp["operation"], exp["body"], s.operation, s.body
                ),
                None => format!(
                    "request {n} ({} {}) was not sent",
                    exp["operation"], exp["body"]
                ),
            });
        }
    }
    match sent.get(i..) {
        Some([]) | None => Ok(()),
        Some(extra) => Err(format!("unexpected extra requests: {extra:?}")),
    }
}

/// What the core's error says its clean-up found, in the vectors' terms.
fn cleanup_kind(cleanup: &str) -> &'static str {
    if cleanup.contains("deleted again") {
        "deleted"
    } else if cleanup.contains("nothing of this attempt's") {
        "not_found"
    } else {
        "failed"
    }
}

struct Server {
    endpoint: String,
    /// Whether the server returns the old item with a failed condition (moto yes, dynalite no).
    returns_all_old: bool,
    plain: Client,
    recorder: Recorder,
    recording: Client,
    /// The fault proxy in front of the server and a recording client through it (cases with
    /// `faults`), started on first use.
    faulty: Option<(FaultyServer, Client)>,
    /// Table per key attribute name.
    tables: HashMap<String, String>,
}

impl Server {
    fn new(server: LocalServer) -> Server {
        let endpoint = server.endpoint();
        let returns_all_old = server.returns_all_old();
        let recorder = Recorder::default();
        Server {
            plain: client(&endpoint, None),
            recording: client(&endpoint, Some(recorder.clone())),
            recorder,
            endpoint,
            returns_all_old,
            faulty: None,
            tables: HashMap::new(),
        }
    }

    /// A recording client through the fault proxy, whose faults are set to `faults`: every
    /// operation named in `answers_lost` is forwarded (it is applied) and its answer dropped; every
    /// one in `requests_lost` is dropped before it reaches the server; `sequence` scripts the
    /// faults of an operation's next requests, in order (the proxy's `FaultConfig::sequence`);
    /// `sdk_attempts`: the client retries as the SDK does, up to that many sends.
    async fn faulty_client(&mut self, faults: &Value) -> Client {
        if self.faulty.is_none() {
            let proxy = faulty(&self.endpoint, FaultConfig::default()).await;
            let client = client(&proxy.endpoint, Some(self.recorder.clone()));
            self.faulty = Some((proxy, client));
        }
        let (proxy, client) = self.faulty.as_ref().expect("started");
        let ops = |field: &str| -> Vec<String> {
            faults[field]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|v| v.as_str().expect("an operation").to_owned())
                })
                .into_iter()
                .flatten()
                .collect()
        };
        let (answers, requests) = (ops("answers_lost"), ops("requests_lost"));
        let rate = |ops: &[String]| if ops.is_empty() { 0.0 } else { 1.0 };
        let sequence = match faults.get("sequence") {
            Some(s) => serde_json::from_value(s.clone()).expect("faults.sequence"),
            None => Default::default(),
        };
        proxy
            .set_config(FaultConfig {
                drop_response_rate: rate(&answers),
                drop_ops: answers,
                drop_request_rate: rate(&requests),
                drop_request_ops: requests,
                sequence,
                ..FaultConfig::default()
            })
            .expect("proxy config");
        match faults["sdk_attempts"].as_u64() {
            Some(n) => client_sending(&proxy.endpoint, Some(self.recorder.clone()), n as u32),
            None => client.clone(),
        }
    }

    async fn table_for(&mut self, key_attribute: &str) -> String {
        if let Some(t) = self.tables.get(key_attribute) {
            return t.clone();
        }
        let name = new_table(&self.plain, key_attribute).await;
        self.tables.insert(key_attribute.to_owned(), name.clone());
        name
    }

    async fn drop_tables(&self) {
        for t in self.tables.values() {
            let _ = self.plain.delete_table().table_name(t).send().await;
        }
    }

    /// Runs one case; Err describes the first difference.
    async fn run_case(&mut self, layout: KeyLayout, op: &str, case: &Value) -> Result<(), String> {
        let t = &case["table"];
        let s = |v: &Value| v.as_str().expect("string").to_owned();
        let (key_attr, value_attr, exp_attr) = (
            s(&t["key_attribute"]),
            s(&t["value_attribute"]),
            s(&t["expiration_attribute"]),
        );
        let table = self.table_for(&key_attr).await;
        let input = &case["input"];
        let now = input["now"].as_i64().expect("now");
        let mut cfg = StoreConfig::builder()
            .table(&table)
            .key_attribute(&key_attr)
            .value_attribute(&value_attr)
            .expiration_attribute(&exp_attr)
            .prefix(s(&input["prefix"]))
            .layout(layout)
            .clock(Arc::new(FixedClock(now)));
        if let Some(margin) = input["margin"].as_u64() {
            cfg = cfg.clock_skew_margin(Duration::from_secs(margin));
        }
        // Absent: "delete", the default.
        let mode: ReleaseMode = input["release_mode"]
            .as_str()
            .map_or(Ok(ReleaseMode::Delete), str::parse)
            .map_err(|e| e.to_string())?;
        cfg = cfg.release_mode(mode);
        let cfg = cfg.build().map_err(|e| e.to_string())?;
        let recording = match case.get("faults") {
            Some(faults) => self.faulty_client(faults).await,
            None => self.recording.clone(),
        };
        let store = Store::with_client(recording, cfg);
        let mut lock = store
            .lock_with_owner(
                &s(&input["name"]),
                input["ttl"].as_i64().expect("ttl"),
                // A null owner is Laravel's isOwnedBy(null): asked of a lock with any owner.
                input["owner"]
                    .as_str()
                    .map_or_else(ddblock::lock::random_owner, str::to_owned),
            )
            .map_err(|e| e.to_string())?;
        if let Some(attempt) = input["attempt"].as_str() {
            let base = input["fence_base"].as_u64().expect("fence_base");
            lock = lock.with_fixed_attempt(attempt, base);
        }

        // The table as the case says it is before (through the plain client: not recorded).
        let key = HashMap::from([(key_attr.clone(), AttributeValue::S(lock.key().to_owned()))]);
        self.plain
            .delete_item()
            .table_name(&table)
            .set_key(Some(key.clone()))
            .send()
            .await
            .map_err(|e| format!("reset: {e:?}"))?;
        if !case["before"].is_null() {
            self.plain
                .put_item()
                .table_name(&table)
                .set_item(Some(to_item(&case["before"])))
                .send()
                .await
                .map_err(|e| format!("before: {e:?}"))?;
        }
        self.recorder.take();

        let outcome = match op {
            "acquire" => match lock.acquire().await {
                Ok(AcquireOutcome::Acquired {
                    recovered,
                    expires_at,
                    fence,
                }) => {
                    if lock.fence() != fence {
                        return Err(format!(
                            "fence(): {:?}, the outcome's: {fence:?}",
                            lock.fence()
                        ));
                    }
                    let kind = if recovered { "recovered" } else { "acquired" };
                    json!({ kind: { "expires_at": expires_at, "fence": fence } })
                }
                Ok(AcquireOutcome::Held(h)) => json!({ "held": holder_json(&h) }),
                Err(Error::OutcomeUnknown { cleanup, .. }) => {
                    if lock.fence().is_some() {
                        return Err("a fence after an unknown outcome".into());
                    }
                    json!({ "outcome_unknown": { "cleanup": cleanup_kind(&cleanup) } })
                }
                Err(e) if e.kind() == ErrorKind::Throttled => {
                    if lock.fence().is_some() {
                        return Err("a fence after a refused acquire".into());
                    }
                    json!({ "error": "throttled" })
                }
                Err(e) => return Err(e.to_string()),
            },
            "release" => match lock.release().await.map_err(|e| e.to_string())? {
                ReleaseOutcome::Released => json!("released"),
                ReleaseOutcome::NotHeld => json!("not_held"),
                ReleaseOutcome::HeldByOther(h) => json!({ "held_by_other": holder_json(&h) }),
            },
            "force_release" => {
                let there = lock.force_release().await.map_err(|e| e.to_string())?;
                json!(match mode {
                    _ if !there => "not_found",
                    ReleaseMode::Delete => "deleted",
                    ReleaseMode::KeepFence => "expired",
                })
            }
            "refresh" => {
                let refreshed = lock
                    .refresh(input["seconds"].as_i64())
                    .await
                    .map_err(|e| e.to_string())?;
                json!(if refreshed {
                    "refreshed"
                } else {
                    "not_refreshed"
                })
            }
            "current_owner" => {
                let holder = lock.current_holder().await.map_err(|e| e.to_string())?;
                json!({ "holder": holder.as_ref().map(holder_json) })
            }
            // isOwnedBy(null): nobody owns the lock when it is free (Laravel's
            // `getCurrentOwner() === null`); the core asks it as `!is_locked()`.
            "is_owned_by" if input["owner"].is_null() => {
                json!(!lock.is_locked().await.map_err(|e| e.to_string())?)
            }
            "is_owned_by" => json!(lock.is_owned().await.map_err(|e| e.to_string())?),
            other => return Err(format!("unknown operation {other}")),
        };
        let mut sent = self.recorder.take();
        for r in &mut sent {
            if r.body.get("TableName") == Some(&json!(table)) {
                r.body["TableName"] = json!(VECTOR_TABLE);
            }
        }

        let expected = match case.get("requests_without_all_old") {
            Some(v) if !self.returns_all_old => v,
            _ => &case["requests"],
        };
        compare_requests(expected.as_array().expect("requests"), &sent)?;
        if outcome != case["outcome"] {
            return Err(format!(
                "outcome: expected {}, got {outcome}",
                case["outcome"]
            ));
        }
        let after = self
            .plain
            .get_item()
            .table_name(&table)
            .set_key(Some(key))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| format!("after: {e:?}"))?
            .item
            .as_ref()
            .map(from_item)
            .unwrap_or(Value::Null);
        if after != case["after"] {
            return Err(format!(
                "table after: expected {}, got {after}",
                case["after"]
            ));
        }
        Ok(())
    }
}

async fn run_all(local: LocalServer) {
    let mut server = Server::new(local);
    let mut failures = Vec::new();
    let mut ran = 0;
    let files = vector_files();
    assert_eq!(
        files.len(),
        18,
        "3 layouts x 6 operations in {}",
        vectors_dir().display()
    );
    for (path, doc) in &files {
        assert_eq!(doc["version"], 2, "{}", path.display());
        let layout: KeyLayout = doc["layout"]
            .as_str()
            .expect("layout")
            .parse()
            .expect("a known layout");
        let op = doc["operation"].as_str().expect("operation");
        let cases = doc["cases"].as_array().expect("cases");
        assert!(!cases.is_empty(), "{}: no cases", path.display());
        for case in cases {
            ran += 1;
            if let Err(e) = server.run_case(layout, op, case).await {
                failures.push(format!(
                    "{}/{op} {}: {e}",
                    doc["layout"].as_str().unwrap_or("?"),
                    case["id"]
                ));
            }
        }
    }
    server.drop_tables().await;
    if let Some((proxy, _)) = server.faulty.take() {
        proxy.shutdown().await;
    }
    assert!(
        failures.is_empty(),
        "{} of {ran} cases differ from the vectors:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!("{ran} conformance cases match the vectors on {local}");
}

#[tokio::test]
async fn moto_matches_the_vectors() {
    run_all(LocalServer::Moto).await;
}

#[tokio::test]
async fn dynalite_matches_the_vectors() {
    run_all(LocalServer::Dynalite).await;
}

#[tokio::test]
async fn ddblocal_matches_the_vectors() {
    run_all(LocalServer::DdbLocal).await;
}

/// The comparison is not vacuous: a request that differs from the vector in one member, or an
/// extra or missing request, is reported.
#[test]
fn a_changed_request_fails_the_comparison() {
    let (_, doc) = vector_files()
        .into_iter()
        .find(|(_, d)| d["operation"] == "release" && d["layout"] == "laravel12")
        .expect("laravel12/release.json");
    let case = &doc["cases"][0];
    let expected = case["requests"].as_array().expect("requests").clone();
    let as_sent = |v: &Value| Sent {
        operation: v["operation"].as_str().expect("operation").to_owned(),
        body: v["body"].clone(),
    };
    let sent: Vec<Sent> = expected.iter().map(as_sent).collect();
    assert_eq!(compare_requests(&expected, &sent), Ok(()));

    let mut changed = sent.clone();
    changed[0].body["ConditionExpression"] = json!("attribute_exists(#value)");
    assert!(compare_requests(&expected, &changed).is_err());
    let mut untyped = sent.clone();
    untyped[0].body["ExpressionAttributeValues"][":owner"] = json!({"N": "1"});
    assert!(compare_requests(&expected, &untyped).is_err());
    let mut extra = sent.clone();
    extra.push(sent[0].clone());
    assert!(compare_requests(&expected, &extra).is_err());
    assert!(compare_requests(&expected, &[]).is_err());

    // An optional read may be left out, but not replaced by another request.
    let missing = &doc["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|c| c["id"] == "missing")
        .expect("the missing case")["requests"];
    let missing = missing.as_array().expect("requests");
    assert_eq!(compare_requests(missing, &[as_sent(&missing[0])]), Ok(()));
    assert_eq!(
        compare_requests(missing, &[as_sent(&missing[0]), as_sent(&missing[1])]),
        Ok(())
    );
    assert!(compare_requests(missing, &[as_sent(&missing[0]), as_sent(&missing[0])]).is_err());
}
