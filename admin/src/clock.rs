//! This host's clock against DynamoDB's, measured from the HTTP `Date` header of its answers
//! (`doctor`'s clock check).
//!
//! Laravel's takeover rule compares clocks: a lock expires at `floor(now) + ttl` by its holder's
//! clock and is taken over once `expires_at < now - margin` by a contender's. DynamoDB stamps
//! every answer with its own time in whole seconds (RFC 9110 `Date`), so each answer bounds this
//! host's offset: the server read its clock at a moment between our send (`t0`) and our receipt
//! (`t1`), and that reading `s` lies in `[D, D + 1)` for a header of `D`. So `offset = local -
//! server` lies in `[t0 - D - 1, t1 - D]`, an interval a little over a second wide; several
//! answers at different points of a second narrow it (their intersection).

use std::fmt;
use std::time::Duration;

use ddblock::time::DateAnswer;
use ddblock::Store;

/// Time between the clock measurement's requests: five of them fall at different points of a
/// second, which narrows what their whole-second `Date` headers show.
pub const CLOCK_SPACING: Duration = Duration::from_millis(230);

/// An interval that holds this host's clock offset to the server's (`local - server`, seconds;
/// positive: this host runs ahead).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClockOffset {
    /// The smallest offset consistent with the answers.
    pub low: f64,
    /// The largest offset consistent with the answers.
    pub high: f64,
    /// How many answers were intersected.
    pub samples: u32,
}

/// Whether a [`ClockOffset`] is within an allowance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OffsetVerdict {
    /// The whole interval is within the allowance.
    Within,
    /// The interval is wholly beyond the allowance: the clocks are proven to disagree by more.
    Beyond,
    /// The interval straddles the allowance: more answers would tell.
    Undecided,
}

impl ClockOffset {
    /// What one answer shows: sent at local time `t0`, received at `t1` (seconds since the epoch;
    /// for a clock with whole seconds only, `t0` = its reading and `t1` = its reading + 1), with a
    /// `Date` header of `date` (whole seconds).
    pub fn from_answer(t0: f64, t1: f64, date: i64) -> ClockOffset {
        ClockOffset::from(DateAnswer {
            sent: t0,
            received: t1,
            date,
        })
    }

    /// The offset both intervals allow, or `None` when they exclude each other (a clock that
    /// jumped between the answers).
    pub fn intersect(self, other: ClockOffset) -> Option<ClockOffset> {
        let low = self.low.max(other.low);
        let high = self.high.min(other.high);
        (low <= high).then_some(ClockOffset {
            low,
            high,
            samples: self.samples + other.samples,
        })
    }

    /// The middle of the interval: the best single guess.
    pub fn estimate(&self) -> f64 {
        (self.low + self.high) / 2.0
    }

    /// The smallest whole-second clock-skew margin whose allowance ([`ddblock::time::allowed_offset`]) covers
    /// the whole interval: `ceil(2 * max(|low|, |high|) - 1)`, at least 0.
    pub fn margin_needed(&self) -> u64 {
        let worst = self.low.abs().max(self.high.abs());
        (2.0 * worst - 1.0 - 1e-9).ceil().max(0.0) as u64
    }

    /// Where the interval lies against `± allowed` seconds.
    pub fn verdict(&self, allowed: f64) -> OffsetVerdict {
        if self.low > allowed || self.high < -allowed {
            OffsetVerdict::Beyond
        } else if self.low >= -allowed && self.high <= allowed {
            OffsetVerdict::Within
        } else {
            OffsetVerdict::Undecided
        }
    }
}

impl From<DateAnswer> for ClockOffset {
    fn from(a: DateAnswer) -> ClockOffset {
        let (low, high) = a.offset();
        ClockOffset {
            low,
            high,
            samples: 1,
        }
    }
}

impl fmt::Display for ClockOffset {
    /// `0.2 s ahead of the server's (between -0.3 and +0.7 s, 3 answers)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Rounded to tenths first, so that -0.04 prints as +0.0, not -0.0.
        let tenths = |x: f64| {
            let r = (x * 10.0).round() / 10.0;
            if r == 0.0 {
                0.0
            } else {
                r
            }
        };
        let e = tenths(self.estimate());
        let side = if e >= 0.0 { "ahead of" } else { "behind" };
        write!(
            f,
            "{:.1} s {side} the server's (between {:+.1} and {:+.1} s, {} answer{})",
            e.abs(),
            tenths(self.low),
            tenths(self.high),
            self.samples,
            if self.samples == 1 { "" } else { "s" }
        )
    }
}

/// What the clock measurement found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ClockReading {
    /// The answers bound this host's offset to the server's clock.
    Measured(ClockOffset),
    /// No answer carried a `Date` header this client could read.
    NoDate,
    /// The answers exclude each other: a clock moved while measuring.
    Inconsistent,
}

impl ClockReading {
    /// What answers show together: the intersection of their intervals, [`ClockReading::Inconsistent`]
    /// when two exclude each other, [`ClockReading::NoDate`] without any.
    pub fn of(answers: impl IntoIterator<Item = ClockOffset>) -> ClockReading {
        let mut found: Option<ClockOffset> = None;
        for seen in answers {
            found = match found {
                None => Some(seen),
                Some(f) => match f.intersect(seen) {
                    Some(both) => Some(both),
                    None => return ClockReading::Inconsistent,
                },
            };
        }
        found.map_or(ClockReading::NoDate, ClockReading::Measured)
    }

    /// Why nothing was measured (`no Date header`, `the answers disagree`), `None` when measured:
    /// the `unmeasured` field of every front's doctor report.
    pub fn unmeasured(&self) -> Option<&'static str> {
        match self {
            ClockReading::Measured(_) => None,
            ClockReading::NoDate => Some("no Date header"),
            ClockReading::Inconsistent => Some("the answers disagree"),
        }
    }
}

/// Measures this host's clock offset to the server's: `answers` DescribeTable requests
/// [`CLOCK_SPACING`] apart, so that their sends fall at different points of a second, and the
/// intersection of what their `Date` headers show.
pub(crate) async fn measure(store: &Store, answers: u32) -> ClockReading {
    let mut seen = Vec::new();
    for i in 0..answers {
        if i > 0 {
            tokio::time::sleep(CLOCK_SPACING).await;
        }
        seen.extend(store.clock_sample().await.map(ClockOffset::from));
    }
    ClockReading::of(seen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ddblock::time::allowed_offset;

    #[test]
    fn one_answer_bounds_the_offset_within_a_second_and_the_round_trip() {
        // Sent at 100.3, received at 100.4 local; the server said 100: in sync, or up to 0.4 s
        // ahead, or up to 0.7 s behind.
        let o = ClockOffset::from_answer(100.3, 100.4, 100);
        assert!((o.low - -0.7).abs() < 1e-9 && (o.high - 0.4).abs() < 1e-9);
        assert_eq!(o.verdict(0.5), OffsetVerdict::Undecided);
        assert_eq!(o.verdict(1.5), OffsetVerdict::Within);
        // 5 s ahead: proven beyond any allowance below 4.
        let ahead = ClockOffset::from_answer(105.2, 105.4, 100);
        assert_eq!(ahead.verdict(1.5), OffsetVerdict::Beyond);
        assert_eq!(
            ahead.to_string(),
            "4.8 s ahead of the server's (between +4.2 and +5.4 s, 1 answer)"
        );
        let behind = ClockOffset::from_answer(95.3, 95.4, 100);
        assert_eq!(behind.verdict(0.5), OffsetVerdict::Beyond);
        assert!(behind.to_string().contains("behind the server's"));
    }

    #[test]
    fn answers_at_different_points_of_a_second_narrow_the_interval() {
        // A host 0.2 s ahead; answers sent at 0, 0.25, 0.5, 0.75 into the server's second, each
        // taking 20 ms.
        let mut o: Option<ClockOffset> = None;
        for i in 0..4 {
            let server = 1000.0 + f64::from(i) * 1.25 + 0.01;
            let t0 = server + 0.2 - 0.01;
            let a = ClockOffset::from_answer(t0, t0 + 0.02, server.floor() as i64);
            o = Some(match o {
                None => a,
                Some(o) => o.intersect(a).expect("consistent"),
            });
        }
        let o = o.unwrap();
        assert!(o.low <= 0.2 && 0.2 <= o.high, "{o}");
        assert!(o.high - o.low < 0.35, "narrowed: {o}");
        assert_eq!(o.samples, 4);
        assert_eq!(o.verdict(0.5), OffsetVerdict::Within);
        // A clock that jumped: the answers exclude each other.
        let a = ClockOffset::from_answer(100.1, 100.2, 100);
        let b = ClockOffset::from_answer(110.1, 110.2, 100);
        assert_eq!(a.intersect(b), None);
    }

    #[test]
    fn the_allowance_is_half_of_margin_plus_one() {
        assert_eq!(allowed_offset(Duration::ZERO), 0.5);
        assert_eq!(allowed_offset(Duration::from_secs(2)), 1.5);
        let ahead = ClockOffset::from_answer(105.2, 105.4, 100); // up to 5.4 s ahead
        assert_eq!(ahead.margin_needed(), 10);
        assert!(allowed_offset(Duration::from_secs(10)) >= ahead.high);
        // [-0.5, +0.5]: within the default margin's allowance.
        assert_eq!(
            ClockOffset::from_answer(100.5, 100.5, 100).margin_needed(),
            0
        );
        // [-0.9, +0.2]: could be 0.9 s behind, which needs a margin of 1.
        assert_eq!(
            ClockOffset::from_answer(100.1, 100.2, 100).margin_needed(),
            1
        );
    }
}
