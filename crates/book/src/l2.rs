//! Full-depth L2 book for one instrument, rebuilt from a snapshot plus deltas.
//!
//! Owns: both ladders (bids and asks), the last applied `change_id`, the `stale` flag.
//! Must not: decode JSON, read a clock, log, or resync on its own. A gap returns
//! `ApplyError::Gap`, the book stays stale, and the caller fetches a snapshot, which replaces
//! the book entirely.
//!
//! Depth is unbounded and there is no fixed price window: every level is kept, however far
//! from the best (see `ladder` for the dense window + sparse overflow layout). Steady state
//! allocates nothing; growing the dense window is amortised (doubling) and rare, and only
//! levels more than `2^20` ticks from the window allocate (a `BTreeMap` node).
//!
//! # Deribit semantics (`book.*` notifications, as Deribit documents them)
//! - `new` and `change` set the level's amount; `delete` removes the level. The feed is
//!   authoritative, so `change` of a missing level creates it, `new` of an existing level
//!   overwrites it, and `delete` of a missing level does nothing. None of them fail.
//! - An amount of 0 on `new`/`change` removes the level too. A negative amount is corrupt
//!   data: the delta is not applied, the book becomes stale, and `ApplyError::NegativeQty`
//!   is returned.
//! - A crossed book after a delta is kept as is: real feeds cross transiently and the next
//!   delta uncrosses them. The book never "fixes" it.

mod ladder;

use ladder::{Ladder, LadderIter};
use ticktrade_core::{Price, Qty, Side};

/// What a level update does (Deribit's `new`, `change`, `delete`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    New,
    Change,
    Delete,
}

/// One level update of a snapshot or delta.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelUpdate {
    pub side: Side,
    pub action: Action,
    pub price: Price,
    pub qty: Qty,
}

/// One price level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Level {
    pub price: Price,
    pub qty: Qty,
}

/// Why a delta was not applied. In every case the book is stale afterwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// `prev_change_id` is not the last applied `change_id`: a message was lost. Fetch a
    /// snapshot. `expected_prev` is 0 when no snapshot was applied yet.
    #[error("sequence gap: expected prev_change_id {expected_prev}, got {got_prev}")]
    Gap { expected_prev: u64, got_prev: u64 },
    /// The book is stale (after a gap or `mark_stale`); deltas are ignored until a snapshot.
    #[error("book is stale; waiting for a snapshot")]
    Stale,
    /// A level update carried a negative amount; nothing of the delta was applied.
    #[error("negative amount {qty} at price {price}")]
    NegativeQty { price: Price, qty: Qty },
}

/// The result of walking one side of the book for a quantity.
///
/// `notional` is exact: the sum of `price_ticks × lots` over the consumed levels (i128, so
/// it cannot overflow). The average price in ticks is `notional / filled`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VwapFill {
    /// Σ price × qty over the consumed levels, in ticks × lots.
    pub notional: i128,
    /// How much was filled; less than asked when the side is too thin.
    pub filled: Qty,
    /// The last (worst) level price touched.
    pub worst: Price,
}

impl VwapFill {
    /// True if the whole `wanted` quantity was available.
    pub fn is_complete(&self, wanted: Qty) -> bool {
        self.filled >= wanted
    }
}

/// A full-depth L2 book.
#[derive(Clone, Debug)]
pub struct L2Book {
    bids: Ladder,
    asks: Ladder,
    last_change_id: Option<u64>,
    stale: bool,
}

impl Default for L2Book {
    fn default() -> L2Book {
        L2Book::new()
    }
}

impl L2Book {
    /// An empty, not stale book with no change id.
    pub fn new() -> L2Book {
        L2Book { bids: Ladder::new(true), asks: Ladder::new(false), last_change_id: None, stale: false }
    }

    #[inline]
    fn ladder(&self, side: Side) -> &Ladder {
        match side {
            Side::Buy => &self.bids,
            Side::Sell => &self.asks,
        }
    }

    #[inline]
    fn ladder_mut(&mut self, side: Side) -> &mut Ladder {
        match side {
            Side::Buy => &mut self.bids,
            Side::Sell => &mut self.asks,
        }
    }

    #[inline]
    fn apply_one(&mut self, u: &LevelUpdate) {
        let qty = match u.action {
            Action::Delete => 0,
            Action::New | Action::Change => u.qty.raw(),
        };
        self.ladder_mut(u.side).set(u.price.raw(), qty);
    }

    /// Replaces the book with `updates` (a full snapshot) and clears the stale flag.
    /// Entries with `Delete` or an amount ≤ 0 are absent levels.
    pub fn apply_snapshot(&mut self, change_id: u64, updates: &[LevelUpdate]) {
        self.bids.clear();
        self.asks.clear();
        // Centre each dense window on the side's best price, not on a far outlier.
        let mut best_bid: Option<i64> = None;
        let mut best_ask: Option<i64> = None;
        for u in updates.iter().filter(|u| u.action != Action::Delete && u.qty.is_positive()) {
            let p = u.price.raw();
            match u.side {
                Side::Buy => best_bid = Some(best_bid.map_or(p, |b| b.max(p))),
                Side::Sell => best_ask = Some(best_ask.map_or(p, |a| a.min(p))),
            }
        }
        if let Some(p) = best_bid {
            self.bids.centre_on(p);
        }
        if let Some(p) = best_ask {
            self.asks.centre_on(p);
        }
        for u in updates {
            self.apply_one(u);
        }
        self.last_change_id = Some(change_id);
        self.stale = false;
    }

    /// Applies one delta. `prev_change_id` must equal the last applied `change_id`;
    /// otherwise the book becomes stale and `Err(Gap)` is returned. While stale, every delta
    /// is ignored with `Err(Stale)` until `apply_snapshot`.
    #[cfg_attr(target_os = "linux", allow(unsafe_code), unsafe(link_section = "ticktrade_hot"))]
    pub fn apply_change(
        &mut self,
        change_id: u64,
        prev_change_id: u64,
        updates: &[LevelUpdate],
    ) -> Result<(), ApplyError> {
        if self.stale {
            return Err(ApplyError::Stale);
        }
        if self.last_change_id != Some(prev_change_id) {
            return Err(self.gap(prev_change_id));
        }
        if let Some(bad) = updates.iter().find(|u| u.qty.raw() < 0 && u.action != Action::Delete) {
            self.stale = true;
            return Err(ApplyError::NegativeQty { price: bad.price, qty: bad.qty });
        }
        for u in updates {
            self.apply_one(u);
        }
        self.last_change_id = Some(change_id);
        Ok(())
    }

    #[cold]
    fn gap(&mut self, got_prev: u64) -> ApplyError {
        self.stale = true;
        ApplyError::Gap { expected_prev: self.last_change_id.unwrap_or(0), got_prev }
    }

    /// Sets one level without sequencing (Hyperliquid-style full levels). `qty <= 0` removes.
    #[inline]
    pub fn set_level(&mut self, side: Side, price: Price, qty: Qty) {
        self.ladder_mut(side).set(price.raw(), qty.raw());
    }

    /// Removes every level. The change id and stale flag are kept.
    pub fn clear(&mut self) {
        self.bids.clear();
        self.asks.clear();
    }

    pub fn is_stale(&self) -> bool {
        self.stale
    }

    /// Marks the book stale (e.g. after a reconnect): deltas are refused until a snapshot.
    pub fn mark_stale(&mut self) {
        self.stale = true;
    }

    pub fn last_change_id(&self) -> Option<u64> {
        self.last_change_id
    }

    #[inline]
    pub fn best_bid(&self) -> Option<Level> {
        self.best(Side::Buy)
    }

    #[inline]
    pub fn best_ask(&self) -> Option<Level> {
        self.best(Side::Sell)
    }

    /// The best level of a side: the highest bid or the lowest ask.
    #[inline]
    pub fn best(&self, side: Side) -> Option<Level> {
        self.ladder(side).best().map(to_level)
    }

    /// All levels of a side, best first.
    pub fn levels(&self, side: Side) -> Levels<'_> {
        Levels { inner: self.ladder(side).iter() }
    }

    /// Calls `f` for each level of a side, best first, until it returns `Break`: the fastest
    /// way to walk a side (no iterator state).
    #[inline]
    pub fn walk_levels(&self, side: Side, mut f: impl FnMut(Level) -> std::ops::ControlFlow<()>) {
        self.ladder(side).walk(|p, q| f(to_level((p, q))));
    }

    /// A best-first cursor over `side`, if every level of it is in its dense window (see
    /// `ladder`); aggregation takes whole buckets from it.
    #[inline]
    pub(crate) fn dense_cursor(&self, side: Side) -> Option<ladder::DenseCursor<'_>> {
        self.ladder(side).dense_cursor()
    }

    /// The best `n` levels of a side, best first.
    pub fn top(&self, side: Side, n: usize) -> std::iter::Take<Levels<'_>> {
        self.levels(side).take(n)
    }

    /// The amount at `price` on `side`; zero if there is no level.
    #[inline]
    pub fn qty_at(&self, side: Side, price: Price) -> Qty {
        Qty::from_raw(self.ladder(side).get(price.raw()))
    }

    /// The number of levels on a side.
    #[inline]
    pub fn depth(&self, side: Side) -> usize {
        self.ladder(side).len()
    }

    /// Walks `side`'s levels best first until `qty` is filled (`Side::Sell` = the asks a
    /// buyer lifts). Returns `None` if `qty <= 0` or the side is empty; otherwise the fill,
    /// which is partial (`filled < qty`) when the side holds less than `qty`.
    pub fn vwap(&self, side: Side, qty: Qty) -> Option<VwapFill> {
        if !qty.is_positive() {
            return None;
        }
        let mut fill: Option<VwapFill> = None;
        let mut left = qty.raw();
        for level in self.levels(side) {
            let take = left.min(level.qty.raw());
            let f = fill.get_or_insert(VwapFill { notional: 0, filled: Qty::ZERO, worst: level.price });
            f.notional += i128::from(level.price.raw()) * i128::from(take);
            f.filled += Qty::from_raw(take);
            f.worst = level.price;
            left -= take;
            if left == 0 {
                break;
            }
        }
        fill
    }

    /// A cheap hash of the top `n` levels of both sides (and their counts), for tests and
    /// cross-checks. Equal books give equal checksums; it is not cryptographic.
    pub fn checksum(&self, n: usize) -> u64 {
        checksum_levels(self.top(Side::Buy, n), self.top(Side::Sell, n))
    }
}

/// The checksum of `L2Book::checksum` over any two best-first level lists, so another book
/// (or a model) can be compared with an `L2Book`.
pub fn checksum_levels(bids: impl Iterator<Item = Level>, asks: impl Iterator<Item = Level>) -> u64 {
    // splitmix64's finaliser as the mixing step: cheap and well spread.
    fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15;
    for (tag, side) in [(1u64, &mut bids.into_iter() as &mut dyn Iterator<Item = Level>), (2, &mut asks.into_iter())] {
        let mut count = 0u64;
        for l in side {
            h = mix(h ^ l.price.raw() as u64).wrapping_add(mix(l.qty.raw() as u64 ^ tag));
            count += 1;
        }
        h = mix(h ^ count.wrapping_mul(tag));
    }
    h
}

#[inline]
fn to_level((price, qty): (i64, i64)) -> Level {
    Level { price: Price::from_raw(price), qty: Qty::from_raw(qty) }
}

/// Levels of one side, best first (see `L2Book::levels`).
pub struct Levels<'a> {
    inner: LadderIter<'a>,
}

impl Iterator for Levels<'_> {
    type Item = Level;

    #[inline]
    fn next(&mut self) -> Option<Level> {
        self.inner.next().map(to_level)
    }
}

#[cfg(test)]
mod tests;
