//! L2 views of an L4 book at Hyperliquid's seven precisions.
//!
//! Owns: bucketing of level prices (`nSigFigs`/`mantissa`, bids rounded down, asks up) in
//! integer price units, stopping after `n_levels` buckets, into a caller-owned buffer.
//! Must not: allocate (the caller reuses `out`) or look at more levels than it emits.
//!
//! Width in units: `mantissa × 10^(digits(px_units) − nSigFigs)`; a negative exponent means the
//! bucket is finer than the coin's unit and the level is unchanged. This equals Hyperliquid's
//! rule on real prices (`digits` = floor(log10 px) + 1) because shifting the unit shifts both
//! sides of the exponent equally — see `tests::matches_naive_decimal_model`.

use ticktrade_book::l4::L4Level;
use ticktrade_hl_proto::ws::{L2Variant, UnitLevel};

const POW10: [i64; 19] = {
    let mut t = [1i64; 19];
    let mut i = 1;
    while i < 19 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
};

fn digits(value: i64) -> i32 {
    let mut n = 1;
    while n < 19 && value >= POW10[n as usize] {
        n += 1;
    }
    n
}

/// The bucket a level at `px` (units, > 0) falls in.
#[inline]
pub fn bucket(px: i64, n_sig_figs: u32, mantissa: u32, is_bid: bool) -> i64 {
    bucket_range(px, n_sig_figs, mantissa, is_bid).b
}

/// Aggregates `levels` (best first) with explicit parameters (`None` = full precision).
pub fn aggregate_with(
    levels: impl Iterator<Item = L4Level>,
    is_bid: bool,
    n_sig_figs: Option<u32>,
    mantissa: u32,
    n_levels: usize,
    out: &mut Vec<UnitLevel>,
) {
    out.clear();
    if n_levels == 0 {
        return;
    }
    for level in levels {
        let px = match n_sig_figs {
            None => level.price.raw(),
            Some(sig) => bucket(level.price.raw(), sig, mantissa, is_bid),
        };
        match out.last_mut() {
            Some(last) if last.px == px => {
                last.sz += level.qty.raw();
                last.n += level.n_orders;
            }
            _ => {
                if out.len() == n_levels {
                    return;
                }
                out.push(UnitLevel { px, sz: level.qty.raw(), n: level.n_orders });
            }
        }
    }
}

/// Copies one side's levels (best first) into `out` as unit levels, once per block, so the
/// views of a coin aggregate from one contiguous list instead of walking the book each.
pub fn gather(levels: impl Iterator<Item = L4Level>, out: &mut Vec<UnitLevel>) {
    out.clear();
    out.extend(levels.map(|l| UnitLevel { px: l.price.raw(), sz: l.qty.raw(), n: l.n_orders }));
}

/// Reads the first `max` levels of one book side (each level's ladder entry and totals, what
/// [`gather`] reads), one level's reads independent of the next one's, so that their cache
/// misses overlap each other instead of being met one after another later. Changes nothing.
pub fn warm_levels(levels: impl Iterator<Item = L4Level>, max: usize) {
    let mut acc = 0i64;
    for level in levels.take(max) {
        acc ^= level.qty.raw();
    }
    std::hint::black_box(acc);
}

/// `digits(px)` for `px > 0` without a loop.
#[inline]
fn digits_pos(px: i64) -> i32 {
    debug_assert!(px > 0);
    px.ilog10() as i32 + 1
}

/// `x / 10^e` (`x >= 0`, `e <= 18`) by a constant divisor per exponent (a multiply and a
/// shift) instead of a 64-bit division by a variable.
#[inline]
fn div_pow10(x: i64, e: u32) -> i64 {
    macro_rules! by {
        ($($e:literal)*) => {
            match e {
                $($e => x / 10i64.pow($e),)*
                _ => x / POW10[e as usize],
            }
        };
    }
    by!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18)
}

/// A bucket of [`aggregate_units`]: its price `b`, the inclusive range `lo..=hi` of prices in
/// it that have as many digits as the level it was found for (all of them share its width, so
/// every price there has this bucket), the `width`, and the range of prices with those digits
/// (`dlo..=dhi`; both `b` when the bucket was not found by the fast path, which then never
/// steps from it).
#[derive(Clone, Copy)]
struct Bucket {
    b: i64,
    lo: i64,
    hi: i64,
    width: i64,
    dlo: i64,
    dhi: i64,
}

/// The bucket of the level at `px`: one division per bucket, not per level, and by a constant
/// (per exponent) for prices > 0 and the mantissas 1, 2, 5 of the seven variants.
#[inline(always)]
fn bucket_range(px: i64, n_sig_figs: u32, mantissa: u32, is_bid: bool) -> Bucket {
    let general = || {
        let (b, lo, hi) = bucket_range_general(px, n_sig_figs, mantissa, is_bid);
        Bucket { b, lo, hi, width: 1, dlo: b, dhi: b }
    };
    if px <= 0 {
        return general();
    }
    let d = digits_pos(px);
    let exp = d - n_sig_figs as i32;
    if exp < 0 || !matches!(mantissa, 1 | 2 | 5) {
        return general();
    }
    let dlo = POW10[(d - 1) as usize];
    let dhi = if (d as usize) < POW10.len() { POW10[d as usize] - 1 } else { i64::MAX };
    let (m, p) = (i64::from(mantissa), POW10[exp as usize]);
    let width = m * p;
    if width <= 1 {
        return Bucket { b: px, lo: px, hi: px, width: 1, dlo, dhi };
    }
    // px - px % width, as floor(floor(px / p) / m) * m * p with constant divisors.
    let q = div_pow10(px, exp as u32);
    let down = match mantissa {
        2 => q & !1,
        5 => q - q % 5,
        _ => q,
    } * p;
    let (b, lo, hi) = rounded(px, down, width, is_bid);
    Bucket { b, lo: lo.max(dlo), hi: hi.min(dhi), width, dlo, dhi }
}

/// The bucket of `px` given `down` (`px` rounded down to a multiple of `width`, > 1): bids round
/// down, asks up; and the inclusive range of prices of that width that share it.
#[inline(always)]
fn rounded(px: i64, down: i64, width: i64, is_bid: bool) -> (i64, i64, i64) {
    if is_bid {
        (down, down, down.saturating_add(width - 1))
    } else if down == px {
        (px, px.saturating_sub(width - 1), px)
    } else {
        let up = down.saturating_add(width);
        (up, up.saturating_sub(width - 1), up)
    }
}

/// [`bucket_range`] for any price and mantissa (one division by a variable).
#[cold]
fn bucket_range_general(px: i64, n_sig_figs: u32, mantissa: u32, is_bid: bool) -> (i64, i64, i64) {
    let d = digits(px);
    let exp = d - n_sig_figs as i32;
    let width = if exp < 0 { 1 } else { i64::from(mantissa).saturating_mul(POW10[exp as usize]) };
    if width <= 1 {
        return (px, px, px);
    }
    let down = px - px % width;
    let (b, lo, hi) = rounded(px, down, width, is_bid);
    let same_digits_lo = POW10[(d - 1) as usize];
    let same_digits_hi = if (d as usize) < POW10.len() { POW10[d as usize] - 1 } else { i64::MAX };
    (b, lo.max(same_digits_lo), hi.min(same_digits_hi))
}

/// Aggregates gathered levels (best first, see [`gather`]) at `variant`: the same result as
/// [`aggregate`] over the book side they were gathered from.
pub fn aggregate_units(
    levels: &[UnitLevel],
    is_bid: bool,
    variant: L2Variant,
    n_levels: usize,
    out: &mut Vec<UnitLevel>,
) {
    out.clear();
    let Some(sig) = variant.n_sig_figs() else {
        // Full precision: every level is its own bucket.
        out.extend_from_slice(&levels[..levels.len().min(n_levels)]);
        return;
    };
    if n_levels == 0 {
        return;
    }
    let mantissa = variant.mantissa();
    let Some((first, rest)) = levels.split_first() else { return };
    // The bucket being summed is kept in registers and written once when the next one starts
    // (summing into `out`'s last element made every level wait on a store to that element,
    // the loop's largest cost in perf): prices in `lo..=hi` belong to it.
    let mut at = bucket_range(first.px, sig, mantissa, is_bid);
    let (mut px, mut sz, mut n) = (at.b, first.sz, first.n);
    for level in rest {
        if level.px >= at.lo && level.px <= at.hi {
            sz += level.sz;
            n += level.n;
            continue;
        }
        // The next bucket of the same width, when the level is in it and has the same digits
        // (the current range is then a whole bucket, not cut at a change of digits): no
        // division. Otherwise (a gap of a bucket or more, or a change of digits) the level's
        // own bucket.
        if is_bid && at.lo == px && level.px >= at.lo - at.width && at.lo - at.width >= at.dlo {
            (at.lo, at.hi) = (at.lo - at.width, at.lo - 1);
            at.b = at.lo;
        } else if !is_bid && at.hi == px && at.hi.checked_add(at.width).is_some_and(|e| level.px <= e && e <= at.dhi) {
            (at.lo, at.hi) = (at.hi + 1, at.hi + at.width);
            at.b = at.hi;
        } else {
            at = bucket_range(level.px, sig, mantissa, is_bid);
            // An ask just below a power of ten rounds up to the bucket being summed.
            if at.b == px {
                sz += level.sz;
                n += level.n;
                continue;
            }
        }
        out.push(UnitLevel { px, sz, n });
        if out.len() >= n_levels {
            return;
        }
        (px, sz, n) = (at.b, level.sz, level.n);
    }
    out.push(UnitLevel { px, sz, n });
}

/// Whether `variant` buckets every price of `full` (one side's levels at full precision, the
/// first `n_levels` of the book: what the full-precision view of the same `nLevels` shows) to
/// itself. Then the side at `variant` and the same `nLevels` is exactly `full`, level for level:
/// bucketing is monotone, so each of these levels is its own bucket, every deeper level buckets
/// strictly deeper than the last of them (a bid rounds down below it, an ask up above it), and
/// there is no level between them. Hyperliquid prices have at most five significant figures,
/// so `nSigFigs: 5` usually keeps every level and its frame can be the full one's.
///
/// A price is its own bucket when its width divides it (rounding up or down then moves
/// nothing), so the side does not matter.
pub fn keeps_levels(full: &[UnitLevel], variant: L2Variant) -> bool {
    let Some(sig) = variant.n_sig_figs() else { return true };
    let mantissa = variant.mantissa();
    // With mantissa 1, a price below 10^sig has a width of one unit: no division needed.
    let below = POW10[sig.min(18) as usize];
    full.iter().all(|l| (mantissa == 1 && l.px < below) || bucket(l.px, sig, mantissa, true) == l.px)
}

/// Whether one side of a view can differ from what it last sent (`shown` = how many levels,
/// and the deepest one's price; at `variant` and `n_levels`) after a block that touched the
/// levels at prices `touched` (`(lowest, highest)`, units; `lowest > highest` = untouched).
///
/// A side with all its `n_levels` buckets shown keeps them exactly when every touched price
/// buckets strictly deeper than its deepest bucket: bucketing is monotone in the price (bids
/// round down, asks up, with the width growing with the digits), so such a price lies below
/// (bids) / above (asks) every level of every shown bucket, and the buckets before it are
/// neither emptied, filled, nor outranked. Only the touched price nearest the top matters.
/// A side showing fewer buckets than `n_levels` may grow with any touch.
#[inline]
pub fn side_may_change(
    shown: (usize, i64),
    is_bid: bool,
    variant: L2Variant,
    n_levels: usize,
    touched: (i64, i64),
) -> bool {
    let (lowest, highest) = touched;
    if lowest > highest || n_levels == 0 {
        return false;
    }
    let (n_shown, deepest) = shown;
    if n_shown < n_levels {
        return true;
    }
    let nearest = if is_bid { highest } else { lowest };
    let b = match variant.n_sig_figs() {
        None => nearest,
        Some(sig) => bucket(nearest, sig, variant.mantissa(), is_bid),
    };
    if is_bid { b >= deepest } else { b <= deepest }
}

/// Aggregates one side at one of the seven variants.
pub fn aggregate(
    levels: impl Iterator<Item = L4Level>,
    is_bid: bool,
    variant: L2Variant,
    n_levels: usize,
    out: &mut Vec<UnitLevel>,
) {
    aggregate_with(levels, is_bid, variant.n_sig_figs(), variant.mantissa(), n_levels, out);
}

#[cfg(test)]
mod tests;
