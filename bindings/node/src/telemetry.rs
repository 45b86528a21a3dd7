//! The core's metrics for `instrument()` (lib.js): the table of what ddblock reports
//! ([`instruments`], so JavaScript restates no name, unit or meaning) and a listener that hands
//! every measurement to a JavaScript function ([`listen_metrics`]), which records it into the
//! OpenTelemetry instrument of that name. Without a listener a measurement costs the core one
//! atomic load and calls no JavaScript.
// Only JavaScript calls in here (through napi): nothing to use in the crate's unit-test build.
#![cfg_attr(test, allow(dead_code))]

use std::collections::HashMap;
use std::sync::Arc;

use ddblock::telemetry::{self, Kind, Measurement, INSTRUMENTS};
use napi::bindgen_prelude::{FnArgs, Function};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use napi_derive::napi;

/// One thing ddblock reports (a row of the core's `telemetry::INSTRUMENTS`).
#[napi(object)]
pub struct InstrumentInfo {
    /// Its name, `ddblock.` first.
    pub name: String,
    /// `counter`, `histogram`, `span` or `warning`.
    #[napi(ts_type = "'counter' | 'histogram' | 'span' | 'warning'")]
    pub kind: String,
    /// Its unit (UCUM), empty for spans and warnings.
    pub unit: String,
    /// What it means, one sentence.
    pub meaning: String,
    /// The attributes it carries.
    pub attributes: Vec<String>,
    /// The bucket boundaries (seconds) a histogram asks for; empty for the others.
    pub boundaries: Vec<f64>,
}

/// Every metric, span and warning ddblock emits, from the core's table.
#[napi]
pub fn instruments() -> Vec<InstrumentInfo> {
    INSTRUMENTS
        .iter()
        .map(|i| InstrumentInfo {
            name: i.name.to_owned(),
            kind: i.kind.as_str().to_owned(),
            unit: i.unit.to_owned(),
            meaning: i.meaning.to_owned(),
            attributes: i.attributes.iter().map(|a| (*a).to_owned()).collect(),
            boundaries: match i.kind {
                Kind::Histogram => telemetry::DURATION_BOUNDARIES.to_vec(),
                Kind::Counter | Kind::Span | Kind::Warning => vec![],
            },
        })
        .collect()
}

/// A measurement as JavaScript receives it: the metric's name, its value, its attributes.
type Args = FnArgs<(String, f64, HashMap<String, String>)>;

/// The JavaScript recorder, called on the JavaScript thread; weak, so it never keeps a process
/// alive.
type Recorder = ThreadsafeFunction<Args, (), Args, Status, false, true>;

/// Sets (or, with `null`, removes) the process's one metrics listener: `recorder(name, value,
/// attributes)` for every measurement from then on (value 1 for a count, seconds for a duration).
/// A later call replaces the earlier recorder, from whichever thread of JavaScript it comes.
#[napi(
    ts_args_type = "recorder: ((name: string, value: number, attributes: Record<string, string>) => void) | null"
)]
pub fn listen_metrics(recorder: Option<Function<'_, Args, ()>>) -> napi::Result<()> {
    let Some(recorder) = recorder else {
        telemetry::listen(None);
        return Ok(());
    };
    let tsfn: Recorder = recorder
        .build_threadsafe_function::<Args>()
        .callee_handled::<false>()
        .weak::<true>()
        .build()?;
    telemetry::listen(Some(Arc::new(move |m: &Measurement<'_>| {
        let attributes = m
            .attributes
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        // Non-blocking: a measurement made on a tokio worker never waits for the event loop (the
        // queue is unbounded; a closing environment drops it).
        let _ = tsfn.call(
            (m.name.to_owned(), m.value, attributes).into(),
            ThreadsafeFunctionCallMode::NonBlocking,
        );
    })));
    Ok(())
}
