//! What an item means (`ddblock::format::item`) and who holds a lock (`ddblock::holder`), from
//! fuzzed attribute texts: a value as `N`, `S`, another DynamoDB type or missing; an expiry as
//! `N` text, an invalid attribute or missing; a clock reading.
//!
//! Input: one flags byte, then UTF-8 fields separated by `0xFF`: value text, expiry text, a
//! second value text, the clock (see `ddblock_fuzz::fields`). Flags bits 0-1 pick the value's
//! type (missing, N, S, other), bits 2-3 the expiry (missing, parsed N text, invalid, any i64),
//! bit 4 a fencing token (the clock), bit 5 an acquire attempt (the expiry text).
//!
//! Checks: `holder()` reports the value and expiry as stored and the owner Laravel compares;
//! `live_value()` follows Laravel's `isExpired` and reads exactly what `decode_stored` reads;
//! an owner written by `stored_owner` is read back as the same owner and matches its own stored
//! value; `looks_like_generated_owner` agrees with the owner read; owners are redacted (output
//! depends only on the first 4 characters and the length); `parse_timestamp` floors; and
//! `StoredValue::same_as` (DynamoDB's `=`) is reflexive, symmetric and transitive, numbers
//! compare by value (`7` = `007` = `7.0` = `7E0`) and agree with their f64 value.
#![no_main]

use ddblock::codec::{decode_stored, numeric, PhpValue};
use ddblock::format::input;
use ddblock::format::item::{
    self, holder, is_expired, parse_timestamp, stored_owner, Expiry, ItemView, Value, OWNER_LEN,
};
use ddblock::{redact_owner, Holder, StoredValue};
use ddblock_admin::looks_like_generated_owner;
use ddblock_fuzz::{fields, number_from, same};
use libfuzzer_sys::fuzz_target;

const OTHER_TYPES: [&str; 4] = ["BOOL", "B", "L", "M"];

fn value_of(kind: u8, text: &str) -> Value {
    match kind & 3 {
        0 => Value::Missing,
        1 => Value::Stored(StoredValue::Number(text.to_owned())),
        2 => Value::Stored(StoredValue::String(text.to_owned())),
        _ => Value::Other(OTHER_TYPES[text.len() % OTHER_TYPES.len()]),
    }
}

fn expiry_of(kind: u8, text: &str) -> Expiry {
    match kind & 3 {
        0 => Expiry::Never,
        1 => {
            parse_timestamp(text).map_or_else(|| Expiry::Invalid(format!("N {text:?}")), Expiry::At)
        }
        2 => Expiry::Invalid(format!("S {text:?}")),
        _ => Expiry::At(number_from(text)),
    }
}

/// `owner` with every character after the 4th replaced by another one: the same length, the
/// same first 4 characters, a different secret.
fn other_tail(owner: &str) -> String {
    owner
        .chars()
        .enumerate()
        .map(|(i, c)| {
            if i < 4 {
                c
            } else if c == 'x' {
                'y'
            } else {
                'x'
            }
        })
        .collect()
}

fn check_holder(h: &Holder, view: &ItemView) {
    assert_eq!(h.expires_at, view.expiry.at());
    assert_eq!(h.value.as_ref(), view.value.stored());
    let expected_owner = match view.value.stored() {
        None => None,
        Some(StoredValue::Number(n)) => Some(n.clone()),
        Some(StoredValue::String(s)) => match decode_stored(s) {
            Ok(PhpValue::String(b)) => Some(String::from_utf8_lossy(&b).into_owned()),
            Ok(PhpValue::Int(i)) => Some(i.to_string()),
            _ => None,
        },
    };
    assert_eq!(h.owner, expected_owner, "holder owner");
    if let Some(v) = &h.value {
        assert!(h.is(v), "a holder is its own stored value");
    }
    // Redaction: what is shown depends on the first 4 characters and the length only.
    let shown = (h.to_string(), format!("{h:?}"));
    if let Some(owner) = &h.owner {
        let twin = Holder {
            owner: Some(other_tail(owner)),
            ..h.clone()
        };
        assert_eq!(
            shown,
            (twin.to_string(), format!("{twin:?}")),
            "owner leaks into output"
        );
        assert_eq!(
            redact_owner(Some(owner)),
            redact_owner(Some(&other_tail(owner)))
        );
    }
}

/// A valid DynamoDB number text, written differently: leading zero, trailing fractional zero,
/// a zero exponent. DynamoDB compares them equal to the original.
fn same_number_variants(text: &str) -> Vec<String> {
    let (sign, body) = match text.as_bytes().first() {
        Some(b'+' | b'-') => text.split_at(1),
        _ => ("", text),
    };
    let mut out = vec![format!("{sign}0{body}")];
    if !body.contains(['e', 'E']) {
        out.push(if body.contains('.') {
            format!("{text}0")
        } else {
            format!("{text}.0")
        });
        out.push(format!("{text}E0"));
        out.push(format!("{text}e+00"));
    }
    out
}

/// Significant digits of a number text's mantissa (leading and trailing zeros dropped).
fn significant_digits(text: &str) -> usize {
    let mantissa = text.split(['e', 'E']).next().unwrap_or("");
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    digits.trim_matches('0').len()
}

fn check_same_as(a: &StoredValue, b: &StoredValue) {
    assert!(a.same_as(a), "same_as is not reflexive for {a:?}");
    assert_eq!(
        a.same_as(b),
        b.same_as(a),
        "same_as is not symmetric: {a:?} {b:?}"
    );
    if a.type_code() != b.type_code() {
        assert!(!a.same_as(b), "N equals S: {a:?} {b:?}");
    }
    let (StoredValue::Number(x), StoredValue::Number(y)) = (a, b) else {
        return;
    };
    let valid = |t: &str| numeric::check_dynamodb_number(t).is_ok();
    if valid(x) && valid(y) {
        let (fx, fy) = (
            x.parse::<f64>().expect("valid N parses"),
            y.parse::<f64>().expect("valid N parses"),
        );
        if a.same_as(b) {
            assert_eq!(fx, fy, "{x:?} = {y:?} for DynamoDB but not as f64");
        } else if significant_digits(x) <= 15 && significant_digits(y) <= 15 {
            // Distinct decimals of at most 15 digits are distinct doubles (DBL_DIG).
            assert_ne!(
                fx, fy,
                "{x:?} and {y:?} are the same number but not same_as"
            );
        }
    }
    if valid(x) {
        for v in same_number_variants(x) {
            let v = StoredValue::Number(v);
            assert!(a.same_as(&v), "{a:?} is not the same number as {v:?}");
            // Transitivity through the variant.
            assert_eq!(
                a.same_as(b),
                v.same_as(b),
                "same_as not transitive via {v:?}"
            );
        }
        let fx: f64 = x.parse().expect("valid N parses");
        if fx != 0.0 {
            let negated = match x.strip_prefix('-') {
                Some(rest) => rest.to_owned(),
                None => format!("-{}", x.strip_prefix('+').unwrap_or(x)),
            };
            assert!(
                !a.same_as(&StoredValue::Number(negated.clone())),
                "{x:?} = {negated:?}"
            );
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let (flags, [value_text, expiry_text, other_text, now_text]) = fields::<4>(data);
    let now = number_from(&now_text);

    // parse_timestamp: integers as written, other finite numbers floored.
    if let Some(t) = parse_timestamp(&expiry_text) {
        match expiry_text.trim().parse::<i64>() {
            Ok(i) => assert_eq!(t, i),
            Err(_) => {
                let f: f64 = expiry_text.trim().parse().expect("a timestamp is a number");
                assert!(f.is_finite());
                if f.abs() < 9.0e15 {
                    assert!((t as f64) <= f && f < t as f64 + 1.0, "{f} floored to {t}");
                }
            }
        }
    }
    assert_eq!(parse_timestamp(&now.to_string()), Some(now));

    let view = ItemView {
        key: Some(other_text.clone()),
        value: value_of(flags, &value_text),
        expiry: expiry_of(flags >> 2, &expiry_text),
        fence: (flags & 0x10 != 0).then_some(now as u64),
        attempt: (flags & 0x20 != 0).then(|| expiry_text.clone()),
        since: (flags & 0x40 != 0).then_some(now),
    };
    let h = view.holder();
    check_holder(&h, &view);
    assert_eq!(h.fence, view.fence);
    assert_eq!(h.since_ms, view.since);
    assert!(
        Holder {
            fence: view.fence,
            since_ms: view.since,
            ..holder(h.value.clone(), h.expires_at)
        } == h
    );

    // live_value: Laravel's isExpired, then exactly decode_stored.
    let live = view.live_value(&other_text, "expires_at", now);
    match &view.expiry {
        Expiry::Invalid(_) => {
            let e = live.expect_err("an invalid expiry is an error").to_string();
            assert!(
                e.contains(&format!("{other_text:?}")) && e.contains("expires_at"),
                "{e}"
            );
        }
        expiry if is_expired(expiry.at(), now) => {
            assert!(matches!(live, Ok(None)), "expired item read as {live:?}");
            assert!(expiry.at().is_some_and(|at| now >= at));
        }
        _ => match &view.value {
            Value::Missing => assert!(matches!(live, Ok(None))),
            Value::Other(_) => assert!(live.is_err()),
            Value::Stored(v) => match (live, decode_stored(v.text())) {
                (Ok(Some(a)), Ok(b)) => {
                    assert!(same(&a, &b), "live value differs from decode_stored")
                }
                (Err(_), Err(_)) => {}
                (a, b) => panic!("live_value {a:?} but decode_stored {b:?}"),
            },
        },
    }

    // An owner as written by ddblock (and Laravel) reads back as itself.
    for owner in [&value_text, &other_text] {
        match stored_owner(owner) {
            Ok(stored) => {
                let read = holder(Some(stored.clone()), None);
                assert_eq!(
                    read.owner.as_deref(),
                    Some(owner.as_str()),
                    "owner {owner:?} stored as {stored:?}"
                );
                assert!(read.is(&stored));
                assert_eq!(
                    stored.type_code() == "N",
                    numeric::is_numeric(owner.as_bytes())
                );
                let generated =
                    owner.len() == OWNER_LEN && owner.bytes().all(|b| b.is_ascii_alphanumeric());
                assert_eq!(
                    looks_like_generated_owner(&stored),
                    generated && stored.type_code() == "S",
                    "looks_like_generated_owner({stored:?})"
                );
            }
            Err(_) => assert!(
                numeric::is_numeric(owner.as_bytes()),
                "stored_owner refused {owner:?}"
            ),
        }
    }
    if let Some(v) = view.value.stored() {
        if looks_like_generated_owner(v) {
            let o = h.owner.as_deref().expect("a generated owner is read");
            assert!(
                o.len() == OWNER_LEN && o.bytes().all(|b| b.is_ascii_alphanumeric()),
                "{o:?}"
            );
        }
    }

    // DynamoDB's `=` on stored values.
    let a = match &view.value {
        Value::Stored(v) => v.clone(),
        _ => StoredValue::Number(value_text.clone()),
    };
    let b = StoredValue::Number(other_text.clone());
    let c = StoredValue::String(other_text.clone());
    check_same_as(&a, &b);
    check_same_as(&a, &c);
    check_same_as(&b, &a);

    // Input rules never panic, and what they accept is in range.
    if let Ok(t) = input::ttl_from_str(&expiry_text) {
        if let Ok(i) = expiry_text.trim().parse::<i64>() {
            assert_eq!(t, i);
        }
        if let Ok(e) = item::expiry(now, t) {
            assert!(if t > 0 { e == now + t } else { e == now });
        }
        assert!(input::lock_ttl(t).map_or(t < 0, |l| l > 0));
    }
    let _ = item::php_int_cast(&value_text);
});
