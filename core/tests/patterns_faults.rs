//! The once-only guard and compare-and-set through the fault proxy (compat-tests/fault-proxy):
//! a write lands but its answer is lost, the SDK retries, and the outcome is still right; and the
//! requests each operation sends, counted by the proxy.
//!
//! The request table: `cargo test -p ddblock --test patterns_faults request_counts -- --nocapture`.

mod common;

use common::{on_servers, FaultyServer, FaultyTable, Server};
use ddblock::{
    CasOutcome, ClaimOutcome, ErrorKind, OnceState, PhpValue, Store, StoreConfigBuilder,
};
use ddblock_fault_proxy::{
    FaultConfig, Stats, DROPPED, FORWARDED_ERROR_PREFIX, FORWARDED_OK, THROTTLED,
};

/// A seed whose first drop decision (rate 0.5) drops and whose second forwards.
const SEED: u64 = 6;

/// Drops the first answer to `op` (the write lands); the SDK's retry is answered.
fn drop_once(op: &str) -> FaultConfig {
    FaultConfig {
        seed: SEED,
        drop_response_rate: 0.5,
        drop_ops: vec![op.into()],
        ..FaultConfig::default()
    }
}

fn ccf() -> String {
    format!("{FORWARDED_ERROR_PREFIX}ConditionalCheckFailedException")
}

struct Faulty {
    proxy: FaultyServer,
    /// Through the proxy.
    store: Store,
    /// Straight to the server.
    direct: Store,
}

impl Faulty {
    async fn new(server: Server) -> Faulty {
        let f = FaultyTable::new(server).await;
        let cfg = |b: StoreConfigBuilder| b.prefix("app_").max_attempts(3).build().unwrap();
        Faulty {
            store: Store::connect(cfg(f.through())).await.unwrap(),
            direct: Store::connect(cfg(f.direct())).await.unwrap(),
            proxy: f.proxy,
        }
    }

    /// Runs `f` with `faults` from zeroed counters; returns its result and the counts.
    async fn with<T>(
        &self,
        faults: FaultConfig,
        f: impl std::future::Future<Output = T>,
    ) -> (T, Stats) {
        self.proxy.set_faults(faults);
        let out = f.await;
        let stats = self.proxy.stats();
        self.proxy.set_config(FaultConfig::default()).unwrap();
        (out, stats)
    }
}

async fn lost_answers_in_the_once_guard(server: Server) {
    let f = Faulty::new(server).await;
    let once = f.store.once("evt", 30).unwrap();

    // The claim's ADD lands, its answer is lost; the retry sees 2 and our own token: still ours.
    let (out, st) = f.with(drop_once("UpdateItem"), once.claim()).await;
    assert_eq!(st.count("UpdateItem", DROPPED), 1, "{st:?}");
    assert_eq!(st.count("UpdateItem", FORWARDED_OK), 1, "{st:?}");
    let claim = match out.unwrap() {
        ClaimOutcome::Claimed(c) => c,
        other => panic!("a lost answer made us lose our own claim: {other:?}"),
    };
    assert!(claim.recovered());
    let other = f.direct.once("evt", 30).unwrap().claim().await.unwrap();
    assert_eq!(
        other.skipped().unwrap().claims,
        Some(3),
        "the retry counted once more"
    );

    // Marking done twice is harmless: the retry's condition (our token) still holds.
    let (out, st) = f.with(drop_once("UpdateItem"), claim.done()).await;
    out.unwrap();
    assert_eq!(st.count("UpdateItem", DROPPED), 1, "{st:?}");
    assert_eq!(once.status().await.unwrap().state, OnceState::Done);

    // Give back: the retry fails its condition (the token is gone) and finds our give-back.
    let once = f.store.once("evt2", 30).unwrap();
    let claim = once.claim().await.unwrap().claim().unwrap().clone();
    let (out, st) = f.with(drop_once("UpdateItem"), claim.give_back()).await;
    assert!(out.unwrap(), "our own give-back, recognised");
    assert_eq!(st.count("UpdateItem", &ccf()), 1, "{st:?}");
    assert_eq!(once.status().await.unwrap().state, OnceState::GivenBack);

    // A claim over the given-back item is a PutItem: lost answer, retry, recognised.
    let (out, st) = f.with(drop_once("PutItem"), once.claim()).await;
    assert_eq!(st.count("PutItem", DROPPED), 1, "{st:?}");
    assert_eq!(st.count("PutItem", &ccf()), 1, "{st:?}");
    assert!(out.unwrap().claim().unwrap().recovered());
    f.proxy.shutdown().await;
}

async fn lost_answers_in_compare_and_set(server: Server) {
    let f = Faulty::new(server).await;
    let s = &f.store;

    // First write (a PutItem): lands, answer lost, the retry's condition fails on our own write.
    let (out, st) = f
        .with(
            drop_once("PutItem"),
            s.put_if_version("k", &PhpValue::Int(1), 60, 0),
        )
        .await;
    assert_eq!(st.count("PutItem", DROPPED), 1, "{st:?}");
    assert_eq!(st.count("PutItem", &ccf()), 1, "{st:?}");
    let v = match out.unwrap() {
        CasOutcome::Written { version } => version,
        CasOutcome::Conflict => panic!("our own lost write reported as a conflict"),
    };
    assert_eq!(f.direct.get_versioned("k").await.unwrap().version, v);

    // A later write (an UpdateItem), the same.
    let (out, st) = f
        .with(
            drop_once("UpdateItem"),
            s.put_if_version("k", &PhpValue::Int(2), 60, v),
        )
        .await;
    assert_eq!(st.count("UpdateItem", DROPPED), 1, "{st:?}");
    assert_eq!(out.unwrap(), CasOutcome::Written { version: v + 1 });

    // update(): the increment is applied exactly once although its write was sent twice.
    let (out, st) = f
        .with(
            drop_once("UpdateItem"),
            s.update("k", 60, |v| match v {
                Some(PhpValue::Int(i)) => PhpValue::Int(i + 1),
                other => panic!("{other:?}"),
            }),
        )
        .await;
    assert_eq!(st.count("UpdateItem", DROPPED), 1, "{st:?}");
    // update()'s read, plus (dynalite ignores ALL_OLD) the read that finds our write.
    let reads = 1 + u64::from(!server.returns_all_old());
    assert_eq!(st.count("GetItem", FORWARDED_OK), reads, "{st:?}");
    assert_eq!(out.unwrap().value, Some(PhpValue::Int(3)));
    assert_eq!(f.direct.get("k").await.unwrap(), Some(PhpValue::Int(3)));

    // A conflict on the first attempt is a conflict, with no extra read.
    let (out, st) = f
        .with(
            FaultConfig::default(),
            s.put_if_version("k", &PhpValue::Int(9), 60, v),
        )
        .await;
    assert_eq!(out.unwrap(), CasOutcome::Conflict);
    assert_eq!(st.grand_total(), 1, "{st:?}");

    // Throttling past the SDK's retries: Throttled, nothing written.
    let (out, st) = f
        .with(
            FaultConfig {
                throttle_rate: 1.0,
                ..FaultConfig::default()
            },
            s.put_if_version("k", &PhpValue::Int(9), 60, v + 2),
        )
        .await;
    assert_eq!(out.unwrap_err().kind(), ErrorKind::Throttled);
    assert_eq!(st.count("UpdateItem", THROTTLED), 3, "{st:?}");
    assert_eq!(f.direct.get("k").await.unwrap(), Some(PhpValue::Int(3)));
    f.proxy.shutdown().await;
}

/// One row of the request table: what an operation sent, by operation and outcome.
fn row(what: &str, st: &Stats) -> String {
    let mut parts = Vec::new();
    for (op, outcomes) in &st.ops {
        for (outcome, n) in outcomes {
            let outcome = outcome
                .strip_prefix(FORWARDED_ERROR_PREFIX)
                .map(|c| c.trim_end_matches("Exception"))
                .unwrap_or(if outcome == FORWARDED_OK {
                    "ok"
                } else {
                    outcome
                });
            parts.push(format!("{n} {op} ({outcome})"));
        }
    }
    format!("| {what} | {} | {} |", st.grand_total(), parts.join(", "))
}

async fn request_counts(server: Server) {
    let f = Faulty::new(server).await;
    let s = &f.store;
    let none = FaultConfig::default;
    let once = s.once("evt", 30).unwrap();
    let mut rows = vec![format!("requests per operation on {server}:")];
    let mut check = |what: &str, st: &Stats, want: u64| {
        rows.push(row(what, st));
        assert_eq!(st.grand_total(), want, "{what}: {st:?}");
    };

    let (c, st) = f.with(none(), once.claim()).await;
    check("once: claim (first delivery)", &st, 1);
    let claim = c.unwrap().claim().unwrap().clone();
    let (_, st) = f.with(none(), once.claim()).await;
    check("once: claim (in progress elsewhere)", &st, 1);
    let (r, st) = f.with(none(), claim.done()).await;
    r.unwrap();
    check("once: done", &st, 1);
    let (_, st) = f.with(none(), once.claim()).await;
    check("once: claim (already done)", &st, 1);
    let (_, st) = f.with(none(), once.status()).await;
    check("once: status", &st, 1);
    let o2 = s.once("evt2", 30).unwrap();
    let claim = o2.claim().await.unwrap().claim().unwrap().clone();
    let (_, st) = f.with(none(), claim.give_back()).await;
    check("once: give back", &st, 1);
    let (_, st) = f.with(none(), o2.claim()).await;
    // The ADD's condition fails on the given-back item; dynalite ignores ALL_OLD, so a read.
    let extra = u64::from(!server.returns_all_old());
    check("once: claim (after a give-back or expiry)", &st, 2 + extra);
    let o3 = s.once("evt3", 30).unwrap();
    let (_, st) = f
        .with(none(), o3.run(|| async { Ok::<_, ddblock::Error>(()) }))
        .await;
    check("once: run (claim, work, done)", &st, 2);

    let (r, st) = f.with(none(), s.get_versioned("k")).await;
    check("cas: get_versioned", &st, 1);
    let (w, st) = f
        .with(none(), s.put_if_version("k", &PhpValue::Int(1), 60, 0))
        .await;
    check("cas: put_if_version (first version)", &st, 1);
    let v = w.unwrap().version().unwrap();
    let (_, st) = f
        .with(none(), s.put_if_version("k", &PhpValue::Int(2), 60, v))
        .await;
    check("cas: put_if_version (next version)", &st, 1);
    let (_, st) = f
        .with(none(), s.put_if_version("k", &PhpValue::Int(2), 60, v))
        .await;
    check("cas: put_if_version (conflict)", &st, 1);
    let (_, st) = f
        .with(
            none(),
            s.put_if_unchanged("k", &r.unwrap(), &PhpValue::Int(2), 60),
        )
        .await;
    check("cas: put_if_unchanged (conflict)", &st, 1);
    let (_, st) = f
        .with(none(), s.update("k", 60, |_| PhpValue::Int(5)))
        .await;
    check("cas: update (no contention)", &st, 2);
    println!("{}", rows.join("\n"));
    f.proxy.shutdown().await;
}

on_servers!(
    lost_answers_in_the_once_guard,
    lost_answers_in_compare_and_set,
    request_counts,
);
