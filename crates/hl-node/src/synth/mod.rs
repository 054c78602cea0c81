//! A deterministic synthetic hl-node: per-block order statuses, raw book diffs and fills for a
//! realistic universe, plus the matching L4 snapshot and `meta`/`spotMeta` documents.
//!
//! Owns: the order-flow model (resting Alo orders, cancels, takers that cross and leave maker
//! `update`/`remove` diffs and fill pairs, Ioc residuals that rest, rejected Alo spam, trigger
//! placements that never rest), the naive model books, and the JSON lines the node would write.
//! Must not: read a clock or touch files (`writer` does that); the caller passes block times.
//! The same seed and times give byte-identical output.

mod json;
pub mod market;
pub mod writer;

use ticktrade_core::{SplitMix64, Utc};

use market::{GenCoin, ModelOrder};

/// Shape of the generated market.
#[derive(Clone, Debug)]
pub struct GenConfig {
    pub seed: u64,
    pub n_coins: usize,
    /// Order actions (statuses) per block across all coins.
    pub orders_per_block: usize,
    /// Resting orders per side per coin in the initial snapshot (the busiest coins get more).
    pub depth: usize,
    pub start_height: u64,
}

impl Default for GenConfig {
    fn default() -> GenConfig {
        GenConfig { seed: 1, n_coins: 229, orders_per_block: 600, depth: 60, start_height: 1_000_000 }
    }
}

/// One block's three lines (without the trailing newline).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenBlock {
    pub height: u64,
    pub time: Utc,
    pub statuses: String,
    pub diffs: String,
    pub fills: String,
}

/// The generator's own record of one user's events, in the order it wrote them: every order
/// status `(oid, status)` and every fill `(tid, oid)` of that user.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserLog {
    pub user: u16,
    pub statuses: Vec<(u64, String)>,
    pub fills: Vec<(u64, u64)>,
}

/// The address the generator writes for user number `user`.
pub fn user_address(user: u16) -> String {
    json::user(user)
}

/// The generator.
pub struct Generator {
    rng: SplitMix64,
    coins: Vec<GenCoin>,
    total_weight: u64,
    orders_per_block: usize,
    height: u64,
    next_oid: u64,
    next_tid: u64,
    buf: json::Buffers,
}

/// What one action produced, collected per block.
enum Action {
    Rejected,
    Rest,
    Cancel,
    Take,
    Trigger,
}

impl Generator {
    pub fn new(config: &GenConfig) -> Generator {
        let mut rng = SplitMix64::seeded(config.seed);
        let mut coins = market::universe(config.n_coins, &mut rng);
        let mut next_oid = 100_000_000_000u64;
        for coin in &mut coins {
            let depth = (config.depth as u64 * coin.weight.min(40) / 20).max(4);
            for bid in [true, false] {
                for _ in 0..depth {
                    let offset = 1 + rng.below(80) as i64;
                    let px = if bid { coin.mid - offset * coin.tick } else { coin.mid + offset * coin.tick };
                    next_oid += 1;
                    let order = ModelOrder {
                        oid: next_oid,
                        user: rng.below(64) as u16,
                        sz: size(coin, &mut rng),
                        timestamp: 0,
                        cloid: None,
                    };
                    coin.ladder(bid).entry(px).or_default().push_back(order);
                }
            }
        }
        let total_weight = coins.iter().map(|c| c.weight).sum();
        Generator {
            rng,
            coins,
            total_weight,
            orders_per_block: config.orders_per_block,
            height: config.start_height,
            next_oid,
            next_tid: 1_000_000,
            buf: json::Buffers::default(),
        }
    }

    /// Height of the last generated block (the snapshot height before the first block).
    pub fn height(&self) -> u64 {
        self.height
    }

    pub fn coins(&self) -> &[GenCoin] {
        &self.coins
    }

    pub fn coin(&self, name: &str) -> Option<&GenCoin> {
        self.coins.iter().find(|c| c.name == name)
    }

    /// The snapshot of the current state (`fileSnapshot` format with users and height).
    pub fn snapshot_json(&self) -> String {
        json::snapshot(self.height, &self.coins)
    }

    /// `meta` and `spotMeta` documents for the universe.
    pub fn meta_json(&self) -> (String, String) {
        json::meta(&self.coins)
    }

    /// `metaAndAssetCtxs` and `spotMetaAndAssetCtxs` documents at the start (`json::asset_ctxs`).
    pub fn asset_ctxs_json(&self) -> (String, String) {
        json::asset_ctxs(&self.coins)
    }

    /// Records user `user`'s statuses and fills from the next block on ([`UserLog`]).
    pub fn watch_user(&mut self, user: u16) {
        self.buf.log = Some(UserLog { user, ..UserLog::default() });
    }

    /// What was recorded of the watched user.
    pub fn user_log(&self) -> Option<&UserLog> {
        self.buf.log.as_ref()
    }

    /// Generates the next block, stamped `time`.
    pub fn next_block(&mut self, time: Utc) -> GenBlock {
        self.height += 1;
        self.buf.begin(self.height, time);
        for _ in 0..self.orders_per_block {
            let ci = self.pick_coin();
            let roll = self.rng.below(100);
            let action = match roll {
                0..55 => Action::Rejected,
                55..78 => Action::Rest,
                78..92 => Action::Cancel,
                92..98 => Action::Take,
                _ => Action::Trigger,
            };
            self.act(ci, action, time);
        }
        let (statuses, diffs, fills) = self.buf.finish();
        GenBlock { height: self.height, time, statuses, diffs, fills }
    }

    fn pick_coin(&mut self) -> usize {
        let mut r = self.rng.below(self.total_weight);
        for (i, c) in self.coins.iter().enumerate() {
            if r < c.weight {
                return i;
            }
            r -= c.weight;
        }
        0
    }

    fn act(&mut self, ci: usize, action: Action, time: Utc) {
        let ms = time.as_millis().max(0) as u64;
        let user = self.rng.below(64) as u16;
        let bid = self.rng.chance(50, 100);
        let coin = &mut self.coins[ci];
        match action {
            Action::Rejected | Action::Trigger => {
                self.next_oid += 1;
                let px = match coin.best(!bid) {
                    Some(opp) => opp,
                    None => coin.mid,
                };
                let order =
                    ModelOrder { oid: self.next_oid, user, sz: size(coin, &mut self.rng), timestamp: ms, cloid: None };
                let trigger = matches!(action, Action::Trigger);
                let status = if trigger { "open" } else { "badAloPxRejected" };
                self.buf.status(
                    coin,
                    bid,
                    px,
                    &order,
                    status,
                    if trigger { json::Kind::Trigger } else { json::Kind::Alo },
                );
            }
            Action::Rest => {
                // Inside the spread when it is wide, else behind the best.
                let best_same = coin.best(bid);
                let best_opp = coin.best(!bid);
                let offset = self.rng.below(40) as i64;
                let mut px = match best_same {
                    Some(b) => {
                        if bid {
                            b - offset * coin.tick + coin.tick
                        } else {
                            b + offset * coin.tick - coin.tick
                        }
                    }
                    None => {
                        if bid {
                            coin.mid - coin.tick
                        } else {
                            coin.mid + coin.tick
                        }
                    }
                };
                if let Some(opp) = best_opp
                    && ((bid && px >= opp) || (!bid && px <= opp))
                {
                    px = if bid { opp - coin.tick } else { opp + coin.tick };
                }
                px = px.clamp(coin.mid / 2, coin.mid * 3 / 2);
                if px <= 0 {
                    return;
                }
                self.next_oid += 1;
                let cloid = self.rng.chance(30, 100).then(|| self.rng.next_u64());
                let order =
                    ModelOrder { oid: self.next_oid, user, sz: size(coin, &mut self.rng), timestamp: ms, cloid };
                self.buf.status(coin, bid, px, &order, "open", json::Kind::Alo);
                self.buf.diff_new(coin, bid, px, &order, order.sz);
                coin.ladder(bid).entry(px).or_default().push_back(order);
            }
            Action::Cancel => {
                let ladder = coin.ladder(bid);
                let n_levels = ladder.len();
                if n_levels == 0 {
                    return;
                }
                let k = self.rng.below(n_levels as u64) as usize;
                let Some((&px, queue)) = ladder.iter_mut().nth(k) else { return };
                let j = self.rng.below(queue.len() as u64) as usize;
                let Some(order) = queue.remove(j) else { return };
                if queue.is_empty() {
                    ladder.remove(&px);
                }
                self.buf.status(coin, bid, px, &order, "canceled", json::Kind::Alo);
                self.buf.diff_remove(coin, bid, px, &order);
            }
            Action::Take => self.take(ci, bid, user, ms),
        }
    }

    /// A taker on side `bid` crossing one to three levels of the other side.
    fn take(&mut self, ci: usize, bid: bool, user: u16, ms: u64) {
        let coin = &mut self.coins[ci];
        let Some(best) = coin.best(!bid) else { return };
        let levels = 1 + self.rng.below(3) as i64;
        let limit = if bid { best + levels * coin.tick } else { best - levels * coin.tick };
        let mut want = size(coin, &mut self.rng) * (1 + self.rng.below(4) as i64);
        self.next_oid += 1;
        let taker = ModelOrder { oid: self.next_oid, user, sz: want, timestamp: ms, cloid: None };
        let resting_residual = self.rng.chance(20, 100);
        self.buf.status(coin, bid, limit, &taker, "open", json::Kind::Ioc);
        while want > 0 {
            let Some(px) = coin.best(!bid) else { break };
            if (bid && px > limit) || (!bid && px < limit) {
                break;
            }
            let ladder = coin.ladder(!bid);
            let Some(queue) = ladder.get_mut(&px) else { break };
            let Some(maker) = queue.front_mut() else { break };
            let qty = want.min(maker.sz);
            let before = maker.sz;
            maker.sz -= qty;
            want -= qty;
            self.next_tid += 7919;
            let maker_copy = maker.clone();
            if maker.sz == 0 {
                queue.pop_front();
                if queue.is_empty() {
                    ladder.remove(&px);
                }
                self.buf.diff_remove(coin, !bid, px, &maker_copy);
            } else {
                self.buf.diff_update(coin, !bid, px, &maker_copy, before, maker_copy.sz);
            }
            self.buf.fill_pair(coin, bid, px, qty, &taker, &maker_copy, self.next_tid, ms);
        }
        if want > 0 && resting_residual {
            let order = ModelOrder { sz: want, ..taker };
            self.buf.diff_new(coin, bid, limit, &order, want);
            coin.ladder(bid).entry(limit).or_default().push_back(order);
        } else {
            let order = ModelOrder { sz: 0, ..taker };
            self.buf.status(coin, bid, limit, &order, if want > 0 { "canceled" } else { "filled" }, json::Kind::Ioc);
        }
    }
}

/// A size between one and a few hundred lots of the coin's size unit, biased small.
fn size(coin: &GenCoin, rng: &mut SplitMix64) -> i64 {
    let base = 10i64.pow(coin.sz_decimals.min(3));
    let lots = 1 + rng.below(20) as i64 * (1 + rng.below(10) as i64);
    lots * base.max(1) / 10 + 1
}

#[cfg(test)]
mod tests;
