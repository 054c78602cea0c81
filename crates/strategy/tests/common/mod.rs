//! A scripted venue for driving a `Runner` in tests: it answers every action the way an
//! exchange would (places and edits acknowledged as open, cancels as cancelled) and fills on
//! request. No allocation per step once built, so the allocation test can use it too.

#![allow(dead_code, clippy::unwrap_used)]

use ticktrade_book::L2Book;
use ticktrade_core::{Decimal, InstrumentId, InstrumentSpec, Mono, Price, Qty, Side};
use ticktrade_strategy::context::{Action, Outbox, Runner, RunnerParts, Strategy};
use ticktrade_strategy::label::{Label, LabelGen, TradeId, VenueId};
use ticktrade_strategy::order::{FillReport, OrderReport, Orders, OrdersConfig, VenueState};
use ticktrade_strategy::pnl::PnlRule;
use ticktrade_strategy::risk::{BandReference, Limits, Risk};

pub const INST: InstrumentId = InstrumentId(0);

pub fn spec() -> InstrumentSpec {
    InstrumentSpec::simple("BTC-PERPETUAL", Decimal::parse("0.5").unwrap(), Decimal::from_int(10)).unwrap()
}

pub struct Venue<S> {
    pub runner: Runner<S>,
    pub books: Vec<L2Book>,
    pub out: Outbox,
    /// The actions of the last step.
    pub sent: Vec<Action>,
    pub now: u64,
    ts: i64,
    trade_seq: u64,
}

impl<S: Strategy> Venue<S> {
    pub fn new(strategy: S, limits: Limits) -> Venue<S> {
        let spec = spec();
        let rule = PnlRule::for_spec(&spec).unwrap();
        let runner = Runner::new(
            strategy,
            RunnerParts {
                orders: Orders::new(OrdersConfig { order_slots: 64, trade_memory: 256 }, vec![rule], b"tt-"),
                risk: Risk::new(limits),
                labels: LabelGen::new("tt", 42).unwrap(),
                specs: vec![spec],
                band_reference: BandReference::Mid,
            },
        );
        Venue {
            runner,
            books: vec![L2Book::new()],
            out: Outbox::with_capacity(16),
            sent: Vec::with_capacity(16),
            now: 1,
            ts: 1,
            trade_seq: 0,
        }
    }

    fn collect(&mut self) {
        self.sent.clear();
        self.sent.extend(self.out.drain());
    }

    /// Sets the top of the book to one level a side and runs the strategy on it.
    pub fn book(&mut self, bid: (i64, i64), ask: (i64, i64)) -> &[Action] {
        let book = &mut self.books[0];
        book.clear();
        book.set_level(Side::Buy, Price::from_raw(bid.0), Qty::from_raw(bid.1));
        book.set_level(Side::Sell, Price::from_raw(ask.0), Qty::from_raw(ask.1));
        self.book_levels()
    }

    /// Runs the strategy on the book as it is.
    pub fn book_levels(&mut self) -> &[Action] {
        self.now += 1_000_000;
        self.runner.on_book(INST, &self.books, Mono(self.now), &mut self.out);
        self.collect();
        &self.sent
    }

    pub fn advance_ms(&mut self, ms: u64) {
        self.now += ms * 1_000_000;
    }

    /// Answers every action of the last step as the venue would; returns how many.
    pub fn ack(&mut self) -> usize {
        let mut n = 0;
        // Acks can cause more actions; answer those too, a bounded number of rounds.
        for _ in 0..4 {
            let actions = self.sent.clone_from_slice_buf();
            if actions.1 == 0 {
                break;
            }
            self.sent.clear();
            for action in &actions.0[..actions.1] {
                n += 1;
                self.answer(action);
            }
        }
        n
    }

    fn answer(&mut self, action: &Action) {
        self.ts += 1;
        let report = match *action {
            Action::Place { label, order } => {
                report(label, order.side, order.price, order.qty, Qty::ZERO, VenueState::Open, self.ts)
            }
            Action::Edit { label, price, qty, .. } => {
                let o = *self.runner.orders().get(&label).unwrap();
                report(label, o.side, price, qty, o.filled(), VenueState::Open, self.ts)
            }
            Action::Cancel { label, .. } => {
                let o = *self.runner.orders().get(&label).unwrap();
                report(label, o.side, o.price, o.qty, o.filled(), VenueState::Cancelled, self.ts)
            }
            Action::CancelAll { .. } => return,
        };
        self.runner.on_report(&report, &self.books, Mono(self.now), &mut self.out);
        self.sent.extend(self.out.drain());
    }

    /// Fills `qty` of the order `label` (one trade, then the order report).
    pub fn fill(&mut self, label: Label, qty: i64) {
        let o = *self.runner.orders().get(&label).unwrap();
        self.trade_seq += 1;
        self.ts += 1;
        let fill = FillReport {
            trade_id: trade_id(self.trade_seq),
            label,
            instrument: INST,
            side: o.side,
            price: o.price,
            qty: Qty::from_raw(qty),
        };
        self.runner.on_fill(&fill, &self.books, Mono(self.now), &mut self.out);
        let filled = o.filled().saturating_add(Qty::from_raw(qty));
        let state = if filled >= o.qty { VenueState::Filled } else { VenueState::Open };
        let r = report(label, o.side, o.price, o.qty, filled, state, self.ts);
        self.runner.on_report(&r, &self.books, Mono(self.now), &mut self.out);
        self.collect();
    }
}

/// Copy of a slice of actions into a fixed buffer (no allocation).
trait FixedCopy {
    fn clone_from_slice_buf(&self) -> ([Action; 16], usize);
}

impl FixedCopy for Vec<Action> {
    fn clone_from_slice_buf(&self) -> ([Action; 16], usize) {
        let mut buf = [Action::CancelAll { instrument: None }; 16];
        let n = self.len().min(16);
        buf[..n].copy_from_slice(&self[..n]);
        (buf, n)
    }
}

pub fn report(
    label: Label,
    side: Side,
    price: Price,
    qty: Qty,
    filled: Qty,
    state: VenueState,
    ts: i64,
) -> OrderReport {
    OrderReport {
        label,
        venue_id: VenueId::try_from_str("BTC-1").unwrap(),
        instrument: INST,
        side,
        price,
        qty,
        filled,
        avg_price: Decimal::ZERO,
        state,
        updated_ms: ts,
    }
}

/// `T<n>` without allocating.
pub fn trade_id(n: u64) -> TradeId {
    let mut buf = [0u8; 21];
    buf[0] = b'T';
    let mut digits = [0u8; 20];
    let (mut v, mut at) = (n, 20);
    loop {
        at -= 1;
        digits[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let len = 20 - at;
    buf[1..=len].copy_from_slice(&digits[at..]);
    TradeId::try_from_bytes(&buf[..=len]).unwrap()
}
