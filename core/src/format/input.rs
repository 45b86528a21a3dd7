//! Rules for inputs that every front converts from its own types: ttls, lock ttls, increment
//! amounts, timeouts. Written once here so the same bad input gets the same error everywhere.

use std::fmt;
use std::time::Duration;

use crate::error::{Error, Result};

/// Laravel's lock ttl when none (0) is given: one day.
pub const DEFAULT_LOCK_TTL_SECS: i64 = 86_400;

/// A ttl given as a number of seconds (Python `float`, a JS `number`): whole seconds only.
pub fn ttl_from_f64(ttl: f64) -> Result<i64> {
    if !ttl.is_finite() || ttl.fract() != 0.0 || ttl.abs() > 1e15 {
        return Err(Error::InvalidTtl {
            ttl: if ttl.is_finite() { ttl as i64 } else { 0 },
            reason: format!("{ttl} is not a whole number of seconds; give an integer ttl"),
        });
    }
    Ok(ttl as i64)
}

/// A ttl given as text (a command-line argument): a number of whole seconds, by
/// [`ttl_from_f64`]'s rule; anything else is `InvalidTtl` naming what was given.
pub fn ttl_from_str(text: &str) -> Result<i64> {
    let t = text.trim();
    if let Ok(i) = t.parse::<i64>() {
        return Ok(i);
    }
    match t.parse::<f64>() {
        Ok(f) => ttl_from_f64(f),
        Err(_) => Err(Error::InvalidTtl {
            ttl: 0,
            reason: format!("{text:?} is not a number of seconds; give an integer ttl"),
        }),
    }
}

/// Laravel's lock ttl: 0 means one day; negative is refused before any request (Laravel would
/// write an already-expired lock that anyone can take over at once).
pub fn lock_ttl(ttl_secs: i64) -> Result<i64> {
    match ttl_secs {
        0 => Ok(DEFAULT_LOCK_TTL_SECS),
        t if t < 0 => Err(Error::InvalidTtl {
            ttl: t,
            reason: "a lock ttl must be positive seconds (0 means Laravel's default of 86400)"
                .into(),
        }),
        t => Ok(t),
    }
}

/// A wait given in seconds or milliseconds as a float: finite and not negative.
pub fn timeout_from_secs_f64(what: &str, secs: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(secs).map_err(|_| {
        Error::Config(format!(
            "{what} must be a finite number of seconds, 0 or more; got {secs}"
        ))
    })
}

/// The amount of `increment`/`decrement`: Laravel sends `(string) $value` as a DynamoDB number,
/// so floats work too (`increment('n', 1.5)` adds 1.5; the returned value is `(int)` cast).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Amount {
    /// A whole amount.
    Int(i64),
    /// A fractional amount (finite).
    Float(f64),
}

impl Amount {
    /// An amount from a float (a JS number, a Python float): whole values become [`Amount::Int`];
    /// NaN and infinities are refused (DynamoDB numbers are finite).
    pub fn from_f64(v: f64) -> Result<Amount> {
        if !v.is_finite() {
            return Err(Error::Config(format!(
                "cannot increment by {v}: the amount must be a finite number"
            )));
        }
        if v.fract() == 0.0 && v.abs() < 9.0e15 {
            Ok(Amount::Int(v as i64))
        } else {
            Ok(Amount::Float(v))
        }
    }

    /// The amount, checked: NaN and infinities are refused (DynamoDB numbers are finite).
    pub fn checked(self) -> Result<Amount> {
        match self {
            Amount::Float(f) => Amount::from_f64(f),
            int => Ok(int),
        }
    }

    /// The DynamoDB number text (PHP's `(string)` of the amount).
    pub fn number_text(self) -> String {
        match self {
            Amount::Int(i) => i.to_string(),
            Amount::Float(f) => crate::format::codec::numeric::php_float_to_string(f),
        }
    }
}

impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.number_text())
    }
}

impl From<i64> for Amount {
    fn from(v: i64) -> Self {
        Amount::Int(v)
    }
}

impl From<i32> for Amount {
    fn from(v: i32) -> Self {
        Amount::Int(v.into())
    }
}

/// Unchecked: `increment` refuses a non-finite float before any request.
impl From<f64> for Amount {
    fn from(v: f64) -> Self {
        Amount::Float(v)
    }
}

impl From<u32> for Amount {
    fn from(v: u32) -> Self {
        Amount::Int(v.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn ttls_are_whole_seconds() {
        assert_eq!(ttl_from_f64(30.0).unwrap(), 30);
        assert_eq!(ttl_from_f64(-5.0).unwrap(), -5);
        for bad in [1.5, f64::NAN, f64::INFINITY, 1e16] {
            assert_eq!(ttl_from_f64(bad).unwrap_err().kind(), ErrorKind::InvalidTtl);
        }
        assert_eq!(ttl_from_str(" 30 ").unwrap(), 30);
        assert_eq!(ttl_from_str("-1").unwrap(), -1);
        for bad in ["1.5", "soon", "", "1e99"] {
            assert_eq!(
                ttl_from_str(bad).unwrap_err().kind(),
                ErrorKind::InvalidTtl,
                "{bad}"
            );
        }
        assert_eq!(lock_ttl(0).unwrap(), 86_400);
        assert_eq!(lock_ttl(-1).unwrap_err().kind(), ErrorKind::InvalidTtl);
    }

    #[test]
    fn amounts() {
        assert_eq!(Amount::from_f64(2.0).unwrap(), Amount::Int(2));
        assert_eq!(Amount::from_f64(1.5).unwrap().number_text(), "1.5");
        assert!(Amount::from_f64(f64::NAN).is_err());
        assert_eq!(Amount::from(-3).number_text(), "-3");
    }
}
