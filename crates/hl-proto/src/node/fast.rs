//! The one-pass scanner for order-status and raw-diff lines in the exact shape hl-node writes.
//!
//! Owns: a byte cursor over one line that expects hl-node's field order, no whitespace and no
//! escapes, and fills the same borrowed types the general (serde) decoder produces, without
//! allocating (the caller's `Vec` is reused).
//! Must not: accept anything the general decoder would decode differently or reject. Whatever
//! is unexpected (another field order, whitespace, an escape, a leading zero, an unknown field,
//! a duplicate, a number that overflows) makes it give up on the whole line (`None`, `out` left
//! as it was) so the caller decodes the line with [`super::TypedBatch`]/[`super::Batch`]. Giving
//! up is always safe; only a line it fully understands is taken from here.
//!
//! Most orders are plain limit orders, and most strings of a field have one length (addresses,
//! hashes, times, cloids): those parts are matched first as one literal of words
//! (`PLAIN_MIDDLE`, `LIMIT_MIDDLE`, `NO_HASH_NO_BUILDER`) or as a string of the expected
//! length (`Cursor::exact_str_span`), whose checks do not wait for each other; when they do
//! not match, the field-by-field walk reads the same bytes, so what is accepted is unchanged.
//!
//! Values the books do not use (`hash`, `builder`, `children`) are skipped by a strict, small
//! validator that accepts a subset of JSON (strings without escapes, integers, literals, arrays
//! and objects of those) and gives up on the rest.
//!
//! Why one file: the literal matches and the field-by-field walk must accept exactly the same
//! bytes, and each give-up rule is easiest to check beside the match it guards.

use std::borrow::Cow;

use ticktrade_core::POW10_U64;

use super::{BookDiff, NodeOrder, OrderStatus, RawBookDiff, status_may_rest};

/// The wrapper of a line: `{"local_time":…,"block_time":…,"block_number":…,"events":[`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header<'a> {
    pub local_time: &'a str,
    pub block_time: &'a str,
    pub block_number: u64,
}

/// Deepest nesting the skipper follows (serde_json's own limit is 128).
const MAX_DEPTH: u32 = 32;

struct Cursor<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
}

/// SWAR: a byte of `x` equal to `b`, or below 0x20, sets that byte's high bit.
#[inline]
fn special_in(x: u64) -> u64 {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let has = |b: u8| {
        let y = x ^ (LO * u64::from(b));
        y.wrapping_sub(LO) & !y & HI
    };
    has(b'"') | has(b'\\') | (x.wrapping_sub(LO * 0x20) & !x & HI)
}

/// How many of the bytes of `x` (little-endian: from its lowest) are ASCII digits before the
/// first that is not (8 when all are).
#[inline]
fn digits_in(x: u64) -> usize {
    const HI: u64 = 0x8080_8080_8080_8080;
    // A digit becomes 0..=9; any other byte 10 or more (or has its high bit set), and adding
    // 0x76 sets the high bit of exactly those. A carry out of a byte only reaches the bytes
    // above it, after the first non-digit.
    let v = x ^ ZEROS;
    let not_digit = (v.wrapping_add(0x7676_7676_7676_7676) | v) & HI;
    (not_digit.trailing_zeros() / 8) as usize
}

/// Eight `b'0'`s.
const ZEROS: u64 = 0x3030_3030_3030_3030;

/// The value of eight digits (bytes 0..=9), the most significant in the lowest byte. A
/// shorter number is shifted up, its missing leading digits zeros: `(x - ZEROS) << 8 * (8 - n)`
/// (a borrow of the subtraction from the non-digit bytes above only reaches bytes above them).
#[inline]
fn eight_digits(x: u64) -> u64 {
    let x = (x.wrapping_mul(10) + (x >> 8)) & 0x00ff_00ff_00ff_00ff;
    let x = (x.wrapping_mul(100) + (x >> 16)) & 0x0000_ffff_0000_ffff;
    (x.wrapping_mul(10000) + (x >> 32)) & 0xffff_ffff
}

/// The little-endian word of the eight bytes of `bytes` from `at` (the caller checked that
/// they are there).
#[inline(always)]
fn word(bytes: &[u8], at: usize) -> u64 {
    let mut w = [0; 8];
    w.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(w)
}

/// The bytes that follow an order's `timestamp` when it is a plain limit order (what nearly
/// every order is: hl-node writes these six fields so for all but trigger orders), up to the
/// value of `reduceOnly`. Matched in one comparison of words, whose loads do not wait for
/// each other, instead of six fields one after the other.
const PLAIN_MIDDLE: [u8; 112] =
    *br#","triggerCondition":"N/A","isTrigger":false,"triggerPx":"0.0","children":[],"isPositionTpsl":false,"reduceOnly":"#;

/// [`PLAIN_MIDDLE`] of an order that does not only reduce, of type `Limit` (nearly all), up
/// to the value of `origSz`.
const LIMIT_MIDDLE: [u8; 147] = *br#","triggerCondition":"N/A","isTrigger":false,"triggerPx":"0.0","children":[],"isPositionTpsl":false,"reduceOnly":false,"orderType":"Limit","origSz":"#;

/// What follows a status's `user` when it has neither hash nor builder (all statuses but
/// `open` ones, nearly), up to the value of `status`.
const NO_HASH_NO_BUILDER: [u8; 37] = *br#","hash":null,"builder":null,"status":"#;

/// What follows a status's `hash` when it has no builder, up to the value of `status`.
const NO_BUILDER: [u8; 25] = *br#","builder":null,"status":"#;

impl<'a> Cursor<'a> {
    fn new(text: &'a str) -> Cursor<'a> {
        Cursor { text, bytes: text.as_bytes(), at: 0 }
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// Consumes exactly `lit`. An array, so the comparison is a few loads of known width (a
    /// slice comparison called `memcmp`, 11% of decoding).
    #[inline]
    fn lit<const N: usize>(&mut self, lit: &[u8; N]) -> Option<()> {
        let end = self.at.checked_add(N)?;
        let got: &[u8; N] = self.bytes.get(self.at..end)?.try_into().ok()?;
        if got == lit {
            self.at = end;
            Some(())
        } else {
            None
        }
    }

    /// Consumes exactly `lit` when the line has it here, comparing eight bytes a step (the
    /// last step overlapping the one before) and deciding once at the end: for long literals,
    /// where [`Cursor::lit`]'s array comparison becomes a call.
    #[inline(always)]
    fn long_lit<const N: usize>(&mut self, lit: &[u8; N]) -> Option<()> {
        const { assert!(N >= 8) };
        let got = self.bytes.get(self.at..self.at.checked_add(N)?)?;
        let mut diff = 0;
        let mut i = 0;
        while i + 8 < N {
            diff |= word(got, i) ^ word(lit, i);
            i += 8;
        }
        diff |= word(got, N - 8) ^ word(lit, N - 8);
        if diff == 0 {
            self.at += N;
            Some(())
        } else {
            None
        }
    }

    /// The span (quotes excluded) of a string of exactly `N` bytes without escapes or control
    /// characters at the cursor, and the cursor after it; `None` (cursor unchanged) when the
    /// string here is of another length, or is not one of those. Its checks do not wait for
    /// each other, where [`Cursor::str`] finds the end a step at a time: for the strings that
    /// nearly always have one length (addresses, hashes, times, cloids).
    #[inline(always)]
    fn exact_str_span<const N: usize>(&mut self) -> Option<(usize, usize)> {
        let start = self.at.checked_add(1)?;
        let end = start + N;
        // The opening quote, the N bytes and the closing quote; at least 8 bytes from `start`.
        let window = self.bytes.get(self.at..(end + 1).max(start + 8))?;
        if window[0] != b'"' || window[N + 1] != b'"' {
            return None;
        }
        let hit = if N < 8 {
            special_in(word(window, 1)) & ((1u64 << (8 * N)) - 1)
        } else {
            let mut hit = 0;
            let mut i = 1;
            while i + 8 < N + 1 {
                hit |= special_in(word(window, i));
                i += 8;
            }
            hit | special_in(word(window, N + 1 - 8))
        };
        if hit != 0 {
            return None;
        }
        self.at = end + 1;
        Some((start, end))
    }

    /// [`Cursor::str`], trying first a string of exactly `N` bytes ([`Cursor::exact_str_span`]).
    #[inline(always)]
    fn str_of<const N: usize>(&mut self) -> Option<&'a str> {
        match self.exact_str_span::<N>() {
            Some((start, end)) => self.text.get(start..end),
            None => self.str(),
        }
    }

    /// Walks a string as [`Cursor::str`] accepts it, trying first one of exactly `N` bytes,
    /// keeping nothing.
    #[inline(always)]
    fn skip_str_of<const N: usize>(&mut self) -> Option<()> {
        match self.exact_str_span::<N>() {
            Some(_) => Some(()),
            None => self.str().map(drop),
        }
    }

    /// `null` or [`Cursor::str_of`].
    #[inline(always)]
    fn opt_str_of<const N: usize>(&mut self) -> Option<Option<&'a str>> {
        if self.peek()? == b'n' {
            self.lit(b"null")?;
            Some(None)
        } else {
            self.str_of::<N>().map(Some)
        }
    }

    /// `null` or [`Cursor::skip_str_of`].
    #[inline(always)]
    fn skip_opt_str_of<const N: usize>(&mut self) -> Option<()> {
        if self.peek()? == b'n' { self.lit(b"null") } else { self.skip_str_of::<N>() }
    }

    /// An order's fields from `triggerCondition` up to the key of `reduceOnly` (for an order
    /// that is not [`LIMIT_MIDDLE`]): `triggerCondition`, `isTrigger`, `triggerPx` and
    /// `isPositionTpsl`, as [`PLAIN_MIDDLE`] when it matches, else read one by one. Shared by
    /// the order kept and the order walked, so both accept the same bytes.
    #[inline(always)]
    fn middle(&mut self) -> Option<(&'a str, bool, &'a str, bool)> {
        if self.long_lit(&PLAIN_MIDDLE).is_some() {
            return Some(("N/A", false, "0.0", false));
        }
        self.lit(b",\"triggerCondition\":")?;
        let trigger_condition = self.str()?;
        self.lit(b",\"isTrigger\":")?;
        let is_trigger = self.bool()?;
        self.lit(b",\"triggerPx\":")?;
        let trigger_px = self.str()?;
        self.lit(b",\"children\":")?;
        self.skip(0)?;
        self.lit(b",\"isPositionTpsl\":")?;
        let is_position_tpsl = self.bool()?;
        self.lit(b",\"reduceOnly\":")?;
        Some((trigger_condition, is_trigger, trigger_px, is_position_tpsl))
    }

    /// A string without escapes or control characters, quotes included; its text.
    #[inline(always)]
    fn str(&mut self) -> Option<&'a str> {
        self.lit(b"\"")?;
        let start = self.at;
        let mut i = start;
        while let Some(chunk) = self.bytes.get(i..i + 8) {
            let word = u64::from_le_bytes(chunk.try_into().ok()?);
            let hit = special_in(word);
            if hit != 0 {
                i += (hit.trailing_zeros() / 8) as usize;
                break;
            }
            i += 8;
        }
        loop {
            let c = *self.bytes.get(i)?;
            if c == b'"' {
                break;
            }
            if c == b'\\' || c < 0x20 {
                return None;
            }
            i += 1;
        }
        self.at = i + 1;
        self.text.get(start..i)
    }

    /// `null` or a string.
    #[inline(always)]
    fn opt_str(&mut self) -> Option<Option<&'a str>> {
        if self.peek()? == b'n' {
            self.lit(b"null")?;
            Some(None)
        } else {
            self.str().map(Some)
        }
    }

    /// An unsigned integer as JSON writes it (no leading zero) that fits a `u64`: eight
    /// digits a step ([`digits_in`], [`eight_digits`]) when the line has 16 more bytes and
    /// the number at most 16 digits (oids and timestamps: 12-13), else [`Cursor::u64_slow`].
    #[inline(always)]
    fn u64(&mut self) -> Option<u64> {
        let at = self.at;
        let Some(chunk) = self.bytes.get(at..at + 16) else {
            return self.u64_slow();
        };
        let (a, b) = chunk.split_at(8);
        let (a, b) = (u64::from_le_bytes(a.try_into().ok()?), u64::from_le_bytes(b.try_into().ok()?));
        let n_a = digits_in(a);
        if n_a == 0 || (a & 0xff == u64::from(b'0') && n_a > 1) {
            // Not a number, or a leading zero (`0` alone is read by the slow path).
            return if n_a == 0 { None } else { self.u64_slow() };
        }
        if n_a < 8 {
            self.at = at + n_a;
            return Some(eight_digits(a.wrapping_sub(ZEROS) << (8 * (8 - n_a))));
        }
        let n_b = digits_in(b);
        if n_b == 8 {
            return self.u64_slow();
        }
        self.at = at + 8 + n_b;
        let low = if n_b == 0 { 0 } else { eight_digits(b.wrapping_sub(ZEROS) << (8 * (8 - n_b))) };
        Some(eight_digits(a.wrapping_sub(ZEROS)) * POW10_U64[n_b] + low)
    }

    /// [`Cursor::u64`] a digit at a time.
    fn u64_slow(&mut self) -> Option<u64> {
        let first = self.peek()?;
        if !first.is_ascii_digit() {
            return None;
        }
        let mut value = u64::from(first - b'0');
        self.at += 1;
        if first == b'0' {
            return if self.peek().is_some_and(|c| c.is_ascii_digit()) { None } else { Some(0) };
        }
        // Up to 19 digits cannot overflow (10^19 - 1 < u64::MAX); only a 20th is checked.
        let limit = self.at + 18;
        while let Some(c) = self.peek().filter(u8::is_ascii_digit) {
            if self.at >= limit {
                value = value.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
            } else {
                value = value * 10 + u64::from(c - b'0');
            }
            self.at += 1;
        }
        Some(value)
    }

    #[inline(always)]
    fn bool(&mut self) -> Option<bool> {
        match self.peek()? {
            b't' => self.lit(b"true").map(|()| true),
            b'f' => self.lit(b"false").map(|()| false),
            _ => None,
        }
    }

    /// Skips one value of the accepted JSON subset.
    fn skip(&mut self, depth: u32) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.str().map(drop),
            b'n' => self.lit(b"null"),
            b't' | b'f' => self.bool().map(drop),
            b'0'..=b'9' => self.u64().map(drop),
            b'[' => {
                self.at += 1;
                if self.peek()? == b']' {
                    self.at += 1;
                    return Some(());
                }
                loop {
                    self.skip(depth + 1)?;
                    match self.peek()? {
                        b',' => self.at += 1,
                        b']' => {
                            self.at += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            b'{' => {
                self.at += 1;
                if self.peek()? == b'}' {
                    self.at += 1;
                    return Some(());
                }
                loop {
                    self.str()?;
                    self.lit(b":")?;
                    self.skip(depth + 1)?;
                    match self.peek()? {
                        b',' => self.at += 1,
                        b'}' => {
                            self.at += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            _ => None,
        }
    }

    fn header(&mut self) -> Option<Header<'a>> {
        self.lit(b"{\"local_time\":")?;
        let local_time = self.str()?;
        self.lit(b",\"block_time\":")?;
        let block_time = self.str()?;
        self.lit(b",\"block_number\":")?;
        let block_number = self.u64()?;
        self.lit(b",\"events\":[")?;
        Some(Header { local_time, block_time, block_number })
    }

    /// Calls `event` for every element of the events array, then checks the line's end.
    fn events(&mut self, mut event: impl FnMut(&mut Cursor<'a>) -> Option<()>) -> Option<()> {
        if self.peek()? == b']' {
            self.at += 1;
        } else {
            loop {
                event(self)?;
                match self.peek()? {
                    b',' => self.at += 1,
                    b']' => {
                        self.at += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        self.lit(b"}")?;
        // serde_json accepts trailing whitespace only.
        self.bytes[self.at..].iter().all(|c| matches!(c, b' ' | b'\n' | b'\r' | b'\t')).then_some(())
    }

    fn order(&mut self) -> Option<NodeOrder<'a>> {
        self.lit(b"{\"coin\":")?;
        let coin = self.str()?;
        self.lit(b",\"side\":")?;
        let side = self.str_of::<1>()?;
        self.lit(b",\"limitPx\":")?;
        let limit_px = self.str()?;
        self.lit(b",\"sz\":")?;
        let sz = self.str()?;
        self.lit(b",\"oid\":")?;
        let oid = self.u64()?;
        self.lit(b",\"timestamp\":")?;
        let timestamp = self.u64()?;
        let limit = self.long_lit(&LIMIT_MIDDLE).is_some();
        let (trigger_condition, is_trigger, trigger_px, is_position_tpsl, reduce_only, order_type) = if limit {
            ("N/A", false, "0.0", false, false, "Limit")
        } else {
            let (trigger_condition, is_trigger, trigger_px, is_position_tpsl) = self.middle()?;
            let reduce_only = self.bool()?;
            self.lit(b",\"orderType\":")?;
            let order_type = self.str_of::<5>()?;
            self.lit(b",\"origSz\":")?;
            (trigger_condition, is_trigger, trigger_px, is_position_tpsl, reduce_only, order_type)
        };
        let orig_sz = self.opt_str()?;
        self.lit(b",\"tif\":")?;
        let tif = self.opt_str_of::<3>()?;
        self.lit(b",\"cloid\":")?;
        let cloid = self.opt_str_of::<34>()?;
        self.lit(b"}")?;
        Some(NodeOrder {
            coin: Cow::Borrowed(coin),
            side,
            limit_px,
            sz,
            oid,
            timestamp,
            trigger_condition: Cow::Borrowed(trigger_condition),
            is_trigger,
            trigger_px,
            is_position_tpsl,
            reduce_only,
            order_type: Cow::Borrowed(order_type),
            orig_sz,
            tif,
            cloid,
        })
    }

    /// Walks an order of the exact shape [`Cursor::order`] reads, keeping nothing: for a
    /// status that cannot rest when only those are wanted (the general decoder then checks
    /// only that the order is JSON; this shape is a subset of that).
    fn skip_order(&mut self) -> Option<()> {
        self.lit(b"{\"coin\":")?;
        self.str()?;
        self.lit(b",\"side\":")?;
        self.skip_str_of::<1>()?;
        self.lit(b",\"limitPx\":")?;
        self.str()?;
        self.lit(b",\"sz\":")?;
        self.str()?;
        self.lit(b",\"oid\":")?;
        self.u64()?;
        self.lit(b",\"timestamp\":")?;
        self.u64()?;
        if self.long_lit(&LIMIT_MIDDLE).is_none() {
            self.middle()?;
            self.bool()?;
            self.lit(b",\"orderType\":")?;
            self.skip_str_of::<5>()?;
            self.lit(b",\"origSz\":")?;
        }
        self.opt_str()?;
        self.lit(b",\"tif\":")?;
        self.skip_opt_str_of::<3>()?;
        self.lit(b",\"cloid\":")?;
        self.skip_opt_str_of::<34>()?;
        self.lit(b"}")
    }

    /// One status; `Some(None)` when it cannot rest and `all` is false (its order is only
    /// walked, not kept).
    fn status(&mut self, all: bool) -> Option<Option<OrderStatus<'a>>> {
        self.lit(b"{\"time\":")?;
        let time = self.str_of::<29>()?;
        self.lit(b",\"user\":")?;
        let user = self.str_of::<42>()?;
        if self.long_lit(&NO_HASH_NO_BUILDER).is_none() {
            self.lit(b",\"hash\":")?;
            match self.peek()? {
                b'"' => self.skip_str_of::<66>()?,
                _ => self.skip(0)?,
            }
            if self.long_lit(&NO_BUILDER).is_none() {
                self.lit(b",\"builder\":")?;
                self.skip(0)?;
                self.lit(b",\"status\":")?;
            }
        }
        let status = self.str()?;
        self.lit(b",\"order\":")?;
        if !all && !status_may_rest(status) {
            self.skip_order()?;
            self.lit(b"}")?;
            return Some(None);
        }
        let order = self.order()?;
        self.lit(b"}")?;
        Some(Some(OrderStatus { time, user, status: Cow::Borrowed(status), order }))
    }

    fn diff(&mut self) -> Option<BookDiff<'a>> {
        self.lit(b"{\"user\":")?;
        let user = self.str_of::<42>()?;
        self.lit(b",\"oid\":")?;
        let oid = self.u64()?;
        self.lit(b",\"coin\":")?;
        let coin = self.str()?;
        self.lit(b",\"side\":")?;
        let side = self.str_of::<1>()?;
        self.lit(b",\"px\":")?;
        let px = self.str()?;
        self.lit(b",\"raw_book_diff\":")?;
        let raw_book_diff = match self.peek()? {
            b'"' => {
                self.lit(b"\"remove\"")?;
                RawBookDiff::Remove
            }
            _ => {
                self.lit(b"{\"")?;
                match self.peek()? {
                    b'n' => {
                        self.lit(b"new\":{\"sz\":")?;
                        let sz = self.str()?;
                        self.lit(b"}}")?;
                        RawBookDiff::New { sz }
                    }
                    _ => {
                        self.lit(b"update\":{\"origSz\":")?;
                        let orig_sz = self.str()?;
                        self.lit(b",\"newSz\":")?;
                        let new_sz = self.str()?;
                        self.lit(b"}}")?;
                        RawBookDiff::Update { orig_sz, new_sz }
                    }
                }
            }
        };
        self.lit(b"}")?;
        Some(BookDiff { user, oid, coin: Cow::Borrowed(coin), side: Some(side), px, raw_book_diff })
    }
}

/// Appends the statuses of an order-status line to `out`: all of them with `all`, else only
/// those that may rest (`open`/`triggered`), exactly as [`super::TypedBatch`] of
/// [`OrderStatus`] (or of [`super::RestingStatus`]) would. `None` (and `out` unchanged) when
/// the line is not in hl-node's exact shape: decode it with the general decoder then.
pub fn statuses<'a>(line: &'a str, all: bool, out: &mut Vec<OrderStatus<'a>>) -> Option<Header<'a>> {
    let len = out.len();
    let mut cursor = Cursor::new(line);
    let header = cursor.header();
    let done = header.and_then(|_| status_events(&mut cursor, all, out));
    if done.is_none() {
        out.truncate(len);
        return None;
    }
    header
}

/// The statuses from the cursor's event to the end of the line into `out` (see [`statuses`]).
fn status_events<'a>(cursor: &mut Cursor<'a>, all: bool, out: &mut Vec<OrderStatus<'a>>) -> Option<()> {
    cursor.events(|c| {
        if let Some(status) = c.status(all)? {
            out.push(status);
        }
        Some(())
    })
}

/// The first byte offset at or after `from` (e.g. the middle) of a statuses line where an
/// event may start (just after `},` and before `{"time":"`), to decode the line in two parts
/// on two threads with [`statuses_head`] and [`statuses_tail`]. Only a guess: the pattern may
/// sit inside an event (in `children` or `builder`); [`statuses_head`] proves or refutes it.
pub fn statuses_split(line: &str, from: usize) -> Option<usize> {
    const PATTERN: &[u8; 11] = b"},{\"time\":\"";
    let bytes = line.as_bytes();
    let from = from.saturating_sub(2);
    let mut at = from;
    // Candidates by the pattern's first two bytes (memchr-like), then the rest compared.
    while let Some(i) = bytes.get(at..)?.iter().position(|&c| c == b'}') {
        at += i;
        let window: &[u8; 11] = bytes.get(at..at + PATTERN.len())?.try_into().ok()?;
        if window == PATTERN {
            return Some(at + 2);
        }
        at += 1;
    }
    None
}

/// [`statuses`] of the events before `split` only: `None` (and `out` unchanged) unless the
/// line's header and events decode in hl-node's exact shape up to an event boundary exactly
/// at `split` (an event followed by `,` ends at `split`). With [`statuses_tail`] from the
/// same `split`, the two parts hold exactly what [`statuses`] gives for the whole line; when
/// either gives up, decode the whole line. More parts: [`statuses_middle`] between two
/// boundaries.
pub fn statuses_head<'a>(line: &'a str, split: usize, all: bool, out: &mut Vec<OrderStatus<'a>>) -> Option<Header<'a>> {
    let len = out.len();
    let mut cursor = Cursor::new(line);
    let header = cursor.header();
    let done = header.and_then(|_| {
        if cursor.peek()? == b']' {
            return None;
        }
        status_events_until(&mut cursor, split, all, out)
    });
    if done.is_none() {
        out.truncate(len);
        return None;
    }
    header
}

/// [`statuses`] of the events from `from` up to `to`, two guessed event boundaries
/// ([`statuses_split`]): `None` (and `out` unchanged) unless an event starts at `from` and the
/// events decode in hl-node's exact shape up to a boundary exactly at `to`. A line cut at
/// boundaries `s1 < s2 < … < sn` decodes as [`statuses_head`] up to `s1`, `statuses_middle`
/// from each `si` to `si+1`, and [`statuses_tail`] from `sn`: when every part decodes, each
/// boundary is proven by the part before it (which started at a proven one and ended exactly
/// there), so the parts hold exactly what [`statuses`] gives for the whole line; when any
/// gives up, decode the whole line.
pub fn statuses_middle<'a>(
    line: &'a str,
    from: usize,
    to: usize,
    all: bool,
    out: &mut Vec<OrderStatus<'a>>,
) -> Option<()> {
    let len = out.len();
    let mut cursor = Cursor::new(line);
    cursor.at = from;
    let done = cursor
        .bytes
        .get(from)
        .filter(|&&c| c == b'{' && to > from)
        .and_then(|_| status_events_until(&mut cursor, to, all, out));
    if done.is_none() {
        out.truncate(len);
    }
    done
}

/// The statuses from the cursor's event (the first of a non-empty list) on, up to the event
/// boundary `to`: `Some` when an event followed by `,` ends exactly there.
fn status_events_until<'a>(
    cursor: &mut Cursor<'a>,
    to: usize,
    all: bool,
    out: &mut Vec<OrderStatus<'a>>,
) -> Option<()> {
    loop {
        if let Some(status) = cursor.status(all)? {
            out.push(status);
        }
        if cursor.peek()? != b',' {
            return None;
        }
        cursor.at += 1;
        if cursor.at >= to {
            return (cursor.at == to).then_some(());
        }
    }
}

/// [`statuses`] of the events from `split` (see [`statuses_head`]) to the end of the line;
/// `None` (and `out` unchanged) when that part is not in hl-node's exact shape.
pub fn statuses_tail<'a>(line: &'a str, split: usize, all: bool, out: &mut Vec<OrderStatus<'a>>) -> Option<()> {
    let len = out.len();
    let mut cursor = Cursor::new(line);
    cursor.at = split;
    // At least one event follows the comma before `split`, so the events loop starts with one.
    let done = cursor.bytes.get(split).filter(|&&c| c == b'{').and_then(|_| status_events(&mut cursor, all, out));
    if done.is_none() {
        out.truncate(len);
    }
    done
}

/// Appends the diffs of a raw-diff line to `out`, exactly as [`super::TypedBatch`] of
/// [`BookDiff`] would; `None` (and `out` unchanged) when the line is not in hl-node's exact
/// shape.
pub fn diffs<'a>(line: &'a str, out: &mut Vec<BookDiff<'a>>) -> Option<Header<'a>> {
    let len = out.len();
    let mut cursor = Cursor::new(line);
    let header = cursor.header();
    let done = header.and_then(|_| {
        cursor.events(|c| {
            out.push(c.diff()?);
            Some(())
        })
    });
    if done.is_none() {
        out.truncate(len);
        return None;
    }
    header
}

#[cfg(test)]
mod tests;
