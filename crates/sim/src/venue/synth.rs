//! Synthetic participants: a market maker keeping a ladder around a drifting index and a taker
//! sending small market orders, plus the book restart fault.
//!
//! Owns: the seeded random stream and the choice of synthetic actions.
//! Must not: bypass matching: synthetic orders go through `place`/`cancel` like anyone's, so
//! the published book and trades are always the venue's real state.

use ticktrade_core::{Qty, Side, SplitMix64, Utc};
use ticktrade_deribit_proto::api::{self, Num};

use super::orders::Batch;
use super::{Event, MAKER, OrderState, TAKER, Venue};

/// The core's splitmix64 with the draws the synthetic market needs.
#[derive(Clone, Debug)]
pub struct Rng(SplitMix64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(SplitMix64::new(seed ^ 0x9E37_79B9_7F4A_7C15))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `0..n` (`0` when `n == 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    /// True with probability `p_per_million / 1e6`.
    pub fn chance(&mut self, p_per_million: u64) -> bool {
        self.below(1_000_000) < p_per_million
    }
}

const LADDER: i64 = 25;
const MAX_DEPTH: usize = 30;

impl Venue {
    /// Runs `n_events` synthetic actions.
    pub fn step(&mut self, now: Utc, n_events: u32, out: &mut Vec<Event>) {
        if self.instrs.is_empty() {
            return;
        }
        for _ in 0..n_events {
            let instr = self.rng.below(self.instrs.len() as u64) as usize;
            let roll = self.rng.below(100);
            let side = if self.rng.below(2) == 0 { Side::Buy } else { Side::Sell };
            if roll < 5 {
                let step = self.rng.below(3) as i64 + 1;
                let state = &mut self.instrs[instr];
                let moved = state.index.offset(if side == Side::Buy { step } else { -step });
                if moved.raw() > LADDER * 4 {
                    state.index = moved;
                }
            } else if roll < 60 && self.instrs[instr].book.depth(side) < MAX_DEPTH {
                self.maker_quote(now, instr, side, out);
            } else if roll < 92 {
                self.maker_cancel(now, instr, side, out);
            } else {
                self.taker_hit(now, instr, side, out);
            }
        }
    }

    /// Fills both sides with a ladder so a new simulator starts with a book.
    pub fn seed_books(&mut self, now: Utc, out: &mut Vec<Event>) {
        for instr in 0..self.instrs.len() {
            for _ in 0..(MAX_DEPTH * 2) {
                let side = if self.rng.below(2) == 0 { Side::Buy } else { Side::Sell };
                self.maker_quote(now, instr, side, out);
            }
        }
    }

    fn synthetic_params(&mut self, instr: usize, lots: i64) -> api::OrderParams {
        let spec = &self.instrs[instr].spec;
        let amount = Num(spec.qty_to_decimal(Qty::from_raw(spec.min_qty().raw() * lots)));
        api::OrderParams { instrument_name: spec.name.clone(), amount: Some(amount), ..api::OrderParams::default() }
    }

    fn maker_quote(&mut self, now: Utc, instr: usize, side: Side, out: &mut Vec<Event>) {
        let away = self.rng.below(LADDER as u64) as i64 + 1;
        let lots = self.rng.below(10) as i64 + 1;
        let price = self.instrs[instr].index.offset(-side.sign() * away);
        let mut params = self.synthetic_params(instr, lots);
        params.price = Some(Num(self.instrs[instr].spec.price_to_decimal(price)));
        let _ = self.place(now, MAKER, side, &params, out);
    }

    fn maker_cancel(&mut self, now: Utc, instr: usize, side: Side, out: &mut Vec<Event>) {
        let depth = self.instrs[instr].book.depth(side);
        if depth == 0 {
            return;
        }
        let pick = self.rng.below(depth as u64) as usize;
        let Some((price, _)) = self.instrs[instr].book.levels(side).nth(pick) else { return };
        let keys = self.instrs[instr].book.orders_at(side, price);
        let Some(id) = keys
            .iter()
            .map(|k| self.id_of(*k))
            .find(|id| self.orders.get(id.as_str()).is_some_and(|o| o.account == MAKER))
        else {
            return;
        };
        let _ = self.cancel(now, MAKER, &id, out);
    }

    fn taker_hit(&mut self, now: Utc, instr: usize, side: Side, out: &mut Vec<Event>) {
        let lots = self.rng.below(3) as i64 + 1;
        let mut params = self.synthetic_params(instr, lots);
        params.order_type = Some("market".to_owned());
        let _ = self.place(now, TAKER, side, &params, out);
    }

    /// Fault: removes the top `n_levels` levels of maker liquidity on each side without
    /// publishing changes, bumps `change_id` and asks the engine to send a fresh snapshot.
    pub fn restart_book(&mut self, now: Utc, instr: usize, n_levels: usize, out: &mut Vec<Event>) -> Vec<String> {
        let now_ms = now.as_millis();
        let mut batch = Batch::default();
        let mut removed = Vec::new();
        for side in [Side::Buy, Side::Sell] {
            let prices: Vec<_> = self.instrs[instr].book.levels(side).take(n_levels).map(|(p, _)| p).collect();
            for price in prices {
                removed.push(format!("{} {}", side, self.instrs[instr].spec.format_price(price)));
                for key in self.instrs[instr].book.orders_at(side, price) {
                    let id = self.id_of(key);
                    if self.orders.get(&id).is_some_and(|o| o.account == MAKER && o.state == OrderState::Open) {
                        self.close_order(&id, OrderState::Cancelled, Some("user_request"), now_ms, &mut batch);
                    }
                }
            }
        }
        let mut discard = Vec::new();
        self.flush(now, instr, batch, &mut discard);
        // Keep only non-book events: the book itself is republished as a snapshot.
        out.extend(discard.into_iter().filter(|e| !matches!(e, Event::Book { .. })));
        out.push(Event::Restart { instr });
        removed
    }
}
