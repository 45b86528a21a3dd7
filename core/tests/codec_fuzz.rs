//! Deterministic fuzzing of the PHP codec: random and mutated inputs must
//! never panic and must finish quickly; hostile sizes, nesting and
//! reference bombs must be errors, not crashes or huge allocations.

use std::time::{Duration, Instant};

use ddblock::codec::{self, Limits, PhpKey, PhpObject, PhpValue};

/// xorshift64*: small, fast, reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

fn random_value(rng: &mut Rng, depth: usize) -> PhpValue {
    let kinds = if depth > 4 { 6 } else { 9 };
    match rng.below(kinds) {
        0 => PhpValue::Null,
        1 => PhpValue::Bool(rng.below(2) == 1),
        2 => {
            let r = rng.next();
            PhpValue::Int(*rng.pick(&[0, 1, -1, 42, i64::MAX, i64::MIN, r as i64]))
        }
        3 => {
            let r = rng.next();
            PhpValue::Float(*rng.pick(&[
                0.1,
                -0.0,
                1e25,
                f64::INFINITY,
                f64::NAN,
                f64::from_bits(r),
            ]))
        }
        4 | 5 => {
            let len = rng.below(12);
            PhpValue::String((0..len).map(|_| *rng.pick(b"ab\";:{}\x00\xff9 ")).collect())
        }
        6 | 7 => {
            let n = rng.below(5);
            PhpValue::Array(
                (0..n)
                    .map(|i| {
                        let key = if rng.below(2) == 0 {
                            PhpKey::Int(i as i64)
                        } else {
                            PhpKey::Str(format!("k{}", rng.below(100)).into_bytes())
                        };
                        (key, random_value(rng, depth + 1))
                    })
                    .collect(),
            )
        }
        _ => PhpValue::Object(PhpObject {
            class: rng.pick(&["stdClass", "App\\Model", "Foo_1"]).to_string(),
            kind: codec::ObjectKind::Object,
            properties: vec![
                (PhpKey::from("\0*\0p"), random_value(rng, depth + 1)),
                (PhpKey::from("x"), random_value(rng, depth + 1)),
            ],
        }),
    }
}

const SEEDS: &[&[u8]] = &[
    b"a:3:{i:0;O:8:\"stdClass\":1:{s:1:\"x\";i:1;}i:1;r:2;i:2;a:1:{i:0;r:2;}}",
    b"a:4:{i:0;s:3:\"str\";i:1;R:2;i:2;i:5;i:3;R:2;}",
    b"a:3:{i:0;C:6:\"Legacy\":28:{a:2:{i:0;i:1;i:1;s:3:\"two\";}}i:1;r:2;i:2;E:11:\"Suit:Hearts\";}",
    b"O:5:\"Props\":3:{s:3:\"pub\";i:1;s:7:\"\0*\0prot\";s:1:\"p\";s:11:\"\0Props\0priv\";a:0:{}}",
    b"S:3:\"\\61b\\FF\";",
    b"d:1.0E+25;",
    b"d:-INF;",
];

/// Runs one input through the decoders; returns whether it was accepted.
fn check(input: &[u8], slowest: &mut Duration) -> bool {
    let start = Instant::now();
    let accepted = match codec::unserialize(input) {
        Ok(v) => {
            // Whatever we accept re-serializes to something we read back the same.
            let bytes = codec::serialize(&v);
            let again = codec::unserialize(&bytes).expect("re-serialized value decodes");
            assert_eq!(codec::serialize(&again), bytes);
            true
        }
        Err(e) => {
            assert!(!matches!(e.offset, Some(o) if o > input.len()), "{e}");
            false
        }
    };
    let _ = codec::decode_stored(&String::from_utf8_lossy(input));
    *slowest = (*slowest).max(start.elapsed());
    accepted
}

fn mutate(rng: &mut Rng, input: &mut Vec<u8>) {
    const ALPHABET: &[u8] = b"0123456789:;{}\"NbidsSaOCErR-+.eE\\x";
    for _ in 0..=rng.below(4) {
        let len = input.len();
        match rng.below(8) {
            0 if len > 0 => {
                let i = rng.below(len);
                input[i] = *rng.pick(ALPHABET);
            }
            1 => {
                let i = rng.below(len + 1);
                input.insert(i, *rng.pick(ALPHABET));
            }
            2 if len > 0 => {
                let i = rng.below(len);
                let n = rng.below(len - i + 1);
                input.drain(i..i + n);
            }
            3 if len > 0 => {
                let i = rng.below(len);
                let n = rng.below((len - i).min(32) + 1);
                let chunk = input[i..i + n].to_vec();
                let at = rng.below(input.len() + 1);
                input.splice(at..at, chunk);
            }
            4 => {
                // Blow up a number.
                if let Some(i) = input.iter().position(|b| b.is_ascii_digit()) {
                    let big = rng.pick(&[
                        "99999999999999999999999",
                        "0",
                        "4294967296",
                        "18446744073709551617",
                    ]);
                    input.splice(i..i + 1, big.bytes());
                }
            }
            5 => input.truncate(rng.below(len + 1)),
            6 if len > 0 => {
                let i = rng.below(len);
                input[i] = rng.next() as u8;
            }
            _ => {
                let other = rng.pick(SEEDS);
                let at = rng.below(input.len() + 1);
                input.splice(at..at, other.iter().copied());
            }
        }
    }
}

#[test]
fn hundred_thousand_random_and_mutated_inputs_never_panic() {
    let mut rng = Rng(0x5EED_1234_ABCD_0001);
    let mut slowest = Duration::ZERO;
    let started = Instant::now();
    let mut corpus: Vec<Vec<u8>> = SEEDS.iter().map(|s| s.to_vec()).collect();
    for _ in 0..200 {
        let v = random_value(&mut rng, 0);
        let bytes = codec::serialize(&v);
        // Valid input round-trips exactly.
        let back = codec::unserialize(&bytes).expect("our own output decodes");
        assert_eq!(codec::serialize(&back), bytes);
        corpus.push(bytes);
    }
    let mut accepted = 0;
    for i in 0..100_000 {
        let input = if i % 10 == 0 {
            (0..rng.below(64)).map(|_| rng.next() as u8).collect()
        } else {
            let mut m = rng.pick(&corpus).clone();
            mutate(&mut rng, &mut m);
            m
        };
        accepted += usize::from(check(&input, &mut slowest));
    }
    eprintln!("{accepted} of 100000 inputs accepted; slowest took {slowest:?}");
    // Both paths get real exercise.
    assert!(
        (5_000..95_000).contains(&accepted),
        "{accepted} of 100000 accepted"
    );
    assert!(
        slowest < Duration::from_millis(250),
        "slowest input took {slowest:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(120));
}

#[test]
fn stored_values_round_trip_through_laravel_rules() {
    let mut rng = Rng(42);
    for _ in 0..2000 {
        let v = random_value(&mut rng, 0);
        let Ok(stored) = codec::encode_stored(&v) else {
            continue;
        };
        let back = codec::decode_stored(stored.text()).expect("stored text decodes");
        if let codec::StoredValue::String(text) = &stored {
            assert_eq!(codec::serialize(&back), text.as_bytes());
        }
    }
}

#[test]
fn deep_nesting_is_a_depth_error_not_a_stack_overflow() {
    let depth = 10_000;
    let mut input = b"a:1:{i:0;".repeat(depth);
    input.extend_from_slice(b"N;");
    input.extend_from_slice(&b"}".repeat(depth));
    let e = codec::unserialize(&input).unwrap_err();
    assert!(e.message.contains("max_depth"), "{e}");
    // Objects too, and unterminated input.
    let input = b"O:8:\"stdClass\":1:{s:1:\"a\";".repeat(depth);
    let e = codec::unserialize(&input).unwrap_err();
    assert!(e.message.contains("max_depth"), "{e}");
    // 64 levels are fine by default.
    let mut ok = b"a:1:{i:0;".repeat(64);
    ok.extend_from_slice(b"N;");
    ok.extend_from_slice(&b"}".repeat(64));
    assert!(codec::unserialize(&ok).is_ok());
}

#[test]
fn huge_declared_sizes_fail_fast() {
    let start = Instant::now();
    for input in [
        &b"s:999999999999:\""[..],
        b"s:99999999999999999999999999999:\"a\";",
        b"S:999999999999:\"\\00",
        b"a:999999999:{",
        b"a:99999999999999999999999999:{",
        b"O:8:\"stdClass\":999999999:{",
        b"O:999999999:\"stdClass\":0:{}",
        b"C:3:\"Foo\":999999999999:{",
        b"E:999999999:\"a:b\";",
        b"R:999999999;",
    ] {
        let e = codec::unserialize(input).expect_err(&String::from_utf8_lossy(input));
        assert!(e.offset.is_some(), "{e}");
    }
    assert!(start.elapsed() < Duration::from_secs(1));
    let limits = Limits {
        max_bytes: 10,
        ..Limits::default()
    };
    assert!(codec::unserialize_with(b"s:11:\"hello world\";", &limits).is_err());
}

/// Level j (j ≥ 1) holds two references to level j-1, so the expanded
/// value doubles per level: 2^60 values if copied naively. With `object`,
/// levels are objects and use `r:` (which, unlike `R:`, takes a slot).
fn reference_bomb(levels: usize, object: bool) -> Vec<u8> {
    let mut out = format!("a:{}:{{i:0;a:1:{{i:0;i:0;}}", levels + 1);
    // Slot 1 is the outer array, 2 level 0, 3 its element.
    let (mut prev, mut next_slot) = (2, 4);
    for j in 1..=levels {
        let this = next_slot;
        next_slot += 1;
        if object {
            // r: must target an object, so level 1 uses R: to the array.
            let r = if j == 1 { "R" } else { "r" };
            if j > 1 {
                next_slot += 2;
            }
            out.push_str(&format!(
                "i:{j};O:8:\"stdClass\":2:{{s:1:\"a\";{r}:{prev};s:1:\"b\";{r}:{prev};}}"
            ));
        } else {
            out.push_str(&format!("i:{j};a:2:{{i:0;R:{prev};i:1;R:{prev};}}"));
        }
        prev = this;
    }
    out.push('}');
    out.into_bytes()
}

#[test]
fn reference_bombs_hit_the_limits() {
    let start = Instant::now();
    for object in [false, true] {
        // Small ones decode, with the copies made.
        let small = codec::unserialize(&reference_bomb(3, object)).unwrap();
        let PhpValue::Array(levels) = &small else {
            panic!("array expected")
        };
        assert_eq!(levels.len(), 4);
        let bomb = reference_bomb(60, object);
        let e = codec::unserialize(&bomb).unwrap_err();
        assert!(
            e.message.contains("max_elements") || e.message.contains("max_depth"),
            "{e}"
        );
        let wide = Limits {
            max_depth: 1000,
            ..Limits::default()
        };
        let e = codec::unserialize_with(&bomb, &wide).unwrap_err();
        assert!(e.message.contains("max_elements"), "{e}");
    }
    // A big string referenced many times hits the byte budget.
    let mut s = String::from("a:2000:{i:0;s:4000:\"");
    s.push_str(&"x".repeat(4000));
    s.push_str("\";");
    for i in 1..2000 {
        s.push_str(&format!("i:{i};R:2;"));
    }
    s.push('}');
    let e = codec::unserialize(s.as_bytes()).unwrap_err();
    assert!(e.message.contains("max_bytes"), "{e}");
    assert!(start.elapsed() < Duration::from_secs(5));
}
