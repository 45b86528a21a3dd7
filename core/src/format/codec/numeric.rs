//! PHP's numeric-string rules and float text forms, as Laravel's DynamoDB
//! store relies on them (PHP 8 semantics, checked against `php` 8.2 by
//! `compat-tests/conformance/php-codec.json`).

use super::CodecError;

/// PHP's whitespace for numeric strings: `" \t\n\r\v\f"`
/// (`ZEND_STRTOL`/`_is_numeric_string_ex` in Zend/zend_operators.c).
fn is_php_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// The whitespace `FILTER_VALIDATE_INT` trims: `" \t\r\v\n"`. Unlike
/// `is_numeric`, it does NOT include form feed `\f` (ext/filter's
/// `PHP_FILTER_TRIM_DEFAULT`), so `"\f12"` is numeric but not a filter int.
fn is_filter_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | 0x0b | b'\n')
}

/// Finds the numeric part of `s` after leading PHP whitespace, returning
/// `(start, end)` byte offsets, or `None` when there is no number.
///
/// Grammar (PHP 8 `_is_numeric_string_ex`, decimal only):
///
/// ```text
/// WS*  [+-]?  ( DIGIT+ ( "." DIGIT* )? | "." DIGIT+ )  ( [eE] [+-]? DIGIT+ )?
/// ```
///
/// An exponent marker not followed by digits is not part of the number
/// (`"1e"` has numeric prefix `"1"`). No hex (`0x1A`), binary, octal,
/// underscores (`1_000`), `INF`/`NAN` words or non-ASCII digits.
fn numeric_prefix(s: &[u8]) -> Option<(usize, usize)> {
    let mut i = s.iter().take_while(|&&b| is_php_space(b)).count();
    let start = i;
    if matches!(s.get(i), Some(b'+' | b'-')) {
        i += 1;
    }
    let int_digits = count_digits(s, i);
    i += int_digits;
    let mut frac_digits = 0;
    if s.get(i) == Some(&b'.') {
        frac_digits = count_digits(s, i + 1);
        if int_digits > 0 || frac_digits > 0 {
            i += 1 + frac_digits;
        }
    }
    if int_digits == 0 && frac_digits == 0 {
        return None;
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(s.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let exp_digits = count_digits(s, j);
        if exp_digits > 0 {
            i = j + exp_digits;
        }
    }
    Some((start, i))
}

fn count_digits(s: &[u8], from: usize) -> usize {
    s.get(from..)
        .unwrap_or_default()
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count()
}

/// PHP 8's `is_numeric()` for a string: optional leading whitespace
/// (`" \t\n\r\v\f"`), an optional sign, decimal digits with an optional `.`
/// (`"5."` and `".5"` count, `"."` does not), an optional exponent, then
/// optional trailing whitespace (allowed since PHP 8.0, "Saner numeric
/// strings" RFC). Anything else (hex, `1_000`, `INF`, `"12abc"`, a NUL
/// byte, empty or all-space strings) is not numeric.
pub fn is_numeric(s: &[u8]) -> bool {
    match numeric_prefix(s) {
        Some((_, end)) => s
            .get(end..)
            .unwrap_or_default()
            .iter()
            .all(|&b| is_php_space(b)),
        None => false,
    }
}

/// PHP's `filter_var($s, FILTER_VALIDATE_INT)` with no options: `Some(n)`
/// where PHP returns an int, `None` where it returns `false`.
///
/// Grammar (ext/filter `php_filter_int`/`php_filter_parse_int`):
///
/// ```text
/// TRIM* [+-]? ( "0" | [1-9] DIGIT* ) TRIM*     TRIM = " \t\r\v\n" (no \f)
/// ```
///
/// The value must fit in i64 (`PHP_INT_MIN` itself is accepted). Leading
/// zeros are rejected (`"007"`, `"00"`), but `"-0"` and `"+0"` give 0. No
/// decimal point or exponent (`"1e5"`, `"1.0"` fail).
///
/// Laravel then returns `(int)$s`, which for every string this accepts is
/// the same number, so callers can use the returned value directly.
pub fn filter_validate_int(s: &[u8]) -> Option<i64> {
    let start = s.iter().take_while(|&&b| is_filter_space(b)).count();
    let rest = s.get(start..).unwrap_or_default();
    let trailing = rest
        .iter()
        .rev()
        .take_while(|&&b| is_filter_space(b))
        .count();
    let body = rest.get(..rest.len() - trailing).unwrap_or_default();
    let (negative, digits) = match body.split_first() {
        Some((b'-', d)) => (true, d),
        Some((b'+', d)) => (false, d),
        _ => (false, body),
    };
    match digits {
        [b'0'] => return Some(0),
        [b'1'..=b'9', ..] => {}
        _ => return None,
    }
    let mut value: i64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        let d = i64::from(b - b'0');
        // Accumulate towards the sign so PHP_INT_MIN does not overflow.
        value = value.checked_mul(10)?;
        value = if negative {
            value.checked_sub(d)?
        } else {
            value.checked_add(d)?
        };
    }
    Some(value)
}

/// PHP's `(float)$s` for any string: the numeric prefix after leading
/// whitespace (see [`is_numeric`]) converted with correct rounding (PHP
/// uses `zend_strtod`, a correctly rounded strtod), or `0.0` when there is
/// no numeric prefix (`(float)"abc"`, `(float)"0x1A"` are 0, `(float)"1e"`
/// is 1, `(float)"12abc"` is 12). Overflow gives ±INF, underflow ±0.
pub fn php_string_to_float(s: &[u8]) -> f64 {
    let Some((start, end)) = numeric_prefix(s) else {
        return 0.0;
    };
    s.get(start..end)
        .and_then(|t| std::str::from_utf8(t).ok())
        .and_then(|t| t.parse::<f64>().ok())
        .unwrap_or(0.0)
}

/// PHP's `(float)$s` restricted to numeric strings: `Some(value)` when
/// [`is_numeric`] holds, else `None`. This is the `(float)$value` branch of
/// Laravel's `DynamoDbStore::unserialize()`.
pub fn parse_numeric_float(s: &[u8]) -> Option<f64> {
    is_numeric(s).then(|| php_string_to_float(s))
}

/// Checks that `text` (an `is_numeric()` string Laravel would send as
/// `N`) is a number DynamoDB accepts: no surrounding whitespace, at most
/// 38 significant digits (leading and trailing zeros do not count), and a
/// magnitude from 1E-130 to below 1E+126 (or zero). DynamoDB rejects
/// anything else with a ValidationException, so Laravel's own `put()` of
/// such a value fails too; the error says what to do instead.
pub fn check_dynamodb_number(text: &str) -> Result<(), CodecError> {
    let b = text.as_bytes();
    let advice = "store it in a non-numeric form instead (e.g. inside an array, which Laravel \
                  writes as a serialized S attribute)";
    if b.first().is_some_and(|&c| is_php_space(c)) || b.last().is_some_and(|&c| is_php_space(c)) {
        return Err(CodecError::new(format!(
            "numeric string {text:?} has leading or trailing whitespace: PHP 8's is_numeric() \
             accepts it, so Laravel sends it untrimmed as a DynamoDB N attribute, which DynamoDB \
             rejects; trim it, or {advice}"
        )));
    }
    let Some((0, end)) = numeric_prefix(b) else {
        return Err(CodecError::new(format!("{text:?} is not a number")));
    };
    if end != b.len() {
        return Err(CodecError::new(format!("{text:?} is not a number")));
    }
    let body = b.strip_prefix(b"-").or(b.strip_prefix(b"+")).unwrap_or(b);
    let (mantissa, exp) = match body.iter().position(|&c| c == b'e' || c == b'E') {
        Some(i) => body.split_at(i),
        None => (body, &b""[..]),
    };
    let int_len = mantissa.iter().take_while(|c| c.is_ascii_digit()).count();
    let digits: Vec<u8> = mantissa
        .iter()
        .copied()
        .filter(u8::is_ascii_digit)
        .collect();
    let Some(lead) = digits.iter().position(|&d| d != b'0') else {
        return Ok(()); // zero
    };
    let trail = digits.iter().rev().take_while(|&&d| d == b'0').count();
    let significant = digits.len() - lead - trail;
    // Exponent text is "[eE][+-]?DIGITS"; saturate absurd exponents.
    let exp_text = exp.get(1..).unwrap_or_default();
    let (exp_neg, exp_digits) = match exp_text.split_first() {
        Some((b'-', d)) => (true, d),
        Some((b'+', d)) => (false, d),
        _ => (false, exp_text),
    };
    let exp_abs = exp_digits.iter().fold(0i64, |acc, &d| {
        acc.saturating_mul(10)
            .saturating_add(i64::from(d - b'0'))
            .min(1 << 40)
    });
    let exp_val = if exp_neg { -exp_abs } else { exp_abs };
    // Power of ten of the first significant digit.
    let magnitude = int_len as i64 - 1 - lead as i64 + exp_val;
    if significant > 38 {
        return Err(CodecError::new(format!(
            "number {text:?} has {significant} significant digits, but DynamoDB numbers hold at \
             most 38, so Laravel's write would fail too; {advice}"
        )));
    }
    if !(-130..=125).contains(&magnitude) {
        return Err(CodecError::new(format!(
            "number {text:?} is outside DynamoDB's range (1E-130 to 9.99E+125), so Laravel's \
             write would fail too; {advice}"
        )));
    }
    Ok(())
}

/// PHP's `(string)$float` (also `echo`, string interpolation) with the
/// default `precision=14`: `%.14G`-like via `zend_gcvt`, e.g. `0.1+0.2` is
/// `"0.3"`, `1e25` is `"1.0E+25"`, `100.0` is `"100"`, `-0.0` is `"-0"`,
/// `1e15` is `"1.0E+15"`, INF/NAN are `"INF"`, `"-INF"`, `"NAN"`.
/// This is the text Laravel writes as a DynamoDB N for a float value.
pub fn php_float_to_string(f: f64) -> String {
    gcvt(f, Digits::Precision14)
}

/// PHP's float text in `serialize()`, `var_export()` and `json_encode()`
/// with the default `serialize_precision=-1`: the shortest text that
/// round-trips (`zend_gcvt` with `zend_dtoa` mode 0), e.g.
/// `"0.30000000000000004"`, `"1.0E+25"`, `"-0"`, `"1000000000000000"` for
/// 1e15 but `"1.0E+17"` for 1e17, `"INF"`, `"-INF"`, `"NAN"`.
pub fn php_float_serialize(f: f64) -> String {
    gcvt(f, Digits::Shortest)
}

#[derive(Clone, Copy)]
enum Digits {
    /// `zend_dtoa` mode 2 with 14 digits; fixed notation while the decimal
    /// exponent is at most 14.
    Precision14,
    /// `zend_dtoa` mode 0; `php_gcvt` then uses 17 as the fixed-notation
    /// limit.
    Shortest,
}

/// `php_gcvt` (main/snprintf.c): lays out the significant digits either as
/// fixed notation or as `d.dddE±x` (always with at least one fractional
/// digit, `"1.0E+25"`). Fixed notation is used when the decimal point
/// position `decpt` (value = 0.DIGITS × 10^decpt) satisfies
/// `-3 <= decpt <= limit`.
fn gcvt(f: f64, mode: Digits) -> String {
    if f.is_nan() {
        return "NAN".to_owned();
    }
    if f.is_infinite() {
        return if f < 0.0 { "-INF" } else { "INF" }.to_owned();
    }
    let (digits, decpt, limit) = decimal_digits(f.abs(), mode);
    let mut out = String::with_capacity(digits.len() + 8);
    if f.is_sign_negative() {
        // zend_dtoa reports the sign of -0.0 too, hence "-0".
        out.push('-');
    }
    if decpt < -3 || decpt > limit {
        let exp = decpt - 1;
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        out.push('.');
        out.push_str(if rest.is_empty() { "0" } else { rest });
        out.push('E');
        out.push(if exp < 0 { '-' } else { '+' });
        out.push_str(&exp.unsigned_abs().to_string());
    } else if decpt <= 0 {
        out.push_str("0.");
        for _ in decpt..0 {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let decpt = decpt.unsigned_abs() as usize;
        if digits.len() <= decpt {
            out.push_str(&digits);
            for _ in digits.len()..decpt {
                out.push('0');
            }
        } else {
            let (int_part, frac) = digits.split_at(decpt);
            out.push_str(int_part);
            out.push('.');
            out.push_str(frac);
        }
    }
    out
}

/// Significant decimal digits (no trailing zeros, at least one digit) and
/// the decimal point position for a finite, non-negative `f`, plus the
/// fixed-notation limit for the mode. Rust's `{:.13e}` gives 14 correctly
/// rounded digits with ties to even (as `zend_dtoa` mode 2); for mode 0 see
/// [`shortest_digits`].
fn decimal_digits(f: f64, mode: Digits) -> (String, i32, i32) {
    if f == 0.0 {
        return ("0".to_owned(), 1, 14);
    }
    match mode {
        Digits::Precision14 => {
            if let Some(digits) = integer_tie_digits(f) {
                return (digits, 15, 14);
            }
            let (digits, exp) = split_sci(&format!("{f:.13e}"));
            (digits, exp + 1, 14)
        }
        Digits::Shortest => {
            let (digits, exp) = shortest_digits(f);
            (digits, exp + 1, 17)
        }
    }
}

/// A `zend_dtoa` mode 2 quirk: for an integral `f` with 15 digits whose
/// last digit is an exact tie (5) rounded down to an even 14th digit, dtoa's
/// "small integer" path keeps the trailing zeros of the 14 digits, so
/// `(string)100000000000005.0` is `"1.0000000000000E+14"` (while
/// `100000000000001.0` gives `"1.0E+14"`). Returns those 14 digits.
fn integer_tie_digits(f: f64) -> Option<String> {
    if f.fract() != 0.0 || !(1e14..1e15).contains(&f) {
        return None;
    }
    let s = format!("{}", f as u64);
    let (head, last) = s.split_at_checked(14)?;
    let even = head.bytes().last().is_some_and(|d| d % 2 == 0);
    (last == "5" && even).then(|| head.to_owned())
}

/// Splits Rust's `d.ddde±x` text into digits without trailing zeros and
/// the decimal exponent of the first digit.
fn split_sci(text: &str) -> (String, i32) {
    let (mantissa, exp) = text.split_once('e').unwrap_or((text, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    while digits.len() > 1 && digits.ends_with('0') {
        digits.pop();
    }
    (digits, exp)
}

/// Shortest round-trip digits as `zend_dtoa` mode 0 picks them. Rust's
/// `{:e}` gives a shortest string too, but when `f` lies exactly halfway
/// between two shortest candidates Rust rounds the last digit up while
/// dtoa rounds it to even (`570769652658498.25` is `...498.2` in PHP, not
/// `...498.3`). So if the last digit is odd and `f` is exactly the midpoint
/// to a neighbour that also round-trips, take the (even) neighbour.
fn shortest_digits(f: f64) -> (String, i32) {
    let (digits, exp) = split_sci(&format!("{f:e}"));
    let Ok(d) = digits.parse::<u64>() else {
        return (digits, exp);
    };
    if d % 2 == 0 {
        return (digits, exp);
    }
    // Value is d × 10^p.
    let p = exp - (digits.len() as i32 - 1);
    for neighbour in [d - 1, d + 1] {
        // Midpoint (d + neighbour) / 2 × 10^p = (10d ± 5) × 10^(p-1).
        let q = if neighbour < d {
            10 * d - 5
        } else {
            10 * d + 5
        };
        if neighbour == 0 || !equals_decimal(f, q, p - 1) {
            continue;
        }
        let text = format!("{neighbour}e{p}");
        if text.parse::<f64>() == Ok(f) {
            let n = neighbour.to_string();
            let exp = p + n.len() as i32 - 1;
            let digits = n.trim_end_matches('0');
            return (digits.to_owned(), exp);
        }
    }
    (digits, exp)
}

/// Whether finite `f > 0` equals `q × 10^t` exactly, for odd `q`.
/// `f = m × 2^e`; `q × 10^t` is `(q × 5^t) × 2^t` (t ≥ 0) or
/// `(q / 5^-t) × 2^t` (t < 0), with odd cofactors, so compare the odd parts
/// and the powers of two.
fn equals_decimal(f: f64, q: u64, t: i32) -> bool {
    let bits = f.to_bits();
    let exp_bits = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (m, e) = if exp_bits == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), exp_bits - 1075)
    };
    if m == 0 {
        return false;
    }
    let tz = m.trailing_zeros();
    let (odd, two_exp) = (m >> tz, e + tz as i32);
    if two_exp != t {
        return false;
    }
    let Some(five) = 5u64.checked_pow(t.unsigned_abs()) else {
        return false;
    };
    if t >= 0 {
        q.checked_mul(five) == Some(odd)
    } else {
        let quotient = q / five;
        quotient == odd && quotient.checked_mul(five) == Some(q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_numeric_grammar() {
        for s in [
            "0",
            "12",
            " 12",
            "12 ",
            "\t12\n",
            "\x0c12\x0b",
            "1e5",
            "1E+5",
            "-1e-5",
            ".5",
            "5.",
            "-.5",
            "+.5e3",
            "1.e3",
            "007",
            "-0",
            "+1",
            "1e999",
        ] {
            assert!(is_numeric(s.as_bytes()), "{s:?} should be numeric");
        }
        for s in [
            "", " ", ".", "1e", "1e+", ".e3", "0x1A", "1_000", "INF", "nan", "12abc", "1 2", "+-1",
            "12\0", "\x0012", "1.2.3", "\u{663}",
        ] {
            assert!(!is_numeric(s.as_bytes()), "{s:?} should not be numeric");
        }
    }

    #[test]
    fn filter_int_grammar() {
        let cases: &[(&str, Option<i64>)] = &[
            ("0", Some(0)),
            ("-0", Some(0)),
            ("+0", Some(0)),
            ("00", None),
            ("007", None),
            (" 12 ", Some(12)),
            ("\x0b12\x0b", Some(12)),
            ("\x0c12", None),
            ("12\x0c", None),
            ("", None),
            ("  ", None),
            ("-", None),
            ("1e5", None),
            ("1.0", None),
            ("9223372036854775807", Some(i64::MAX)),
            ("9223372036854775808", None),
            ("-9223372036854775808", Some(i64::MIN)),
            ("-9223372036854775809", None),
            ("12\0", None),
        ];
        for &(s, want) in cases {
            assert_eq!(filter_validate_int(s.as_bytes()), want, "{s:?}");
        }
    }

    #[test]
    fn float_texts() {
        let cases: &[(f64, &str, &str)] = &[
            (0.1, "0.1", "0.1"),
            (0.1 + 0.2, "0.3", "0.30000000000000004"),
            (1e25, "1.0E+25", "1.0E+25"),
            (1e-7, "1.0E-7", "1.0E-7"),
            (-0.0, "-0", "-0"),
            (0.0, "0", "0"),
            (1.5, "1.5", "1.5"),
            (100.0, "100", "100"),
            (1e15, "1.0E+15", "1000000000000000"),
            (1e17, "1.0E+17", "1.0E+17"),
            (0.0001, "0.0001", "0.0001"),
            (1e-5, "1.0E-5", "1.0E-5"),
            (12345678901234.5, "12345678901234", "12345678901234.5"),
            (
                570769652658498.0 + 0.25,
                "5.707696526585E+14",
                "570769652658498.2",
            ),
            (100000000000005.0, "1.0000000000000E+14", "100000000000005"),
            (100000000000015.0, "1.0000000000002E+14", "100000000000015"),
            (100000000000001.0, "1.0E+14", "100000000000001"),
            (
                1916470683816962.0 + 0.25,
                "1.916470683817E+15",
                "1916470683816962.2",
            ),
            (5e-324, "4.9406564584125E-324", "5.0E-324"),
            (f64::INFINITY, "INF", "INF"),
            (f64::NEG_INFINITY, "-INF", "-INF"),
            (f64::NAN, "NAN", "NAN"),
        ];
        for &(f, cast, ser) in cases {
            assert_eq!(php_float_to_string(f), cast, "(string){f:e}");
            assert_eq!(php_float_serialize(f), ser, "serialize({f:e})");
        }
    }

    #[test]
    fn string_to_float() {
        assert_eq!(php_string_to_float(b" 1.5 "), 1.5);
        assert_eq!(php_string_to_float(b"1e"), 1.0);
        assert_eq!(php_string_to_float(b"abc"), 0.0);
        assert_eq!(php_string_to_float(b"1e999"), f64::INFINITY);
        assert!(php_string_to_float(b"-0").is_sign_negative());
        assert_eq!(parse_numeric_float(b"12abc"), None);
        assert_eq!(parse_numeric_float(b"\x0c5."), Some(5.0));
    }
}
