//! One side of an L2 book: a dense tick-indexed ladder with a presence bitset, plus a sparse
//! overflow map for prices too far from the dense window.
//!
//! Owns: the level quantities of one side, the cached best index, the window's placement.
//! Must not: know about sequence numbers or the other side.
//!
//! Why dense + bitset: on a BTC-PERPETUAL-shaped stream (`crate::workload`) it took 10.7 ns a
//! delta on the calibration host against 42–47 ns for a `BTreeMap` (docs/PERFORMANCE.md §2);
//! `cargo bench -p ticktrade-book --bench l2_apply` and `ticktrade bench book` measure both; `leading_zeros`/`trailing_zeros` find the next
//! level when the best is deleted. The dense window grows (doubling, so amortised and rare) up
//! to `MAX_DENSE_SPAN` ticks; prices farther away than that from the window go to the sparse
//! `BTreeMap`, so **no price is ever dropped**, only slower. Invariant: a price is stored in the
//! sparse map only if it lies outside the dense window, so every price has exactly one home.

use std::collections::BTreeMap;
use std::collections::btree_map;
use std::ops::ControlFlow;

/// The widest dense window in ticks (8 MiB of quantities per side at most).
pub(crate) const MAX_DENSE_SPAN: i64 = 1 << 20;
/// The first window's width in ticks.
const INITIAL_SPAN: i64 = 4096;

/// A multiple of 64 at or below `x`.
#[inline]
fn floor64(x: i64) -> i64 {
    x & !63
}

#[derive(Clone, Debug)]
pub(crate) struct Ladder {
    /// True for bids (best = highest price), false for asks (best = lowest).
    bid: bool,
    /// Price (ticks) of index 0; always a multiple of 64 so windows can be moved word by word.
    base: i64,
    /// Quantity per tick, 0 = no level. `qty.len() == bits.len() * 64`.
    qty: Vec<i64>,
    /// Bit `i % 64` of word `i / 64` set iff `qty[i] != 0`.
    bits: Vec<u64>,
    /// Levels in the dense window.
    n_dense: usize,
    /// Index of the best dense level, if any.
    best_idx: Option<usize>,
    /// Levels outside the dense window.
    sparse: BTreeMap<i64, i64>,
}

impl Ladder {
    pub(crate) fn new(bid: bool) -> Ladder {
        Ladder { bid, base: 0, qty: Vec::new(), bits: Vec::new(), n_dense: 0, best_idx: None, sparse: BTreeMap::new() }
    }

    #[inline]
    fn index_of(&self, price: i64) -> Option<usize> {
        let off = price.wrapping_sub(self.base);
        if price >= self.base && (off as u64) < self.qty.len() as u64 { Some(off as usize) } else { None }
    }

    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.n_dense + self.sparse.len()
    }

    #[inline]
    pub(crate) fn get(&self, price: i64) -> i64 {
        match self.index_of(price) {
            Some(i) => self.qty[i],
            None => self.sparse.get(&price).copied().unwrap_or(0),
        }
    }

    /// Sets the level at `price` to `qty`; `qty <= 0` removes it.
    #[inline]
    #[cfg_attr(target_os = "linux", allow(unsafe_code), unsafe(link_section = "ticktrade_hot"))]
    pub(crate) fn set(&mut self, price: i64, qty: i64) {
        if qty <= 0 {
            self.remove(price);
            return;
        }
        let i = match self.index_of(price) {
            Some(i) => i,
            None => match self.make_room(price) {
                Some(i) => i,
                None => {
                    self.sparse.insert(price, qty);
                    return;
                }
            },
        };
        let slot = &mut self.qty[i];
        if *slot == 0 {
            self.bits[i >> 6] |= 1u64 << (i & 63);
            self.n_dense += 1;
            let better = match self.best_idx {
                None => true,
                Some(b) => {
                    if self.bid {
                        i > b
                    } else {
                        i < b
                    }
                }
            };
            if better {
                self.best_idx = Some(i);
            }
        }
        *slot = qty;
    }

    #[inline]
    #[cfg_attr(target_os = "linux", allow(unsafe_code), unsafe(link_section = "ticktrade_hot"))]
    pub(crate) fn remove(&mut self, price: i64) {
        let Some(i) = self.index_of(price) else {
            self.sparse.remove(&price);
            return;
        };
        if self.qty[i] == 0 {
            return;
        }
        self.qty[i] = 0;
        self.bits[i >> 6] &= !(1u64 << (i & 63));
        self.n_dense -= 1;
        if self.best_idx == Some(i) {
            self.best_idx = if self.bid { self.highest_below(i) } else { self.lowest_above(i) };
        }
    }

    /// Highest set index strictly below `i`.
    #[inline]
    fn highest_below(&self, i: usize) -> Option<usize> {
        if i == 0 {
            return None;
        }
        let j = i - 1;
        let mut w = j >> 6;
        let mut word = self.bits[w] & (u64::MAX >> (63 - (j & 63)));
        loop {
            if word != 0 {
                return Some((w << 6) + 63 - word.leading_zeros() as usize);
            }
            if w == 0 {
                return None;
            }
            w -= 1;
            word = self.bits[w];
        }
    }

    /// Lowest set index strictly above `i`.
    #[inline]
    fn lowest_above(&self, i: usize) -> Option<usize> {
        let j = i + 1;
        let mut w = j >> 6;
        if w >= self.bits.len() {
            return None;
        }
        let mut word = self.bits[w] & (u64::MAX << (j & 63));
        loop {
            if word != 0 {
                return Some((w << 6) + word.trailing_zeros() as usize);
            }
            w += 1;
            if w >= self.bits.len() {
                return None;
            }
            word = self.bits[w];
        }
    }

    /// Moves or grows the dense window so that `price` fits, if the span limit allows.
    /// Returns the index of `price` in the new window, or `None` (store it sparsely).
    #[cold]
    fn make_room(&mut self, price: i64) -> Option<usize> {
        if self.n_dense == 0 {
            self.recentre(price);
        } else {
            // i128 so that windows near the ends of the i64 range cannot overflow.
            let old_lo = self.base as i128;
            let old_len = self.qty.len() as i128;
            let old_hi = old_lo + old_len; // exclusive
            let p = price as i128;
            let lo = old_lo.min(p);
            let hi = old_hi.max(p + 1);
            let needed = hi - lo;
            let max = MAX_DENSE_SPAN as i128;
            if needed > max {
                return None;
            }
            // Double, and put the slack on the side that grew.
            let span = (needed + 63).max(2 * old_len).min(max);
            let slack = span - needed;
            let mut new_lo = if p < old_lo { lo - slack } else { lo };
            new_lo = new_lo.max(i64::MIN as i128) & !63;
            let new_len = ((hi - new_lo + 63) & !63).max(span & !63);
            self.regrow(new_lo as i64, new_len as usize);
        }
        self.index_of(price)
    }

    /// Moves an empty window so that it is centred on `price`.
    fn recentre(&mut self, price: i64) {
        debug_assert_eq!(self.n_dense, 0);
        let len = (self.qty.len() as i64).max(INITIAL_SPAN);
        let lo = floor64(price.saturating_sub(len / 2));
        // Guard against windows that would run past i64::MAX.
        let lo = lo.min(floor64(i64::MAX - len));
        self.base = lo;
        if self.qty.is_empty() {
            self.qty = vec![0; len as usize];
            self.bits = vec![0; len as usize / 64];
        }
        self.best_idx = None;
        self.migrate_sparse();
    }

    /// Re-lays the window at `new_lo` with `new_len` slots, keeping every level.
    fn regrow(&mut self, new_lo: i64, new_len: usize) {
        let shift = (self.base - new_lo) as usize; // multiple of 64
        let mut qty = vec![0i64; new_len];
        let mut bits = vec![0u64; new_len / 64];
        qty[shift..shift + self.qty.len()].copy_from_slice(&self.qty);
        bits[shift / 64..shift / 64 + self.bits.len()].copy_from_slice(&self.bits);
        self.qty = qty;
        self.bits = bits;
        self.base = new_lo;
        self.best_idx = self.best_idx.map(|b| b + shift);
        self.migrate_sparse();
    }

    /// Moves sparse levels that now fall inside the window into it.
    fn migrate_sparse(&mut self) {
        if self.sparse.is_empty() {
            return;
        }
        let lo = self.base;
        let hi = (self.base as i128 + self.qty.len() as i128 - 1).min(i64::MAX as i128) as i64;
        while let Some((&price, &qty)) = self.sparse.range(lo..=hi).next() {
            self.sparse.remove(&price);
            self.set(price, qty);
        }
    }

    /// Removes every level, keeping the window's memory.
    pub(crate) fn clear(&mut self) {
        if self.n_dense > 0 {
            for (w, word) in self.bits.iter_mut().enumerate() {
                let mut m = *word;
                while m != 0 {
                    let b = m.trailing_zeros() as usize;
                    self.qty[(w << 6) + b] = 0;
                    m &= m - 1;
                }
                *word = 0;
            }
        }
        self.n_dense = 0;
        self.best_idx = None;
        self.sparse.clear();
    }

    /// Prepares an empty ladder for a snapshot whose best price is `price`, so the dense
    /// window lands on the liquid part of the book rather than on an outlier.
    pub(crate) fn centre_on(&mut self, price: i64) {
        if self.len() == 0 && self.index_of(price).is_none() {
            self.recentre(price);
        }
    }

    #[inline]
    pub(crate) fn best(&self) -> Option<(i64, i64)> {
        let dense = self.best_idx.map(|i| (self.base + i as i64, self.qty[i]));
        if self.sparse.is_empty() {
            return dense;
        }
        let sparse =
            if self.bid { self.sparse.last_key_value() } else { self.sparse.first_key_value() }.map(|(&p, &q)| (p, q));
        match (dense, sparse) {
            (Some(d), Some(s)) => Some(if (d.0 > s.0) == self.bid { d } else { s }),
            (d, s) => d.or(s),
        }
    }

    /// Calls `f(price, qty)` for each level, best first, until it returns `Break`. Faster
    /// than `iter` when nothing is stored sparsely (a tight bitset walk).
    #[inline]
    pub(crate) fn walk(&self, mut f: impl FnMut(i64, i64) -> ControlFlow<()>) {
        if !self.sparse.is_empty() {
            for (p, q) in self.iter() {
                if f(p, q).is_break() {
                    return;
                }
            }
            return;
        }
        let Some(best) = self.best_idx else { return };
        let mut w = best >> 6;
        if self.bid {
            loop {
                let mut m = self.bits[w];
                while m != 0 {
                    let b = 63 - m.leading_zeros() as usize;
                    m &= !(1u64 << b);
                    let i = (w << 6) + b;
                    if f(self.base + i as i64, self.qty[i]).is_break() {
                        return;
                    }
                }
                if w == 0 {
                    return;
                }
                w -= 1;
            }
        } else {
            while w < self.bits.len() {
                let mut m = self.bits[w];
                while m != 0 {
                    let b = m.trailing_zeros() as usize;
                    m &= m - 1;
                    let i = (w << 6) + b;
                    if f(self.base + i as i64, self.qty[i]).is_break() {
                        return;
                    }
                }
                w += 1;
            }
        }
    }

    /// A best-first cursor over the dense window, or `None` if any level is stored sparsely
    /// (the cursor sees only the window).
    #[inline]
    pub(crate) fn dense_cursor(&self) -> Option<DenseCursor<'_>> {
        if !self.sparse.is_empty() {
            return None;
        }
        let (word, mask) = match self.best_idx {
            Some(b) => (b >> 6, self.bits[b >> 6]),
            None => (0, 0),
        };
        Some(DenseCursor {
            base: self.base,
            qty: &self.qty,
            bits: &self.bits,
            bid: self.bid,
            word,
            mask,
            left: self.n_dense,
        })
    }

    pub(crate) fn iter(&self) -> LadderIter<'_> {
        let (word_idx, mask) = match self.best_idx {
            Some(b) => (b >> 6, self.bits[b >> 6]),
            None => (0, 0),
        };
        LadderIter {
            ladder: self,
            word_idx,
            mask,
            dense_next: None,
            sparse: self.sparse.iter(),
            sparse_next: None,
            started: false,
        }
    }
}

/// Walks the dense window best first, a level or a whole price range at a time, without
/// restarting a search per step: `take_through` consumes every level up to a price with one
/// mask per 64-tick word, so a wide bucket costs a few word operations, not one per level.
pub(crate) struct DenseCursor<'a> {
    base: i64,
    qty: &'a [i64],
    bits: &'a [u64],
    bid: bool,
    /// The word being consumed and its levels not yet taken (0 once past the end).
    word: usize,
    mask: u64,
    /// Levels not yet taken: once 0 the walk stops without scanning the empty rest of the
    /// window (which can be thousands of words after an outlier widened it).
    left: usize,
}

impl DenseCursor<'_> {
    /// Moves to the next non-empty word; false at the end of the window.
    #[inline]
    fn fill(&mut self) -> bool {
        if self.left == 0 {
            return false;
        }
        while self.mask == 0 {
            if self.bid {
                if self.word == 0 {
                    return false;
                }
                self.word -= 1;
            } else {
                if self.word + 1 >= self.bits.len() {
                    return false;
                }
                self.word += 1;
            }
            self.mask = self.bits[self.word];
        }
        true
    }

    /// The bit of the best level left in `mask` (non-zero).
    #[inline]
    fn best_bit(&self) -> usize {
        if self.bid { 63 - self.mask.leading_zeros() as usize } else { self.mask.trailing_zeros() as usize }
    }

    /// The price of the next level, without taking it.
    #[inline]
    pub(crate) fn peek(&mut self) -> Option<i64> {
        if !self.fill() {
            return None;
        }
        Some(self.base + ((self.word << 6) + self.best_bit()) as i64)
    }

    /// Takes every level from the cursor up to and including `edge` (down to it for bids, up
    /// to it for asks); returns their total quantity and number.
    #[inline]
    pub(crate) fn take_through(&mut self, edge: i64) -> (i64, u32) {
        let (mut qty, mut n) = (0i64, 0u32);
        // Offset of `edge` in the window, clamped to one word beyond either end.
        let len = self.qty.len() as i128;
        let e = (edge as i128 - self.base as i128).clamp(-64, len + 64) as i64;
        loop {
            if !self.fill() {
                return (qty, n);
            }
            let start = (self.word << 6) as i64;
            // Bit positions of this word on the taken side of `edge`.
            let keep = if self.bid {
                match e - start {
                    d if d <= 0 => u64::MAX,
                    d if d >= 64 => 0,
                    d => u64::MAX << d,
                }
            } else {
                match e - start {
                    d if d < 0 => 0,
                    d if d >= 63 => u64::MAX,
                    d => u64::MAX >> (63 - d),
                }
            };
            let take = self.mask & keep;
            if take != 0 {
                let k = take.count_ones();
                n += k;
                self.left -= k as usize;
                qty += sum_bits(&self.qty[self.word << 6..(self.word << 6) + 64], take);
                self.mask &= !take;
            }
            if self.mask != 0 || keep != u64::MAX {
                return (qty, n);
            }
        }
    }
}

/// The sum of `word[i]` over the set bits `i` of `mask`. Absent levels hold 0, so for a
/// crowded mask summing the whole span between its first and last bit (which vectorises)
/// gives the same and beats one dependent step per bit.
#[inline]
fn sum_bits(word: &[i64], mask: u64) -> i64 {
    debug_assert_eq!(word.len(), 64);
    if mask.count_ones() >= 8 {
        let lo = mask.trailing_zeros() as usize;
        let hi = 63 - mask.leading_zeros() as usize;
        return word[lo..=hi].iter().sum();
    }
    let mut m = mask;
    let mut s = 0;
    while m != 0 {
        s += word[m.trailing_zeros() as usize];
        m &= m - 1;
    }
    s
}

/// Levels of one ladder, best first: a merge of the dense bitset walk and the sparse map.
pub(crate) struct LadderIter<'a> {
    ladder: &'a Ladder,
    word_idx: usize,
    mask: u64,
    dense_next: Option<(i64, i64)>,
    sparse: btree_map::Iter<'a, i64, i64>,
    sparse_next: Option<(i64, i64)>,
    started: bool,
}

impl LadderIter<'_> {
    #[inline]
    fn next_dense(&mut self) -> Option<(i64, i64)> {
        let l = self.ladder;
        loop {
            if self.mask != 0 {
                let b = if l.bid {
                    let b = 63 - self.mask.leading_zeros() as usize;
                    self.mask &= !(1u64 << b);
                    b
                } else {
                    let b = self.mask.trailing_zeros() as usize;
                    self.mask &= self.mask - 1;
                    b
                };
                let i = (self.word_idx << 6) + b;
                return Some((l.base + i as i64, l.qty[i]));
            }
            if l.bid {
                if self.word_idx == 0 || l.best_idx.is_none() {
                    return None;
                }
                self.word_idx -= 1;
            } else {
                if self.word_idx + 1 >= l.bits.len() || l.best_idx.is_none() {
                    return None;
                }
                self.word_idx += 1;
            }
            self.mask = l.bits[self.word_idx];
        }
    }

    #[inline]
    fn next_sparse(&mut self) -> Option<(i64, i64)> {
        let kv = if self.ladder.bid { self.sparse.next_back() } else { self.sparse.next() };
        kv.map(|(&p, &q)| (p, q))
    }
}

impl Iterator for LadderIter<'_> {
    type Item = (i64, i64);

    #[inline]
    fn next(&mut self) -> Option<(i64, i64)> {
        if !self.started {
            self.started = true;
            self.dense_next = self.next_dense();
            self.sparse_next = self.next_sparse();
        }
        match (self.dense_next, self.sparse_next) {
            (Some(d), Some(s)) => {
                if (d.0 > s.0) == self.ladder.bid {
                    self.dense_next = self.next_dense();
                    Some(d)
                } else {
                    self.sparse_next = self.next_sparse();
                    Some(s)
                }
            }
            (Some(d), None) => {
                self.dense_next = self.next_dense();
                Some(d)
            }
            (None, Some(s)) => {
                self.sparse_next = self.next_sparse();
                Some(s)
            }
            (None, None) => None,
        }
    }
}

#[cfg(test)]
#[path = "ladder_tests.rs"]
mod tests;
