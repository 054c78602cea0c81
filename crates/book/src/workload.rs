//! Deterministic Deribit-shaped L2 streams for tests and benchmarks.
//!
//! Owns: the shape of the stream, modelled on recorded Deribit BTC-PERPETUAL traffic: a
//! BTC-PERPETUAL-like book (tick 0.5, prices in ticks around 120 000
//! = 60 000 USD), a snapshot of ~600 levels per side, then single-level deltas: ~25 % deletes,
//! ~50 % changes of existing levels, ~25 % new levels; the mid random-walks; a level that
//! would cross is preceded by deletes of the crossed levels; ~10 % of activity is deep
//! (>1000 ticks from the best) and rare far outliers rest up to 40 000 ticks away.
//! `WorkloadParams::deep` builds the same stream around a 100 000-level-per-side book.
//! Must not: read a clock, use OS randomness, or do I/O: the same parameters give the same
//! stream on every machine.

use std::collections::BTreeMap;

use ticktrade_core::{Price, Qty, Side, SplitMix64};

use crate::l2::{Action, LevelUpdate};

/// What to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkloadParams {
    pub seed: u64,
    /// Number of single-level deltas after the snapshot.
    pub n_deltas: usize,
    /// Levels per side in the snapshot; the stream keeps the depth within ±10 % of it.
    pub depth: usize,
    /// The starting mid, in ticks.
    pub mid_ticks: i64,
}

impl WorkloadParams {
    /// BTC-PERPETUAL-like: ~600 levels per side.
    pub fn btc_perpetual(n_deltas: usize) -> WorkloadParams {
        WorkloadParams { seed: 0x5eed_b7c0, n_deltas, depth: 600, mid_ticks: 120_000 }
    }

    /// The same stream around a book of 100 000 levels per side.
    pub fn deep(n_deltas: usize) -> WorkloadParams {
        WorkloadParams { seed: 0xdee9_b00c, n_deltas, depth: 100_000, mid_ticks: 400_000 }
    }
}

/// A snapshot and the deltas that follow it.
#[derive(Clone, Debug)]
pub struct Workload {
    /// The snapshot's `change_id`; delta `i` has `change_id = snapshot_change_id + i + 1`
    /// and `prev_change_id = snapshot_change_id + i` (see `change_ids`).
    pub snapshot_change_id: u64,
    /// Both sides, bids first, best first.
    pub snapshot: Vec<LevelUpdate>,
    /// One level update per delta.
    pub deltas: Vec<LevelUpdate>,
}

impl Workload {
    /// `(change_id, prev_change_id)` of delta `i`.
    #[inline]
    pub fn change_ids(&self, i: usize) -> (u64, u64) {
        let prev = self.snapshot_change_id + i as u64;
        (prev + 1, prev)
    }

    /// Generates the stream for `params`.
    pub fn generate(params: WorkloadParams) -> Workload {
        Generator::new(params).run()
    }
}

/// The generator keeps its own model of the book so that changes and deletes hit levels
/// that exist and the depth stays steady.
struct Generator {
    params: WorkloadParams,
    rng: SplitMix64,
    mid: i64,
    bids: BTreeMap<i64, i64>,
    asks: BTreeMap<i64, i64>,
    out: Vec<LevelUpdate>,
}

impl Generator {
    fn new(params: WorkloadParams) -> Generator {
        Generator {
            params,
            rng: SplitMix64::new(params.seed),
            mid: params.mid_ticks,
            bids: BTreeMap::new(),
            asks: BTreeMap::new(),
            out: Vec::with_capacity(params.n_deltas + 64),
        }
    }

    fn qty(&mut self) -> i64 {
        // Mostly small, sometimes large (Deribit amounts in USD multiples of 10).
        if self.rng.chance(900, 1000) { self.rng.range(1, 500) * 10 } else { self.rng.range(1, 100_000) * 10 }
    }

    /// Distance from the best at which the next delta happens: mostly near the top, ~10 % deep
    /// (over 1000 ticks), rare outliers far out (the histogram of recorded BTC-PERPETUAL deltas).
    fn distance(&mut self) -> i64 {
        let r = self.rng.range(0, 999);
        match r {
            0..630 => self.rng.range(0, 5),
            630..830 => self.rng.range(6, 20),
            830..840 => self.rng.range(21, 100),
            840..895 => self.rng.range(101, 1000),
            _ if self.rng.chance(20, 1000) => self.rng.range(1001, 40_000),
            _ => self.rng.range(1001, 5000),
        }
    }

    fn snapshot(&mut self) -> Vec<LevelUpdate> {
        let depth = self.params.depth;
        let n_near = depth - depth / 10;
        let n_far = (depth / 100).max(1);
        let mut snap = Vec::with_capacity(2 * depth);
        for side in [Side::Buy, Side::Sell] {
            let sign = -side.sign(); // bids go down from the mid, asks up
            let mut levels: BTreeMap<i64, i64> = BTreeMap::new();
            let mut dist = 1;
            for _ in 0..n_near {
                levels.insert(self.mid + sign * dist, self.qty());
                dist += if self.rng.chance(700, 1000) { 1 } else { self.rng.range(2, 4) };
            }
            let near_end = dist;
            while levels.len() < depth - n_far {
                let d = self.rng.range(near_end.max(1001), near_end.max(1001) + 4000 + depth as i64);
                let q = self.qty();
                levels.insert(self.mid + sign * d, q);
            }
            while levels.len() < depth {
                let d = self.rng.range(5000, 40_000 + depth as i64);
                let q = self.qty();
                levels.insert(self.mid + sign * d, q);
            }
            let ordered: Vec<(i64, i64)> = match side {
                Side::Buy => levels.iter().rev().map(|(&p, &q)| (p, q)).collect(),
                Side::Sell => levels.iter().map(|(&p, &q)| (p, q)).collect(),
            };
            for (p, q) in ordered {
                snap.push(update(side, Action::New, p, q));
            }
            *self.side_mut(side) = levels;
        }
        snap
    }

    fn side_mut(&mut self, side: Side) -> &mut BTreeMap<i64, i64> {
        match side {
            Side::Buy => &mut self.bids,
            Side::Sell => &mut self.asks,
        }
    }

    fn side(&self, side: Side) -> &BTreeMap<i64, i64> {
        match side {
            Side::Buy => &self.bids,
            Side::Sell => &self.asks,
        }
    }

    fn best(&self, side: Side) -> Option<i64> {
        match side {
            Side::Buy => self.bids.last_key_value().map(|(&p, _)| p),
            Side::Sell => self.asks.first_key_value().map(|(&p, _)| p),
        }
    }

    /// The existing level nearest to `d` ticks behind the best of `side`.
    fn pick_existing(&self, side: Side, d: i64) -> Option<i64> {
        let levels = self.side(side);
        let best = self.best(side)?;
        match side {
            Side::Buy => {
                let t = best - d;
                levels.range(..=t).next_back().or_else(|| levels.range(t..).next()).map(|(&p, _)| p)
            }
            Side::Sell => {
                let t = best + d;
                levels.range(t..).next().or_else(|| levels.range(..=t).next_back()).map(|(&p, _)| p)
            }
        }
    }

    fn emit(&mut self, side: Side, action: Action, price: i64, qty: i64) {
        match action {
            Action::Delete => {
                self.side_mut(side).remove(&price);
            }
            Action::New | Action::Change => {
                self.side_mut(side).insert(price, qty);
            }
        }
        self.out.push(update(side, action, price, if action == Action::Delete { 0 } else { qty }));
    }

    fn new_level(&mut self, side: Side) {
        let d = self.distance();
        // Near the touch, new levels may also improve on the best (the walk of the mid).
        let anchor = match side {
            Side::Buy => self.mid - 1,
            Side::Sell => self.mid + 1,
        };
        let mut price = anchor - side.sign() * d;
        // A new level goes to a free price: step away from the touch past occupied ones.
        for _ in 0..16 {
            if !self.side(side).contains_key(&price) {
                break;
            }
            price -= side.sign();
        }
        let qty = self.qty();
        // Uncross first: Deribit removes the levels a new one crosses.
        let opposite = side.opposite();
        while let Some(b) = self.best(opposite) {
            if side.crosses(Price::from_raw(price), Price::from_raw(b)) {
                self.emit(opposite, Action::Delete, b, 0);
            } else {
                break;
            }
        }
        let action = if self.side(side).contains_key(&price) { Action::Change } else { Action::New };
        self.emit(side, action, price, qty);
    }

    fn run(mut self) -> Workload {
        let snapshot = self.snapshot();
        let depth = self.params.depth;
        let (lo, hi) = (depth - depth / 10, depth + depth / 10);
        while self.out.len() < self.params.n_deltas {
            if self.rng.chance(60, 1000) {
                self.mid += if self.rng.chance(500, 1000) { 1 } else { -1 };
            }
            let side = if self.rng.chance(500, 1000) { Side::Buy } else { Side::Sell };
            let n = self.side(side).len();
            let r = self.rng.range(0, 99);
            // 0 = delete, 1 = change, 2 = new; the depth band overrides the mix, and the
            // delete share leans towards the target depth (crossing deletes and "new" levels
            // that already exist would otherwise thin the book).
            let del = if n < depth { 21 } else { 27 };
            let op = if n <= lo || n < 2 {
                2
            } else if n >= hi || r < del {
                0
            } else if r < del + 50 {
                1
            } else {
                2
            };
            match op {
                0 | 1 => {
                    let d = self.distance();
                    let Some(price) = self.pick_existing(side, d) else {
                        self.new_level(side);
                        continue;
                    };
                    if op == 0 {
                        self.emit(side, Action::Delete, price, 0);
                    } else {
                        let q = self.qty();
                        self.emit(side, Action::Change, price, q);
                    }
                }
                _ => self.new_level(side),
            }
        }
        self.out.truncate(self.params.n_deltas);
        Workload { snapshot_change_id: 1_000, snapshot, deltas: self.out }
    }
}

fn update(side: Side, action: Action, price: i64, qty: i64) -> LevelUpdate {
    LevelUpdate { side, action, price: Price::from_raw(price), qty: Qty::from_raw(qty) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::l2::L2Book;

    #[test]
    fn stream_has_the_documented_shape() {
        let w = Workload::generate(WorkloadParams::btc_perpetual(100_000));
        assert_eq!(w.deltas.len(), 100_000);
        assert_eq!(w.snapshot.len(), 1200);
        let n = w.deltas.len() as f64;
        let count = |a: Action| w.deltas.iter().filter(|u| u.action == a).count() as f64 / n;
        assert!((0.20..0.32).contains(&count(Action::Delete)), "deletes {}", count(Action::Delete));
        assert!((0.40..0.60).contains(&count(Action::Change)), "changes {}", count(Action::Change));
        assert!((0.18..0.32).contains(&count(Action::New)), "news {}", count(Action::New));

        let mut book = L2Book::new();
        book.apply_snapshot(w.snapshot_change_id, &w.snapshot);
        let mut deep = 0usize;
        let mut far = 0usize;
        for (i, u) in w.deltas.iter().enumerate() {
            if let Some(best) = book.best(u.side) {
                let dist = (u.price.raw() - best.price.raw()).abs();
                deep += usize::from(dist > 1000);
                far += usize::from(dist > 10_000);
            }
            let (cid, prev) = w.change_ids(i);
            book.apply_change(cid, prev, std::slice::from_ref(u)).unwrap();
        }
        let deep_share = deep as f64 / n;
        assert!((0.05..0.2).contains(&deep_share), "deep share {deep_share}");
        assert!(far > 0, "some far outliers");
        for side in [Side::Buy, Side::Sell] {
            assert!((540..=660).contains(&book.depth(side)), "{side} depth {}", book.depth(side));
        }
        let (bid, ask) = (book.best_bid().unwrap().price, book.best_ask().unwrap().price);
        assert!(bid < ask, "uncrossed at the end: {bid:?} {ask:?}");
    }

    #[test]
    fn same_params_same_stream() {
        let a = Workload::generate(WorkloadParams::btc_perpetual(2_000));
        let b = Workload::generate(WorkloadParams::btc_perpetual(2_000));
        assert_eq!(a.deltas, b.deltas);
        let mut p = WorkloadParams::btc_perpetual(2_000);
        p.seed += 1;
        assert_ne!(Workload::generate(p).deltas, a.deltas);
    }

    #[test]
    fn deep_book_has_100k_levels_per_side() {
        let w = Workload::generate(WorkloadParams::deep(1_000));
        let mut book = L2Book::new();
        book.apply_snapshot(w.snapshot_change_id, &w.snapshot);
        assert_eq!(book.depth(Side::Buy), 100_000);
        assert_eq!(book.depth(Side::Sell), 100_000);
    }
}
