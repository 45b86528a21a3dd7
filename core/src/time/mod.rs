//! Time as Laravel sees it (whole Unix seconds), the clock trait, calendar arithmetic, and what
//! one answer's `Date` header shows of this host's clock against the server's.
//! A leaf: imports nothing of the crate.

use std::fmt;
use std::time::Duration;

/// A source of the current Unix time in whole seconds (Laravel's `Carbon::now()->getTimestamp()`).
pub trait Clock: Send + Sync + fmt::Debug {
    /// Seconds since the Unix epoch.
    fn now(&self) -> i64;

    /// Seconds since the Unix epoch with their fraction, when this clock has one: what the clock
    /// offset measurement ([`DateAnswer`]) reads. `None` (the default): whole seconds only, and
    /// the measurement widens its interval by a second.
    fn now_precise(&self) -> Option<f64> {
        None
    }

    /// Milliseconds since the Unix epoch: the precise time when this clock has it, else the whole
    /// second. What a waiter stamps on its acquisition (`ddblock_since`) to order waiters fairly.
    fn now_millis(&self) -> i64 {
        match self.now_precise() {
            Some(s) if s.is_finite() => (s * 1000.0) as i64,
            _ => self.now().saturating_mul(1000),
        }
    }
}

/// One answer's `Date` header (whole seconds, RFC 9110) with this host's times around it: the
/// server read its clock at a moment between `sent` and `received` (local Unix seconds), and that
/// reading lies in `[date, date + 1)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DateAnswer {
    /// When the request was sent, by this host's clock (its whole second for a clock without
    /// fractions).
    pub sent: f64,
    /// When the answer came back, by this host's clock (the whole second + 1 without fractions).
    pub received: f64,
    /// The answer's `Date` header, Unix seconds.
    pub date: i64,
}

impl DateAnswer {
    /// The interval that holds this host's offset to the server's clock (`local - server`,
    /// seconds; positive: this host runs ahead): `[sent - date - 1, received - date]`.
    pub fn offset(&self) -> (f64, f64) {
        let d = self.date as f64;
        (self.sent - d - 1.0, self.received - d)
    }
}

/// How far one host's clock may be from DynamoDB's for a clock-skew margin: `(margin + 1) / 2`
/// seconds.
///
/// A holder that watches its lease is safe from a contender whose clock runs up to `margin + 1`
/// seconds ahead of its own: the holder writes `expires_at = floor(t) + ttl` and ends its lease
/// locally `ttl - 1` seconds after sending (`lock::lease_deadline`), and the contender takes over
/// only at its `now > expires_at + margin`, at least `margin + 1` seconds past `floor(t) + ttl`.
/// If every host is within half of that of DynamoDB's clock, any two are within it of each other.
pub fn allowed_offset(margin: Duration) -> f64 {
    (margin.as_secs_f64() + 1.0) / 2.0
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0)
    }

    fn now_precise(&self) -> Option<f64> {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()
            .map(|d| d.as_secs_f64())
    }
}

/// `ts` as `2026-11-23 12:00:00 UTC`, for messages (an epoch number says nothing to a reader).
pub fn utc(ts: i64) -> String {
    let (y, m, d) = civil_from_days(ts.div_euclid(86_400));
    let s = ts.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        s / 3600,
        s % 3600 / 60,
        s % 60
    )
}

/// A wait for people: `850ms`, `5.0s`, then whole units as [`duration`] (`4m10s`).
pub fn human(d: Duration) -> String {
    match d.as_millis() {
        ms @ 0..=999 => format!("{ms}ms"),
        1_000..=59_999 => format!("{:.1}s", d.as_secs_f64()),
        _ => duration(d.as_secs().min(i64::MAX as u64) as i64),
    }
}

/// Whole seconds in their two largest units: `25s`, `4m10s`, `23h59m`, `2d3h`.
pub fn duration(secs: i64) -> String {
    let s = secs.max(0);
    let (d, h, m, sec) = (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60);
    match () {
        _ if d > 0 => format!("{d}d{h}h"),
        _ if h > 0 => format!("{h}h{m}m"),
        _ if m > 0 => format!("{m}m{sec}s"),
        _ => format!("{sec}s"),
    }
}

/// `in 25s`, `5m0s ago`, or `now`: how far `secs` (a difference) is from now.
pub fn relative(secs: i64) -> String {
    match secs {
        0 => "now".into(),
        s if s > 0 => format!("in {}", duration(s)),
        s => format!("{} ago", duration(s.saturating_neg())),
    }
}

/// `ts` plus `years` calendar years in UTC (Carbon's `addYears`; Feb 29 overflows to Mar 1 as in PHP).
pub fn add_years(ts: i64, years: i64) -> i64 {
    let days = ts.div_euclid(86_400);
    let secs = ts.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    days_from_civil(y + years, m, 1) * 86_400 + (d as i64 - 1) * 86_400 + secs
}

// Howard Hinnant's proleptic Gregorian conversions.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_years_matches_calendar() {
        // 2026-11-22T01:00:00Z + 5 years = 2031-11-22T01:00:00Z
        assert_eq!(add_years(1_795_309_200, 5), 1_953_075_600);
        // 2024-02-29T00:00:00Z + 1 year = 2025-03-01 (PHP overflow)
        assert_eq!(add_years(1_709_164_800, 1), 1_740_787_200);
    }

    #[test]
    fn utc_and_human() {
        assert_eq!(utc(1_795_309_200), "2026-11-22 01:00:00 UTC");
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(human(Duration::from_millis(850)), "850ms");
        assert_eq!(human(Duration::from_millis(5_049)), "5.0s");
        assert_eq!(human(Duration::from_secs(125)), "2m5s");
        assert_eq!(duration(12_000), "3h20m");
        assert_eq!(duration(2 * 86_400 + 3 * 3600), "2d3h");
        assert_eq!(relative(25), "in 25s");
        assert_eq!(relative(-300), "5m0s ago");
        assert_eq!(relative(0), "now");
    }
}
