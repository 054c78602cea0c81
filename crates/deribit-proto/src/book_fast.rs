//! `FastBookDecoder`: the hot path's decoder for `book.{instrument}.raw` notifications in the
//! exact layout Deribit (and ticktrade's simulator) sends, straight into `LevelUpdate`s in one
//! instrument's ticks and lots. Anything else — another key order, whitespace, escapes,
//! exponents, a stepped tick rule — falls back to [`crate::book::decode_book_units`], so the
//! result is always the same as the general decoder's (property-tested below, errors included).
//!
//! Owns: the fixed-layout scan and the integer conversion of price/amount text to units
//! (`digits × 10^(unit_scale − scale) / unit_mantissa`, divisions by the common constants
//! unrolled so the compiler turns them into multiplies).
//! Must not: allocate beyond `out`'s growth, panic on any input, or accept a frame the general
//! decoder rejects.
//!
//! Why: the general decoder goes through `Decimal` and an `i128` division per number
//! (`Decimal::to_units`), ≈360 ns per 300-byte change frame on the build VM; this path is the
//! hand scanner with a fixed key order of docs/PERFORMANCE.md §2 (69 ns a 316-byte change on the
//! calibration host). Measured by the gateway's `hot_compute` bench
//! (`cargo bench -p ticktrade-gateway --bench hot_compute`), which runs both decoders on the
//! same frames.

use ticktrade_book::l2::{Action, LevelUpdate};
use ticktrade_core::{InstrumentSpec, POW10_U64 as POW10, Price, Qty, Side};

use crate::book::{BookHeader, BookKind, decode_book_units};
use crate::scan::DecodeError;
use crate::words::{leading_digits, load8, same_bytes};

/// A decoder for one instrument's book notifications. `repr(C)`: what the fixed-layout path
/// reads (units, the two constant runs inline) comes first and in few cache lines; the spec,
/// needed only by the general decoder, last.
#[derive(Clone, Debug)]
#[repr(C)]
pub struct FastBookDecoder {
    price: Units,
    qty: Units,
    /// False when the tick rule has steps: validity then depends on the price, so every frame
    /// takes the general path.
    enabled: bool,
    /// Lengths of the two constant runs (0 when the name would need escaping or is too long
    /// for the inline runs: the fixed layout is then never tried).
    head_len: u8,
    instrument_len: u8,
    /// `{"jsonrpc":"2.0","method":"subscription","params":{"channel":"book.NAME.raw","data":{"type":"`
    head: [u8; HEAD_CAP],
    /// `,"instrument_name":"NAME","change_id":`
    instrument: [u8; INSTRUMENT_CAP],
    spec: InstrumentSpec,
    /// `book.NAME.raw`: the fixed layout's header names are this and the spec's name (the
    /// frame's bytes were compared with them, so they need no UTF-8 check).
    channel: String,
}

/// Room for the inline constant runs: instrument names of up to 64 bytes take the fixed path.
const HEAD_CAP: usize = 160;
const INSTRUMENT_CAP: usize = 112;

/// Converts decimal text to integer units of `mantissa / 10^scale`. The division by
/// `mantissa` is exact or refused, so it is done as a multiply by the inverse of its odd part
/// modulo 2^64 after shifting out its factors of two (one multiply and one compare, the same code
/// for every tick and amount unit, no `div`).
#[derive(Clone, Copy, Debug)]
struct Units {
    mantissa: u64,
    scale: u32,
    /// `mantissa.trailing_zeros()`.
    shift: u32,
    /// The inverse of `mantissa >> shift` modulo 2^64.
    inverse: u64,
    /// `u64::MAX / (mantissa >> shift)`: a product above it means "not a multiple".
    limit: u64,
}

impl Units {
    fn new(mantissa: u64, scale: u32) -> Units {
        // A zero mantissa disables the decoder (`enabled`); give it harmless constants.
        let shift = if mantissa == 0 { 0 } else { mantissa.trailing_zeros() };
        let odd = (mantissa >> shift).max(1);
        // Newton's iteration doubles the correct low bits each step: 3 → 6 → … → 96 ≥ 64.
        let mut inverse = odd;
        for _ in 0..5 {
            inverse = inverse.wrapping_mul(2u64.wrapping_sub(odd.wrapping_mul(inverse)));
        }
        Units { mantissa, scale, shift, inverse, limit: u64::MAX / odd }
    }

    /// `n / mantissa` if `mantissa` divides `n`.
    #[inline(always)]
    fn divide_exact(&self, n: u64) -> Option<u64> {
        if n & ((1u64 << self.shift) - 1) != 0 {
            return None;
        }
        let q = (n >> self.shift).wrapping_mul(self.inverse);
        (q <= self.limit).then_some(q)
    }
}

impl FastBookDecoder {
    pub fn new(spec: &InstrumentSpec) -> FastBookDecoder {
        let units = |d: ticktrade_core::Decimal| Units::new(d.mantissa().unsigned_abs(), u32::from(d.scale()));
        let price = units(spec.tick());
        let qty = units(spec.qty_unit);
        let enabled = spec.tick_rule.steps().next().is_none() && price.mantissa > 0 && qty.mantissa > 0;
        let plain = spec.name.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') && spec.name.len() <= 64;
        let (mut head, mut instrument) = ([0u8; HEAD_CAP], [0u8; INSTRUMENT_CAP]);
        let (mut head_len, mut instrument_len) = (0, 0);
        if plain {
            let mut run = Vec::with_capacity(HEAD_CAP);
            run.extend_from_slice(br#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":""#);
            run.extend_from_slice(b"book.");
            run.extend_from_slice(spec.name.as_bytes());
            run.extend_from_slice(b".raw");
            run.extend_from_slice(br#"","data":{"type":""#);
            head[..run.len()].copy_from_slice(&run);
            head_len = run.len() as u8;
            run.clear();
            run.extend_from_slice(br#","instrument_name":""#);
            run.extend_from_slice(spec.name.as_bytes());
            run.extend_from_slice(br#"","change_id":"#);
            instrument[..run.len()].copy_from_slice(&run);
            instrument_len = run.len() as u8;
        }
        FastBookDecoder {
            price,
            qty,
            enabled,
            head_len,
            instrument_len,
            head,
            instrument,
            spec: spec.clone(),
            channel: format!("book.{}.raw", spec.name),
        }
    }

    pub fn spec(&self) -> &InstrumentSpec {
        &self.spec
    }

    /// Loads one byte of every cache line the fixed-layout path reads besides the frame (its
    /// constant runs and the powers-of-ten table) and returns their XOR. Called when a frame
    /// has just arrived, so that cache misses after an idle wait overlap instead of being
    /// taken one by one as the scan reaches each line.
    #[inline]
    pub fn touch(&self) -> u8 {
        touch_lines(self.fixed_head()) ^ touch_lines(self.fixed_instrument()) ^ (POW10[19] as u8)
    }

    #[inline(always)]
    fn fixed_head(&self) -> &[u8] {
        &self.head[..usize::from(self.head_len)]
    }

    #[inline(always)]
    fn fixed_instrument(&self) -> &[u8] {
        &self.instrument[..usize::from(self.instrument_len)]
    }

    /// Decodes a whole notification frame, like `decode_book_units(frame, spec, out)`.
    #[inline]
    #[cfg_attr(target_os = "linux", allow(unsafe_code), unsafe(link_section = "ticktrade_hot"))]
    pub fn decode<'a>(&'a self, frame: &'a [u8], out: &mut Vec<LevelUpdate>) -> Result<BookHeader<'a>, DecodeError> {
        if self.enabled {
            out.clear();
            if let Some(header) = self.fixed(frame, out) {
                return Ok(header);
            }
            out.clear();
            if let Some(header) = self.fast(frame, out) {
                return Ok(header);
            }
        }
        decode_book_units(frame, &self.spec, out)
    }

    /// The layout ticktrade's simulator (and its book encoder) writes, for this decoder's own
    /// instrument on its `raw` channel: `type`, `timestamp`, `prev_change_id` (changes only),
    /// `instrument_name`, `change_id`, `bids`, `asks`. One prefix comparison per constant run
    /// instead of a key search; anything else returns `None` and goes to [`Self::fast`].
    #[inline]
    fn fixed<'a>(&'a self, frame: &'a [u8], out: &mut Vec<LevelUpdate>) -> Option<BookHeader<'a>> {
        if self.head_len == 0 {
            return None;
        }
        let mut c = Cursor { buf: frame, pos: 0 };
        c.run(self.fixed_head())?;
        let kind = if c.eat(br#"change","timestamp":"#) {
            BookKind::Change
        } else if c.eat(br#"snapshot","timestamp":"#) {
            BookKind::Snapshot
        } else {
            return None;
        };
        let timestamp_ms = c.u64()?;
        let prev_change_id = match kind {
            BookKind::Change => {
                c.lit(br#","prev_change_id":"#)?;
                Some(c.u64()?)
            }
            _ => None,
        };
        c.run(self.fixed_instrument())?;
        let change_id = c.u64()?;
        c.lit(br#","bids":["#)?;
        self.entries(&mut c, Side::Buy, out)?;
        c.lit(br#","asks":["#)?;
        self.entries(&mut c, Side::Sell, out)?;
        c.lit(b"}}}")?;
        if c.pos != frame.len() {
            return None;
        }
        // Both names were compared byte for byte with these (valid UTF-8) strings.
        Some(BookHeader {
            channel: &self.channel,
            instrument: &self.spec.name,
            kind,
            change_id,
            prev_change_id,
            timestamp_ms,
        })
    }

    #[cold]
    #[inline(never)]
    fn fast<'a>(&self, frame: &'a [u8], out: &mut Vec<LevelUpdate>) -> Option<BookHeader<'a>> {
        let mut c = Cursor { buf: frame, pos: 0 };
        c.lit(br#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":""#)?;
        let channel = c.plain_str()?;
        if !channel.starts_with("book.") {
            return None;
        }
        c.lit(br#","data":{"#)?;
        let (mut kind, mut timestamp_ms, mut prev_change_id, mut instrument, mut change_id) =
            (None, None, None, None, None);
        // Members in any order (ticktrade's encoder and Deribit use different ones); a key
        // seen twice or any other key sends the frame to the general decoder.
        let mut seen = 0u8;
        loop {
            let bit = if c.eat(br#""type":""#) {
                kind = Some(if c.eat(br#"change""#) {
                    BookKind::Change
                } else if c.eat(br#"snapshot""#) {
                    BookKind::Snapshot
                } else {
                    return None;
                });
                1
            } else if c.eat(br#""timestamp":"#) {
                timestamp_ms = Some(c.u64()?);
                2
            } else if c.eat(br#""prev_change_id":"#) {
                prev_change_id = if c.eat(b"null") { None } else { Some(c.u64()?) };
                4
            } else if c.eat(br#""instrument_name":""#) {
                instrument = Some(c.plain_str()?);
                8
            } else if c.eat(br#""change_id":"#) {
                change_id = Some(c.u64()?);
                16
            } else if c.eat(br#""bids":["#) {
                self.entries(&mut c, Side::Buy, out)?;
                32
            } else if c.eat(br#""asks":["#) {
                self.entries(&mut c, Side::Sell, out)?;
                64
            } else {
                return None;
            };
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            if !c.eat(b",") {
                break;
            }
        }
        c.lit(b"}}}")?;
        if c.pos != frame.len() || seen | 4 != 127 {
            return None;
        }
        let (kind, timestamp_ms, instrument, change_id) = (kind?, timestamp_ms?, instrument?, change_id?);
        Some(BookHeader { channel, instrument, kind, change_id, prev_change_id, timestamp_ms })
    }

    /// `[["new",1.5,10],…]` after the opening `[`, through the closing `]`. Not inlined: one
    /// copy of its code serves both sides and both paths (live, after a wait in `read`, each
    /// distinct line of code is a cache miss; docs/PERFORMANCE.md §8, "Decoder code footprint").
    #[inline(never)]
    #[cfg_attr(target_os = "linux", allow(unsafe_code), unsafe(link_section = "ticktrade_hot"))]
    fn entries(&self, c: &mut Cursor<'_>, side: Side, out: &mut Vec<LevelUpdate>) -> Option<()> {
        if c.eat(b"]") {
            return Some(());
        }
        loop {
            c.lit(b"[\"")?;
            let action = if c.eat(b"change\",") {
                Action::Change
            } else if c.eat(b"new\",") {
                Action::New
            } else if c.eat(b"delete\",") {
                Action::Delete
            } else {
                return None;
            };
            let price = c.units(self.price)?;
            c.lit(b",")?;
            let qty = c.units(self.qty)?;
            out.push(LevelUpdate { side, action, price: Price::from_raw(price), qty: Qty::from_raw(qty) });
            if c.eat(b"],") {
                continue;
            }
            c.lit(b"]]")?;
            return Some(());
        }
    }
}

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    #[inline(always)]
    fn eat(&mut self, lit: &[u8]) -> bool {
        let hit = self.buf.get(self.pos..self.pos + lit.len()) == Some(lit);
        if hit {
            self.pos += lit.len();
        }
        hit
    }

    #[inline(always)]
    fn lit(&mut self, lit: &[u8]) -> Option<()> {
        self.eat(lit).then_some(())
    }

    /// [`Self::lit`] for a run whose length is not a constant (the decoder's inline runs):
    /// compared eight bytes at a time by XOR (no call into `bcmp`), the last word overlapping.
    #[inline(always)]
    fn run(&mut self, run: &[u8]) -> Option<()> {
        let got = self.buf.get(self.pos..self.pos + run.len())?;
        if !same_bytes(got, run) {
            return None;
        }
        self.pos += run.len();
        Some(())
    }

    /// A string body without escapes, through its closing quote.
    #[inline]
    fn plain_str(&mut self) -> Option<&'a str> {
        let rest = self.buf.get(self.pos..)?;
        let len = rest.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        if rest[len] != b'"' {
            return None;
        }
        let text = std::str::from_utf8(&rest[..len]).ok()?;
        self.pos += len + 1;
        Some(text)
    }

    /// Up to 19 digits, no sign, no leading zero (a lone `0` is fine).
    #[inline]
    fn digits(&mut self) -> Option<(u64, usize)> {
        let (value, n) = self.run_of_digits()?;
        if n > 1 && self.buf[self.pos - n] == b'0' {
            return None;
        }
        Some((value, n))
    }

    /// 1 to 19 digits (any leading zeros), eight at a time (SWAR): each step loads eight bytes,
    /// counts the leading digits with a few word operations and converts them with three
    /// multiplies. `None` for no digit or more than 19 (then the general decoder decides).
    #[inline(always)]
    fn run_of_digits(&mut self) -> Option<(u64, usize)> {
        let mut value = 0u64;
        let mut n = 0usize;
        loop {
            let word = load8(self.buf, self.pos + n);
            let k = leading_digits(word);
            if k > 0 {
                value = value.wrapping_mul(POW10[k]).wrapping_add(parse_digits(word, k));
                n += k;
            }
            if k < 8 || n > 19 {
                break;
            }
        }
        if n == 0 || n > 19 {
            return None;
        }
        self.pos += n;
        Some((value, n))
    }

    /// Not inlined: one copy serves every integer of the fixed layout (see [`FastBookDecoder::entries`]).
    #[inline(never)]
    #[cfg_attr(target_os = "linux", allow(unsafe_code), unsafe(link_section = "ticktrade_hot"))]
    fn u64(&mut self) -> Option<u64> {
        // Timestamps (13 digits) and change ids take two words: read them without the loop.
        let first = load8(self.buf, self.pos);
        let k = leading_digits(first);
        if k == 0 || (k > 1 && first as u8 == b'0') {
            return None;
        }
        if k < 8 {
            self.pos += k;
            return Some(parse_digits(first, k));
        }
        let second = load8(self.buf, self.pos + 8);
        let k2 = leading_digits(second);
        let value = match k2 {
            0 => parse_digits(first, 8),
            8 => return self.digits().map(|(v, _)| v),
            _ => parse_digits(first, 8) * POW10[k2] + parse_digits(second, k2),
        };
        self.pos += 8 + k2;
        Some(value)
    }

    /// A JSON number in units of `unit`; `None` if it has an exponent, is off the unit grid,
    /// or does not fit (the general decoder then gives the exact error). Numbers of at most
    /// seven characters (`64250.5`, `1200.0`, `30`) are read from one word ([`Self::short`]).
    /// Not inlined: one copy serves prices and amounts (see [`FastBookDecoder::entries`]).
    #[inline(never)]
    #[cfg_attr(target_os = "linux", allow(unsafe_code), unsafe(link_section = "ticktrade_hot"))]
    fn units(&mut self, unit: Units) -> Option<i64> {
        match self.short() {
            Some((mantissa, scale, len)) => {
                let units = to_units(mantissa, scale, unit)?;
                self.pos += len;
                Some(units)
            }
            None => self.units_any(unit),
        }
    }

    /// A non-negative number that fits in the next eight bytes with the byte after it: `k`
    /// integer digits, optionally a point and `f` fraction digits, `k + 1 + f < 8`. All digits
    /// are gathered into one word and converted with one [`parse_digits`]. Returns the mantissa,
    /// the scale and the text's length without moving; `None` for anything else (a sign, a
    /// leading zero, an exponent, a longer number), which [`Self::units_any`] then reads the
    /// same way the general path always did.
    #[inline(always)]
    fn short(&self) -> Option<(u64, u32, usize)> {
        let word = load8(self.buf, self.pos);
        let k = leading_digits(word);
        if k == 0 || k == 8 || (k > 1 && word as u8 == b'0') {
            return None;
        }
        let int_bytes = word & ((1u64 << (8 * k)) - 1);
        let after = (word >> (8 * k)) as u8;
        if after != b'.' {
            // An integer; an exponent goes to the general path.
            if after | 0x20 == b'e' {
                return None;
            }
            return Some((parse_digits(int_bytes, k), 0, k));
        }
        if k > 6 {
            return None;
        }
        // The bytes after the point, with zeros (non-digits) shifted in at the top.
        let rest = word >> (8 * (k + 1));
        let f = leading_digits(rest);
        if f == 0 || k + 1 + f >= 8 {
            return None;
        }
        if (rest >> (8 * f)) as u8 | 0x20 == b'e' {
            return None;
        }
        let frac_bytes = rest & ((1u64 << (8 * f)) - 1);
        let digits = int_bytes | (frac_bytes << (8 * k));
        Some((parse_digits(digits, k + f), f as u32, k + 1 + f))
    }

    /// [`Self::units`] for any number: digit runs of any length, a sign, exponents refused.
    #[cold]
    #[inline(never)]
    fn units_any(&mut self, unit: Units) -> Option<i64> {
        let negative = self.eat(b"-");
        let (int_part, int_digits) = self.digits()?;
        let (mut mantissa, mut scale) = (int_part, 0u32);
        if self.eat(b".") {
            let (frac, n) = self.frac_digits()?;
            // 18 digits always fit the general decoder's `Decimal`; longer numbers go there.
            if int_digits + n > 18 {
                return None;
            }
            mantissa = mantissa.checked_mul(*POW10.get(n)?)?.checked_add(frac)?;
            scale = u32::try_from(n).ok()?;
        } else if int_digits > 18 {
            return None;
        }
        if matches!(self.buf.get(self.pos), Some(b'e' | b'E')) {
            return None;
        }
        let units = to_units(mantissa, scale, unit)?;
        Some(if negative { -units } else { units })
    }

    /// Digits after a decimal point (at least one, at most 19), leading zeros allowed.
    #[inline]
    fn frac_digits(&mut self) -> Option<(u64, usize)> {
        self.run_of_digits()
    }
}

/// The XOR of the first byte of each 64-byte line of `bytes` (a cheap way to start loading
/// them all; the caller passes the result to `std::hint::black_box`).
#[inline]
pub fn touch_lines(bytes: &[u8]) -> u8 {
    bytes.iter().step_by(64).fold(0, |x, &b| x ^ b)
}

/// The value of the first `k` (1–8) bytes of `word`, all ASCII digits: shifted to the top so
/// that the missing leading digits are zeros, then combined pairwise (2, 4, 8 digits) with
/// three multiplies.
#[inline(always)]
fn parse_digits(word: u64, k: usize) -> u64 {
    let v = (word & 0x0F0F_0F0F_0F0F_0F0F) << (8 * (8 - k));
    let v = (v.wrapping_mul(10).wrapping_add(v >> 8)) & 0x00FF_00FF_00FF_00FF;
    let v = (v.wrapping_mul(100).wrapping_add(v >> 16)) & 0x0000_FFFF_0000_FFFF;
    v.wrapping_mul(10_000).wrapping_add(v >> 32) & 0xFFFF_FFFF
}

/// `mantissa / 10^scale` in units of `unit.mantissa / 10^unit.scale`, if exact and in range.
#[inline(always)]
fn to_units(mantissa: u64, scale: u32, unit: Units) -> Option<i64> {
    let numerator = if unit.scale >= scale {
        mantissa.checked_mul(*POW10.get((unit.scale - scale) as usize)?)?
    } else {
        more_decimals(mantissa, scale - unit.scale)?
    };
    i64::try_from(unit.divide_exact(numerator)?).ok()
}

/// `mantissa / 10^drop` if exact: a number written with more decimals than the unit has
/// (`64250.50`); rare, so out of the way.
#[cold]
#[inline(never)]
fn more_decimals(mantissa: u64, drop: u32) -> Option<u64> {
    let pow = *POW10.get(drop as usize)?;
    mantissa.is_multiple_of(pow).then(|| mantissa / pow)
}

#[cfg(test)]
#[path = "book_fast_tests.rs"]
mod tests;
