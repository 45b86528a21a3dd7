//! DynamoDB's clock, read from the HTTP `Date` header of its answers: the interceptor that reads
//! it, the warning when a lock request's answer shows this host's clock too far off for the
//! clock-skew margin, and one answer for a measurement ([`crate::Store::clock_sample`]; `doctor`
//! in `ddblock-admin` takes several).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::config::interceptors::{
    BeforeDeserializationInterceptorContextRef, BeforeTransmitInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use aws_sdk_dynamodb::primitives::{DateTime, DateTimeFormat};

use super::Table;
use crate::time::{allowed_offset, Clock, DateAnswer};

/// At most one clock warning per store in this long.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// This host's time as an interval: exact for a clock with fractions, else its whole second.
fn local(clock: &dyn Clock) -> (f64, f64) {
    match clock.now_precise() {
        Some(t) => (t, t),
        None => {
            let s = clock.now() as f64;
            (s, s + 1.0)
        }
    }
}

/// Reads the `Date` of every answer to one request (each try: the last one wins).
#[derive(Debug, Clone)]
pub(super) struct DateReader {
    clock: Arc<dyn Clock>,
    /// When the current try was sent, and what the last answer showed.
    state: Arc<Mutex<(Option<f64>, Option<DateAnswer>)>>,
}

impl DateReader {
    pub(super) fn new(clock: Arc<dyn Clock>) -> DateReader {
        DateReader {
            clock,
            state: Arc::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, (Option<f64>, Option<DateAnswer>)> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What the last answer showed.
    pub(super) fn take(&self) -> Option<DateAnswer> {
        self.state().1.take()
    }
}

impl Intercept for DateReader {
    fn name(&self) -> &'static str {
        "ddblock-date"
    }

    fn read_before_transmit(
        &self,
        _: &BeforeTransmitInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        self.state().0 = Some(local(&*self.clock).0);
        Ok(())
    }

    fn read_after_transmit(
        &self,
        ctx: &BeforeDeserializationInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let received = local(&*self.clock).1;
        let mut state = self.state();
        let date = ctx
            .response()
            .headers()
            .get("date")
            .and_then(|d| DateTime::from_str(d.trim(), DateTimeFormat::HttpDate).ok());
        if let (Some(sent), Some(date)) = (state.0, date) {
            state.1 = Some(DateAnswer {
                sent,
                received,
                date: date.secs(),
            });
        }
        Ok(())
    }
}

/// The clock warnings of one table: when the last one was logged.
#[derive(Debug, Default)]
pub(super) struct ClockWatch {
    warned: Mutex<Option<Instant>>,
}

impl Table {
    /// A reader to add to a lock request ([`Table::saw_clock`] looks at what it read).
    pub(super) fn date_reader(&self) -> DateReader {
        DateReader::new(self.config().clock.clone())
    }

    /// Logs a warning (at most once a minute per store) when a lock request's answer proves this
    /// host's clock further from DynamoDB's than the clock-skew margin allows
    /// ([`allowed_offset`]).
    pub(super) fn saw_clock(&self, reader: &DateReader) {
        let Some(answer) = reader.take() else { return };
        let margin = self.config().clock_skew_margin();
        let allowed = allowed_offset(margin);
        let (low, high) = answer.offset();
        if low <= allowed && high >= -allowed {
            return;
        }
        let mut warned = self
            .inner
            .clock
            .warned
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if warned.is_some_and(|w| w.elapsed() < WARN_EVERY) {
            return;
        }
        *warned = Some(Instant::now());
        tracing::warn!(
            name: "ddblock.clock.skew",
            table = %self.config().table(),
            margin_secs = margin.as_secs(),
            "this host's clock is between {low:+.1} and {high:+.1} s off DynamoDB's, more than the \
             ±{allowed:.1} s a clock-skew margin of {} s allows: a contender this far ahead can take a lock its holder still has, and \
             this host's locks can be taken early. Sync the clock (NTP), or set the same larger \
             margin on every front; `doctor` measures it",
            margin.as_secs()
        );
    }

    /// One DescribeTable request and what its answer's `Date` header shows (an error answer, a
    /// missing table's, carries one too); `None` when no answer came or it had no `Date`.
    pub(crate) async fn clock_sample(&self) -> Option<DateAnswer> {
        let reader = self.date_reader();
        let _ = self
            .client()
            .await
            .ok()?
            .describe_table()
            .table_name(self.config().table())
            .customize()
            .interceptor(reader.clone())
            .send()
            .await;
        reader.take()
    }
}
