//! The first pass: bytes to an arena of nodes (references resolved to node indices).

use super::super::value::{ObjectKind, PhpKey, PhpObject, PhpValue};
use super::super::CodecError;
use super::Limits;

/// One parsed value; containers refer to children by arena index.
pub(super) enum Node {
    /// A value whose parsing has started but not finished.
    Pending,
    Leaf(PhpValue),
    Array(Vec<(PhpKey, usize)>),
    Object(String, Vec<(PhpKey, usize)>),
    /// A back-reference, already resolved to a non-reference node.
    Ref(usize, usize),
}

pub(super) struct Parser<'a> {
    pub(super) input: &'a [u8],
    pub(super) pos: usize,
    pub(super) limits: &'a Limits,
    pub(super) nodes: Vec<Node>,
    /// PHP's var_hash: slot number - 1 → node index.
    pub(super) slots: Vec<usize>,
    pub(super) has_refs: bool,
}

/// A class name PHP accepts (letters, digits, `_`, `\` not first, bytes >= 0x80), as UTF-8.
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

    pub(super) fn parse_value(&mut self, depth: usize) -> Result<usize, CodecError> {
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
