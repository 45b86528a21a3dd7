//! ddblock's metrics as an application with the OpenTelemetry SDK sees them (the SDK's in-memory
//! exporter), through the fault proxy in front of each server: every acquire, release, lost lease
//! and unknown outcome counted under its name and outcome (docs/observability.md).

mod common;

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use common::{FaultyTable, Server};
use ddblock::{ErrorKind, Store, Wait};
use ddblock_fault_proxy::FaultConfig;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};

/// The process's one meter provider and its exporter (ddblock makes its instruments once, from
/// the global provider, so every test of this binary shares it: each reads only its own table's
/// points).
fn sdk() -> &'static (SdkMeterProvider, InMemoryMetricExporter) {
    static SDK: OnceLock<(SdkMeterProvider, InMemoryMetricExporter)> = OnceLock::new();
    SDK.get_or_init(|| {
        let exporter = InMemoryMetricExporter::default();
        let provider = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(exporter.clone()).build())
            .build();
        opentelemetry::global::set_meter_provider(provider.clone());
        (provider, exporter)
    })
}

/// `(metric, outcome attribute)` → count (sums) or number of recorded values (histograms), for
/// the points of table `table`.
fn points(table: &str) -> BTreeMap<(String, String), u64> {
    let (provider, exporter) = sdk();
    exporter.reset();
    provider.force_flush().unwrap();
    let mut out = BTreeMap::new();
    let exported = exporter.get_finished_metrics().unwrap();
    let last = exported.last().expect("an export");
    for scope in last.scope_metrics() {
        for metric in scope.metrics() {
            let name = metric.name().to_owned();
            let mut add = |attrs: Vec<(String, String)>, n: u64| {
                let mine = attrs
                    .iter()
                    .any(|(k, v)| k == "db.collection.name" && v == table);
                if !mine {
                    return;
                }
                let outcome = attrs
                    .iter()
                    .filter(|(k, _)| k.ends_with("outcome") || k == "ddblock.lock.cleanup")
                    .map(|(_, v)| v.clone())
                    .collect::<Vec<_>>()
                    .join(",");
                *out.entry((name.clone(), outcome)).or_insert(0) += n;
            };
            let kv = |it: &mut dyn Iterator<Item = &opentelemetry::KeyValue>| {
                it.map(|kv| (kv.key.to_string(), kv.value.to_string()))
                    .collect::<Vec<_>>()
            };
            match metric.data() {
                AggregatedMetrics::U64(MetricData::Sum(sum)) => {
                    for p in sum.data_points() {
                        add(kv(&mut p.attributes()), p.value());
                    }
                }
                AggregatedMetrics::F64(MetricData::Histogram(h)) => {
                    for p in h.data_points() {
                        add(kv(&mut p.attributes()), p.count());
                    }
                }
                _ => {}
            }
        }
    }
    out
}

fn count(p: &BTreeMap<(String, String), u64>, metric: &str, outcome: &str) -> u64 {
    p.get(&(metric.to_owned(), outcome.to_owned()))
        .copied()
        .unwrap_or(0)
}

/// Acquired, held, timed out, cancelled; released, not held, held by another; the waits and holds.
async fn acquisitions_and_releases_are_counted_by_outcome(server: Server) {
    sdk();
    let f = FaultyTable::new(server).await;
    let store = Store::new(f.through().build().unwrap());
    let a = store.lock("counted", 60).unwrap();
    let b = store.lock("counted", 60).unwrap();
    assert!(a.acquire().await.unwrap().is_acquired());
    assert!(!b.acquire().await.unwrap().is_acquired());
    assert!(!b
        .acquire_within(Duration::from_millis(300))
        .await
        .unwrap()
        .is_acquired());
    // A wait its caller gives up on (an aborted request, a dropped future).
    let gave_up =
        tokio::time::timeout(Duration::from_millis(200), b.acquire_within(Wait::Forever)).await;
    assert!(gave_up.is_err(), "the wait was cut short");
    assert!(a.release().await.unwrap().is_released());
    assert!(!a.release().await.unwrap().is_released());
    assert!(b.acquire().await.unwrap().is_acquired());
    assert!(!a.release().await.unwrap().is_released());

    let p = points(&f.table);
    let acq = "ddblock.lock.acquisitions";
    assert_eq!(count(&p, acq, "acquired"), 2, "{p:?}");
    assert_eq!(count(&p, acq, "held"), 1, "{p:?}");
    assert_eq!(count(&p, acq, "timed_out"), 1, "{p:?}");
    assert_eq!(count(&p, acq, "cancelled"), 1, "{p:?}");
    let rel = "ddblock.lock.releases";
    assert_eq!(count(&p, rel, "released"), 1, "{p:?}");
    assert_eq!(count(&p, rel, "not_held"), 1, "{p:?}");
    assert_eq!(count(&p, rel, "other_owner"), 1, "{p:?}");
    // Two waits (timed out, cancelled); one hold (the release that released).
    let waits: u64 = ["timed_out", "cancelled"]
        .iter()
        .map(|o| count(&p, "ddblock.lock.wait.duration", o))
        .sum();
    assert_eq!(waits, 2, "{p:?}");
    assert_eq!(
        count(&p, "ddblock.lock.hold.duration", "released"),
        1,
        "{p:?}"
    );
}

/// A heartbeat whose lock was taken from it counts a lost lease; an acquire whose every answer is
/// lost counts an unknown outcome whose clean-up left nothing.
async fn lost_leases_and_unknown_outcomes_are_counted(server: Server) {
    sdk();
    let f = FaultyTable::new(server).await;
    let cfg = f
        .through()
        .max_attempts(2)
        .attempt_timeout(Duration::from_millis(400));
    let store = Store::new(
        cfg.heartbeat_interval(Duration::from_millis(100))
            .build()
            .unwrap(),
    );
    let lock = store.lock("leased", 60).unwrap();
    assert!(lock.acquire().await.unwrap().is_acquired());
    let beat = lock.heartbeat();
    let other = Store::new(f.direct().build().unwrap());
    assert!(other
        .lock("leased", 60)
        .unwrap()
        .force_release()
        .await
        .unwrap());
    tokio::time::timeout(Duration::from_secs(10), beat.lost())
        .await
        .expect("the lease was lost");

    f.proxy.set_faults(FaultConfig {
        drop_response_rate: 1.0,
        drop_ops: vec!["UpdateItem".to_owned()],
        ..FaultConfig::default()
    });
    let err = store
        .lock("unknown", 60)
        .unwrap()
        .acquire()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{err}");

    let p = points(&f.table);
    assert_eq!(count(&p, "ddblock.lock.lease_lost", ""), 1, "{p:?}");
    assert_eq!(
        count(&p, "ddblock.lock.unknown_outcomes", "clean"),
        1,
        "{p:?}"
    );
    assert_eq!(
        count(&p, "ddblock.lock.acquisitions", "unknown"),
        1,
        "{p:?}"
    );
}

common::on_servers!(
    acquisitions_and_releases_are_counted_by_outcome,
    lost_leases_and_unknown_outcomes_are_counted,
);
