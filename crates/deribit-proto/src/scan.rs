//! A small forward-only JSON scanner for the hand-written decoders.
//!
//! Owns: whitespace, punctuation, borrowed strings without escapes, number tokens, skipping
//! any value (with escapes and nesting), and the byte offset every error carries.
//! Must not: allocate, recurse, or panic on any input: nesting is tracked in a bit stack,
//! and every index is checked.

use ticktrade_core::{Decimal, NumberError, POW10_U64};

use crate::words::{same_bytes, string_end};

/// Why a frame could not be decoded. Small and `Copy`: the hot path returns it by value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The frame ends before the value does (a truncated or partial frame).
    #[error("frame ends early")]
    Incomplete,
    /// Something other than what the grammar allows at byte `at`.
    #[error("expected {expected} at byte {at}")]
    Unexpected { at: u32, expected: &'static str },
    /// A number that is not an exact decimal in range.
    #[error("bad number at byte {at}: {error}")]
    Number { at: u32, error: NumberError },
    /// A required member is absent.
    #[error("missing member {0}")]
    Missing(&'static str),
}

/// Deepest nesting [`Scanner::skip_value`] follows.
const MAX_DEPTH: u32 = 64;

pub(crate) struct Scanner<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Scanner<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Scanner<'a> {
        Scanner { buf, pos: 0 }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// Moves back to a position returned by [`Self::pos`] (a fast path giving up).
    pub(crate) fn seek(&mut self, pos: usize) {
        self.pos = pos.min(self.buf.len());
    }

    pub(crate) fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or(&[])
    }

    /// Skips `prefix` when the input continues with it exactly (used by fast paths).
    pub(crate) fn eat_prefix(&mut self, prefix: &[u8]) -> bool {
        // Word compares inline: the fixed layouts try one key per member, and a call into
        // `bcmp` for each cost more than the compare.
        if self.buf.get(self.pos..self.pos + prefix.len()).is_some_and(|head| same_bytes(head, prefix)) {
            self.pos += prefix.len();
            true
        } else {
            false
        }
    }

    #[cold]
    pub(crate) fn unexpected(&self, expected: &'static str) -> DecodeError {
        if self.pos >= self.buf.len() {
            DecodeError::Incomplete
        } else {
            DecodeError::Unexpected { at: offset(self.pos), expected }
        }
    }

    #[inline]
    pub(crate) fn ws(&mut self) {
        while let Some(&b) = self.buf.get(self.pos) {
            // One compare for the usual case: every blank is at most a space.
            if b > b' ' || !matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
                break;
            }
            self.pos += 1;
        }
    }

    /// The next non-blank byte, not consumed.
    #[inline]
    pub(crate) fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.buf.get(self.pos).copied()
    }

    #[inline]
    pub(crate) fn expect(&mut self, byte: u8, expected: &'static str) -> Result<(), DecodeError> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.unexpected(expected))
        }
    }

    /// After a member or element: `true` if another follows (a comma was eaten), `false` at
    /// the closing byte (eaten too).
    #[inline]
    pub(crate) fn next_item(&mut self, close: u8, expected: &'static str) -> Result<bool, DecodeError> {
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                Ok(true)
            }
            Some(b) if b == close => {
                self.pos += 1;
                Ok(false)
            }
            _ => Err(self.unexpected(expected)),
        }
    }

    /// Opens an object or array: `true` if it has a first item, `false` if it is empty
    /// (and already closed).
    #[inline]
    pub(crate) fn open(&mut self, open: u8, close: u8, expected: &'static str) -> Result<bool, DecodeError> {
        self.expect(open, expected)?;
        if self.peek() == Some(close) {
            self.pos += 1;
            return Ok(false);
        }
        Ok(true)
    }

    /// A string without escapes, borrowed. Strings with escapes are reported as unexpected:
    /// nothing a decoder borrows (keys, names, enums) ever needs one.
    #[inline]
    pub(crate) fn str(&mut self) -> Result<&'a str, DecodeError> {
        let bytes = self.str_bytes()?;
        std::str::from_utf8(bytes).map_err(|_| DecodeError::Unexpected { at: offset(self.pos), expected: "UTF-8" })
    }

    #[inline]
    pub(crate) fn str_bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        self.expect(b'"', "string")?;
        let start = self.pos;
        let rest = self.rest();
        match string_end(rest) {
            Some(len) if rest[len] == b'"' => {
                self.pos += len + 1;
                Ok(&rest[..len])
            }
            Some(len) => {
                self.pos = start + len;
                Err(self.unexpected("string without escapes"))
            }
            None => Err(DecodeError::Incomplete),
        }
    }

    /// A string's raw text between its quotes, escape sequences left as written (`a\"b`
    /// stays four bytes); control bytes are refused as JSON requires. For members whose
    /// values may carry escapes (labels, messages, ids) on paths that must not fail on them.
    #[inline]
    pub(crate) fn raw_str(&mut self) -> Result<&'a str, DecodeError> {
        let start = self.pos + 1;
        let text = self.raw_bytes()?;
        std::str::from_utf8(text).map_err(|_| DecodeError::Unexpected { at: offset(start), expected: "UTF-8" })
    }

    /// [`Self::raw_str`] without the UTF-8 check, for values compared with ASCII constants
    /// (an order state, a side): whatever is not one of them is refused by the caller.
    #[inline]
    pub(crate) fn raw_bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        self.expect(b'"', "string")?;
        let start = self.pos;
        loop {
            let rest = self.rest();
            match string_end(rest) {
                None => return Err(DecodeError::Incomplete),
                Some(len) => match rest[len] {
                    b'"' => {
                        let text = &self.buf[start..self.pos + len];
                        self.pos += len + 1;
                        return Ok(text);
                    }
                    b'\\' => {
                        if rest.len() < len + 2 {
                            return Err(DecodeError::Incomplete);
                        }
                        self.pos += len + 2;
                    }
                    _ => {
                        self.pos += len;
                        return Err(self.unexpected("string without control bytes"));
                    }
                },
            }
        }
    }

    /// `true` or `false`.
    #[inline]
    pub(crate) fn bool(&mut self) -> Result<bool, DecodeError> {
        match self.peek() {
            Some(b't') => self.literal(b"true").map(|()| true),
            Some(b'f') => self.literal(b"false").map(|()| false),
            _ => Err(self.unexpected("true or false")),
        }
    }

    /// A signed integer that fits `i64` (error codes).
    pub(crate) fn i64(&mut self) -> Result<i64, DecodeError> {
        let negative = self.peek() == Some(b'-');
        if negative {
            self.pos += 1;
        }
        let at = self.pos;
        let magnitude = self.u64()?;
        let overflow = DecodeError::Number { at: offset(at), error: NumberError::Overflow };
        if negative {
            0i64.checked_sub_unsigned(magnitude).ok_or(overflow)
        } else {
            i64::try_from(magnitude).map_err(|_| overflow)
        }
    }

    /// Skips one value and returns its text (for payloads handed to another decoder).
    pub(crate) fn span(&mut self) -> Result<&'a [u8], DecodeError> {
        self.ws();
        let start = self.pos;
        self.skip_value()?;
        Ok(&self.buf[start..self.pos])
    }

    /// A key and its colon.
    #[inline]
    pub(crate) fn key(&mut self) -> Result<&'a [u8], DecodeError> {
        let key = self.str_bytes()?;
        self.expect(b':', "':'")?;
        Ok(key)
    }

    /// The text of a JSON number (not validated beyond its alphabet; the parser checks it).
    #[inline]
    pub(crate) fn number_token(&mut self) -> Result<(&'a [u8], usize), DecodeError> {
        self.ws();
        let start = self.pos;
        let rest = self.rest();
        let len = rest.iter().position(|b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'));
        match len {
            Some(0) => Err(self.unexpected("number")),
            Some(len) => {
                self.pos += len;
                Ok((&rest[..len], start))
            }
            // A number running to the end of the frame: the frame is cut.
            None => Err(DecodeError::Incomplete),
        }
    }

    /// An exact decimal number. Plain `123.456` (at most 18 digits) is parsed while it is
    /// scanned; anything else (sign, exponent, long mantissa) goes through
    /// `Decimal::parse_bytes` on the token.
    #[inline]
    pub(crate) fn decimal(&mut self) -> Result<Decimal, DecodeError> {
        self.ws();
        let start = self.pos;
        let (int_value, int_digits) = self.digits();
        let mut value = int_value;
        let mut n_digits = int_digits;
        let mut scale = 0;
        if int_digits > 0 && self.buf.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            let frac_start = self.pos;
            let (frac_value, frac_digits) = self.digits();
            if frac_digits > 0 && frac_digits <= 18 {
                value = value.wrapping_mul(POW10_U64[frac_digits]).wrapping_add(frac_value);
            }
            n_digits += frac_digits;
            scale = self.pos - frac_start;
        }
        match self.buf.get(self.pos) {
            None => return Err(DecodeError::Incomplete),
            Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') => {}
            Some(_) if int_digits > 0 && n_digits <= 18 && (scale > 0 || self.buf.get(self.pos - 1) != Some(&b'.')) => {
                // n_digits <= 18, so `value` < 10^18 fits an i64 and `scale` <= 18.
                return Decimal::new(value as i64, scale as u8)
                    .map_err(|error| DecodeError::Number { at: offset(start), error });
            }
            Some(_) => {}
        }
        self.pos = start;
        let (token, at) = self.number_token()?;
        Decimal::parse_bytes(token).map_err(|error| DecodeError::Number { at: offset(at), error })
    }

    /// Consumes ASCII digits: their value (wrapping past 20 digits) and count.
    #[inline]
    fn digits(&mut self) -> (u64, usize) {
        let start = self.pos;
        let mut value: u64 = 0;
        while let Some(&b) = self.buf.get(self.pos) {
            let digit = b.wrapping_sub(b'0');
            if digit > 9 {
                break;
            }
            value = value.wrapping_mul(10).wrapping_add(u64::from(digit));
            self.pos += 1;
        }
        (value, self.pos - start)
    }

    /// A non-negative integer (ids, timestamps).
    #[inline]
    pub(crate) fn u64(&mut self) -> Result<u64, DecodeError> {
        self.ws();
        let start = self.pos;
        let (value, n_digits) = self.digits();
        let syntax = DecodeError::Number { at: offset(start), error: NumberError::Syntax };
        match self.buf.get(self.pos) {
            None => Err(DecodeError::Incomplete),
            Some(b'-' | b'+' | b'.' | b'e' | b'E') => Err(syntax),
            Some(_) if n_digits == 0 => Err(self.unexpected("number")),
            Some(_) if n_digits < 20 => Ok(value),
            Some(_) => {
                // 20 digits may still fit; recompute with checks.
                let mut checked: u64 = 0;
                for &b in &self.buf[start..self.pos] {
                    checked = checked
                        .checked_mul(10)
                        .and_then(|v| v.checked_add(u64::from(b - b'0')))
                        .ok_or(DecodeError::Number { at: offset(start), error: NumberError::Overflow })?;
                }
                Ok(checked)
            }
        }
    }

    /// `null` if present (consumed), for optional members.
    #[inline]
    pub(crate) fn null(&mut self) -> bool {
        self.ws();
        self.eat_prefix(b"null")
    }

    /// Skips one value of any type. Iterative; nesting deeper than 64 is refused.
    pub(crate) fn skip_value(&mut self) -> Result<(), DecodeError> {
        // Bit i of `stack` is 1 when the container at depth i+1 is an object.
        let mut stack: u64 = 0;
        let mut depth: u32 = 0;
        loop {
            match self.peek() {
                None => return Err(DecodeError::Incomplete),
                Some(b'"') => self.skip_string()?,
                Some(open @ (b'{' | b'[')) => {
                    if depth == MAX_DEPTH {
                        return Err(self.unexpected("shallower nesting"));
                    }
                    self.pos += 1;
                    stack = (stack << 1) | u64::from(open == b'{');
                    depth += 1;
                    if open == b'{' {
                        if self.peek() == Some(b'}') {
                            self.pos += 1;
                            stack >>= 1;
                            depth -= 1;
                        } else {
                            self.skip_string()?;
                            self.expect(b':', "':'")?;
                            continue;
                        }
                    } else if self.peek() == Some(b']') {
                        self.pos += 1;
                        stack >>= 1;
                        depth -= 1;
                    } else {
                        continue;
                    }
                }
                Some(b't') => self.literal(b"true")?,
                Some(b'f') => self.literal(b"false")?,
                Some(b'n') => self.literal(b"null")?,
                Some(_) => {
                    self.number_token()?;
                }
            }
            // After a complete value: close containers or move to the next item.
            loop {
                if depth == 0 {
                    return Ok(());
                }
                let in_object = stack & 1 == 1;
                let close = if in_object { b'}' } else { b']' };
                if self.next_item(close, "',' or a closing bracket")? {
                    if in_object {
                        self.skip_string()?;
                        self.expect(b':', "':'")?;
                    }
                    break;
                }
                stack >>= 1;
                depth -= 1;
            }
        }
    }

    fn literal(&mut self, text: &[u8]) -> Result<(), DecodeError> {
        if self.eat_prefix(text) {
            Ok(())
        } else if text.starts_with(self.rest()) {
            Err(DecodeError::Incomplete)
        } else {
            Err(self.unexpected("a JSON value"))
        }
    }

    fn skip_string(&mut self) -> Result<(), DecodeError> {
        self.expect(b'"', "string")?;
        // Eight bytes at a time to the next quote, backslash or control byte; a control byte
        // is passed over (skipping is lenient, as the byte-wise loop was).
        loop {
            let rest = self.rest();
            let len = string_end(rest).ok_or(DecodeError::Incomplete)?;
            match rest[len] {
                b'"' => {
                    self.pos += len + 1;
                    return Ok(());
                }
                b'\\' => self.pos += len + 2,
                _ => self.pos += len + 1,
            }
        }
    }

    /// Fails unless only whitespace is left.
    pub(crate) fn end(&mut self) -> Result<(), DecodeError> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self.unexpected("end of frame")),
        }
    }
}

/// Byte offsets fit `u32` for any frame we accept (Deribit caps frames at 32 kB); larger
/// offsets saturate.
pub(crate) fn offset(pos: usize) -> u32 {
    u32::try_from(pos).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_nested_values() {
        let text = br#" {"a":[1,{"b":"x\"y"},[],{}],"c":true,"d":null} ,"#;
        let mut s = Scanner::new(text);
        s.skip_value().unwrap();
        assert_eq!(s.peek(), Some(b','));
        let mut s = Scanner::new(br#"[1,2"#);
        assert_eq!(s.skip_value(), Err(DecodeError::Incomplete));
        let deep = "[".repeat(100);
        assert!(Scanner::new(deep.as_bytes()).skip_value().is_err());
    }

    fn scan_decimal(text: &str) -> Result<Decimal, DecodeError> {
        // A delimiter after the number, as in a frame.
        let framed = format!("{text},");
        Scanner::new(framed.as_bytes()).decimal()
    }

    #[test]
    fn fast_decimal_agrees_with_core() {
        for text in [
            "0",
            "4.0",
            "0.0005",
            "64250.5",
            "123456789012345678",
            "1234567890123456789",
            "12345678901234567.89",
            "1e3",
            "-2.5",
            "007",
            "1.",
            ".5",
            "1.2.3",
            "0.000000000000000001",
            "99999999999999999999",
        ] {
            let core = Decimal::parse(text).map_err(|error| DecodeError::Number { at: 0, error });
            assert_eq!(scan_decimal(text), core, "{text}");
        }
        assert_eq!(Scanner::new(b"12").decimal(), Err(DecodeError::Incomplete));
        assert!(matches!(Scanner::new(b"x,").decimal(), Err(DecodeError::Unexpected { at: 0, .. })));
    }

    #[test]
    fn integers() {
        let u = |text: &str| Scanner::new(text.as_bytes()).u64();
        assert_eq!(u("1626993724318,"), Ok(1_626_993_724_318));
        assert_eq!(u("18446744073709551615,"), Ok(u64::MAX));
        assert!(matches!(u("18446744073709551616,"), Err(DecodeError::Number { error: NumberError::Overflow, .. })));
        assert!(matches!(u("1.5,"), Err(DecodeError::Number { error: NumberError::Syntax, .. })));
        assert!(matches!(u("-1,"), Err(DecodeError::Number { error: NumberError::Syntax, .. })));
        assert_eq!(u("12"), Err(DecodeError::Incomplete));
    }

    proptest::proptest! {
        #[test]
        fn scanned_decimals_equal_core(text in "-?[0-9]{0,21}(\\.[0-9]{0,21})?([eE][-+]?[0-9]{1,3})?") {
            let core = Decimal::parse(&text);
            let scanned = scan_decimal(&text);
            match (core, scanned) {
                (Ok(a), Ok(b)) => proptest::prop_assert_eq!(a, b),
                (Err(_), Err(_)) => {}
                (a, b) => proptest::prop_assert!(false, "{text}: core {a:?}, scanner {b:?}"),
            }
        }

        #[test]
        fn skip_string_matches_naive(body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40)) {
            // The byte-wise rule: a backslash takes the next byte with it, a quote ends.
            let mut frame = vec![b'"'];
            frame.extend_from_slice(&body);
            let mut naive = None;
            let mut i = 1;
            while i < frame.len() {
                match frame[i] {
                    b'"' => { naive = Some(i + 1); break; }
                    b'\\' => i += 2,
                    _ => i += 1,
                }
            }
            let mut s = Scanner::new(&frame);
            match (s.skip_string(), naive) {
                (Ok(()), Some(end)) => proptest::prop_assert_eq!(s.pos, end),
                (Err(DecodeError::Incomplete), None) => {}
                (got, want) => proptest::prop_assert!(false, "{got:?} against {want:?}"),
            }
        }

    }

    #[test]
    fn strings_borrow_without_escapes() {
        let mut s = Scanner::new(br#""abc" "a\"b""#);
        assert_eq!(s.str(), Ok("abc"));
        assert!(matches!(s.str(), Err(DecodeError::Unexpected { at: 8, .. })));
    }
}
