//! ddblock's metrics as an application with the OpenTelemetry SDK reads them: the SDK's meter
//! provider with its in-memory exporter, installed as the global one (ddblock makes its
//! instruments from it at the first lock operation, so install it before). Used by
//! core/tests/telemetry.rs and by the chaos run's Rust peer, whose counts the chaos checker
//! holds against the server's journal.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use opentelemetry::KeyValue;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};

/// Counts by metric, then by the point's outcome attributes (`ddblock.lock.outcome`,
/// `ddblock.lock.release_outcome`, `ddblock.lock.cleanup`; `""` when it has none), joined by
/// commas: a counter's sum, or a histogram's number of values.
pub type Counts = BTreeMap<String, BTreeMap<String, u64>>;

/// The process's meter provider and its exporter.
pub struct Metrics {
    provider: SdkMeterProvider,
    exporter: InMemoryMetricExporter,
    heard: Arc<Mutex<BTreeMap<String, Counts>>>,
}

/// Installs the SDK as the global meter provider, and a [`ddblock::telemetry::Listener`] beside
/// it (once per process), and returns them.
pub fn install() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| {
        let exporter = InMemoryMetricExporter::default();
        let provider = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(exporter.clone()).build())
            .build();
        opentelemetry::global::set_meter_provider(provider.clone());
        let heard: Arc<Mutex<BTreeMap<String, Counts>>> = Arc::default();
        let into = heard.clone();
        ddblock::telemetry::listen(Some(Arc::new(move |m| {
            let on = |k: &str| m.attributes.iter().find(|(n, _)| *n == k).map(|(_, v)| *v);
            let table = on("db.collection.name").unwrap_or_default().to_owned();
            let outcome = outcome_of(m.attributes.iter().map(|(k, v)| (*k, v.to_string())));
            let mut heard = into.lock().unwrap();
            let by = heard.entry(table).or_default();
            *by.entry(m.name.to_owned())
                .or_default()
                .entry(outcome)
                .or_default() += 1;
        })));
        Metrics {
            provider,
            exporter,
            heard,
        }
    })
}

impl Metrics {
    /// The bucket boundaries of histogram `metric` (empty when it has no point).
    pub fn bounds(&self, metric: &str) -> Vec<f64> {
        self.histograms()
            .remove(metric)
            .map(|h| h.bounds)
            .unwrap_or_default()
    }

    /// Every histogram, its points' buckets summed over their attributes.
    pub fn histograms(&self) -> BTreeMap<String, Buckets> {
        self.exporter.reset();
        self.provider.force_flush().expect("the SDK exports");
        let exported = self.exporter.get_finished_metrics().expect("an export");
        let mut out = BTreeMap::new();
        let Some(last) = exported.last() else {
            return out;
        };
        for m in last.scope_metrics().flat_map(|s| s.metrics()) {
            if let AggregatedMetrics::F64(MetricData::Histogram(h)) = m.data() {
                for p in h.data_points() {
                    let sum: &mut Buckets = out.entry(m.name().to_owned()).or_default();
                    sum.add(p.bounds().collect(), p.bucket_counts());
                }
            }
        }
        out
    }

    /// What the listener heard of table `table`, counted as [`Metrics::counts`] counts.
    pub fn heard(&self, table: &str) -> Counts {
        let heard = self.heard.lock().unwrap();
        heard.get(table).cloned().unwrap_or_default()
    }

    /// Everything recorded so far, of table `table` only when given.
    pub fn counts(&self, table: Option<&str>) -> Counts {
        self.exporter.reset();
        self.provider.force_flush().expect("the SDK exports");
        let mut out = Counts::new();
        let exported = self.exporter.get_finished_metrics().expect("an export");
        let Some(last) = exported.last() else {
            return out;
        };
        for scope in last.scope_metrics() {
            for metric in scope.metrics() {
                let mut add = |attrs: Vec<&KeyValue>, n: u64| {
                    let on = |k: &str| attrs.iter().find(|kv| kv.key.as_str() == k);
                    if table.is_some_and(|t| {
                        on("db.collection.name").is_none_or(|kv| kv.value.as_str() != t)
                    }) {
                        return;
                    }
                    let outcome = outcome_of(
                        attrs
                            .iter()
                            .map(|kv| (kv.key.as_str(), kv.value.to_string())),
                    );
                    let by = out.entry(metric.name().to_owned()).or_default();
                    *by.entry(outcome).or_default() += n;
                };
                match metric.data() {
                    AggregatedMetrics::U64(MetricData::Sum(sum)) => {
                        for p in sum.data_points() {
                            add(p.attributes().collect(), p.value());
                        }
                    }
                    AggregatedMetrics::F64(MetricData::Histogram(h)) => {
                        for p in h.data_points() {
                            add(p.attributes().collect(), p.count());
                        }
                    }
                    _ => {}
                }
            }
        }
        out
    }
}

/// A histogram's buckets: `counts[i]` values at most `bounds[i]` (and above the bound before);
/// the last, above every bound.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Buckets {
    /// The upper bounds.
    pub bounds: Vec<f64>,
    /// One count per bucket, one more than the bounds.
    pub counts: Vec<u64>,
}

impl Buckets {
    /// Adds `counts` (one per bucket of `bounds`, and one above them) to these.
    pub fn add(&mut self, bounds: Vec<f64>, counts: impl IntoIterator<Item = u64>) {
        self.counts.resize(bounds.len() + 1, 0);
        self.bounds = bounds;
        for (total, n) in self.counts.iter_mut().zip(counts) {
            *total += n;
        }
    }
}

/// What a point is counted by: its outcome attributes (`ddblock.lock.outcome`,
/// `ddblock.lock.release_outcome`, `ddblock.lock.cleanup`, ...) joined by commas; `""` for none.
fn outcome_of<'a>(attributes: impl Iterator<Item = (&'a str, String)>) -> String {
    attributes
        .filter(|(k, _)| k.ends_with("outcome") || *k == "ddblock.lock.cleanup")
        .map(|(_, v)| v)
        .collect::<Vec<_>>()
        .join(",")
}

/// `counts[metric][outcome]`, 0 when absent.
pub fn count(counts: &Counts, metric: &str, outcome: &str) -> u64 {
    counts
        .get(metric)
        .and_then(|by| by.get(outcome))
        .copied()
        .unwrap_or(0)
}

/// The sum over every outcome of `metric`.
pub fn total(counts: &Counts, metric: &str) -> u64 {
    counts.get(metric).map_or(0, |by| by.values().sum())
}
