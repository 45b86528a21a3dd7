//! PHP's `unserialize()` (ext/standard/var_unserializer.re) for untrusted
//! input: same grammar, opaque objects, hard limits, errors with offsets.
//!
//! Parsing builds a flat arena of nodes first (so back-references can name
//! any earlier value), then materializes the tree, copying referenced values
//! while charging the copies against the limits.

use super::value::{ObjectKind, PhpKey, PhpObject, PhpValue};
use super::CodecError;

/// Resource limits for [`unserialize_with`]; input beyond them is an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Deepest allowed nesting of arrays/objects (PHP's own default,
    /// `unserialize_max_depth`, is 4096; 64 is plenty for cache values).
    /// Decoding, serializing and dropping recurse once per level, so keep
    /// it in the hundreds at most.
    pub max_depth: usize,
    /// Largest accepted input in bytes; also caps the total string bytes
    /// after back-references are copied. DynamoDB items are at most 400 KB.
    pub max_bytes: usize,
    /// Most values (every scalar, array, object and element counts),
    /// including copies made for back-references.
    pub max_elements: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_depth: 64,
            max_bytes: 4 << 20,
            max_elements: 100_000,
        }
    }
}

/// PHP's `unserialize($bytes)` with [`Limits::default`].
///
/// See [`unserialize_prefix`] for the accepted format.
pub fn unserialize(bytes: &[u8]) -> Result<PhpValue, CodecError> {
    unserialize_with(bytes, &Limits::default())
}

/// PHP's `unserialize($bytes)` with explicit limits. Like PHP, bytes after
/// the first complete value are ignored (PHP 8.2 silently, 8.3+ with a
/// warning), e.g. `i:5;garbage` is 5.
pub fn unserialize_with(bytes: &[u8], limits: &Limits) -> Result<PhpValue, CodecError> {
    unserialize_prefix(bytes, limits).map(|(v, _)| v)
}

/// Decodes the serialized value at the start of `bytes`, returning it and
/// the number of bytes it used (the caller decides about trailing bytes).
///
/// Accepts PHP's grammar: `N;`, `b:0;`/`b:1;`, `i:[+-]DIGITS;`,
/// `d:FLOAT;` (`1`, `1.5`, `.5`, `5.`, `1e5`, `NAN`, `INF`, `-INF`),
/// `s:LEN:"bytes";`, `S:LEN:"esc";` (`\hh` escapes), `a:N:{(key value)*}`
/// with `i:`/`s:`/`S:` keys, `O:LEN:"Class":N:{(key value)*}`,
/// `C:LEN:"Class":LEN:{payload}`, `E:LEN:"Class:Case";`, and the
/// back-references `r:N;`/`R:N;`. Lengths may have leading zeros, as in PHP.
///
/// Back-references name the Nth value slot (1-based) in PHP's `var_hash`
/// order: every value gets a slot when it starts, in document order,
/// including array elements, object properties and `r:` itself, except
/// `R:` and array/property keys; a `C:` payload is opaque and has none.
/// `r:` must point to an object (PHP rejects anything else). The target is
/// copied into place (PHP would share it); copies count against the limits.
///
/// Deliberate differences from PHP, all errors here: integers outside i64
/// (PHP clamps them with a warning), references to a value that contains
/// them (cycles, which a copy cannot express), and class names that are not
/// UTF-8. Unlike PHP, unknown classes and enum cases are accepted, since
/// objects are never instantiated. Duplicate array keys and numeric-string
/// keys (`s:1:"5"`) are kept as written (PHP would merge or convert them).
pub fn unserialize_prefix(bytes: &[u8], limits: &Limits) -> Result<(PhpValue, usize), CodecError> {
    if bytes.len() > limits.max_bytes {
        return Err(CodecError::at(
            format!(
                "input is {} bytes, more than the limit of {} bytes",
                bytes.len(),
                limits.max_bytes
            ),
            limits.max_bytes,
        ));
    }
    if bytes.is_empty() {
        return Err(CodecError::at("empty input is not a serialized value", 0));
    }
    let mut p = Parser {
        input: bytes,
        pos: 0,
        limits,
        nodes: Vec::new(),
        slots: Vec::new(),
        has_refs: false,
    };
    let root = p.parse_value(0)?;
    let used = p.pos;
    let mut b = Builder {
        nodes: p.nodes,
        copy: p.has_refs,
        elements_left: limits.max_elements,
        bytes_left: limits.max_bytes,
        max_depth: limits.max_depth,
    };
    let value = b.build(root, 0)?;
    Ok((value, used))
}

/// One parsed value; containers refer to children by arena index.
enum Node {
    /// A value whose parsing has started but not finished.
    Pending,
    Leaf(PhpValue),
    Array(Vec<(PhpKey, usize)>),
    Object(String, Vec<(PhpKey, usize)>),
    /// A back-reference, already resolved to a non-reference node.
    Ref(usize, usize),
}

struct Parser<'a> {
    input: &'a [u8],
    pos: usize,
    limits: &'a Limits,
    nodes: Vec<Node>,
    /// PHP's var_hash: slot number - 1 → node index.
    slots: Vec<usize>,
    has_refs: bool,
}

fn describe(b: Option<&u8>) -> String {
    match b {
        None => "end of input".to_owned(),
        Some(b) if b.is_ascii_graphic() => format!("'{}'", char::from(*b)),
        Some(b) => format!("byte 0x{b:02x}"),
    }
}

impl Parser<'_> {
    fn err<T>(&self, message: impl Into<String>) -> Result<T, CodecError> {
        Err(CodecError::at(message, self.pos))
    }

    fn peek(&self) -> Option<u8> {
        self.input.get(self.pos).copied()
    }

    fn remaining(&self) -> usize {
        self.input.len().saturating_sub(self.pos)
    }

    fn expect(&mut self, want: u8, context: &str) -> Result<(), CodecError> {
        if self.peek() == Some(want) {
            self.pos += 1;
            Ok(())
        } else {
            let found = describe(self.input.get(self.pos));
            self.err(format!(
                "expected '{}' {context}, found {found}",
                char::from(want)
            ))
        }
    }

    fn expect_all(&mut self, want: &[u8], context: &str) -> Result<(), CodecError> {
        for &b in want {
            self.expect(b, context)?;
        }
        Ok(())
    }

    fn digits(&mut self) -> &[u8] {
        let start = self.pos;
        let rest = self.input.get(start..).unwrap_or_default();
        let n = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        self.pos += n;
        rest.get(..n).unwrap_or_default()
    }

    /// Unsigned decimal (PHP's `uiv`: one or more digits, leading zeros ok).
    fn uiv(&mut self, what: &str) -> Result<usize, CodecError> {
        let start = self.pos;
        let digits = self.digits();
        if digits.is_empty() {
            let found = describe(self.input.get(start));
            return Err(CodecError::at(
                format!("expected digits for {what}, found {found}"),
                start,
            ));
        }
        let mut n: usize = 0;
        for &d in digits {
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add(usize::from(d - b'0')))
                .ok_or_else(|| CodecError::at(format!("{what} is too large"), start))?;
        }
        Ok(n)
    }

    /// Signed decimal for `i:` (PHP's `iv`: `[+-]?[0-9]+`), within i64.
    fn iv(&mut self) -> Result<i64, CodecError> {
        let start = self.pos;
        let negative = self.peek() == Some(b'-');
        if matches!(self.peek(), Some(b'-' | b'+')) {
            self.pos += 1;
        }
        let digits = self.digits();
        if digits.is_empty() {
            let found = describe(self.input.get(self.pos));
            return self.err(format!("expected digits for an integer, found {found}"));
        }
        let mut n: i64 = 0;
        for &d in digits {
            let d = i64::from(d - b'0');
            let next = n.checked_mul(10).and_then(|n| {
                if negative {
                    n.checked_sub(d)
                } else {
                    n.checked_add(d)
                }
            });
            n = next.ok_or_else(|| {
                CodecError::at(
                    "integer does not fit in a 64-bit PHP int (PHP would clamp it with a warning)",
                    start,
                )
            })?;
        }
        Ok(n)
    }

    /// Element count of `O:` and payload length of `C:`: PHP parses these
    /// with `parse_iv2`, which allows a sign and zero digits (meaning 0);
    /// negative values are rejected.
    fn count(&mut self, what: &str) -> Result<usize, CodecError> {
        let start = self.pos;
        let negative = self.peek() == Some(b'-');
        if matches!(self.peek(), Some(b'-' | b'+')) {
            self.pos += 1;
        }
        let digits = self.digits();
        let mut n: usize = 0;
        for &d in digits {
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add(usize::from(d - b'0')))
                .ok_or_else(|| CodecError::at(format!("{what} is too large"), start))?;
        }
        if negative && n != 0 {
            return Err(CodecError::at(format!("{what} is negative"), start));
        }
        Ok(n)
    }

    fn take(&mut self, len: usize, what: &str) -> Result<&[u8], CodecError> {
        let start = self.pos;
        let slice = start
            .checked_add(len)
            .and_then(|end| self.input.get(start..end))
            .ok_or_else(|| {
                CodecError::at(
                    format!(
                        "{what} declares {len} bytes but only {} remain",
                        self.remaining()
                    ),
                    start,
                )
            })?;
        self.pos += len;
        Ok(slice)
    }

    fn parse_value(&mut self, depth: usize) -> Result<usize, CodecError> {
        let Some(tag) = self.peek() else {
            return self.err("unexpected end of input, expected a value");
        };
        if self.nodes.len() >= self.limits.max_elements {
            return self.err(format!(
                "more than {} values (limit max_elements)",
                self.limits.max_elements
            ));
        }
        let id = self.nodes.len();
        self.nodes.push(Node::Pending);
        if tag != b'R' {
            self.slots.push(id);
        }
        let node = match tag {
            b'N' => {
                self.expect_all(b"N;", "in null")?;
                Node::Leaf(PhpValue::Null)
            }
            b'b' => {
                self.expect_all(b"b:", "in bool")?;
                let v = match self.peek() {
                    Some(b'0') => false,
                    Some(b'1') => true,
                    other => {
                        let found = describe(other.as_ref());
                        return self.err(format!("expected 0 or 1 for a bool, found {found}"));
                    }
                };
                self.pos += 1;
                self.expect(b';', "after bool")?;
                Node::Leaf(PhpValue::Bool(v))
            }
            b'i' => {
                self.expect_all(b"i:", "in int")?;
                let v = self.iv()?;
                self.expect(b';', "after int")?;
                Node::Leaf(PhpValue::Int(v))
            }
            b'd' => {
                self.expect_all(b"d:", "in float")?;
                let v = self.float()?;
                self.expect(b';', "after float")?;
                Node::Leaf(PhpValue::Float(v))
            }
            b's' => {
                self.expect_all(b"s:", "in string")?;
                let len = self.uiv("string length")?;
                self.expect_all(b":\"", "before string bytes")?;
                let bytes = self.take(len, "string")?.to_vec();
                self.expect_all(b"\";", "after string bytes (is the length right?)")?;
                Node::Leaf(PhpValue::String(bytes))
            }
            b'S' => Node::Leaf(PhpValue::String(self.escaped_string()?)),
            b'a' => {
                self.expect_all(b"a:", "in array")?;
                let n = self.uiv("array length")?;
                self.expect_all(b":{", "after array length")?;
                let entries = self.entries(n, depth, "array")?;
                self.expect(b'}', "at end of array (is the element count right?)")?;
                Node::Array(entries)
            }
            b'O' => {
                self.expect_all(b"O:", "in object")?;
                let class = self.class_name()?;
                self.expect(b':', "after class name")?;
                let n = self.count("property count")?;
                self.expect_all(b":{", "after property count")?;
                let props = self.entries(n, depth, "object")?;
                self.expect(b'}', "at end of object (is the property count right?)")?;
                Node::Object(class, props)
            }
            b'C' => {
                self.expect_all(b"C:", "in Serializable object")?;
                let class = self.class_name()?;
                self.expect(b':', "after class name")?;
                let len = self.count("payload length")?;
                self.expect_all(b":{", "after payload length")?;
                let payload = self.take(len, "Serializable payload")?.to_vec();
                self.expect(b'}', "after Serializable payload (is the length right?)")?;
                Node::Leaf(PhpValue::Object(PhpObject {
                    class,
                    kind: ObjectKind::Custom(payload),
                    properties: Vec::new(),
                }))
            }
            b'E' => Node::Leaf(PhpValue::Object(self.enum_case()?)),
            b'r' | b'R' => self.back_reference(tag)?,
            _ => {
                let found = describe(Some(&tag));
                return self.err(format!(
                    "unknown value type {found} (expected one of N b i d s S a O C E r R)"
                ));
            }
        };
        if let Some(slot) = self.nodes.get_mut(id) {
            *slot = node;
        }
        Ok(id)
    }

    /// `n` key/value pairs of an array or object body.
    fn entries(
        &mut self,
        n: usize,
        depth: usize,
        what: &str,
    ) -> Result<Vec<(PhpKey, usize)>, CodecError> {
        if depth >= self.limits.max_depth {
            return self.err(format!(
                "{what} nested deeper than {} levels (limit max_depth)",
                self.limits.max_depth
            ));
        }
        // As PHP's IS_FAKE_ELEM_COUNT: each element needs input bytes.
        if n > self.remaining() {
            return self.err(format!(
                "{what} declares {n} elements but only {} bytes remain",
                self.remaining()
            ));
        }
        if n > self.limits.max_elements.saturating_sub(self.nodes.len()) {
            return self.err(format!(
                "{what} declares {n} elements, more than the limit of {} values (max_elements)",
                self.limits.max_elements
            ));
        }
        let mut out = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            let key = self.key()?;
            let child = self.parse_value(depth + 1)?;
            out.push((key, child));
        }
        Ok(out)
    }

    /// An array key or property name: `i:`, `s:` or `S:` (PHP parses any
    /// value there and rejects all but int and string). Keys get no slot.
    fn key(&mut self) -> Result<PhpKey, CodecError> {
        match self.peek() {
            Some(b'i') => {
                self.pos += 1;
                self.expect(b':', "in int key")?;
                let v = self.iv()?;
                self.expect(b';', "after int key")?;
                Ok(PhpKey::Int(v))
            }
            Some(b's') => {
                self.pos += 1;
                self.expect(b':', "in string key")?;
                let len = self.uiv("key length")?;
                self.expect_all(b":\"", "before key bytes")?;
                let bytes = self.take(len, "key")?.to_vec();
                self.expect_all(b"\";", "after key bytes (is the length right?)")?;
                Ok(PhpKey::Str(bytes))
            }
            Some(b'S') => Ok(PhpKey::Str(self.escaped_string()?)),
            None if self.pos >= self.input.len() => {
                self.err("unexpected end of input, expected an array key")
            }
            other => {
                let found = describe(other.as_ref());
                self.err(format!(
                    "array keys must be ints (i:) or strings (s:), found {found}"
                ))
            }
        }
    }

    /// `S:LEN:"...";`: LEN decoded bytes, where `\hh` (two hex digits, any
    /// case) stands for one byte and any other byte for itself.
    fn escaped_string(&mut self) -> Result<Vec<u8>, CodecError> {
        self.expect_all(b"S:", "in escaped string")?;
        let len = self.uiv("escaped string length")?;
        self.expect_all(b":\"", "before escaped string")?;
        if len > self.remaining() {
            return self.err(format!(
                "escaped string declares {len} bytes but only {} remain",
                self.remaining()
            ));
        }
        let mut out = Vec::with_capacity(len);
        for _ in 0..len {
            match self.peek() {
                Some(b'\\') => {
                    self.pos += 1;
                    let hi = self.hex_digit()?;
                    let lo = self.hex_digit()?;
                    out.push(hi << 4 | lo);
                }
                Some(b) => {
                    self.pos += 1;
                    out.push(b);
                }
                None => return self.err("unexpected end of input in escaped string"),
            }
        }
        self.expect_all(b"\";", "after escaped string (is the length right?)")?;
        Ok(out)
    }

    fn hex_digit(&mut self) -> Result<u8, CodecError> {
        let v = match self.peek() {
            Some(b @ b'0'..=b'9') => b - b'0',
            Some(b @ b'a'..=b'f') => b - b'a' + 10,
            Some(b @ b'A'..=b'F') => b - b'A' + 10,
            other => {
                let found = describe(other.as_ref());
                return self.err(format!("expected a hex digit after '\\', found {found}"));
            }
        };
        self.pos += 1;
        Ok(v)
    }

    /// The text after `d:`: `NAN`, `INF`, `-INF`, or PHP's
    /// `[+-]? (DIGITS | DIGITS? "." DIGITS | DIGITS "." DIGITS?) ([eE] [+-]? DIGITS)?`
    /// converted with correct rounding (PHP: `zend_strtod`).
    fn float(&mut self) -> Result<f64, CodecError> {
        let rest = self.input.get(self.pos..).unwrap_or_default();
        for (word, value) in [
            (&b"NAN"[..], f64::NAN),
            (b"INF", f64::INFINITY),
            (b"-INF", f64::NEG_INFINITY),
        ] {
            if rest.starts_with(word) {
                self.pos += word.len();
                return Ok(value);
            }
        }
        let start = self.pos;
        if matches!(self.peek(), Some(b'-' | b'+')) {
            self.pos += 1;
        }
        let int_digits = self.digits().len();
        let mut frac_digits = 0;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            frac_digits = self.digits().len();
        }
        if int_digits == 0 && frac_digits == 0 {
            return Err(CodecError::at("expected a number after 'd:'", start));
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'-' | b'+')) {
                self.pos += 1;
            }
            if self.digits().is_empty() {
                return self.err("expected exponent digits in float");
            }
        }
        let text = self.input.get(start..self.pos).unwrap_or_default();
        std::str::from_utf8(text)
            .ok()
            .and_then(|t| t.parse::<f64>().ok())
            .ok_or_else(|| CodecError::at("invalid float", start))
    }

    /// `LEN:"Name"` of `O:`/`C:`. PHP accepts `[A-Za-z0-9_\\\x80-\xff]+` not
    /// starting with `\`; this decoder also requires UTF-8.
    fn class_name(&mut self) -> Result<String, CodecError> {
        let len = self.uiv("class name length")?;
        self.expect_all(b":\"", "before class name")?;
        let start = self.pos;
        let name = self.take(len, "class name")?.to_vec();
        self.expect(b'"', "after class name (is the length right?)")?;
        check_class_name(&name, start)
    }

    /// `E:LEN:"Class:Case";` (PHP 8.1 enums), split at the first ':'.
    fn enum_case(&mut self) -> Result<PhpObject, CodecError> {
        self.expect_all(b"E:", "in enum")?;
        let len = self.uiv("enum name length")?;
        self.expect_all(b":\"", "before enum name")?;
        let start = self.pos;
        let name = self.take(len, "enum name")?.to_vec();
        self.expect_all(b"\";", "after enum name (is the length right?)")?;
        let Some(colon) = name.iter().position(|&b| b == b':') else {
            return Err(CodecError::at(
                "enum value must be \"Class:Case\" (missing ':')",
                start,
            ));
        };
        let (class, case) = name.split_at(colon);
        let case = case.get(1..).unwrap_or_default();
        let class = check_class_name(class, start)?;
        let valid_case = matches!(case.first(), Some(b) if b.is_ascii_alphabetic() || *b == b'_' || *b >= 0x80)
            && case
                .iter()
                .all(|&b| b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80);
        let case = std::str::from_utf8(case)
            .ok()
            .filter(|_| valid_case)
            .ok_or_else(|| CodecError::at("invalid enum case name", start + colon + 1))?;
        Ok(PhpObject {
            class,
            kind: ObjectKind::Enum(case.to_owned()),
            properties: Vec::new(),
        })
    }

    /// `r:N;` or `R:N;`, resolved to the (non-reference) node of slot N.
    fn back_reference(&mut self, tag: u8) -> Result<Node, CodecError> {
        let start = self.pos;
        self.pos += 1;
        self.expect(b':', "in back-reference")?;
        let n = self.uiv("back-reference number")?;
        self.expect(b';', "after back-reference")?;
        let kind = char::from(tag);
        let mut target = n
            .checked_sub(1)
            .and_then(|i| self.slots.get(i).copied())
            .ok_or_else(|| {
                CodecError::at(
                    format!(
                        "{kind}:{n} refers to value {n}, but only {} values precede it",
                        self.slots.len().saturating_sub(usize::from(tag == b'r'))
                    ),
                    start,
                )
            })?;
        if let Some(Node::Ref(t, _)) = self.nodes.get(target) {
            target = *t;
        }
        match self.nodes.get(target) {
            Some(Node::Pending) | None => Err(CodecError::at(
                format!(
                    "{kind}:{n} refers to itself or to a value that contains it; \
                     such cyclic structures cannot be decoded into a tree"
                ),
                start,
            )),
            Some(Node::Object(..)) | Some(Node::Leaf(PhpValue::Object(_))) => {
                self.has_refs = true;
                Ok(Node::Ref(target, start))
            }
            Some(_) if tag == b'r' => Err(CodecError::at(
                format!("r:{n} must refer to an object (PHP rejects r: to other values)"),
                start,
            )),
            Some(_) => {
                self.has_refs = true;
                Ok(Node::Ref(target, start))
            }
        }
    }
}

fn check_class_name(name: &[u8], offset: usize) -> Result<String, CodecError> {
    let valid = !name.is_empty()
        && name.first() != Some(&b'\\')
        && name
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'\\' || b >= 0x80);
    if !valid {
        return Err(CodecError::at("invalid class name", offset));
    }
    String::from_utf8(name.to_vec())
        .map_err(|_| CodecError::at("class name is not valid UTF-8 (not supported)", offset))
}

/// Turns the arena into a tree, copying back-referenced values.
struct Builder {
    nodes: Vec<Node>,
    /// Whether values may be shared (then leaves are cloned, not moved).
    copy: bool,
    elements_left: usize,
    bytes_left: usize,
    max_depth: usize,
}

impl Builder {
    fn charge(&mut self, bytes: usize, at: Option<usize>) -> Result<(), CodecError> {
        let over = |what: &str| CodecError {
            message: format!(
                "copying back-referenced values exceeds the {what} limit (a reference bomb?)"
            ),
            offset: at,
        };
        self.elements_left = self
            .elements_left
            .checked_sub(1)
            .ok_or_else(|| over("max_elements"))?;
        self.bytes_left = self
            .bytes_left
            .checked_sub(bytes)
            .ok_or_else(|| over("max_bytes"))?;
        Ok(())
    }

    fn build(&mut self, id: usize, depth: usize) -> Result<PhpValue, CodecError> {
        self.build_at(id, depth, None)
    }

    /// `via` is the offset of the back-reference being expanded, if any.
    fn build_at(
        &mut self,
        id: usize,
        depth: usize,
        via: Option<usize>,
    ) -> Result<PhpValue, CodecError> {
        let node = match self.nodes.get_mut(id) {
            None | Some(Node::Pending) => {
                return Err(CodecError::new("internal error: unresolved value"))
            }
            Some(Node::Ref(target, at)) => {
                let (target, at) = (*target, *at);
                return self.build_at(target, depth, Some(at));
            }
            Some(node) if self.copy => node,
            Some(node) => {
                // No sharing: move the node out instead of cloning it.
                return match std::mem::replace(node, Node::Pending) {
                    Node::Leaf(v) => Ok(v),
                    Node::Array(entries) => {
                        Ok(PhpValue::Array(self.children(entries, depth, via)?))
                    }
                    Node::Object(class, props) => Ok(PhpValue::Object(PhpObject {
                        class,
                        kind: ObjectKind::Object,
                        properties: self.children(props, depth, via)?,
                    })),
                    Node::Pending | Node::Ref(..) => {
                        Err(CodecError::new("internal error: unresolved value"))
                    }
                };
            }
        };
        match node {
            Node::Leaf(v) => {
                let v = v.clone();
                let bytes = match &v {
                    PhpValue::String(s) => s.len(),
                    PhpValue::Object(o) => match &o.kind {
                        ObjectKind::Custom(p) => p.len() + o.class.len(),
                        _ => o.class.len(),
                    },
                    _ => 0,
                };
                self.charge(bytes, via)?;
                Ok(v)
            }
            Node::Array(entries) => {
                let entries = entries.clone();
                self.charge(0, via)?;
                Ok(PhpValue::Array(self.children(entries, depth, via)?))
            }
            Node::Object(class, props) => {
                let (class, props) = (class.clone(), props.clone());
                self.charge(class.len(), via)?;
                Ok(PhpValue::Object(PhpObject {
                    class,
                    kind: ObjectKind::Object,
                    properties: self.children(props, depth, via)?,
                }))
            }
            Node::Pending | Node::Ref(..) => {
                Err(CodecError::new("internal error: unresolved value"))
            }
        }
    }

    fn children(
        &mut self,
        entries: Vec<(PhpKey, usize)>,
        depth: usize,
        via: Option<usize>,
    ) -> Result<Vec<(PhpKey, PhpValue)>, CodecError> {
        if depth >= self.max_depth {
            return Err(CodecError {
                message: format!(
                    "after copying back-referenced values, nesting exceeds {} levels (limit max_depth)",
                    self.max_depth
                ),
                offset: via,
            });
        }
        let mut out = Vec::with_capacity(entries.len());
        for (k, child) in entries {
            if let PhpKey::Str(s) = &k {
                if self.copy {
                    self.bytes_left = self.bytes_left.checked_sub(s.len()).ok_or_else(|| CodecError {
                        message: "copying back-referenced values exceeds the max_bytes limit (a reference bomb?)".to_owned(),
                        offset: via,
                    })?;
                }
            }
            out.push((k, self.build_at(child, depth + 1, via)?));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::serialize;
    use super::*;

    fn round(input: &str) -> String {
        let v = unserialize(input.as_bytes()).unwrap_or_else(|e| panic!("{input}: {e}"));
        String::from_utf8(serialize(&v)).unwrap()
    }

    fn err(input: &[u8]) -> CodecError {
        unserialize(input).expect_err(&String::from_utf8_lossy(input))
    }

    #[test]
    fn scalars_and_lenient_php_forms() {
        assert_eq!(round("N;"), "N;");
        assert_eq!(round("i:+5;"), "i:5;");
        assert_eq!(round("i:-0;"), "i:0;");
        assert_eq!(round("d:.5;"), "d:0.5;");
        assert_eq!(round("d:5.;"), "d:5;");
        assert_eq!(round("d:1e400;"), "d:INF;");
        assert_eq!(round("s:01:\"a\";"), "s:1:\"a\";");
        assert_eq!(
            unserialize(b"S:3:\"\\61b\\FF\";").unwrap(),
            PhpValue::String(vec![b'a', b'b', 0xff])
        );
        assert_eq!(round("O:8:\"stdClass\":+0:{}"), "O:8:\"stdClass\":0:{}");
        assert_eq!(round("O:8:\"stdClass\"::{}"), "O:8:\"stdClass\":0:{}");
        assert_eq!(round("E:11:\"Suit:Hearts\";"), "E:11:\"Suit:Hearts\";");
    }

    #[test]
    fn trailing_bytes_are_ignored_like_php() {
        assert_eq!(unserialize(b"i:5;garbage").unwrap(), PhpValue::Int(5));
        let (v, used) = unserialize_prefix(b"b:1;rest", &Limits::default()).unwrap();
        assert_eq!((v, used), (PhpValue::Bool(true), 4));
    }

    #[test]
    fn back_reference_numbering_follows_php() {
        // Slots: 1 outer array, 2 object, 3 its property, 4 the r: itself,
        // 5 inner array, 6 the r: inside it.
        let php = "a:3:{i:0;O:8:\"stdClass\":1:{s:1:\"x\";i:1;}i:1;r:2;i:2;a:1:{i:0;r:2;}}";
        let obj = "O:8:\"stdClass\":1:{s:1:\"x\";i:1;}";
        assert_eq!(
            round(php),
            format!("a:3:{{i:0;{obj}i:1;{obj}i:2;a:1:{{i:0;{obj}}}}}")
        );
        // R: takes no slot; r: does (r:3 below is the r:2 slot, an object).
        assert_eq!(
            round("a:3:{i:0;O:8:\"stdClass\":0:{}i:1;r:2;i:2;r:3;}"),
            "a:3:{i:0;O:8:\"stdClass\":0:{}i:1;O:8:\"stdClass\":0:{}i:2;O:8:\"stdClass\":0:{}}"
        );
        assert_eq!(
            round("a:4:{i:0;s:3:\"str\";i:1;R:2;i:2;i:5;i:3;R:2;}"),
            "a:4:{i:0;s:3:\"str\";i:1;s:3:\"str\";i:2;i:5;i:3;s:3:\"str\";}"
        );
        // Enum cases and C: objects are objects for r:.
        assert_eq!(
            round("a:2:{i:0;E:6:\"S:Hear\";i:1;r:2;}"),
            "a:2:{i:0;E:6:\"S:Hear\";i:1;E:6:\"S:Hear\";}"
        );
    }

    #[test]
    fn bad_back_references() {
        assert!(err(b"a:2:{i:0;i:7;i:1;r:2;}").message.contains("object"));
        assert!(err(b"a:1:{i:0;R:1;}").message.contains("cyclic"));
        assert!(err(b"O:8:\"stdClass\":1:{s:1:\"y\";r:1;}")
            .message
            .contains("cyclic"));
        assert!(err(b"a:2:{i:0;i:7;i:1;R:0;}")
            .message
            .contains("refers to value 0"));
        let e = err(b"a:2:{i:0;i:7;i:1;R:5;}");
        assert_eq!(e.offset, Some(17));
        assert!(e.to_string().ends_with("at byte 17"), "{e}");
        assert!(err(b"R:1;").message.contains("refers to value 1"));
    }

    #[test]
    fn errors_point_at_the_problem() {
        assert_eq!(err(b"s:5:\"abc\";").offset, Some(10));
        assert_eq!(err(b"s:9:\"abc\";").offset, Some(5));
        assert_eq!(err(b"a:1:{i:0;i:1;").offset, Some(13));
        assert_eq!(err(b"x").offset, Some(0));
        assert_eq!(err(b"").offset, Some(0));
        assert_eq!(err(b"i:99999999999999999999;").offset, Some(2));
        assert_eq!(err(b"b:2;").offset, Some(2));
        assert!(err(b"a:1:{d:1;i:1;}").message.contains("array keys"));
        assert!(err(b"O:3:\"a b\":0:{}").message.contains("class name"));
        assert!(err(b"E:5:\"Suit:\";").message.contains("case"));
    }

    #[test]
    fn limits_are_enforced() {
        let limits = Limits {
            max_depth: 2,
            max_bytes: 64,
            max_elements: 5,
        };
        assert!(unserialize_with(b"a:1:{i:0;a:1:{i:0;N;}}", &limits).is_ok());
        let e = unserialize_with(b"a:1:{i:0;a:1:{i:0;a:0:{}}}", &limits).unwrap_err();
        assert!(e.message.contains("max_depth"), "{e}");
        let e = unserialize_with(b"a:5:{i:0;N;i:1;N;i:2;N;i:3;N;i:4;N;}", &limits).unwrap_err();
        assert!(e.message.contains("max_elements"), "{e}");
        let e = unserialize_with(&[b' '; 65], &limits).unwrap_err();
        assert!(e.message.contains("65 bytes"), "{e}");
        // Copies made for back-references count too.
        let e = unserialize_with(b"a:3:{i:0;a:1:{i:0;N;}i:1;R:2;i:2;R:2;}", &limits).unwrap_err();
        assert!(e.message.contains("max_elements"), "{e}");
        // A reference can push a deep value deeper than max_depth.
        let e = unserialize_with(b"a:2:{i:0;a:1:{i:0;N;}i:1;a:1:{i:0;R:2;}}", &limits).unwrap_err();
        assert!(e.message.contains("max_depth"), "{e}");
    }
}
