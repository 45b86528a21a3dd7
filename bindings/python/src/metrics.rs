//! The core's metrics in Python: the instrument table (`instruments()`), from which
//! `ddblock.otel` makes its OpenTelemetry instruments, and `_listen`, which hands every
//! measurement to a Python callable. Nothing calls into Python until a listener is set.

use std::sync::Arc;

use ddblock::telemetry::{self, Kind, INSTRUMENTS};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// One metric: its name, kind (`counter`, `histogram`), unit, meaning and, for a histogram, the
/// bucket boundaries it asks for.
type Metric = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    Vec<f64>,
);

/// Every metric of the core's table.
#[pyfunction]
pub fn instruments() -> Vec<Metric> {
    INSTRUMENTS
        .iter()
        .filter_map(|i| {
            let boundaries = match i.kind {
                Kind::Counter => vec![],
                Kind::Histogram => telemetry::DURATION_BOUNDARIES.to_vec(),
                Kind::Span | Kind::Warning => return None,
            };
            Some((i.name, i.kind.as_str(), i.unit, i.meaning, boundaries))
        })
        .collect()
}

/// Calls `listener(name, value, attributes)` for every measurement from now on (`None`: stop).
/// It runs on the core's threads holding the GIL: it must be quick and must not raise (what it
/// raises is reported as unraisable).
#[pyfunction]
#[pyo3(signature = (listener))]
pub fn _listen(listener: Option<Py<PyAny>>) {
    let Some(listener) = listener else {
        telemetry::listen(None);
        return;
    };
    telemetry::listen(Some(Arc::new(move |m: &telemetry::Measurement<'_>| {
        // Not while the interpreter shuts down (a measurement then is dropped).
        Python::try_attach(|py| {
            let sent = PyDict::new(py);
            let call = m
                .attributes
                .iter()
                .try_for_each(|(k, v)| sent.set_item(k, v))
                .and_then(|()| listener.call1(py, (m.name, m.value, sent)));
            if let Err(e) = call {
                e.write_unraisable(py, Some(listener.bind(py)));
            }
        });
    })));
}
