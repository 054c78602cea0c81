//! The simulator's order book for one instrument: price-time FIFO queues per level.
//!
//! Owns: resting order ids per price level, level totals, and the list of level changes each
//! operation causes (what the `book.*` channels publish).
//! Must not: know accounts, JSON or time. Orders' remaining sizes live in the venue; the book
//! only mirrors them through `rest`, `reduce` and `remove`.

use std::collections::{BTreeMap, VecDeque};

use ticktrade_core::{Price, Qty, Side};

/// One price level: total resting size and the FIFO of order ids.
#[derive(Clone, Debug, Default)]
pub struct Level {
    pub qty: Qty,
    pub orders: VecDeque<u64>,
}

/// What happened to a level: Deribit's `new`/`change`/`delete`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    New,
    Change,
    Delete,
}

impl Action {
    pub const fn as_str(self) -> &'static str {
        match self {
            Action::New => "new",
            Action::Change => "change",
            Action::Delete => "delete",
        }
    }
}

/// One level change as published on `book.*.raw`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelChange {
    pub side: Side,
    pub action: Action,
    pub price: Price,
    pub qty: Qty,
}

/// Both ladders. Bids are keyed by price and read from the top (highest) down.
#[derive(Clone, Debug, Default)]
pub struct Book {
    bids: BTreeMap<Price, Level>,
    asks: BTreeMap<Price, Level>,
}

impl Book {
    fn ladder(&mut self, side: Side) -> &mut BTreeMap<Price, Level> {
        match side {
            Side::Buy => &mut self.bids,
            Side::Sell => &mut self.asks,
        }
    }

    /// Best price on `side`.
    pub fn best(&self, side: Side) -> Option<(Price, Qty)> {
        match side {
            Side::Buy => self.bids.iter().next_back().map(|(p, l)| (*p, l.qty)),
            Side::Sell => self.asks.iter().next().map(|(p, l)| (*p, l.qty)),
        }
    }

    /// Levels of `side`, best first.
    pub fn levels(&self, side: Side) -> Box<dyn Iterator<Item = (Price, Qty)> + '_> {
        match side {
            Side::Buy => Box::new(self.bids.iter().rev().map(|(p, l)| (*p, l.qty))),
            Side::Sell => Box::new(self.asks.iter().map(|(p, l)| (*p, l.qty))),
        }
    }

    pub fn depth(&self, side: Side) -> usize {
        match side {
            Side::Buy => self.bids.len(),
            Side::Sell => self.asks.len(),
        }
    }

    /// The first order id in the queue of the best level on `side`.
    pub fn front(&self, side: Side) -> Option<(Price, u64)> {
        let (price, level) = match side {
            Side::Buy => self.bids.iter().next_back()?,
            Side::Sell => self.asks.iter().next()?,
        };
        level.orders.front().map(|id| (*price, *id))
    }

    /// Order ids resting at one level, in time priority.
    pub fn orders_at(&self, side: Side, price: Price) -> Vec<u64> {
        let ladder = match side {
            Side::Buy => &self.bids,
            Side::Sell => &self.asks,
        };
        ladder.get(&price).map(|l| l.orders.iter().copied().collect()).unwrap_or_default()
    }

    /// Adds a resting order at the back of its level's queue.
    pub fn rest(&mut self, side: Side, price: Price, id: u64, qty: Qty, changes: &mut Vec<LevelChange>) {
        let level = self.ladder(side).entry(price).or_default();
        let action = if level.orders.is_empty() { Action::New } else { Action::Change };
        level.qty += qty;
        level.orders.push_back(id);
        changes.push(LevelChange { side, action, price, qty: level.qty });
    }

    /// Takes `by` off an order's level (a partial fill or a size-down edit keeps its place).
    pub fn reduce(&mut self, side: Side, price: Price, by: Qty, changes: &mut Vec<LevelChange>) {
        if let Some(level) = self.ladder(side).get_mut(&price) {
            level.qty -= by;
            changes.push(LevelChange { side, action: Action::Change, price, qty: level.qty });
        }
    }

    /// Removes an order (`remaining` still resting) from its level.
    pub fn remove(&mut self, side: Side, price: Price, id: u64, remaining: Qty, changes: &mut Vec<LevelChange>) {
        let ladder = self.ladder(side);
        let Some(level) = ladder.get_mut(&price) else { return };
        if let Some(pos) = level.orders.iter().position(|o| *o == id) {
            level.orders.remove(pos);
            level.qty -= remaining;
        }
        if level.orders.is_empty() {
            ladder.remove(&price);
            changes.push(LevelChange { side, action: Action::Delete, price, qty: Qty::from_raw(0) });
        } else {
            changes.push(LevelChange { side, action: Action::Change, price, qty: level.qty });
        }
    }
}

/// Collapses a list of changes to the final state of each touched level, keeping first-touch
/// order, with `new`/`change`/`delete` relative to the state before the operation.
pub fn net_changes(changes: &[LevelChange], before: impl Fn(Side, Price) -> bool) -> Vec<LevelChange> {
    let mut out: Vec<LevelChange> = Vec::with_capacity(changes.len());
    for change in changes {
        if let Some(prev) = out.iter_mut().find(|c| c.side == change.side && c.price == change.price) {
            prev.qty = change.qty;
            prev.action = change.action;
        } else {
            out.push(*change);
        }
    }
    for change in &mut out {
        let existed = before(change.side, change.price);
        change.action = match (existed, change.action) {
            (_, Action::Delete) => Action::Delete,
            (true, _) => Action::Change,
            (false, _) => Action::New,
        };
    }
    // A level that appeared and vanished within one operation was never visible.
    out.retain(|c| c.action != Action::Delete || before(c.side, c.price));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(x: i64) -> Price {
        Price::from_raw(x)
    }
    fn q(x: i64) -> Qty {
        Qty::from_raw(x)
    }

    #[test]
    fn levels_keep_fifo_and_totals() {
        let mut book = Book::default();
        let mut changes = Vec::new();
        book.rest(Side::Buy, p(100), 1, q(5), &mut changes);
        book.rest(Side::Buy, p(100), 2, q(3), &mut changes);
        book.rest(Side::Buy, p(101), 3, q(1), &mut changes);
        assert_eq!(book.best(Side::Buy), Some((p(101), q(1))));
        assert_eq!(changes[0].action, Action::New);
        assert_eq!(changes[1].action, Action::Change);
        assert_eq!(changes[1].qty, q(8));
        book.remove(Side::Buy, p(101), 3, q(1), &mut changes);
        assert_eq!(book.front(Side::Buy), Some((p(100), 1)));
        assert_eq!(changes.last().map(|c| c.action), Some(Action::Delete));
        let levels: Vec<_> = book.levels(Side::Buy).collect();
        assert_eq!(levels, vec![(p(100), q(8))]);
    }

    #[test]
    fn net_changes_hide_transient_levels() {
        let changes = vec![
            LevelChange { side: Side::Sell, action: Action::New, price: p(5), qty: q(1) },
            LevelChange { side: Side::Sell, action: Action::Delete, price: p(5), qty: q(0) },
            LevelChange { side: Side::Sell, action: Action::Change, price: p(6), qty: q(2) },
        ];
        let net = net_changes(&changes, |_, price| price == p(6));
        assert_eq!(net.len(), 1);
        assert_eq!(net[0].price, p(6));
        assert_eq!(net[0].action, Action::Change);
    }
}
