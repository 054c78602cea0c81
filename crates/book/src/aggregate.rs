//! Grouped L2 views: levels merged into coarser price buckets, top N per side.
//!
//! Owns: the bucket rules (Deribit `group`, Hyperliquid `nSigFigs`/`mantissa`, in `bucket`),
//! the walk that merges best-first levels into buckets (the one every Hyperliquid and Deribit
//! view is computed by), and `AggregateBuf`, the seven Hyperliquid variants of a book in
//! buffers the caller keeps.
//! Must not: allocate once its buffers are sized, format prices, or know any wire format.
//!
//! # Rules
//! - **Bids round down, asks round up** (`floor(px / w)·w`, `ceil(px / w)·w`), so a bucket never
//!   shows a better price than exists. Walking a side best first, levels with the same bucket
//!   merge (Hyperliquid's order_book_server `bucket`). Sizes and order counts (`n`) add up.
//! - Hyperliquid: width = `mantissa × 10^(D − nSigFigs)` where `D = floor(log10 px) + 1`. With
//!   the price unit a power of ten, `10^k`, and `px = ticks × 10^k`, the width in ticks is
//!   `mantissa × 10^(digits(ticks) − nSigFigs)`, independent of `k`; a width under one tick
//!   leaves the level unchanged. Hyperliquid's price units are always powers of ten;
//!   `AggregateBuf::new` refuses any other unit.
//! - Deribit `group`: a fixed bucket of `group` price units, i.e. `group / tick` ticks.
//!
//! # The walk
//! One division per bucket, not per level: a bucket is located with the run of prices that
//! share it, levels inside the run are summed, the next bucket of the same width is a step
//! (no division), and only a gap or a change of digits locates afresh. The running bucket is
//! kept in locals and emitted once it closes. `AggregateBuf` walks each of the seven variants
//! from the top this way: on the Hyperliquid server's books (`ticktrade-hl-node`'s
//! `benches/l2_bucket.rs`) that beat deriving the coarse variants from the fine ones' closed
//! buckets in one pass by 1.5x (on a deep Deribit-shaped book all in the dense window,
//! `benches/l2_apply.rs`, the one pass was faster; no server computes all seven there). On a
//! book all in its dense window (`aggregate_book`) each bucket is taken whole from the
//! ladder: its price is also its far edge, and the ladder's best-first cursor
//! (`l2/ladder.rs`) consumes it one 64-tick word mask at a time.

use ticktrade_core::{Decimal, Price, Qty, Side};

use crate::l2::{L2Book, Level};

mod bucket;

use bucket::Bucket;

/// One aggregated level: bucket price, total size, and the number of merged orders (or, for
/// sources without order counts, merged levels).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AggLevel {
    pub price: Price,
    pub qty: Qty,
    pub n: u32,
}

impl From<Level> for AggLevel {
    /// A plain level counts as one.
    #[inline]
    fn from(level: Level) -> AggLevel {
        AggLevel { price: level.price, qty: level.qty, n: 1 }
    }
}

/// A bucket rule that cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AggregateError {
    #[error("nSigFigs must be 2, 3, 4 or 5, got {0}")]
    BadSigFigs(u8),
    #[error("mantissa must be 1, 2 or 5 and needs nSigFigs 5")]
    BadMantissa,
    #[error("Hyperliquid aggregation needs a power-of-ten price unit")]
    UnitNotPowerOfTen,
    #[error("group must be a positive whole number of ticks")]
    BadGroup,
}

/// Hyperliquid's seven `l2Book` precisions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HlPrecision {
    /// `nSigFigs: null`: one level per price.
    Full,
    /// `nSigFigs: 5` with `mantissa` 1 (= null), 2 or 5.
    Sig5 {
        mantissa: u8,
    },
    Sig4,
    Sig3,
    Sig2,
}

impl HlPrecision {
    /// In the order `AggregateBuf` stores them, finest first.
    pub const ALL: [HlPrecision; 7] = [
        HlPrecision::Full,
        HlPrecision::Sig5 { mantissa: 1 },
        HlPrecision::Sig5 { mantissa: 2 },
        HlPrecision::Sig5 { mantissa: 5 },
        HlPrecision::Sig4,
        HlPrecision::Sig3,
        HlPrecision::Sig2,
    ];

    /// From a subscription's `nSigFigs` and `mantissa` (mantissa 1 ≡ null; a mantissa needs
    /// `nSigFigs` 5).
    pub fn try_from_params(n_sig_figs: Option<u8>, mantissa: Option<u8>) -> Result<HlPrecision, AggregateError> {
        match (n_sig_figs, mantissa) {
            (None, None) => Ok(HlPrecision::Full),
            (None, Some(_)) => Err(AggregateError::BadMantissa),
            (Some(5), None | Some(1)) => Ok(HlPrecision::Sig5 { mantissa: 1 }),
            (Some(5), Some(m @ (2 | 5))) => Ok(HlPrecision::Sig5 { mantissa: m }),
            (Some(5), Some(_)) => Err(AggregateError::BadMantissa),
            (Some(4), None) => Ok(HlPrecision::Sig4),
            (Some(3), None) => Ok(HlPrecision::Sig3),
            (Some(2), None) => Ok(HlPrecision::Sig2),
            (Some(2..=4), Some(_)) => Err(AggregateError::BadMantissa),
            (Some(n), _) => Err(AggregateError::BadSigFigs(n)),
        }
    }

    /// `(nSigFigs, mantissa)` for the wire; `None` for the defaults.
    pub const fn params(self) -> (Option<u8>, Option<u8>) {
        match self {
            HlPrecision::Full => (None, None),
            HlPrecision::Sig5 { mantissa: 1 } => (Some(5), None),
            HlPrecision::Sig5 { mantissa } => (Some(5), Some(mantissa)),
            HlPrecision::Sig4 => (Some(4), None),
            HlPrecision::Sig3 => (Some(3), None),
            HlPrecision::Sig2 => (Some(2), None),
        }
    }

    /// Position in `ALL`.
    pub const fn index(self) -> usize {
        match self {
            HlPrecision::Full => 0,
            HlPrecision::Sig5 { mantissa: 2 } => 2,
            HlPrecision::Sig5 { mantissa: 5 } => 3,
            HlPrecision::Sig5 { .. } => 1,
            HlPrecision::Sig4 => 4,
            HlPrecision::Sig3 => 5,
            HlPrecision::Sig2 => 6,
        }
    }

    /// The bucket rule of this precision.
    pub const fn grouping(self) -> Grouping {
        match self {
            HlPrecision::Full => Grouping::Ticks(1),
            HlPrecision::Sig5 { mantissa } => Grouping::SigFigs { sig_figs: 5, mantissa },
            HlPrecision::Sig4 => Grouping::SigFigs { sig_figs: 4, mantissa: 1 },
            HlPrecision::Sig3 => Grouping::SigFigs { sig_figs: 3, mantissa: 1 },
            HlPrecision::Sig2 => Grouping::SigFigs { sig_figs: 2, mantissa: 1 },
        }
    }
}

/// How to bucket prices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grouping {
    /// Fixed buckets of this many ticks (Deribit `group`); 1 = no grouping.
    Ticks(i64),
    /// Significant-figure buckets of `mantissa × 10^(D − sig_figs)` (Hyperliquid; the price
    /// unit must be a power of ten). See `HlPrecision::grouping`.
    SigFigs { sig_figs: u8, mantissa: u8 },
}

impl Grouping {
    /// Deribit's `group` (in price units, e.g. `5` on BTC = 5 USD) for an instrument with
    /// tick `tick`: the group must be a positive whole number of ticks.
    pub fn deribit(group: Decimal, tick: Decimal) -> Result<Grouping, AggregateError> {
        match group.to_units(tick) {
            Ok(ticks) if ticks > 0 => Ok(Grouping::Ticks(ticks)),
            _ => Err(AggregateError::BadGroup),
        }
    }

    /// The bucket price of `price` on `side`.
    #[inline]
    pub fn bucket(self, side: Side, price: Price) -> Price {
        Price::from_raw(self.locate(side == Side::Buy, price.raw()).b)
    }
}

/// Aggregates best-first `levels` of `side` into at most `n` buckets in `out` (cleared first).
#[inline]
pub fn aggregate<I, L>(levels: I, side: Side, grouping: Grouping, n: usize, out: &mut Vec<AggLevel>)
where
    I: IntoIterator<Item = L>,
    L: Into<AggLevel>,
{
    out.clear();
    aggregate_each(levels, side, grouping, n, |level| out.push(level));
}

/// Aggregates best-first `levels` of `side` into buckets and hands the first `n` to `emit`,
/// best first: for callers that keep buckets in a type of their own.
#[inline(always)]
pub fn aggregate_each<I, L>(levels: I, side: Side, grouping: Grouping, n: usize, emit: impl FnMut(AggLevel))
where
    I: IntoIterator<Item = L>,
    L: Into<AggLevel>,
{
    if n == 0 {
        return;
    }
    let bid = side == Side::Buy;
    let levels = levels.into_iter().map(Into::into);
    // One walk per rule, so the loop does not match on the rule for every bucket.
    match grouping {
        Grouping::Ticks(width) if width <= 1 => each_price(levels, n, emit),
        Grouping::Ticks(width) => walk(levels, bid, n, |p| bucket::of_ticks(p, width, bid), emit),
        Grouping::SigFigs { sig_figs, mantissa } => {
            walk(levels, bid, n, |p| bucket::of_sig_figs(p, sig_figs, mantissa, bid), emit)
        }
    }
}

/// No grouping: each price is its own bucket (equal neighbours merge).
#[inline(always)]
fn each_price(levels: impl Iterator<Item = AggLevel>, n: usize, mut emit: impl FnMut(AggLevel)) {
    let mut levels = levels;
    let Some(mut cur) = levels.next() else { return };
    let mut emitted = 0;
    for level in levels {
        if level.price == cur.price {
            cur.qty += level.qty;
            cur.n += level.n;
            continue;
        }
        emit(cur);
        emitted += 1;
        if emitted >= n {
            return;
        }
        cur = level;
    }
    emit(cur);
}

/// The walk (see the module doc), with `locate` the rule's `Bucket` of a price.
#[inline(always)]
fn walk(
    mut levels: impl Iterator<Item = AggLevel>,
    bid: bool,
    n: usize,
    locate: impl Fn(i64) -> Bucket,
    mut emit: impl FnMut(AggLevel),
) {
    let Some(first) = levels.next() else { return };
    // The bucket being summed stays in locals and is emitted once when the next one starts
    // (summing into the output's last element made every level wait on a store to it): prices
    // in `at.lo..=at.hi` belong to it.
    let mut at = locate(first.price.raw());
    let (mut price, mut qty, mut count) = (at.b, first.qty.raw(), first.n);
    let mut emitted = 0;
    for level in levels {
        let p = level.price.raw();
        if p >= at.lo && p <= at.hi {
            qty += level.qty.raw();
            count += level.n;
            continue;
        }
        // The next bucket of the same width when the level is in it (no division); otherwise
        // (a gap of a bucket or more, or a change of digits) the level's own bucket.
        if !at.step(bid, p) {
            at = locate(p);
            // An ask just below a power of ten rounds up to the bucket being summed.
            if at.b == price {
                qty += level.qty.raw();
                count += level.n;
                continue;
            }
        }
        emit(agg_level(price, qty, count));
        emitted += 1;
        if emitted >= n {
            return;
        }
        (price, qty, count) = (at.b, level.qty.raw(), level.n);
    }
    emit(agg_level(price, qty, count));
}

/// `aggregate` over one side of an `L2Book`. When the side is all in its dense window, each
/// bucket is taken whole from the ladder (its price is also its far edge: bids round down,
/// asks up, and the prices from a level through its bucket have its width).
pub fn aggregate_book(book: &L2Book, side: Side, grouping: Grouping, n: usize, out: &mut Vec<AggLevel>) {
    let Some(mut cursor) = book.dense_cursor(side) else {
        aggregate(book.levels(side), side, grouping, n, out);
        return;
    };
    out.clear();
    let bid = side == Side::Buy;
    while out.len() < n {
        let Some(p) = cursor.peek() else { break };
        let bucket = grouping.locate(bid, p).b;
        let (qty, count) = cursor.take_through(bucket);
        out.push(agg_level(bucket, qty, count));
    }
}

/// The top `n` buckets per side of all seven Hyperliquid precisions, in buffers sized once.
#[derive(Clone, Debug)]
pub struct AggregateBuf {
    n: usize,
    /// `[side][HlPrecision::index()]`, side 0 = bids.
    levels: [[Vec<AggLevel>; 7]; 2],
}

impl AggregateBuf {
    /// Buffers for `n` levels per side and variant, for a book whose price unit is
    /// `price_unit` (must be a power of ten, as on Hyperliquid).
    pub fn new(price_unit: Decimal, n: usize) -> Result<AggregateBuf, AggregateError> {
        if !is_power_of_ten(price_unit) {
            return Err(AggregateError::UnitNotPowerOfTen);
        }
        let levels = std::array::from_fn(|_| std::array::from_fn(|_| Vec::with_capacity(n)));
        Ok(AggregateBuf { n, levels })
    }

    /// The number of levels kept per side and variant.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Recomputes all seven variants of both sides of `book` (`aggregate_book` each).
    pub fn aggregate_book(&mut self, book: &L2Book) {
        for side in [Side::Buy, Side::Sell] {
            for precision in HlPrecision::ALL {
                let out = &mut self.levels[side_index(side)][precision.index()];
                aggregate_book(book, side, precision.grouping(), self.n, out);
            }
        }
    }

    /// Recomputes all seven variants of one side from its best-first levels (walked once per
    /// variant, each stopping at its `n`th bucket).
    pub fn aggregate_side<I, L>(&mut self, side: Side, levels: I)
    where
        I: IntoIterator<Item = L> + Clone,
        L: Into<AggLevel>,
    {
        for precision in HlPrecision::ALL {
            let out = &mut self.levels[side_index(side)][precision.index()];
            aggregate(levels.clone(), side, precision.grouping(), self.n, out);
        }
    }

    /// One variant of one side, best first.
    pub fn get(&self, side: Side, precision: HlPrecision) -> &[AggLevel] {
        &self.levels[side_index(side)][precision.index()]
    }
}

#[inline(always)]
fn agg_level(price: i64, qty: i64, n: u32) -> AggLevel {
    AggLevel { price: Price::from_raw(price), qty: Qty::from_raw(qty), n }
}

#[inline]
fn side_index(side: Side) -> usize {
    match side {
        Side::Buy => 0,
        Side::Sell => 1,
    }
}

fn is_power_of_ten(unit: Decimal) -> bool {
    let mut m = unit.mantissa();
    if m <= 0 {
        return false;
    }
    while m % 10 == 0 {
        m /= 10;
    }
    m == 1
}

#[cfg(test)]
mod tests;
