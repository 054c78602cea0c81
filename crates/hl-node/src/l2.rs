//! L2 views of an L4 book at Hyperliquid's seven precisions, for the server's lanes.
//!
//! Owns: gathering a book side's levels once per block, the adapters from `L2Variant` and
//! `UnitLevel` to `ticktrade_book::aggregate` (which owns the bucket rules and the walk; this
//! module only feeds it), and the two rules that let a view skip its aggregation
//! (`keeps_levels`, `side_may_change`).
//! Must not: bucket prices itself, allocate (the caller reuses `out`), or look at more levels
//! than it emits.
//!
//! Prices are in the coin's integer price units; `ticktrade_book::aggregate` explains why
//! Hyperliquid's rule on real prices is the same in units of any power of ten (see
//! `tests::matches_naive_decimal_model`).

use ticktrade_book::aggregate::{AggLevel, HlPrecision, aggregate_each};
use ticktrade_book::l4::L4Level;
use ticktrade_core::{Price, Qty, Side};
use ticktrade_hl_proto::ws::{L2Variant, UnitLevel};

/// The book's name for `variant` (both list the seven in the same order).
#[inline]
fn precision(variant: L2Variant) -> HlPrecision {
    HlPrecision::ALL[variant.index()]
}

#[inline]
fn side(is_bid: bool) -> Side {
    if is_bid { Side::Buy } else { Side::Sell }
}

#[inline(always)]
fn unit_level(level: AggLevel) -> UnitLevel {
    UnitLevel { px: level.price.raw(), sz: level.qty.raw(), n: level.n }
}

/// The bucket a level at `px` (units) falls in.
#[inline]
pub fn bucket(px: i64, variant: L2Variant, is_bid: bool) -> i64 {
    precision(variant).grouping().bucket(side(is_bid), Price::from_raw(px)).raw()
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

/// Aggregates gathered levels (best first, see [`gather`]) at `variant`: the same result as
/// [`aggregate`] over the book side they were gathered from.
#[inline]
pub fn aggregate_units(
    levels: &[UnitLevel],
    is_bid: bool,
    variant: L2Variant,
    n_levels: usize,
    out: &mut Vec<UnitLevel>,
) {
    out.clear();
    let levels = levels.iter().map(|l| AggLevel { price: Price::from_raw(l.px), qty: Qty::from_raw(l.sz), n: l.n });
    aggregate_each(levels, side(is_bid), precision(variant).grouping(), n_levels, |b| out.push(unit_level(b)));
}

/// Aggregates one side of a book (its levels best first) at `variant`.
pub fn aggregate(
    levels: impl Iterator<Item = L4Level>,
    is_bid: bool,
    variant: L2Variant,
    n_levels: usize,
    out: &mut Vec<UnitLevel>,
) {
    out.clear();
    let levels = levels.map(|l| AggLevel { price: l.price, qty: l.qty, n: l.n_orders });
    aggregate_each(levels, side(is_bid), precision(variant).grouping(), n_levels, |b| out.push(unit_level(b)));
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
    // With mantissa 1, a price below 10^sig has a width of one unit: no bucket needed.
    let below = 10i64.pow(sig.min(18));
    let mantissa_one = variant.mantissa() == 1;
    full.iter().all(|l| (mantissa_one && l.px < below) || bucket(l.px, variant, true) == l.px)
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
    let b = bucket(nearest, variant, is_bid);
    if is_bid { b >= deepest } else { b <= deepest }
}

#[cfg(test)]
mod tests;
