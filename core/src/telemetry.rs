//! What ddblock reports, named once: every metric, span and warning ([`INSTRUMENTS`]), from which
//! docs/observability.md is generated (`core/tests/telemetry_doc.rs` checks it), and the one place
//! that records them.
//!
//! Spans and warnings are `tracing` spans and events with these names. Metrics go through the
//! OpenTelemetry API (`opentelemetry::global::meter("ddblock")`) when the crate's `otel` feature
//! is on; without it every recording function here is empty and the crate has no OpenTelemetry
//! dependency. Names follow OpenTelemetry's rules: dot-separated, `ddblock.` first, units in UCUM,
//! `error.type` for the error's kind. No attribute ever holds an owner token or a credential, and
//! metrics and spans never carry a lock's name (a key can be secret, and one time series per lock
//! would be unbounded); only the warnings name the lock they are about.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use crate::config::StoreConfig;

/// What an instrument is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An OpenTelemetry counter (monotonic sum).
    Counter,
    /// An OpenTelemetry histogram.
    Histogram,
    /// A `tracing` span.
    Span,
    /// A `tracing` event at warning level: what every front shows as a warning.
    Warning,
}

impl Kind {
    /// The word the docs use.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Histogram => "histogram",
            Kind::Span => "span",
            Kind::Warning => "warning",
        }
    }
}

/// One thing ddblock reports.
#[derive(Debug, Clone, Copy)]
pub struct Instrument {
    /// Its name, `ddblock.` first.
    pub name: &'static str,
    /// Counter, histogram, span or warning.
    pub kind: Kind,
    /// Its unit (UCUM; `{thing}` for a count), empty for spans and warnings.
    pub unit: &'static str,
    /// The attributes it carries.
    pub attributes: &'static [&'static str],
    /// What it means, one sentence.
    pub meaning: &'static str,
}

/// The bucket boundaries (seconds) every duration histogram asks for: OpenTelemetry's advice for
/// durations in seconds (its HTTP conventions' boundaries), extended to 5 minutes for long waits
/// and holds. The SDKs' defaults (0 to 10,000) are made for milliseconds and would put nearly every
/// wait in their first bucket.
pub const DURATION_BOUNDARIES: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 30.0, 60.0,
    120.0, 300.0,
];

/// Attributes every lock instrument carries: the table (or S3 bucket) and the key layout.
const WHERE: [&str; 2] = ["db.collection.name", "ddblock.key_layout"];

/// Every metric, span and warning ddblock emits.
pub const INSTRUMENTS: &[Instrument] = &[
    Instrument {
        name: "ddblock.lock.acquisitions",
        kind: Kind::Counter,
        unit: "{acquisition}",
        attributes: &[WHERE[0], WHERE[1], "ddblock.lock.outcome", "error.type"],
        meaning: "An acquire ended: `acquired`, `held` (someone else has it; an acquire that \
                  tries once), `timed_out` (a wait ran out), `cancelled` (its caller dropped it), \
                  `unknown` (the answer was lost; see `ddblock.lock.unknown_outcomes`) or `error` \
                  (`error.type`: the error's kind).",
    },
    Instrument {
        name: "ddblock.lock.wait.duration",
        kind: Kind::Histogram,
        unit: "s",
        attributes: &[WHERE[0], WHERE[1], "ddblock.lock.outcome"],
        meaning: "How long an acquire that may wait (`block`, `acquire_within`, `run --wait`) \
                  took, from its call to its outcome; acquires that try once are not counted.",
    },
    Instrument {
        name: "ddblock.lock.hold.duration",
        kind: Kind::Histogram,
        unit: "s",
        attributes: &[WHERE[0], WHERE[1], "ddblock.lock.release_outcome"],
        meaning: "How long a handle held the lock: from its acquire write to its release.",
    },
    Instrument {
        name: "ddblock.lock.releases",
        kind: Kind::Counter,
        unit: "{release}",
        attributes: &[
            WHERE[0],
            WHERE[1],
            "ddblock.lock.release_outcome",
            "error.type",
        ],
        meaning: "A release ended: `released`, `not_held` (no live lock item: it expired, was \
                  force-released, or a resend after a lost answer found its own delete done), \
                  `other_owner` (someone else holds it now) or `error`.",
    },
    Instrument {
        name: "ddblock.lock.acquire_writes",
        kind: Kind::Counter,
        unit: "{write}",
        attributes: &[WHERE[0], WHERE[1], "ddblock.lock.write_outcome"],
        meaning: "One conditional acquire write and its answer: `written`, `refused` (the lock \
                  was held: the condition failed), `unknown` (the answer was lost; it is sent \
                  again) or `error`. Each write costs a write unit, refused or not: this over \
                  `ddblock.lock.acquisitions{acquired}` is what waiting costs per lock taken.",
    },
    Instrument {
        name: "ddblock.lock.lease_lost",
        kind: Kind::Counter,
        unit: "{lease}",
        attributes: &WHERE,
        meaning: "A heartbeat found its lock no longer ours, or could not refresh it in time, \
                  or a release's first send found it gone or another owner's: the body ran, or \
                  runs, without the lock. Alert on any.",
    },
    Instrument {
        name: "ddblock.lock.unknown_outcomes",
        kind: Kind::Counter,
        unit: "{acquisition}",
        attributes: &[WHERE[0], WHERE[1], "ddblock.lock.cleanup"],
        meaning: "An acquire write's answer was lost twice: `ddblock.lock.cleanup` is `clean` \
                  when the clean-up delete left nothing of it, `left` when a write that may have \
                  landed stays until its ttl.",
    },
    Instrument {
        name: "ddblock.once.claims",
        kind: Kind::Counter,
        unit: "{claim}",
        attributes: &["db.collection.name", "ddblock.once.outcome", "error.type"],
        meaning: "A once-only claim ended: `claimed` (this delivery runs the handler), skipped \
                  as the event then stood (`in_progress`: another delivery has it; `done`: it \
                  was handled), or `error`. Many `in_progress` mean duplicate deliveries racing.",
    },
    Instrument {
        name: "ddblock.lock.acquire",
        kind: Kind::Span,
        unit: "",
        attributes: &[WHERE[0], WHERE[1], "ddblock.lock.outcome"],
        meaning: "One acquire, its waiting included; the SDK's request spans are its children.",
    },
    Instrument {
        name: "ddblock.lock.release",
        kind: Kind::Span,
        unit: "",
        attributes: &[WHERE[0], WHERE[1], "ddblock.lock.release_outcome"],
        meaning: "One release: the owner-conditioned delete (or keep-fence update).",
    },
    Instrument {
        name: "ddblock.clock.skew",
        kind: Kind::Warning,
        unit: "",
        attributes: &["table", "margin_secs"],
        meaning: "An answer's `Date` header proves this host's clock further from DynamoDB's \
                  than the clock-skew margin allows (at most once a minute per store).",
    },
    Instrument {
        name: "ddblock.table.describe_denied",
        kind: Kind::Warning,
        unit: "",
        attributes: &["table", "permission"],
        meaning: "The check of which Regions the table spans (one DescribeTable per process and \
                  table, before its first lock operation) was denied: locks go on unchecked; \
                  grant `dynamodb:DescribeTable` ([semantics](semantics.md#multi-region)). Once \
                  per process and table.",
    },
    Instrument {
        name: "ddblock.lock.lease_lost",
        kind: Kind::Warning,
        unit: "",
        attributes: &["lock", "reason"],
        meaning: "The warning beside the counter of the same name, with the reason.",
    },
    Instrument {
        name: "ddblock.lock.cleanup_failed",
        kind: Kind::Warning,
        unit: "",
        attributes: &["lock", "error"],
        meaning: "A cancelled acquire's clean-up, or a dropped guard's release, failed: the lock \
                  stays until its ttl.",
    },
    Instrument {
        name: "ddblock.once.give_back_failed",
        kind: Kind::Warning,
        unit: "",
        attributes: &["event", "error"],
        meaning: "A once-only claim whose work failed could not be given back: the event can be \
                  claimed again only after the claim's expiry.",
    },
    Instrument {
        name: "ddblock.s3.conditional_delete_refused",
        kind: Kind::Warning,
        unit: "",
        attributes: &["bucket"],
        meaning: "The S3 server refuses conditional deletes: releases fall back to a conditional \
                  overwrite.",
    },
];

/// Where a lock lives, as its instruments say it: the table (or bucket) and the key layout.
#[derive(Debug, Clone)]
pub(crate) struct Place {
    collection: String,
    layout: &'static str,
}

impl Place {
    /// The table (or S3 bucket) and key layout of `cfg`.
    pub(crate) fn of(cfg: &StoreConfig) -> Place {
        Place {
            collection: cfg.collection().to_owned(),
            layout: cfg.layout().as_str(),
        }
    }

    /// The table or bucket.
    pub(crate) fn collection(&self) -> &str {
        &self.collection
    }

    /// The key layout's name.
    pub(crate) fn layout(&self) -> &'static str {
        self.layout
    }

    /// The attributes every lock instrument carries.
    pub(crate) fn attributes(&self) -> [(&'static str, &str); 2] {
        [(WHERE[0], &self.collection), (WHERE[1], self.layout)]
    }
}

/// An acquire under way: counted when it ends ([`Acquiring::finish`]), or as `cancelled` when
/// its caller drops it first.
pub(crate) struct Acquiring<'a> {
    at: &'a Place,
    started: std::time::Instant,
    waits: bool,
    done: bool,
}

impl<'a> Acquiring<'a> {
    /// An acquire at `at` begins; `waits`: it may wait (its duration is a wait).
    pub(crate) fn begin(at: &'a Place, waits: bool) -> Acquiring<'a> {
        Acquiring {
            at,
            started: std::time::Instant::now(),
            waits,
            done: false,
        }
    }

    /// It ended with `outcome` (`error` with `error_type`).
    pub(crate) fn finish(mut self, outcome: &'static str, error_type: Option<&'static str>) {
        self.done = true;
        let waited = self.waits.then(|| self.started.elapsed());
        acquisition(self.at, outcome, error_type, waited);
    }
}

impl Drop for Acquiring<'_> {
    fn drop(&mut self) {
        if !self.done {
            let waited = self.waits.then(|| self.started.elapsed());
            acquisition(self.at, "cancelled", None, waited);
        }
    }
}

/// Whether this build records metrics through the OpenTelemetry API (the `otel` feature).
pub const METRICS_COMPILED_IN: bool = cfg!(feature = "otel");

/// One measurement of a metric of [`INSTRUMENTS`], as a [`Listener`] receives it.
#[derive(Debug, Clone, Copy)]
pub struct Measurement<'a> {
    /// The metric's name (`ddblock.lock.acquisitions`, ...).
    pub name: &'static str,
    /// 1 for a counter; seconds for a duration.
    pub value: f64,
    /// Its attributes, as the table lists them.
    pub attributes: &'a [(&'static str, &'a str)],
}

/// Receives every measurement, on whichever thread made it: how the Python and Node fronts hand
/// ddblock's metrics to their own ecosystem's API. It must not block.
pub type Listener = Arc<dyn Fn(&Measurement<'_>) + Send + Sync>;

/// Whether a listener is set: the one check a measurement costs when nobody listens.
static LISTENING: AtomicBool = AtomicBool::new(false);
static LISTENER: RwLock<Option<Listener>> = RwLock::new(None);

/// Sets the process's one listener (`None` removes it); it sees measurements made from then on.
pub fn listen(listener: Option<Listener>) {
    let on = listener.is_some();
    *LISTENER.write().unwrap_or_else(|e| e.into_inner()) = listener;
    LISTENING.store(on, Ordering::Release);
}

/// Whether any measurement has somewhere to go.
fn observed() -> bool {
    cfg!(feature = "otel") || LISTENING.load(Ordering::Acquire)
}

/// Records one measurement of metric `name`.
fn measure(name: &'static str, value: f64, attributes: &[(&'static str, &str)]) {
    #[cfg(feature = "otel")]
    otel::measure(name, value, attributes);
    if LISTENING.load(Ordering::Acquire) {
        let listener = LISTENER.read().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(l) = listener {
            l(&Measurement {
                name,
                value,
                attributes,
            });
        }
    }
}

/// One operation ended: `counter` counts it with `key = outcome` (and `error.type`), and `took`
/// goes into `histogram` when given.
fn ended(
    (counter, histogram): (&'static str, &'static str),
    at: &Place,
    (key, outcome): (&'static str, &'static str),
    error_type: Option<&'static str>,
    took: Option<Duration>,
) {
    if !observed() {
        return;
    }
    let mut attrs = at.attributes().to_vec();
    attrs.push((key, outcome));
    if let Some(d) = took {
        measure(histogram, d.as_secs_f64(), &attrs);
    }
    if let Some(e) = error_type {
        attrs.push(("error.type", e));
    }
    measure(counter, 1.0, &attrs);
}

/// An acquire ended with `outcome` (`error` with `error_type`); `waited` for a waiting acquire.
fn acquisition(
    at: &Place,
    outcome: &'static str,
    error_type: Option<&'static str>,
    waited: Option<Duration>,
) {
    let metrics = ("ddblock.lock.acquisitions", "ddblock.lock.wait.duration");
    let outcome = ("ddblock.lock.outcome", outcome);
    ended(metrics, at, outcome, error_type, waited);
}

/// A release ended with `outcome` (`error` with `error_type`) after holding for `held`.
pub(crate) fn release(
    at: &Place,
    outcome: &'static str,
    error_type: Option<&'static str>,
    held: Option<Duration>,
) {
    let metrics = ("ddblock.lock.releases", "ddblock.lock.hold.duration");
    let outcome = ("ddblock.lock.release_outcome", outcome);
    ended(metrics, at, outcome, error_type, held);
}

/// An acquire write was answered with `outcome` (`written`, `refused`, `unknown`, `error`).
pub(crate) fn acquire_write(at: &Place, outcome: &'static str) {
    if observed() {
        let [table, layout] = at.attributes();
        let attrs = [table, layout, ("ddblock.lock.write_outcome", outcome)];
        measure("ddblock.lock.acquire_writes", 1.0, &attrs);
    }
}

/// A once-only claim ended with `outcome` (`error` with `error_type`).
pub(crate) fn once_claim(
    cfg: &StoreConfig,
    outcome: &'static str,
    error_type: Option<&'static str>,
) {
    if observed() {
        let mut attrs = vec![
            (WHERE[0], cfg.collection()),
            ("ddblock.once.outcome", outcome),
        ];
        if let Some(e) = error_type {
            attrs.push(("error.type", e));
        }
        measure("ddblock.once.claims", 1.0, &attrs);
    }
}

/// A heartbeat, or a release's first send, found the lease lost.
pub(crate) fn lease_lost(at: &Place) {
    if observed() {
        measure("ddblock.lock.lease_lost", 1.0, &at.attributes());
    }
}

/// An acquire's outcome stayed unknown; `clean` when its clean-up left nothing.
pub(crate) fn unknown_outcome(at: &Place, clean: bool) {
    if observed() {
        let cleanup = if clean { "clean" } else { "left" };
        let [table, layout] = at.attributes();
        let attrs = [table, layout, ("ddblock.lock.cleanup", cleanup)];
        measure("ddblock.lock.unknown_outcomes", 1.0, &attrs);
    }
}

#[cfg(feature = "otel")]
mod otel {
    //! The instruments, made once from the global meter provider at their first use: install the
    //! application's provider before the first lock operation.

    use std::collections::HashMap;
    use std::sync::OnceLock;

    use opentelemetry::metrics::{Counter, Histogram};
    use opentelemetry::KeyValue;

    use super::Kind;

    enum Meter {
        Counter(Counter<u64>),
        Histogram(Histogram<f64>),
    }

    /// Every metric of the table, by name.
    fn meters() -> &'static HashMap<&'static str, Meter> {
        static METERS: OnceLock<HashMap<&'static str, Meter>> = OnceLock::new();
        METERS.get_or_init(|| {
            let m = opentelemetry::global::meter("ddblock");
            let meter = |i: &super::Instrument| match i.kind {
                Kind::Counter => Some(Meter::Counter(
                    m.u64_counter(i.name)
                        .with_unit(i.unit)
                        .with_description(i.meaning)
                        .build(),
                )),
                Kind::Histogram => Some(Meter::Histogram(
                    m.f64_histogram(i.name)
                        .with_unit(i.unit)
                        .with_description(i.meaning)
                        .with_boundaries(super::DURATION_BOUNDARIES.to_vec())
                        .build(),
                )),
                Kind::Span | Kind::Warning => None,
            };
            super::INSTRUMENTS
                .iter()
                .filter_map(|i| Some((i.name, meter(i)?)))
                .collect()
        })
    }

    /// Records one measurement of metric `name`.
    pub(super) fn measure(name: &'static str, value: f64, attributes: &[(&'static str, &str)]) {
        let attrs: Vec<KeyValue> = attributes
            .iter()
            .map(|(k, v)| KeyValue::new(*k, v.to_string()))
            .collect();
        match meters().get(name) {
            Some(Meter::Counter(c)) => c.add(value as u64, &attrs),
            Some(Meter::Histogram(h)) => h.record(value, &attrs),
            None => debug_assert!(false, "{name} is not a metric of the table"),
        }
    }
}
