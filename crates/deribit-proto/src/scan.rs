//! A small forward-only JSON scanner for the hand-written decoders.
//!
//! Owns: whitespace, punctuation, borrowed strings without escapes, number tokens, skipping
//! any value (with escapes and nesting), and the byte offset every error carries.
//! Must not: allocate, recurse, or panic on any input: nesting is tracked in a bit stack,
//! and every index is checked.

use ticktrade_core::{Decimal, NumberError};

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

    pub(crate) fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or(&[])
    }

    /// Skips `prefix` when the input continues with it exactly (used by fast paths).
    pub(crate) fn eat_prefix(&mut self, prefix: &[u8]) -> bool {
        if self.rest().starts_with(prefix) {
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
            if !matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
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
        match rest.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20) {
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

    /// An exact decimal number.
    #[inline]
    pub(crate) fn decimal(&mut self) -> Result<Decimal, DecodeError> {
        let (token, at) = self.number_token()?;
        parse_decimal(token).map_err(|error| DecodeError::Number { at: offset(at), error })
    }

    /// A non-negative integer (ids, timestamps).
    #[inline]
    pub(crate) fn u64(&mut self) -> Result<u64, DecodeError> {
        let (token, at) = self.number_token()?;
        let mut value: u64 = 0;
        for &b in token {
            if !b.is_ascii_digit() {
                return Err(DecodeError::Number { at: offset(at), error: NumberError::Syntax });
            }
            value = value
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(b - b'0')))
                .ok_or(DecodeError::Number { at: offset(at), error: NumberError::Overflow })?;
        }
        Ok(value)
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
        loop {
            match self.buf.get(self.pos) {
                None => return Err(DecodeError::Incomplete),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(b'\\') => self.pos += 2,
                Some(_) => self.pos += 1,
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

/// Exact decimal parse with a fast path for the plain `123.456` form (no sign, no exponent,
/// at most 18 digits), falling back to `Decimal::parse_bytes` for everything else.
#[inline]
pub(crate) fn parse_decimal(token: &[u8]) -> Result<Decimal, NumberError> {
    if token.len() <= 19 {
        let mut mantissa: i64 = 0;
        let mut scale: u8 = 0;
        let mut seen_dot = false;
        let mut plain = !token.is_empty() && token[0].is_ascii_digit();
        for &b in token {
            match b {
                b'0'..=b'9' => {
                    mantissa = mantissa.wrapping_mul(10).wrapping_add(i64::from(b - b'0'));
                    scale += u8::from(seen_dot);
                }
                b'.' if !seen_dot => seen_dot = true,
                _ => {
                    plain = false;
                    break;
                }
            }
        }
        // 19 bytes hold at most 18 digits when a dot is present; 19 digits may overflow.
        let digits = token.len() - usize::from(seen_dot);
        if plain && digits <= 18 && token.last().is_some_and(u8::is_ascii_digit) {
            return Decimal::new(mantissa, scale);
        }
    }
    Decimal::parse_bytes(token)
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

    #[test]
    fn fast_decimal_agrees_with_core() {
        for text in
            ["0", "4.0", "0.0005", "64250.5", "123456789012345678", "1e3", "-2.5", "007", "1.", ".5", "", "1.2.3"]
        {
            assert_eq!(parse_decimal(text.as_bytes()), Decimal::parse(text), "{text}");
        }
    }

    #[test]
    fn strings_borrow_without_escapes() {
        let mut s = Scanner::new(br#""abc" "a\"b""#);
        assert_eq!(s.str(), Ok("abc"));
        assert!(matches!(s.str(), Err(DecodeError::Unexpected { at: 8, .. })));
    }
}
