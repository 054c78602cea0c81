//! `FixedOrderEncoder`: the order encoder of [`crate::order`] laid out for a cold cache. The
//! same bytes as [`OrderEncoder::encode`] (property-tested), written into a fixed-size region
//! of a caller-owned array instead of a `Vec`, from one struct that holds every constant it
//! reads (the request head, both method prefixes inline, the literal runs, the powers of ten).
//!
//! Owns: the compact layout and the table-free integer printing (eight digits at a time with a
//! few multiplies in one word, no lookup table, no call into `memcpy`).
//! Must not: allocate, read anything outside `self`, the order and the output region, or panic
//! on any input (`None` instead: a product that does not fit in `i64`, an output region that is
//! too short; the caller then takes the `Vec` encoder).
//!
//! Why: live, the order is encoded after a wait in `read` or a sleep, with the caches and TLB
//! emptied by whatever ran meanwhile, and the span `order_call_to_encoded` is set by how many
//! distinct cache lines and pages the encoder touches, not by its instruction count (≈80 ns
//! warm, 350–680 ns live in docs/PERFORMANCE.md §4.2). `OrderEncoder` reads two heap-allocated
//! prefixes, `itoa`'s 200-byte digit table, a powers-of-ten table and its literals from
//! `.rodata`, and copies variable-length runs through libc's `memcpy`; this one reads only
//! itself, copies fixed-size blocks (over-copying into the region's slack, then advancing by
//! the real length) and prints digits from registers.

use ticktrade_core::{InstrumentSpec, Side};

use crate::envelope::write_json_str;
use crate::order::LimitOrder;
#[cfg(doc)]
use crate::order::OrderEncoder;

/// Room for one method prefix (`,"method":"private/sell","params":{"instrument_name":"…",
/// "amount":`): instrument names of up to ~70 bytes. Longer ones make `new` return `None`.
pub const PREFIX_CAP: usize = 128;

/// Bytes of the output region [`FixedOrderEncoder::encode_into`] needs from `at`: the longest
/// request it can write (310 bytes with a full prefix, 20-digit numbers and the label) plus
/// slack for its whole-word stores.
pub const ENCODE_ROOM: usize = 336;

const HEAD: &[u8] = br#"{"jsonrpc":"2.0","id":"#;
const MID: &[u8] = br#","type":"limit","price":"#;
const LABEL: &[u8] = br#","label":"tt."#;
const TAIL_POST_ONLY: &[u8] = br#"","post_only":true}}"#;
const TAIL: &[u8] = br#""}}"#;

/// Limit-order encoder for one instrument, every constant inline (see the module docs).
#[derive(Clone, Debug)]
#[repr(C)]
pub struct FixedOrderEncoder {
    qty_mantissa: i64,
    tick_mantissa: i64,
    /// 10^scale of the amount and the price (the divisor that splits off the fraction).
    qty_pow: u64,
    tick_pow: u64,
    qty_scale: u8,
    tick_scale: u8,
    /// Real lengths of `prefix[0]` (buy) and `prefix[1]` (sell).
    prefix_len: [u8; 2],
    head: [u8; 22],
    mid: [u8; 24],
    label: [u8; 13],
    tail_post_only: [u8; 20],
    tail: [u8; 3],
    prefix: [[u8; PREFIX_CAP]; 2],
}

const _: () = {
    assert!(HEAD.len() == 22 && MID.len() == 24 && LABEL.len() == 13);
    assert!(TAIL_POST_ONLY.len() == 20 && TAIL.len() == 3);
};

impl FixedOrderEncoder {
    /// The encoder for `spec`'s instrument; `None` when its method prefix does not fit in
    /// [`PREFIX_CAP`] bytes or its tick or amount unit has more than 18 decimals.
    pub fn new(spec: &InstrumentSpec) -> Option<FixedOrderEncoder> {
        let mut prefix = [[0u8; PREFIX_CAP]; 2];
        let mut prefix_len = [0u8; 2];
        for (i, method) in ["private/buy", "private/sell"].into_iter().enumerate() {
            let mut out = Vec::with_capacity(PREFIX_CAP);
            out.extend_from_slice(b",\"method\":");
            write_json_str(&mut out, method);
            out.extend_from_slice(b",\"params\":{\"instrument_name\":");
            write_json_str(&mut out, &spec.name);
            out.extend_from_slice(b",\"amount\":");
            prefix[i].get_mut(..out.len())?.copy_from_slice(&out);
            prefix_len[i] = u8::try_from(out.len()).ok()?;
        }
        let tick = spec.tick();
        let (tick_scale, qty_scale) = (tick.scale(), spec.qty_unit.scale());
        if tick_scale > 18 || qty_scale > 18 {
            return None;
        }
        let copy = |lit: &[u8], into: &mut [u8]| into.copy_from_slice(lit);
        let mut encoder = FixedOrderEncoder {
            qty_mantissa: spec.qty_unit.mantissa(),
            tick_mantissa: tick.mantissa(),
            qty_pow: 10u64.pow(u32::from(qty_scale)),
            tick_pow: 10u64.pow(u32::from(tick_scale)),
            qty_scale,
            tick_scale,
            prefix_len,
            head: [0; 22],
            mid: [0; 24],
            label: [0; 13],
            tail_post_only: [0; 20],
            tail: [0; 3],
            prefix,
        };
        copy(HEAD, &mut encoder.head);
        copy(MID, &mut encoder.mid);
        copy(LABEL, &mut encoder.label);
        copy(TAIL_POST_ONLY, &mut encoder.tail_post_only);
        copy(TAIL, &mut encoder.tail);
        Some(encoder)
    }

    /// Writes the request [`OrderEncoder::encode`] writes for (`id`, `order`) into
    /// `out[at..]` and returns where it ends. Bytes after the end, up to `at + ENCODE_ROOM`,
    /// may be overwritten. `None` (nothing meaningful written) when `out` has fewer than
    /// [`ENCODE_ROOM`] bytes from `at` or a price or amount overflows `i64` in the
    /// instrument's units; the caller then uses [`OrderEncoder`], which prints those exactly.
    #[inline]
    #[cfg_attr(target_os = "linux", allow(unsafe_code), unsafe(link_section = "ticktrade_hot"))]
    pub fn encode_into(&self, out: &mut [u8], at: usize, id: u64, order: &LimitOrder) -> Option<usize> {
        let qty = order.qty.raw().checked_mul(self.qty_mantissa)?;
        let price = order.price.raw().checked_mul(self.tick_mantissa)?;
        let region: &mut [u8; ENCODE_ROOM] = out.get_mut(at..at.checked_add(ENCODE_ROOM)?)?.try_into().ok()?;
        let side = match order.side {
            Side::Buy => 0,
            Side::Sell => 1,
        };
        let mut p = put(region, 0, &self.head)?;
        p = put_u64(region, p, id)?;
        region.get_mut(p..p + PREFIX_CAP)?.copy_from_slice(&self.prefix[side]);
        p += usize::from(self.prefix_len[side]);
        p = put_fixed(region, p, qty, self.qty_scale, self.qty_pow)?;
        p = put(region, p, &self.mid)?;
        p = put_fixed(region, p, price, self.tick_scale, self.tick_pow)?;
        p = put(region, p, &self.label)?;
        p = put_i64(region, p, order.label.recv_utc_ns)?;
        p = put(region, p, b".")?;
        p = put_u64(region, p, order.label.change_id)?;
        p = if order.post_only { put(region, p, &self.tail_post_only)? } else { put(region, p, &self.tail)? };
        at.checked_add(p)
    }
}

#[inline(always)]
fn put(out: &mut [u8], p: usize, bytes: &[u8]) -> Option<usize> {
    let end = p + bytes.len();
    out.get_mut(p..end)?.copy_from_slice(bytes);
    Some(end)
}

const ASCII_ZEROS: u64 = 0x3030_3030_3030_3030;

/// The eight decimal digits of `n` (< 10^8, leading zeros included) as byte values 0–9, the
/// most significant digit in the lowest byte (memory order on a little-endian word). Splits
/// into 4-digit, then 2-digit, then 1-digit lanes, dividing every lane at once by a
/// multiply-and-shift (exact for these ranges: `x / 100 = x * 10486 >> 20` for x < 10 000,
/// `y / 10 = y * 103 >> 10` for y < 100); no lane's product reaches the next lane.
#[inline(always)]
fn digits8(n: u32) -> u64 {
    let n = u64::from(n);
    let merged = (n / 10_000) | ((n % 10_000) << 32);
    let hundreds = ((merged * 10_486) >> 20) & 0x0000_007F_0000_007F;
    let merged = hundreds | ((merged - hundreds * 100) << 16);
    let tens = ((merged * 103) >> 10) & 0x000F_000F_000F_000F;
    tens | ((merged - tens * 10) << 8)
}

/// `n` (< 10^8) without leading zeros ("0" for 0).
#[inline(always)]
fn put_trimmed8(out: &mut [u8], p: usize, n: u32) -> Option<usize> {
    let digits = digits8(n);
    let lead = ((digits.trailing_zeros() / 8) as usize).min(7);
    let word = (digits | ASCII_ZEROS) >> (8 * lead);
    out.get_mut(p..p + 8)?.copy_from_slice(&word.to_le_bytes());
    Some(p + 8 - lead)
}

/// `n` (< 10^8) as exactly eight digits.
#[inline(always)]
fn put_full8(out: &mut [u8], p: usize, n: u32) -> Option<usize> {
    out.get_mut(p..p + 8)?.copy_from_slice(&(digits8(n) | ASCII_ZEROS).to_le_bytes());
    Some(p + 8)
}

const E8: u64 = 100_000_000;
const E16: u64 = E8 * E8;

/// `v` in decimal, as `itoa` prints it.
#[inline]
#[cfg_attr(target_os = "linux", allow(unsafe_code), unsafe(link_section = "ticktrade_hot"))]
fn put_u64(out: &mut [u8], p: usize, v: u64) -> Option<usize> {
    if v < E8 {
        return put_trimmed8(out, p, v as u32);
    }
    if v < E16 {
        let p = put_trimmed8(out, p, (v / E8) as u32)?;
        return put_full8(out, p, (v % E8) as u32);
    }
    let rest = v % E16;
    let p = put_trimmed8(out, p, (v / E16) as u32)?;
    let p = put_full8(out, p, (rest / E8) as u32)?;
    put_full8(out, p, (rest % E8) as u32)
}

#[inline]
fn put_i64(out: &mut [u8], mut p: usize, v: i64) -> Option<usize> {
    if v < 0 {
        p = put(out, p, b"-")?;
    }
    put_u64(out, p, v.unsigned_abs())
}

/// `mantissa / 10^scale` as the shortest exact decimal, like `order::write_fixed`
/// (`pow` = 10^scale, scale ≤ 18).
#[inline]
#[cfg_attr(target_os = "linux", allow(unsafe_code), unsafe(link_section = "ticktrade_hot"))]
fn put_fixed(out: &mut [u8], p: usize, mantissa: i64, scale: u8, pow: u64) -> Option<usize> {
    let mut p = p;
    if mantissa < 0 {
        p = put(out, p, b"-")?;
    }
    let magnitude = mantissa.unsigned_abs();
    // The common scales divide by a constant (a multiply); others by `pow`.
    let (int_part, frac) = match scale {
        0 => return put_u64(out, p, magnitude),
        1 => (magnitude / 10, magnitude % 10),
        2 => (magnitude / 100, magnitude % 100),
        _ => (magnitude / pow, magnitude % pow),
    };
    p = put_u64(out, p, int_part)?;
    if frac == 0 {
        return Some(p);
    }
    p = put(out, p, b".")?;
    let scale = usize::from(scale);
    if scale <= 8 {
        // The last `scale` of eight digits, without the trailing zeros (frac > 0, so the
        // word has a non-zero digit).
        let digits = digits8(frac as u32);
        let trailing = (digits.leading_zeros() / 8) as usize;
        let word = (digits | ASCII_ZEROS) >> (8 * (8 - scale));
        out.get_mut(p..p + 8)?.copy_from_slice(&word.to_le_bytes());
        return Some(p + scale - trailing);
    }
    let mut frac = frac;
    let mut digits = scale;
    while frac % 10 == 0 {
        frac /= 10;
        digits -= 1;
    }
    let region = out.get_mut(p..p + digits)?;
    for byte in region.iter_mut().rev() {
        *byte = b'0' + (frac % 10) as u8;
        frac /= 10;
    }
    Some(p + digits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::order::{OrderEncoder, OrderLabel};
    use proptest::prelude::*;
    use ticktrade_core::{Decimal, Price, Qty};

    fn spec(name: &str, tick: &str, qty_unit: &str) -> InstrumentSpec {
        InstrumentSpec::simple(name, Decimal::parse(tick).unwrap(), Decimal::parse(qty_unit).unwrap()).unwrap()
    }

    fn both(spec: &InstrumentSpec, id: u64, order: &LimitOrder) -> (Option<Vec<u8>>, Vec<u8>) {
        let mut want = Vec::new();
        OrderEncoder::new(spec).encode(&mut want, id, order);
        let fixed = FixedOrderEncoder::new(spec).and_then(|encoder| {
            let mut out = [0xAAu8; 7 + ENCODE_ROOM];
            let end = encoder.encode_into(&mut out, 7, id, order)?;
            Some(out[7..end].to_vec())
        });
        (fixed, want)
    }

    fn order(side: Side, price: i64, qty: i64, post_only: bool, utc: i64, change_id: u64) -> LimitOrder {
        LimitOrder {
            side,
            price: Price::from_raw(price),
            qty: Qty::from_raw(qty),
            post_only,
            label: OrderLabel { recv_utc_ns: utc, change_id },
        }
    }

    #[test]
    fn digits_of_every_width() {
        let mut out = [0u8; 64];
        let mut values = vec![0u64, 1, 9, 10, 99, 100, u64::MAX, u64::MAX - 1, E8 - 1, E8, E16 - 1, E16];
        values.extend((0..20).map(|k| 10u64.pow(k)));
        values.extend((1..20).map(|k| 10u64.pow(k) - 1));
        for v in values {
            let end = put_u64(&mut out, 0, v).unwrap();
            assert_eq!(&out[..end], itoa::Buffer::new().format(v).as_bytes(), "{v}");
        }
        for v in [i64::MIN, i64::MIN + 1, -1, 0, i64::MAX] {
            let end = put_i64(&mut out, 0, v).unwrap();
            assert_eq!(&out[..end], itoa::Buffer::new().format(v).as_bytes(), "{v}");
        }
    }

    #[test]
    fn same_bytes_as_the_vec_encoder() {
        let spec = spec("BTC-PERPETUAL", "0.5", "10");
        for (side, post_only) in [(Side::Buy, true), (Side::Sell, false)] {
            let o = order(side, 128_501, 3, post_only, 1_700_000_000_123_456_789, 42);
            let (fixed, want) = both(&spec, 7, &o);
            assert_eq!(fixed.unwrap(), want);
        }
    }

    #[test]
    fn declines_what_it_cannot_encode() {
        let spec = spec("BTC-PERPETUAL", "0.5", "10");
        let encoder = FixedOrderEncoder::new(&spec).unwrap();
        let o = order(Side::Buy, i64::MAX, 1, true, 0, 0);
        assert_eq!(encoder.encode_into(&mut [0u8; ENCODE_ROOM], 0, 1, &o), None);
        let o = order(Side::Buy, 1, 1, true, 0, 0);
        assert_eq!(encoder.encode_into(&mut [0u8; ENCODE_ROOM - 1], 0, 1, &o), None);
        assert_eq!(encoder.encode_into(&mut [0u8; ENCODE_ROOM], 1, 1, &o), None);
        assert!(encoder.encode_into(&mut [0u8; ENCODE_ROOM], 0, 1, &o).is_some());
        assert!(FixedOrderEncoder::new(&spec_long()).is_none());
    }

    fn spec_long() -> InstrumentSpec {
        spec(&"X".repeat(100), "0.5", "10")
    }

    proptest! {
        #[test]
        fn matches_the_vec_encoder(
            name in prop::sample::select(vec!["BTC-PERPETUAL", "ETH-27DEC24-4000-C", "a\"b\\c\u{1}é"]),
            tick in prop::sample::select(vec!["0.5", "1", "0.0001", "25", "0.05", "0.000000001", "0.00000000000000001"]),
            unit in prop::sample::select(vec!["10", "1", "0.001", "0.1", "0.000000000001"]),
            price in prop_oneof![-1_000_000_000i64..1_000_000_000, any::<i64>()],
            qty in prop_oneof![0i64..1_000_000_000, any::<i64>()],
            buy: bool, post_only: bool, id: u64, utc: i64, change_id: u64,
        ) {
            let spec = spec(name, tick, unit);
            let o = order(if buy { Side::Buy } else { Side::Sell }, price, qty, post_only, utc, change_id);
            let (fixed, want) = both(&spec, id, &o);
            let fits = o.price.raw().checked_mul(spec.tick().mantissa()).is_some()
                && o.qty.raw().checked_mul(spec.qty_unit.mantissa()).is_some();
            match fixed {
                Some(got) => prop_assert_eq!(String::from_utf8(got).unwrap(), String::from_utf8(want).unwrap()),
                None => prop_assert!(!fits, "declined an order that fits"),
            }
        }
    }
}
