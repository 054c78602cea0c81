//! The `Strategy` trait the hot loop calls after each book update, the caller-owned
//! `OrderSink` it fills, and `QuoteOnTick`, the simple strategy the benchmarks use.
//!
//! Owns: the decision step (t2 → t3) and its inputs and outputs.
//! Must not: do I/O, read a clock, allocate, lock or log inside `on_book`. It sees the book
//! and the update by reference and leaves at most one order in the sink; the hot loop
//! encodes and writes it.

use ticktrade_book::l2::{L2Book, LevelUpdate};
use ticktrade_core::{Price, Qty, Side};
use ticktrade_deribit_proto::BookKind;

/// What just happened to the book: the decoded header and the updates, borrowed from the
/// hot loop's buffers (themselves borrowed from the read buffer where possible).
#[derive(Clone, Copy, Debug)]
pub struct BookEvent<'a> {
    pub instrument: &'a str,
    pub kind: BookKind,
    pub change_id: u64,
    /// The exchange's timestamp of the change, ms since the epoch.
    pub timestamp_ms: u64,
    pub updates: &'a [LevelUpdate],
}

/// An order the strategy wants sent, in the instrument's ticks and lots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderIntent {
    pub side: Side,
    pub price: Price,
    pub qty: Qty,
    pub post_only: bool,
}

/// The caller-owned slot a strategy fills: at most one order per book update on the hot path
/// (one frame, one write). Cleared by the hot loop before each call.
#[derive(Clone, Copy, Debug, Default)]
pub struct OrderSink {
    order: Option<OrderIntent>,
}

impl OrderSink {
    /// Asks for `order` to be sent; a second call in the same update replaces the first.
    #[inline]
    pub fn send(&mut self, order: OrderIntent) {
        self.order = Some(order);
    }

    #[inline]
    pub fn clear(&mut self) {
        self.order = None;
    }

    #[inline]
    pub fn take(&mut self) -> Option<OrderIntent> {
        self.order.take()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.order.is_none()
    }
}

/// Decides on each book update. Implementations must be allocation-free and I/O-free.
pub trait Strategy {
    fn on_book(&mut self, book: &L2Book, event: &BookEvent<'_>, out: &mut OrderSink);
}

/// Joins the bid one tick better on every `every`-th two-sided, uncrossed update: a buy of
/// `qty` at best bid + 1 tick, post-only, or at the best bid when the spread is one tick.
/// Enough logic to read the book's top on every tick, which is what tick-to-trade measures.
#[derive(Clone, Copy, Debug)]
pub struct QuoteOnTick {
    pub qty: Qty,
    pub every: u32,
    seen: u32,
}

impl QuoteOnTick {
    pub fn new(qty: Qty, every: u32) -> QuoteOnTick {
        QuoteOnTick { qty, every: every.max(1), seen: 0 }
    }

    /// The order this strategy would send for the given top of book, if any.
    #[inline]
    pub fn quote(&self, best_bid: Option<Price>, best_ask: Option<Price>) -> Option<OrderIntent> {
        let (bid, ask) = (best_bid?, best_ask?);
        if bid >= ask {
            return None;
        }
        let improved = bid.offset(1);
        let price = if improved < ask { improved } else { bid };
        Some(OrderIntent { side: Side::Buy, price, qty: self.qty, post_only: true })
    }
}

impl Strategy for QuoteOnTick {
    #[inline]
    fn on_book(&mut self, book: &L2Book, _event: &BookEvent<'_>, out: &mut OrderSink) {
        self.seen += 1;
        if self.seen < self.every {
            return;
        }
        let best_bid = book.best_bid().map(|l| l.price);
        let best_ask = book.best_ask().map(|l| l.price);
        if let Some(order) = self.quote(best_bid, best_ask) {
            self.seen = 0;
            out.send(order);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(ticks: i64) -> Option<Price> {
        Some(Price::from_raw(ticks))
    }

    #[test]
    fn quotes_one_tick_inside_or_joins() {
        let s = QuoteOnTick::new(Qty::from_raw(1), 1);
        assert_eq!(s.quote(p(100), p(105)).map(|o| o.price), p(101));
        assert_eq!(s.quote(p(100), p(101)).map(|o| o.price), p(100));
        assert_eq!(s.quote(p(100), p(100)), None, "crossed or locked");
        assert_eq!(s.quote(None, p(100)), None);
        assert_eq!(s.quote(p(100), None), None);
    }

    #[test]
    fn every_nth_update() {
        let mut book = L2Book::new();
        book.set_level(Side::Buy, Price::from_raw(10), Qty::from_raw(1));
        book.set_level(Side::Sell, Price::from_raw(20), Qty::from_raw(1));
        let event = BookEvent { instrument: "X", kind: BookKind::Change, change_id: 1, timestamp_ms: 0, updates: &[] };
        let mut s = QuoteOnTick::new(Qty::from_raw(1), 3);
        let mut sent = Vec::new();
        for _ in 0..9 {
            let mut sink = OrderSink::default();
            s.on_book(&book, &event, &mut sink);
            sent.push(!sink.is_empty());
        }
        assert_eq!(sent, [false, false, true, false, false, true, false, false, true]);
    }
}
