//! Credentials and owner tokens never appear in logs or error messages (issue 13): every log
//! event of every crate (ddblock, the AWS SDK, hyper; all levels down to TRACE) is captured while
//! a lock is taken, refused, lost, recovered after lost answers, refreshed and released through
//! the fault proxy, and each error met is shown with `Display` and `Debug`. The secret access key
//! appears nowhere, at any level. Owner tokens appear in no error, no ddblock event at any level,
//! and no event of any crate at DEBUG or above; only the AWS SDK's own TRACE events carry whole
//! request and response bodies, owners included (`aws_smithy_runtime::client::orchestrator`), which
//! `docs/reliability.md` says. (An owner shown to people is redacted to its first four characters
//! and its length: `holder.rs`.)
//!
//! Its own test binary: it installs a global `tracing` subscriber.

mod common;

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{FaultyTable, Server};
use ddblock::aws_sdk_dynamodb::config::Credentials;
use ddblock::aws_sdk_dynamodb::Client;
use ddblock::Store;
use ddblock_fault_proxy::FaultConfig;
use ddblock_test_support::sdk::client_config;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

const SECRET: &str = "ddblockSECRETaccessKEYneverLOGGED0123456789";
const OWNER_SECRET_PART: &str = "neverLOGGEDowner0123456789";

/// Everything every span and event said, as text.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<String>>);

struct Text<'a>(&'a mut String);

impl Visit for Text<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={:?}", field.name(), value);
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        let _ = write!(self.0, " {}={}", field.name(), value);
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut out = self.0.lock().unwrap();
        let _ = write!(out, "\n[span {}]", span.metadata().name());
        span.record(&mut Text(&mut out));
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, values: &Record<'_>) {
        values.record(&mut Text(&mut self.0.lock().unwrap()));
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut out = self.0.lock().unwrap();
        let _ = write!(
            out,
            "\n[{} {}]",
            event.metadata().level(),
            event.metadata().target()
        );
        event.record(&mut Text(&mut out));
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// An SDK client with a secret worth hunting for in the logs.
fn client(endpoint: &str) -> Client {
    let credentials = Credentials::new(
        "AKIDDDBLOCKTEST",
        SECRET,
        Some(format!("session-{SECRET}")),
        None,
        "secrets-test",
    );
    Client::from_conf(
        client_config(endpoint)
            .credentials_provider(credentials)
            .build(),
    )
}

#[tokio::test]
async fn credentials_and_owner_tokens_never_reach_logs_or_errors() {
    let capture = Capture::default();
    tracing::subscriber::set_global_default(capture.clone()).expect("one subscriber");
    let f = FaultyTable::new(Server::Moto).await;
    let config = f
        .through()
        .max_attempts(2)
        .attempt_timeout(Duration::from_millis(400))
        .build()
        .unwrap();
    let store = Store::with_client(client(&f.proxy.endpoint), config);
    let proxy = &f.proxy;
    let owner = format!("own-{OWNER_SECRET_PART}");
    let other = format!("oth-{OWNER_SECRET_PART}");
    let mut shown = String::new();
    let mut show = |what: &str, e: &dyn std::fmt::Debug, d: &dyn std::fmt::Display| {
        let _ = write!(shown, "\n{what}: {d} / {e:?}");
    };

    // Taken, refused to a second owner (whose error and holder name the first), refreshed,
    // released by the wrong owner, released.
    let lock = store.lock_with_owner("secrets", 30, owner.clone()).unwrap();
    assert!(lock.acquire().await.unwrap().is_acquired());
    let rival = store.lock_with_owner("secrets", 30, other.clone()).unwrap();
    let held = rival.acquire().await.unwrap();
    show("held", &held, &format!("{held:?}"));
    let holder = lock.current_holder().await.unwrap().expect("held");
    show("holder", &holder, &holder);
    let refused = rival.release().await.unwrap();
    show("rival release", &refused, &format!("{refused:?}"));
    let timeout = rival.block(Duration::from_millis(300)).await.unwrap_err();
    show("block", &timeout, &timeout);
    assert!(lock.refresh(None).await.unwrap());
    assert!(lock.release().await.unwrap().is_released());

    // Lost answers: the acquire's outcome stays unknown and is cleaned up; a lost release answer.
    proxy
        .set_config(FaultConfig {
            drop_response_rate: 1.0,
            ..FaultConfig::default()
        })
        .unwrap();
    let unknown = store
        .lock_with_owner("lost", 30, owner.clone())
        .unwrap()
        .acquire()
        .await
        .unwrap_err();
    show("outcome unknown", &unknown, &unknown);
    proxy.set_config(FaultConfig::default()).unwrap();

    // A lease lost under a heartbeat: another owner force-released and took the lock.
    let leased = store.lock_with_owner("lease", 2, owner.clone()).unwrap();
    assert!(leased.acquire().await.unwrap().is_acquired());
    let heartbeat = leased.heartbeat();
    store
        .lock_with_owner("lease", 2, other.clone())
        .unwrap()
        .force_release()
        .await
        .unwrap();
    let taker = store.lock_with_owner("lease", 30, other.clone()).unwrap();
    assert!(taker.acquire().await.unwrap().is_acquired());
    let reason = tokio::time::timeout(Duration::from_secs(10), heartbeat.lost())
        .await
        .expect("the heartbeat sees the lease lost");
    show("lease lost", &reason, &reason);
    // Its release's first send finds the other owner's lock: a lost lease, naming that owner
    // redacted.
    let lost_release = leased.release().await.unwrap_err();
    assert_eq!(lost_release.kind(), ddblock::ErrorKind::LeaseLost);
    show("lost release", &lost_release, &format!("{lost_release:?}"));

    let logs = capture.0.lock().unwrap().clone();
    assert!(
        logs.contains("[DEBUG ddblock") && logs.contains("[TRACE aws_smithy"),
        "the capture sees ddblock's and the SDK's events at every level:\n{logs}"
    );
    assert!(
        !logs.contains(SECRET),
        "the secret key in the logs:\n{logs}"
    );
    assert!(
        !shown.contains(SECRET),
        "the secret key in an error:\n{shown}"
    );
    assert!(
        !shown.contains(OWNER_SECRET_PART),
        "an owner token in an error or holder:\n{shown}"
    );
    // Each event starts with "\n[LEVEL target]"; spans' fields follow their "[span name]".
    for event in logs.split("\n[").filter(|e| !e.is_empty()) {
        let sdk_trace = event.starts_with("TRACE ") && !event.starts_with("TRACE ddblock");
        assert!(
            sdk_trace || !event.contains(OWNER_SECRET_PART),
            "an owner token in a log event other than the SDK's TRACE bodies:\n[{event}"
        );
    }
}
