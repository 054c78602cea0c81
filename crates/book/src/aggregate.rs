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
            Grouping::Ticks(width) => Band::new(width, i64::MIN, i64::MAX),
            Grouping::SigFigs { sig_figs, mantissa } => {
                if p <= 0 {
                    return Band::new(1, i64::MIN, 1);
                }
                let digits = (p.ilog10() + 1) as usize;
                let lo = POW10[digits - 1];
                let hi = if digits < 19 { POW10[digits] } else { i64::MAX };
                Band::new(sig_width(sig_figs, mantissa, p), lo, hi)
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

/// `aggregate` over one side of an `L2Book`. When the side is all in its dense window, each
/// bucket is taken whole from the ladder (its price is also its far edge).
pub fn aggregate_book(book: &L2Book, side: Side, grouping: Grouping, n: usize, out: &mut Vec<AggLevel>) {
    let Some(mut cursor) = book.dense_cursor(side) else {
        aggregate(book.levels(side), side, grouping, n, out);
        return;
    };
    out.clear();
    while out.len() < n {
        let Some(p) = cursor.peek() else { break };
        let band = grouping.band(p);
        let bucket = match side {
            Side::Buy => band.round::<true>(p),
            Side::Sell => band.round::<false>(p),
        };
        let (qty, count) = cursor.take_through(bucket);
        out.push(agg_level(bucket, qty, count));
    }
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
    /// `⌊(2^64 − 1) / width⌋ + 1`: for `0 ≤ p ≤ fast_max`, `⌊p / width⌋ = ⌊p · recip / 2^64⌋`
    /// (the error `recip · width − 2^64` is below `width`, and `p · width < 2^64`).
    recip: u64,
    fast_max: i64,
}

impl Band {
    /// Matches no price, so the first bucket takes the slow path.
    const NONE: Band = Band { width: 1, lo: i64::MAX, hi: i64::MIN, recip: 0, fast_max: -1 };

    fn new(width: i64, lo: i64, hi: i64) -> Band {
        let (recip, fast_max) = if width >= 2 { (u64::MAX / width as u64 + 1, i64::MAX / width) } else { (0, -1) };
        Band { width, lo, hi, recip, fast_max }
    }

    /// `round` by this band's width (bids down, asks up), by a multiplication when it can.
    #[inline(always)]
    fn round<const BID: bool>(self, p: i64) -> i64 {
        let w = self.width;
        if w <= 1 {
            return p;
        }
        let down = if (0..=self.fast_max).contains(&p) {
            ((u128::from(p as u64) * u128::from(self.recip)) >> 64) as i64 * w
        } else {
            p - p.rem_euclid(w)
        };
        if BID || down == p { down } else { down.saturating_add(w) }
    }
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
    /// taking input are taken from the ladder with a cursor (one mask per 64-tick word) and
    /// fed as one level each, which is the same to every coarser variant (the buckets nest)
    /// and much cheaper deep in a book.
    pub fn aggregate_book(&mut self, book: &L2Book) {
        self.book_side::<true>(book);
        self.book_side::<false>(book);
    }

    fn book_side<const BID: bool>(&mut self, book: &L2Book) {
        let side = if BID { Side::Buy } else { Side::Sell };
        let Some(mut cursor) = book.dense_cursor(side) else {
            self.side_from::<BID, _, _>(book.levels(side));
            return;
        };
        let mut chain = Chain::<BID>::new(&mut self.levels[side_index(side)], self.n);
        'walk: {
            if self.n == 0 {
                break 'walk;
            }
            while !chain.full(0) {
                let Some((p, q)) = cursor.pop() else { break 'walk };
                if chain.step(p, q, 1) {
                    break 'walk;
                }
            }
            while let Some(p) = cursor.peek() {
                // The bucket's price is also its far edge (bids round down, asks up), so its
                // levels are exactly those from `p` through it.
                let bucket = chain.locate(p);
                let (q, n) = cursor.take_through(bucket);
                if chain.step_bucket(bucket, q, n) {
                    break 'walk;
                }
            }
        }
        chain.flush();
    }

    /// Recomputes all seven variants of one side from its best-first levels.
    pub fn aggregate_side<I, L>(&mut self, side: Side, levels: I)
    where
        I: IntoIterator<Item = L>,
        L: Into<AggLevel>,
    {
        match side {
            Side::Buy => self.side_from::<true, I, L>(levels),
            Side::Sell => self.side_from::<false, I, L>(levels),
        }
    }

    fn side_from<const BID: bool, I, L>(&mut self, levels: I)
    where
        I: IntoIterator<Item = L>,
        L: Into<AggLevel>,
    {
        let side = if BID { Side::Buy } else { Side::Sell };
        let mut chain = Chain::<BID>::new(&mut self.levels[side_index(side)], self.n);
        if self.n > 0 {
            for level in levels {
                let l: AggLevel = level.into();
                if chain.step(l.price.raw(), l.qty.raw(), l.n) {
                    break;
                }
            }
        }
        chain.flush();
    }

    /// One variant of one side, best first.
    pub fn get(&self, side: Side, precision: HlPrecision) -> &[AggLevel] {
        &self.levels[side_index(side)][precision.index()]
    }
}

/// The open bucket of one variant in a `Chain`, in raw ticks.
#[derive(Clone, Copy, Debug)]
struct Run {
    open: bool,
    price: i64,
    qty: i64,
    n: u32,
    /// The band of the open bucket (see `Acc::band`).
    band: Band,
    grouping: Grouping,
}

impl Run {
    /// True if a level (or finer bucket) at `p` belongs to the open bucket.
    #[inline(always)]
    fn joins<const BID: bool>(&self, p: i64) -> bool {
        self.open && if BID { p >= self.price } else { p <= self.price }
    }

    /// The bucket of `p`, which is strictly worse than the open bucket (if any): the
    /// neighbour or a rounding in the same band need no division by a variable. Sets `band`
    /// to the band of that bucket, which the caller opens next (the open bucket's band is
    /// not needed again).
    #[inline(always)]
    fn next<const BID: bool>(&mut self, p: i64) -> i64 {
        let band = &self.band;
        if self.open {
            let b = self.price;
            if BID && p >= band.lo {
                return match b.checked_sub(band.width) {
                    Some(nb) if p >= nb => nb,
                    _ => band.round::<BID>(p),
                };
            }
            if !BID && p < band.hi {
                return match b.checked_add(band.width) {
                    Some(nb) if p <= nb => nb,
                    _ => band.round::<BID>(p),
                };
            }
        }
        self.next_slow::<BID>(p)
    }

    #[inline(never)]
    fn next_slow<const BID: bool>(&mut self, p: i64) -> i64 {
        self.band = self.grouping.band(p);
        self.band.round::<BID>(p)
    }
}

/// The derivation chain of `AggregateBuf` (indices into `HlPrecision::ALL`):
/// 1 = 5 → 2 = (5,2); 1 → 3 = (5,5) → 4 = 4 figures → 5 = 3 → 6 = 2. `BID`: the side.
///
/// Once the variants above a walk have their `n` buckets, source levels skip them and enter
/// the chain lower down (`entry`): deep in a book only the coarse variants still need levels,
/// and feeding a level straight to a coarse walk buckets it exactly as feeding it through the
/// finer buckets would (the buckets nest). Complete leaves are not fed at all.
struct Chain<'a, const BID: bool> {
    /// Index 0 (full precision) has no bucket; its levels go straight to `outs[0]`.
    runs: [Run; 7],
    outs: &'a mut [Vec<AggLevel>; 7],
    n: usize,
    /// The walk that source levels enter: 1, 3, 4, 5 or 6.
    entry: usize,
}

impl<'a, const BID: bool> Chain<'a, BID> {
    /// Clears `outs`, which must have room for `n` levels each.
    fn new(outs: &'a mut [Vec<AggLevel>; 7], n: usize) -> Chain<'a, BID> {
        for o in outs.iter_mut() {
            o.clear();
        }
        let runs = std::array::from_fn(|i| Run {
            open: false,
            price: 0,
            qty: 0,
            n: 0,
            band: Band::NONE,
            grouping: HlPrecision::ALL[i].grouping(),
        });
        Chain { runs, outs, n, entry: 1 }
    }

    #[inline(always)]
    fn full(&self, i: usize) -> bool {
        self.outs[i].len() >= self.n
    }

    /// Feeds one source level; returns true when every variant is complete.
    #[inline]
    fn step(&mut self, p: i64, q: i64, n: u32) -> bool {
        if self.entry == 1 && !self.full(0) {
            self.outs[0].push(agg_level(p, q, n));
        }
        if let Some(closed) = self.push(self.entry, p, q, n) {
            self.cascade(self.entry, closed);
            self.advance();
        }
        self.full(6)
    }

    /// The bucket of the entry walk that a level at `p` falls in; `step_bucket` must feed it
    /// next.
    #[inline]
    fn locate(&mut self, p: i64) -> i64 {
        let r = &mut self.runs[self.entry];
        if r.joins::<BID>(p) { r.price } else { r.next::<BID>(p) }
    }

    /// Feeds a whole bucket of the entry walk, found by `locate`, once the full-precision
    /// list is complete; returns true when every variant is complete.
    #[inline]
    fn step_bucket(&mut self, price: i64, q: i64, n: u32) -> bool {
        debug_assert!(self.full(0));
        let e = self.entry;
        let r = &mut self.runs[e];
        if r.joins::<BID>(price) {
            r.qty += q;
            r.n += n;
        } else if let Some(closed) = self.open(e, price, q, n) {
            self.cascade(e, closed);
            self.advance();
        }
        self.full(6)
    }

    /// Adds a level (or a finer bucket) to walk `i`; returns the bucket this closed, if any.
    #[inline(always)]
    fn push(&mut self, i: usize, p: i64, q: i64, n: u32) -> Option<AggLevel> {
        let r = &mut self.runs[i];
        if r.joins::<BID>(p) {
            r.qty += q;
            r.n += n;
            return None;
        }
        let price = r.next::<BID>(p);
        self.open(i, price, q, n)
    }

    /// Opens a new bucket at `price` in walk `i` (its band already set by `Run::next`);
    /// closes and returns the open one (kept if there is room).
    #[inline(always)]
    fn open(&mut self, i: usize, price: i64, q: i64, n: u32) -> Option<AggLevel> {
        let r = &mut self.runs[i];
        let closed = r.open.then(|| agg_level(r.price, r.qty, r.n));
        r.open = true;
        r.price = price;
        r.qty = q;
        r.n = n;
        if let Some(c) = closed
            && self.outs[i].len() < self.n
        {
            self.outs[i].push(c);
        }
        closed
    }

    /// Passes a bucket just closed by walk `from` to the walks derived from it.
    #[inline]
    fn cascade(&mut self, mut from: usize, mut closed: AggLevel) {
        loop {
            let next = match from {
                1 => {
                    if !self.full(2) {
                        self.push(2, closed.price.raw(), closed.qty.raw(), closed.n);
                    }
                    3
                }
                3..=5 => from + 1,
                _ => return,
            };
            match self.push(next, closed.price.raw(), closed.qty.raw(), closed.n) {
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
        let r = &mut self.runs[i];
        if !r.open {
            return;
        }
        r.open = false;
        let closed = agg_level(r.price, r.qty, r.n);
        if self.outs[i].len() < self.n {
            self.outs[i].push(closed);
        }
        self.cascade(i, closed);
    }

    /// Moves the entry point down while the walks above the next entry are complete. Their
    /// open buckets are passed on first; being complete, they store nothing more.
    #[inline]
    fn advance(&mut self) {
        let next = match self.entry {
            1 => 3,
            3..=5 => self.entry + 1,
            _ => return,
        };
        if self.full(next - 1) {
            self.advance_slow();
        }
    }

    #[cold]
    fn advance_slow(&mut self) {
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
