//! The synthetic market: seeded, reproducible participants that keep every book alive.
//!
//! Owns: one random-walk underlying per base coin (the `*_usd`/`*_usdc` indexes follow it),
//! fair prices (perpetual and spot = index; dated futures = index × (1 + 5 % × years);
//! options = intrinsic + a simple time value, in coin for inverse options), marks, a house
//! market maker that quotes every instrument on a ladder (500 levels per side on perpetuals
//! by default) with varying sizes and follows the fair price, and house takers that send
//! IOC/market orders through the top levels. Driven by `step(now)` at a configurable rate.
//! Must not: read a clock or use an OS random source: the same seed and the same `now`
//! sequence give the same events, byte for byte. The house accounts are margin-exempt.

use std::collections::VecDeque;

use ticktrade_core::{
    Decimal, InstrumentId, InstrumentKind, OptionType, Price, Qty, Settlement, Side, SplitMix64, TickRule, Utc,
};

use crate::engine::{Exchange, Request};
use crate::event::Event;
use crate::order::{AccountId, EditParams, OrderType, PlaceParams, Size, TimeInForce};

/// Synthetic market settings.
#[derive(Clone, Debug)]
pub struct SynthConfig {
    pub seed: u64,
    /// Order actions per second of simulated time (each makes one or more book changes).
    pub actions_per_sec: u32,
    /// Levels per side the maker keeps on perpetuals, other futures and spot, and options.
    pub perp_levels: usize,
    pub future_levels: usize,
    pub option_levels: usize,
    /// How often the indexes move (simulated milliseconds).
    pub index_interval_ms: i64,
    /// Annualised volatility of the underlyings' random walk.
    pub volatility: f64,
    /// Starting levels of the underlyings, by base coin (others start at 100).
    pub start_prices: Vec<(String, f64)>,
    /// The house accounts (maker; takers are the following ids).
    pub maker: AccountId,
    pub n_takers: u32,
}

impl Default for SynthConfig {
    fn default() -> Self {
        SynthConfig {
            seed: 0x5EED_7ADE,
            actions_per_sec: 20_000,
            perp_levels: 500,
            future_levels: 100,
            option_levels: 10,
            index_interval_ms: 100,
            volatility: 0.6,
            start_prices: vec![("BTC".into(), 90_000.0), ("ETH".into(), 3_000.0)],
            maker: AccountId(1_000_000_000),
            n_takers: 4,
        }
    }
}

/// What one `step` did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StepStats {
    pub actions: u64,
    pub book_changes: u64,
    pub trades: u64,
}

/// Approximately standard normal (sum of 12 uniforms − 6): cheap and deterministic.
fn normal(rng: &mut SplitMix64) -> f64 {
    (0..12).map(|_| rng.unit()).sum::<f64>() - 6.0
}

/// Lots with a heavy tail: mostly small, sometimes large.
fn size(rng: &mut SplitMix64, max: i64) -> i64 {
    let u = rng.unit();
    (1.0 + (max as f64 - 1.0) * u * u * u).round() as i64
}

#[derive(Debug)]
struct Quoted {
    id: InstrumentId,
    /// Index into `underlyings`.
    underlying: usize,
    kind: InstrumentKind,
    inverse_option: bool,
    option: Option<(OptionType, f64)>,
    expiry: Option<Utc>,
    levels: usize,
    max_lots: i64,
    rule: TickRule,
    tick: f64,
    fair_ticks: i64,
    /// The maker's orders, best first: (price, order id).
    bids: VecDeque<(Price, u64)>,
    asks: VecDeque<(Price, u64)>,
}

/// The synthetic market. Holds no reference to the exchange: the caller passes it in.
#[derive(Debug)]
pub struct SynthMarket {
    config: SynthConfig,
    rng: SplitMix64,
    /// (base coin, level, indexes following it).
    underlyings: Vec<(String, f64, Vec<crate::catalogue::IndexId>)>,
    quoted: Vec<Quoted>,
    /// Perpetuals get most of the flow.
    perps: Vec<usize>,
    last: Option<Utc>,
    last_index: Utc,
    carry: f64,
}

const YEAR_NS: f64 = 365.0 * 86_400e9;

impl SynthMarket {
    pub fn new(exchange: &mut Exchange, config: SynthConfig) -> SynthMarket {
        let catalogue = exchange.catalogue();
        let mut underlyings: Vec<(String, f64, Vec<crate::catalogue::IndexId>)> = Vec::new();
        let mut quoted = Vec::new();
        let mut perps = Vec::new();
        for inst in catalogue.iter() {
            let spec = &inst.spec;
            if spec.kind.is_combo() {
                continue;
            }
            let base = spec.base_currency.clone();
            let underlying = match underlyings.iter().position(|u| u.0 == base) {
                Some(u) => u,
                None => {
                    let start = config.start_prices.iter().find(|(c, _)| *c == base).map_or(100.0, |(_, v)| *v);
                    underlyings.push((base, start, Vec::new()));
                    underlyings.len() - 1
                }
            };
            if !underlyings[underlying].2.contains(&inst.index) {
                underlyings[underlying].2.push(inst.index);
            }
            let is_perp = spec.kind == InstrumentKind::Future && spec.expiry.is_none();
            let (levels, max_lots) = match spec.kind {
                InstrumentKind::Option => (config.option_levels, 50),
                _ if is_perp => (config.perp_levels, 200),
                _ => (config.future_levels, 100),
            };
            if is_perp {
                perps.push(quoted.len());
            }
            quoted.push(Quoted {
                id: spec.id,
                underlying,
                kind: spec.kind,
                inverse_option: spec.settlement == Settlement::Inverse,
                option: spec.option_type.zip(spec.strike.map(Decimal::to_f64_lossy)),
                expiry: spec.expiry,
                levels,
                max_lots,
                rule: spec.tick_rule.clone(),
                tick: spec.tick().to_f64_lossy(),
                fair_ticks: 0,
                bids: VecDeque::new(),
                asks: VecDeque::new(),
            });
        }
        exchange.set_margin_exempt(config.maker, true);
        for t in 0..config.n_takers {
            exchange.set_margin_exempt(AccountId(config.maker.0 + 1 + t), true);
        }
        SynthMarket {
            rng: SplitMix64::new(config.seed),
            config,
            underlyings,
            quoted,
            perps,
            last: None,
            last_index: Utc(0),
            carry: 0.0,
        }
    }

    /// The current level of a base coin's underlying.
    pub fn underlying(&self, coin: &str) -> Option<f64> {
        self.underlyings.iter().find(|u| u.0 == coin).map(|u| u.1)
    }

    /// Advances the market to `now`: moves the indexes on their interval and performs the
    /// actions due since the previous step. The first call builds every book. Events go to `out`.
    pub fn step(&mut self, exchange: &mut Exchange, now: Utc, out: &mut Vec<Event>) -> StepStats {
        let mut stats = StepStats::default();
        let Some(last) = self.last else {
            self.last = Some(now);
            self.last_index = now;
            self.publish_prices(exchange, now, out);
            for q in 0..self.quoted.len() {
                self.rebalance(exchange, now, q, out, &mut stats);
            }
            return stats;
        };
        let interval_ns = self.config.index_interval_ms.max(1) * 1_000_000;
        if now.nanos_since(self.last_index) >= interval_ns {
            let dt = now.nanos_since(self.last_index) as f64 / YEAR_NS;
            self.last_index = now;
            for u in &mut self.underlyings {
                u.1 *= (self.config.volatility * dt.sqrt() * normal(&mut self.rng)).exp();
            }
            self.publish_prices(exchange, now, out);
            for &q in &self.perps.clone() {
                self.rebalance(exchange, now, q, out, &mut stats);
            }
        }
        let due = now.nanos_since(last).max(0) as f64 * 1e-9 * f64::from(self.config.actions_per_sec) + self.carry;
        let n_actions = due.floor() as u64;
        self.carry = due - n_actions as f64;
        self.last = Some(now);
        for _ in 0..n_actions {
            self.action(exchange, now, out, &mut stats);
        }
        stats
    }

    /// Sets indexes and marks from the underlyings, and fires triggers that now hold.
    fn publish_prices(&mut self, exchange: &mut Exchange, now: Utc, out: &mut Vec<Event>) {
        for (_, level, indexes) in &self.underlyings {
            for &index in indexes {
                exchange.set_index_f64(index, *level);
            }
        }
        for q in &mut self.quoted {
            let s = self.underlyings[q.underlying].1;
            let fair = fair_price(q, s, now);
            q.fair_ticks = ((fair / q.tick).round() as i64).max(1);
            exchange.set_mark_f64(q.id, fair);
            if exchange.has_triggers(q.id) {
                exchange.fire_triggers(now, q.id, out);
            }
        }
        for &p in &self.perps {
            exchange.note_ticker(self.quoted[p].id);
        }
        exchange.flush(now, out);
    }

    fn action(&mut self, exchange: &mut Exchange, now: Utc, out: &mut Vec<Event>, stats: &mut StepStats) {
        stats.actions += 1;
        if self.quoted.is_empty() {
            return;
        }
        let q = if !self.perps.is_empty() && (self.rng.below(10) < 7 || self.quoted.len() == self.perps.len()) {
            self.perps[self.rng.below(self.perps.len() as u64) as usize]
        } else {
            self.rng.below(self.quoted.len() as u64) as usize
        };
        let roll = self.rng.below(100);
        if roll < 20 {
            // A taker sweeps the top of one side.
            let side = if self.rng.below(2) == 0 { Side::Buy } else { Side::Sell };
            let quoted = &self.quoted[q];
            let book_side = if side == Side::Buy { &quoted.asks } else { &quoted.bids };
            let lots: i64 = book_side.iter().take(1 + self.rng.below(3) as usize).count() as i64;
            let qty = size(&mut self.rng, quoted.max_lots) * lots.max(1);
            let taker =
                AccountId(self.config.maker.0 + 1 + self.rng.below(u64::from(self.config.n_takers.max(1))) as u32);
            let amount = exchange.catalogue().get(quoted.id).map(|i| i.spec.qty_to_decimal(Qty::from_raw(qty)));
            if let Some(amount) = amount {
                let params =
                    PlaceParams { order_type: OrderType::Market, ..PlaceParams::market(quoted.id, side, amount) };
                self.run(exchange, now, taker, Request::Place(params), out, stats);
            }
            self.forget_filled(exchange, q);
            self.rebalance(exchange, now, q, out, stats);
        } else {
            // The maker resizes one of its levels (same price: a `change`).
            let quoted = &self.quoted[q];
            let side = self.rng.below(2) == 0;
            let ladder = if side { &quoted.bids } else { &quoted.asks };
            if ladder.is_empty() {
                self.rebalance(exchange, now, q, out, stats);
                return;
            }
            let (price, id) = ladder[self.rng.below(ladder.len() as u64) as usize];
            let filled = exchange.order(id).map_or(0, |o| o.filled.raw());
            let lots = filled + size(&mut self.rng, quoted.max_lots);
            let Some(inst) = exchange.catalogue().get(quoted.id) else { return };
            let edit = EditParams::new(
                id,
                inst.spec.qty_to_decimal(Qty::from_raw(lots)),
                Some(inst.spec.price_to_decimal(price)),
            );
            self.run(exchange, now, self.config.maker, Request::Edit(edit), out, stats);
        }
    }

    /// Sends one request and counts what it changed.
    fn run(
        &mut self,
        exchange: &mut Exchange,
        now: Utc,
        account: AccountId,
        request: Request,
        out: &mut Vec<Event>,
        stats: &mut StepStats,
    ) -> Option<u64> {
        let start = out.len();
        let reply = exchange.handle(now, account, request, out).ok();
        for e in &out[start..] {
            match e {
                Event::BookLevel(_) => stats.book_changes += 1,
                Event::PublicTrade(_) => stats.trades += 1,
                _ => {}
            }
        }
        match reply {
            Some(crate::event::Reply::Order(o)) => Some(o.id),
            _ => None,
        }
    }

    /// Drops maker orders that takers filled from the ladders' fronts.
    fn forget_filled(&mut self, exchange: &Exchange, q: usize) {
        let Some(book) = exchange.book(self.quoted[q].id) else { return };
        let quoted = &mut self.quoted[q];
        while quoted.bids.front().is_some_and(|&(_, id)| !book.contains(id)) {
            quoted.bids.pop_front();
        }
        while quoted.asks.front().is_some_and(|&(_, id)| !book.contains(id)) {
            quoted.asks.pop_front();
        }
    }

    /// Brings the maker's ladders to `levels` per side around the fair price.
    fn rebalance(&mut self, exchange: &mut Exchange, now: Utc, q: usize, out: &mut Vec<Event>, stats: &mut StepStats) {
        if self.quoted[q].expiry.is_some_and(|t| now >= t) {
            // Expired: the exchange cancelled the quotes at settlement.
            self.quoted[q].bids.clear();
            self.quoted[q].asks.clear();
            return;
        }
        self.forget_filled(exchange, q);
        let top_of = |quoted: &Quoted, side: Side| {
            let spread = if quoted.kind == InstrumentKind::Option { (quoted.fair_ticks / 50).max(1) } else { 1 };
            let top = match side {
                Side::Buy => quoted.fair_ticks - spread,
                Side::Sell => quoted.fair_ticks + spread,
            };
            snap(&quoted.rule, top, side)
        };
        // First pull quotes that are now too aggressive on both sides, so new quotes on one
        // side never meet stale quotes on the other.
        for side in [Side::Buy, Side::Sell] {
            let top = top_of(&self.quoted[q], side);
            while let Some(&(price, id)) = self.ladder(q, side).front() {
                // A bid above the new top (an ask below it) is too aggressive.
                let too_aggressive = match side {
                    Side::Buy => price.raw() > top,
                    Side::Sell => price.raw() < top,
                };
                if !too_aggressive {
                    break;
                }
                self.ladder_mut(q, side).pop_front();
                self.run(exchange, now, self.config.maker, Request::Cancel { order_id: id }, out, stats);
            }
        }
        for side in [Side::Buy, Side::Sell] {
            let top = top_of(&self.quoted[q], side);
            let levels = self.quoted[q].levels;
            // Add levels in front up to the top.
            loop {
                let next = match self.ladder(q, side).front() {
                    Some(&(p, _)) => step_toward_top(&self.quoted[q].rule, p.raw(), side),
                    None => top,
                };
                if next <= 0 || (side == Side::Buy && next > top) || (side == Side::Sell && next < top) {
                    break;
                }
                let Some(id) = self.place_level(exchange, now, q, side, next, out, stats) else { break };
                self.ladder_mut(q, side).push_front((Price::from_raw(next), id));
            }
            // Too many: cancel from the back. Too few: add at the back.
            while self.ladder(q, side).len() > levels {
                let Some((_, id)) = self.ladder_mut(q, side).pop_back() else { break };
                self.run(exchange, now, self.config.maker, Request::Cancel { order_id: id }, out, stats);
            }
            while self.ladder(q, side).len() < levels {
                let next = match self.ladder(q, side).back() {
                    Some(&(p, _)) => step_away(&self.quoted[q].rule, p.raw(), side),
                    None => top,
                };
                if next <= 0 {
                    break;
                }
                let Some(id) = self.place_level(exchange, now, q, side, next, out, stats) else { break };
                self.ladder_mut(q, side).push_back((Price::from_raw(next), id));
            }
        }
    }

    fn ladder(&self, q: usize, side: Side) -> &VecDeque<(Price, u64)> {
        if side == Side::Buy { &self.quoted[q].bids } else { &self.quoted[q].asks }
    }

    fn ladder_mut(&mut self, q: usize, side: Side) -> &mut VecDeque<(Price, u64)> {
        if side == Side::Buy { &mut self.quoted[q].bids } else { &mut self.quoted[q].asks }
    }

    #[allow(clippy::too_many_arguments)]
    fn place_level(
        &mut self,
        exchange: &mut Exchange,
        now: Utc,
        q: usize,
        side: Side,
        ticks: i64,
        out: &mut Vec<Event>,
        stats: &mut StepStats,
    ) -> Option<u64> {
        let lots = size(&mut self.rng, self.quoted[q].max_lots);
        let inst = exchange.catalogue().get(self.quoted[q].id)?;
        let mut params = PlaceParams::limit(
            inst.spec.id,
            side,
            inst.spec.qty_to_decimal(Qty::from_raw(lots)),
            inst.spec.price_to_decimal(Price::from_raw(ticks)),
        );
        // Post-only: never trade against a taker's resting remainder; the price may move.
        params.post_only = true;
        params.time_in_force = TimeInForce::GoodTilCancelled;
        params.size = Size::amount(inst.spec.qty_to_decimal(Qty::from_raw(lots)));
        let id = self.run(exchange, now, self.config.maker, Request::Place(params), out, stats)?;
        if exchange.order(id).is_some_and(|o| o.price == Some(Price::from_raw(ticks))) {
            return Some(id);
        }
        // Re-priced by post-only: someone else's order rests inside. Withdraw, stop here.
        self.run(exchange, now, self.config.maker, Request::Cancel { order_id: id }, out, stats);
        None
    }
}

/// The fair price of an instrument in its price unit.
fn fair_price(q: &Quoted, s: f64, now: Utc) -> f64 {
    let years = q.expiry.map_or(0.0, |e| (e.nanos_since(now) as f64 / YEAR_NS).max(1.0 / 365.0));
    match (q.kind, q.option) {
        (InstrumentKind::Option, Some((option_type, strike))) => {
            let intrinsic = match option_type {
                OptionType::Call => (s - strike).max(0.0),
                OptionType::Put => (strike - s).max(0.0),
            };
            let vol = 0.6;
            let sd = vol * years.sqrt();
            let d = (s / strike).ln() / sd;
            let time_value = 0.4 * s * sd * (-0.5 * d * d).exp();
            let usd = intrinsic + time_value;
            if q.inverse_option { usd / s } else { usd }
        }
        (InstrumentKind::Future, _) if q.expiry.is_some() => s * (1.0 + 0.05 * years),
        _ => s,
    }
}

/// `ticks` moved onto the grid, away from the other side.
fn snap(rule: &TickRule, ticks: i64, side: Side) -> i64 {
    let mut t = ticks;
    while t > 0 && !rule.is_valid(Price::from_raw(t)) {
        t += if side == Side::Buy { -1 } else { 1 };
    }
    t
}

fn step_away(rule: &TickRule, ticks: i64, side: Side) -> i64 {
    let dir = if side == Side::Buy { -1 } else { 1 };
    let mut t = ticks + dir;
    while t > 0 && !rule.is_valid(Price::from_raw(t)) {
        t += dir;
    }
    t
}

fn step_toward_top(rule: &TickRule, ticks: i64, side: Side) -> i64 {
    step_away(rule, ticks, side.opposite())
}
