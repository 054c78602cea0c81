//! Grouped L2 views: levels merged into coarser price buckets, top N per side.
//!
//! Owns: the bucket rules (Deribit `group`, Hyperliquid `nSigFigs`/`mantissa`), the walk that
//! merges best-first levels into buckets, and `AggregateBuf`, which computes all seven
//! Hyperliquid variants of a book in one pass into buffers the caller keeps.
//! Must not: allocate once its buffers are sized, format prices, or know any wire format.
//!
//! # Rules
//! - **Bids round down, asks round up** (`floor(px / w)·w`, `ceil(px / w)·w`), so a bucket never
//!   shows a better price than exists. Walking a side best first, a level joins the current
//!   bucket unless its price is strictly worse than the bucket's price; then a new bucket starts
//!   (Hyperliquid's order_book_server `bucket`). Sizes and order counts (`n`) add up.
//! - Hyperliquid: width = `mantissa × 10^(D − nSigFigs)` where `D = floor(log10 px) + 1`. With
//!   the price unit a power of ten, `10^k`, and `px = ticks × 10^k`, the width in ticks is
//!   `mantissa × 10^(digits(ticks) − nSigFigs)`, independent of `k`; a width under one tick
//!   leaves the level unchanged. Hyperliquid's price units are always powers of ten;
//!   `AggregateBuf::new` refuses any other unit.
//! - Deribit `group`: a fixed bucket of `group` price units, i.e. `group / tick` ticks.
//!
//! # All seven at once
//! The seven Hyperliquid buckets nest (every finer bucket lies inside one coarser bucket:
//! `10^k` ⊂ `2·10^k`, `5·10^k` ⊂ `10^(k+1)`, and magnitude changes fall on powers of ten), so
//! coarser variants are derived from the closed buckets of finer ones, as order_book_server
//! does: full → 5 → (5,2); 5 → (5,5) → 4 → 3 → 2. One walk of the book feeds the chain and
//! stops once the coarsest variant has its N buckets; the property tests check each variant
//! against a direct recomputation.

use std::ops::ControlFlow;

use ticktrade_core::{Decimal, Price, Qty, Side};

use crate::l2::{L2Book, Level};

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

/// `mantissa × 10^(digits(ticks) − sig_figs)` ticks, at least 1 (power-of-ten unit).
#[inline]
fn sig_width(sig_figs: u8, mantissa: u8, ticks: i64) -> i64 {
    if ticks <= 0 {
        return 1;
    }
    let digits = ticks.ilog10() + 1;
    let sig = u32::from(sig_figs);
    if digits < sig {
        return 1;
    }
    // digits ≤ 19 and sig_figs ≥ 1 keep the index in the table; saturate for odd inputs.
    i64::from(mantissa).saturating_mul(POW10[((digits - sig) as usize).min(18)])
}

const POW10: [i64; 19] = {
    let mut t = [1i64; 19];
    let mut i = 1;
    while i < 19 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
};

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

    /// The width that applies at `p` and the price range `[lo, hi)` where it applies.
    fn band(self, p: i64) -> Band {
        match self {
            Grouping::Ticks(width) => Band { width, lo: i64::MIN, hi: i64::MAX },
            Grouping::SigFigs { sig_figs, mantissa } => {
                if p <= 0 {
                    return Band { width: 1, lo: i64::MIN, hi: 1 };
                }
                let digits = (p.ilog10() + 1) as usize;
                let lo = POW10[digits - 1];
                let hi = if digits < 19 { POW10[digits] } else { i64::MAX };
                Band { width: sig_width(sig_figs, mantissa, p), lo, hi }
            }
        }
    }

    /// The bucket price of `price` on `side`.
    #[inline]
    pub fn bucket(self, side: Side, price: Price) -> Price {
        let p = price.raw();
        let width = match self {
            Grouping::Ticks(w) => w,
            Grouping::SigFigs { sig_figs, mantissa } => sig_width(sig_figs, mantissa, p),
        };
        Price::from_raw(round(side, p, width))
    }
}

/// Bids down, asks up, to a multiple of `width` ticks.
#[inline]
fn round(side: Side, price: i64, width: i64) -> i64 {
    if width <= 1 {
        return price;
    }
    let r = price.rem_euclid(width);
    match side {
        Side::Buy => price - r,
        Side::Sell if r == 0 => price,
        Side::Sell => price.saturating_add(width - r),
    }
}

/// True if `price` is strictly worse than `than` on `side`.
#[inline]
fn worse(side: Side, price: Price, than: Price) -> bool {
    match side {
        Side::Buy => price < than,
        Side::Sell => price > than,
    }
}

/// Aggregates best-first `levels` of `side` into at most `n` buckets in `out` (cleared first).
pub fn aggregate<I, L>(levels: I, side: Side, grouping: Grouping, n: usize, out: &mut Vec<AggLevel>)
where
    I: IntoIterator<Item = L>,
    L: Into<AggLevel>,
{
    out.clear();
    if n == 0 {
        return;
    }
    let mut acc = Acc { side, grouping, n, cur: None, out: std::mem::take(out), band: Band::NONE };
    for level in levels {
        acc.push(level.into());
        if acc.out.len() >= n {
            break;
        }
    }
    acc.finish();
    *out = acc.out;
}

/// `aggregate` over one side of an `L2Book`.
pub fn aggregate_book(book: &L2Book, side: Side, grouping: Grouping, n: usize, out: &mut Vec<AggLevel>) {
    aggregate(book.levels(side), side, grouping, n, out);
}

/// One running bucket walk. Keeps the first `n` closed buckets in `out` and reports every
/// closed bucket so coarser walks can be fed from it.
struct Acc {
    side: Side,
    grouping: Grouping,
    n: usize,
    cur: Option<AggLevel>,
    out: Vec<AggLevel>,
    /// The width of the current bucket and the price range `[lo, hi)` it applies to; lets
    /// the next bucket be found without a division when it is the neighbour.
    band: Band,
}

#[derive(Clone, Copy, Debug)]
struct Band {
    width: i64,
    lo: i64,
    hi: i64,
}

impl Band {
    /// Matches no price, so the first bucket takes the slow path.
    const NONE: Band = Band { width: 1, lo: i64::MAX, hi: i64::MIN };
}

impl Acc {
    /// Adds a level (or a finer bucket); returns the bucket this closed, if any.
    #[inline(always)]
    fn push(&mut self, level: AggLevel) -> Option<AggLevel> {
        if let Some(cur) = &mut self.cur
            && !worse(self.side, level.price, cur.price)
        {
            cur.qty += level.qty;
            cur.n += level.n;
            return None;
        }
        let (price, band) = self.next_bucket(level.price.raw());
        let price = Price::from_raw(price);
        self.band = band;
        let closed = self.cur.replace(AggLevel { price, ..level });
        if let Some(c) = closed
            && self.out.len() < self.n
        {
            self.out.push(c);
        }
        closed
    }

    /// The bucket of `p`, which is strictly worse than the current bucket (if any), and the
    /// band it lies in. `self.band` must stay the band of the open bucket, so this does not
    /// store it; `push` does when it opens the bucket.
    #[inline(always)]
    fn next_bucket(&self, p: i64) -> (i64, Band) {
        let band = self.band;
        if let Some(cur) = self.cur {
            let b = cur.price.raw();
            let neighbour = match self.side {
                Side::Buy => b.checked_sub(band.width).filter(|&nb| p >= nb && p >= band.lo),
                Side::Sell => b.checked_add(band.width).filter(|&nb| p <= nb && p < band.hi),
            };
            if let Some(nb) = neighbour {
                return (nb, band);
            }
        }
        self.bucket_slow(p)
    }

    #[inline(never)]
    fn bucket_slow(&self, p: i64) -> (i64, Band) {
        let band = self.grouping.band(p);
        (round(self.side, p, band.width), band)
    }

    /// The price of the bucket a level at `p` falls in (the open one if `p` joins it), without
    /// changing the walk. Because bids round down and asks round up, the bucket price is also
    /// its far edge: walking from `p`, the bucket's levels are exactly those up to it.
    #[inline]
    fn bucket_of(&self, p: i64) -> i64 {
        if let Some(cur) = self.cur
            && !worse(self.side, Price::from_raw(p), cur.price)
        {
            return cur.price.raw();
        }
        self.next_bucket(p).0
    }

    /// Closes the open bucket; returns it.
    fn finish(&mut self) -> Option<AggLevel> {
        let closed = self.cur.take();
        if let Some(c) = closed
            && self.out.len() < self.n
        {
            self.out.push(c);
        }
        closed
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

    /// Recomputes all seven variants of both sides of `book`.
    ///
    /// Levels are fed one by one until the full-precision variant has its `n`; after that
    /// (when the side is all in the dense window) whole buckets of the finest variant still
    /// taking input are summed straight from the ladder and fed as one level each, which is
    /// the same to every coarser variant (the buckets nest) and much cheaper deep in a book.
    pub fn aggregate_book(&mut self, book: &L2Book) {
        for side in [Side::Buy, Side::Sell] {
            let dense = book.is_dense_only(side);
            self.run_side(side, |chain| {
                let mut last: Option<Price> = None;
                let mut done = false;
                book.walk_levels(side, |level| {
                    last = Some(level.price);
                    done = chain.step(level.into());
                    if done || (dense && chain.full(0)) { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
                });
                let Some(mut last) = last else { return };
                if done || !dense {
                    return;
                }
                while let Some(p) = book.next_worse(side, last) {
                    let acc = chain.entry_acc();
                    // Everything from `p` to the bucket price: the bucket's levels.
                    let bucket = Price::from_raw(chain.accs[acc].bucket_of(p.raw()));
                    let (lo, hi) = match side {
                        Side::Buy => (bucket, p),
                        Side::Sell => (p, bucket),
                    };
                    let (qty, n) = book.sum_range(side, lo, hi);
                    last = bucket;
                    if chain.step(AggLevel { price: bucket, qty, n }) {
                        return;
                    }
                }
            });
        }
    }

    /// Recomputes all seven variants of one side from its best-first levels.
    pub fn aggregate_side<I, L>(&mut self, side: Side, levels: I)
    where
        I: IntoIterator<Item = L>,
        L: Into<AggLevel>,
    {
        self.run_side(side, |chain| {
            for level in levels {
                if chain.step(level.into()) {
                    break;
                }
            }
        });
    }

    /// Clears one side's buffers, lets `source` feed levels to the chain (the step returns
    /// true once every variant is complete), then flushes the open buckets.
    #[inline]
    fn run_side(&mut self, side: Side, source: impl FnOnce(&mut Chain<'_>)) {
        let n = self.n;
        let bufs = &mut self.levels[side_index(side)];
        for b in bufs.iter_mut() {
            b.clear();
        }
        if n == 0 {
            return;
        }
        let mut accs: [Acc; 7] = std::array::from_fn(|i| Acc {
            side,
            grouping: HlPrecision::ALL[i].grouping(),
            n,
            cur: None,
            out: std::mem::take(&mut bufs[i]),
            band: Band::NONE,
        });
        let mut chain = Chain { accs: &mut accs, n, entry: 1 };
        source(&mut chain);
        chain.flush();
        for (b, acc) in bufs.iter_mut().zip(accs) {
            *b = acc.out;
        }
    }

    /// One variant of one side, best first.
    pub fn get(&self, side: Side, precision: HlPrecision) -> &[AggLevel] {
        &self.levels[side_index(side)][precision.index()]
    }
}

/// The derivation chain of `AggregateBuf` (indices into `HlPrecision::ALL`):
/// 1 = 5 → 2 = (5,2); 1 → 3 = (5,5) → 4 = 4 figures → 5 = 3 → 6 = 2.
///
/// Once the variants above a walk have their `n` buckets, source levels skip them and enter
/// the chain lower down (`entry`): deep in a book only the coarse variants still need levels,
/// and feeding a level straight to a coarse walk buckets it exactly as feeding it through the
/// finer buckets would (the buckets nest). Complete leaves are not fed at all.
struct Chain<'a> {
    accs: &'a mut [Acc; 7],
    n: usize,
    /// The walk that source levels enter: 1, 3, 4, 5 or 6.
    entry: usize,
}

impl Chain<'_> {
    /// Feeds one source level; returns true when every variant is complete.
    #[inline]
    fn step(&mut self, level: AggLevel) -> bool {
        if self.entry == 1 && !self.full(0) {
            self.accs[0].out.push(level);
        }
        if let Some(closed) = self.accs[self.entry].push(level) {
            self.cascade(self.entry, closed);
            self.advance();
        }
        self.full(6)
    }

    /// The walk that source levels enter first (after the full-precision list).
    #[inline]
    fn entry_acc(&self) -> usize {
        self.entry
    }

    #[inline]
    fn full(&self, i: usize) -> bool {
        self.accs[i].out.len() >= self.n
    }

    /// Passes a bucket just closed by walk `from` to the walks derived from it.
    #[inline]
    fn cascade(&mut self, mut from: usize, mut closed: AggLevel) {
        loop {
            let next = match from {
                1 => {
                    if !self.full(2) {
                        self.accs[2].push(closed);
                    }
                    3
                }
                3..=5 => from + 1,
                _ => return,
            };
            match self.accs[next].push(closed) {
                Some(c) => {
                    closed = c;
                    from = next;
                }
                None => return,
            }
        }
    }

    /// Closes walk `i`'s open bucket and passes it on.
    fn finish(&mut self, i: usize) {
        if let Some(closed) = self.accs[i].finish() {
            self.cascade(i, closed);
        }
    }

    /// Moves the entry point down while the walks above the next entry are complete. Their
    /// open buckets are passed on first; being complete, they store nothing more.
    #[cold]
    fn advance(&mut self) {
        loop {
            let next = match self.entry {
                1 => 3,
                3..=5 => self.entry + 1,
                _ => return,
            };
            if !(0..next).all(|i| self.full(i)) {
                return;
            }
            for i in self.entry..next {
                self.finish(i);
            }
            self.entry = next;
        }
    }

    /// Closes the open buckets finest first, passing each down the chain (walks that were
    /// skipped have no open bucket).
    fn flush(&mut self) {
        for i in 1..7 {
            self.finish(i);
        }
    }
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
