//! The generator's market: coins with realistic metadata and a naive order-level book each.
//!
//! Owns: the coin universe (229 by default: perps with real-looking names and `szDecimals`,
//! spot pairs `PURR/USDC` and `@N`), each coin's tick and mid, and a deliberately simple book
//! (`BTreeMap` of price → FIFO `VecDeque`) that tests compare the server's books against.
//! Must not: share code with `books`/`l2`: it is the independent model.

use std::collections::{BTreeMap, VecDeque};

use ticktrade_core::SplitMix64;
use ticktrade_hl_proto::info::CoinKind;

/// A resting order in the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelOrder {
    pub oid: u64,
    pub user: u16,
    pub sz: i64,
    pub timestamp: u64,
    pub cloid: Option<u64>,
}

/// One side: price (units) → FIFO queue.
pub type Ladder = BTreeMap<i64, VecDeque<ModelOrder>>;

/// One coin of the generated market.
#[derive(Clone, Debug)]
pub struct GenCoin {
    pub name: String,
    pub kind: CoinKind,
    pub sz_decimals: u32,
    /// Price unit exponent: one unit = 10^-px_scale.
    pub px_scale: u32,
    /// Tick in price units (keeps prices at ≤ 5 significant figures).
    pub tick: i64,
    pub mid: i64,
    /// Relative activity (BTC trades more than the 200th coin).
    pub weight: u64,
    pub bids: Ladder,
    pub asks: Ladder,
}

impl GenCoin {
    pub fn ladder(&mut self, bid: bool) -> &mut Ladder {
        if bid { &mut self.bids } else { &mut self.asks }
    }

    /// `(px, total sz, n)` best first, as an L2 view of the model.
    pub fn levels(&self, bid: bool) -> Vec<(i64, i64, u32)> {
        let level = |(&px, q): (&i64, &VecDeque<ModelOrder>)| (px, q.iter().map(|o| o.sz).sum(), q.len() as u32);
        if bid { self.bids.iter().rev().map(level).collect() } else { self.asks.iter().map(level).collect() }
    }

    pub fn best(&self, bid: bool) -> Option<i64> {
        if bid { self.bids.keys().next_back().copied() } else { self.asks.keys().next().copied() }
    }

    pub fn n_orders(&self) -> usize {
        self.bids.values().chain(self.asks.values()).map(VecDeque::len).sum()
    }
}

const PERPS: [(&str, u32, u64); 12] = [
    ("BTC", 5, 76_450),
    ("ETH", 4, 3_007),
    ("SOL", 2, 171),
    ("HYPE", 2, 38),
    ("XRP", 0, 2),
    ("DOGE", 0, 0),
    ("kPEPE", 0, 0),
    ("SUI", 1, 3),
    ("AVAX", 2, 22),
    ("LINK", 1, 15),
    ("BNB", 3, 640),
    ("LTC", 2, 85),
];

fn pow10(n: u32) -> i64 {
    10i64.pow(n)
}

fn digits(v: i64) -> u32 {
    v.max(1).ilog10() + 1
}

/// Builds `n_coins` coins (about one in eight is spot), deterministic for `rng`.
pub fn universe(n_coins: usize, rng: &mut SplitMix64) -> Vec<GenCoin> {
    let n_spot = if n_coins >= 8 { n_coins / 8 } else { 0 };
    let n_perp = n_coins - n_spot;
    let mut coins = Vec::with_capacity(n_coins);
    for i in 0..n_perp {
        let (name, sz_decimals, whole) = match PERPS.get(i) {
            Some(&(n, d, w)) => (n.to_owned(), d, w),
            None => (format!("C{i:03}"), rng.below(5) as u32, [1, 5, 20, 300, 4_000][rng.below(5) as usize]),
        };
        coins.push(coin(name, CoinKind::Perp, sz_decimals, whole, i, rng));
    }
    for j in 0..n_spot {
        let name = if j == 0 { "PURR/USDC".to_owned() } else { format!("@{j}") };
        let sz_decimals = rng.below(3) as u32;
        coins.push(coin(name, CoinKind::Spot, sz_decimals, [0, 1, 30][rng.below(3) as usize], n_perp + j, rng));
    }
    coins
}

fn coin(name: String, kind: CoinKind, sz_decimals: u32, whole: u64, rank: usize, rng: &mut SplitMix64) -> GenCoin {
    let px_scale = kind.max_decimals() - sz_decimals;
    // Mid: `whole` units of 1, or a sub-1 price with 3–4 significant digits when `whole` is 0.
    let mid = if whole == 0 { 1_234 + rng.below(5_000) as i64 } else { (whole as i64) * pow10(px_scale) };
    let mid = mid.max(1_000);
    // Five significant figures: tick = 10^(digits − 5) units, at least one unit.
    let tick = pow10(digits(mid).saturating_sub(5));
    let mid = mid - mid % tick;
    GenCoin {
        name,
        kind,
        sz_decimals,
        px_scale,
        tick,
        mid,
        weight: 1 + 1000 / (rank as u64 + 1),
        bids: Ladder::new(),
        asks: Ladder::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn universe_is_deterministic_and_valid() {
        let a = universe(229, &mut SplitMix64::seeded(7));
        let b = universe(229, &mut SplitMix64::seeded(7));
        assert_eq!(a.len(), 229);
        assert_eq!(
            a.iter().map(|c| (&c.name, c.mid)).collect::<Vec<_>>(),
            b.iter().map(|c| (&c.name, c.mid)).collect::<Vec<_>>()
        );
        assert!(a.iter().any(|c| c.name == "PURR/USDC") && a.iter().any(|c| c.name == "@1"));
        for c in &a {
            assert_eq!(c.mid % c.tick, 0, "{}", c.name);
            assert!(digits(c.mid / c.tick) <= 5, "{}", c.name);
        }
    }
}
