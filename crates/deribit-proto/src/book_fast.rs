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
//! "fixed key order fast path" of research/limits.md §2 (≈70 ns there). Measured by the gateway's
//! `hot_pipeline` bench, which runs both decoders on the same frames.

use ticktrade_book::l2::{Action, LevelUpdate};
use ticktrade_core::{InstrumentSpec, Price, Qty, Side};

use crate::book::{BookHeader, BookKind, decode_book_units};
use crate::scan::DecodeError;

/// A decoder for one instrument's book notifications.
#[derive(Clone, Debug)]
pub struct FastBookDecoder {
    spec: InstrumentSpec,
    price: Units,
    qty: Units,
    /// False when the tick rule has steps: validity then depends on the price, so every frame
    /// takes the general path.
    enabled: bool,
}

/// Converts decimal text to integer units of `mantissa / 10^scale`.
#[derive(Clone, Copy, Debug)]
struct Units {
    mantissa: u64,
    scale: u32,
}

impl FastBookDecoder {
    pub fn new(spec: &InstrumentSpec) -> FastBookDecoder {
        let units =
            |d: ticktrade_core::Decimal| Units { mantissa: d.mantissa().unsigned_abs(), scale: u32::from(d.scale()) };
        let price = units(spec.tick());
        let qty = units(spec.qty_unit);
        let enabled = spec.tick_rule.steps().next().is_none() && price.mantissa > 0 && qty.mantissa > 0;
        FastBookDecoder { spec: spec.clone(), price, qty, enabled }
    }

    pub fn spec(&self) -> &InstrumentSpec {
        &self.spec
    }

    /// Decodes a whole notification frame, like `decode_book_units(frame, spec, out)`.
    #[inline]
    pub fn decode<'a>(&self, frame: &'a [u8], out: &mut Vec<LevelUpdate>) -> Result<BookHeader<'a>, DecodeError> {
        if self.enabled {
            out.clear();
            if let Some(header) = self.fast(frame, out) {
                return Ok(header);
            }
        }
        decode_book_units(frame, &self.spec, out)
    }

    #[inline]
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

    /// `[["new",1.5,10],…]` after the opening `[`, through the closing `]`.
    #[inline]
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

const POW10: [u64; 20] = {
    let mut table = [1u64; 20];
    let mut i = 1;
    while i < 20 {
        table[i] = table[i - 1] * 10;
        i += 1;
    }
    table
};

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

    /// 1 to 19 digits (any leading zeros): the count first, then the value without overflow
    /// checks (19 digits always fit a `u64`), which keeps the multiply chain short.
    #[inline(always)]
    fn run_of_digits(&mut self) -> Option<(u64, usize)> {
        let rest = self.buf.get(self.pos..)?;
        let n = rest.iter().take(20).take_while(|b| b.is_ascii_digit()).count();
        if n == 0 || n > 19 {
            return None;
        }
        let value = rest[..n].iter().fold(0u64, |v, &b| v * 10 + u64::from(b - b'0'));
        self.pos += n;
        Some((value, n))
    }

    #[inline]
    fn u64(&mut self) -> Option<u64> {
        self.digits().map(|(v, _)| v)
    }

    /// A JSON number in units of `unit`; `None` if it has an exponent, is off the unit grid,
    /// or does not fit (the general decoder then gives the exact error).
    #[inline]
    fn units(&mut self, unit: Units) -> Option<i64> {
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
        // value = mantissa / 10^scale; units = value / (unit.mantissa / 10^unit.scale).
        let numerator = if unit.scale >= scale {
            mantissa.checked_mul(*POW10.get((unit.scale - scale) as usize)?)?
        } else {
            let pow = *POW10.get((scale - unit.scale) as usize)?;
            if mantissa % pow != 0 {
                return None;
            }
            mantissa / pow
        };
        let units = divide_exact(numerator, unit.mantissa)?;
        let units = i64::try_from(units).ok()?;
        Some(if negative { -units } else { units })
    }

    /// Digits after a decimal point (at least one, at most 19), leading zeros allowed.
    #[inline]
    fn frac_digits(&mut self) -> Option<(u64, usize)> {
        self.run_of_digits()
    }
}

/// `n / d` if `d` divides `n`. The usual tick and amount mantissas are constants here, so
/// those divisions compile to multiplies.
#[inline(always)]
fn divide_exact(n: u64, d: u64) -> Option<u64> {
    let (q, r) = match d {
        1 => (n, 0),
        2 => (n / 2, n % 2),
        5 => (n / 5, n % 5),
        10 => (n / 10, n % 10),
        25 => (n / 25, n % 25),
        _ => (n / d, n % d),
    };
    (r == 0).then_some(q)
}

#[cfg(test)]
#[path = "book_fast_tests.rs"]
mod tests;
