//! The API strategies are written against: the `Strategy` callbacks (books, trades, our own
//! order updates, fills, a timer), the `Context` they act and read through (place, edit,
//! cancel, cancel-all; books, best prices, positions, open orders, specs, time), the `Action`s
//! they leave in a caller-owned bounded `Outbox`, and `Runner`, which the live session (or a
//! test, or the simulator's loop) drives with decoded events.
//!
//! Owns: the order of work per event — order state first, then the loss check, then the
//! strategy — and the rules of the context: every place and edit passes the risk checks, a
//! blocked one never reaches the outbox, `Paused` blocks places and edits but not cancels, and
//! once the kill switch is on only cancels go out.
//! Must not: allocate after start-up on any per-event path, do I/O, read a clock, or know a
//! venue's wire format (the session encodes `Action`s).

use ticktrade_book::{L2Book, Level};
use ticktrade_core::{InstrumentId, InstrumentSpec, Mono, Price, Qty, Side};

use crate::label::{Label, LabelGen, VenueId};
use crate::order::{FillReport, Order, OrderEvent, OrderReport, Orders, Reason, Request, Status};
use crate::risk::{BandReference, Blocked, Candidate, Risk};

/// How long an order may rest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TimeInForce {
    #[default]
    GoodTilCancelled,
    ImmediateOrCancel,
    FillOrKill,
}

/// A new limit order, in the instrument's ticks and lots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderRequest {
    pub instrument: InstrumentId,
    pub side: Side,
    pub price: Price,
    pub qty: Qty,
    pub post_only: bool,
    pub reduce_only: bool,
    pub time_in_force: TimeInForce,
}

impl OrderRequest {
    /// A good-til-cancelled limit order with no flags.
    pub fn limit(instrument: InstrumentId, side: Side, price: Price, qty: Qty) -> OrderRequest {
        OrderRequest {
            instrument,
            side,
            price,
            qty,
            post_only: false,
            reduce_only: false,
            time_in_force: TimeInForce::GoodTilCancelled,
        }
    }
}

/// What the session sends after the callback returns, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Place {
        label: Label,
        order: OrderRequest,
    },
    Edit {
        label: Label,
        instrument: InstrumentId,
        venue_id: VenueId,
        price: Price,
        qty: Qty,
    },
    Cancel {
        label: Label,
        instrument: InstrumentId,
        venue_id: VenueId,
    },
    /// Every order of ours, or every order on one instrument.
    CancelAll {
        instrument: Option<InstrumentId>,
    },
}

impl Action {
    pub fn is_cancel(&self) -> bool {
        matches!(self, Action::Cancel { .. } | Action::CancelAll { .. })
    }
}

/// A bounded queue of actions, owned by the caller and drained after every event.
#[derive(Clone, Debug)]
pub struct Outbox {
    actions: Vec<Action>,
}

impl Outbox {
    pub fn with_capacity(capacity: usize) -> Outbox {
        Outbox { actions: Vec::with_capacity(capacity.max(1)) }
    }

    fn push(&mut self, action: Action) -> Result<(), Blocked> {
        if self.actions.len() >= self.actions.capacity() {
            return Err(Blocked::OutboxFull);
        }
        self.actions.push(action);
        Ok(())
    }

    fn has_room(&self) -> bool {
        self.actions.len() < self.actions.capacity()
    }

    pub fn as_slice(&self) -> &[Action] {
        &self.actions
    }

    pub fn len(&self) -> usize {
        self.actions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }

    /// Hands the queued actions to the session, oldest first.
    pub fn drain(&mut self) -> std::vec::Drain<'_, Action> {
        self.actions.drain(..)
    }

    pub fn clear(&mut self) {
        self.actions.clear();
    }
}

/// A public trade on an instrument (the `trades` channel), for `on_trade`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trade {
    pub instrument: InstrumentId,
    /// The aggressor's side.
    pub side: Side,
    pub price: Price,
    pub qty: Qty,
}

/// The user's code. Callbacks run on the hot thread: no I/O, no allocation, no locks.
/// Every callback has a default that does nothing.
pub trait Strategy {
    /// After the book of `instrument` changed (it is applied and not stale).
    fn on_book(&mut self, ctx: &mut Context<'_>, instrument: InstrumentId, book: &L2Book) {
        let _ = (ctx, instrument, book);
    }
    fn on_trade(&mut self, ctx: &mut Context<'_>, trade: &Trade) {
        let _ = (ctx, trade);
    }
    /// One of our orders changed (accepted, filled, cancelled, rejected with the venue's
    /// reason in `order.reason`, amended, adopted, unknown).
    fn on_order(&mut self, ctx: &mut Context<'_>, order: &Order, event: OrderEvent) {
        let _ = (ctx, order, event);
    }
    /// One of our trades, once per trade id; the position already includes it.
    fn on_fill(&mut self, ctx: &mut Context<'_>, fill: &FillReport) {
        let _ = (ctx, fill);
    }
    /// The session's timer.
    fn on_timer(&mut self, ctx: &mut Context<'_>) {
        let _ = ctx;
    }
}

/// What a callback acts and reads through. Lives for one callback.
pub struct Context<'a> {
    state: &'a mut State,
    books: &'a [L2Book],
    out: &'a mut Outbox,
    now: Mono,
}

/// Everything the runner keeps between events, apart from the strategy.
#[derive(Debug)]
struct State {
    orders: Orders,
    risk: Risk,
    labels: LabelGen,
    specs: Vec<InstrumentSpec>,
    marks: Vec<Option<Price>>,
    band_reference: BandReference,
    paused: bool,
}

impl State {
    /// Every check of an edit of `label` to `price` and `qty`, in order: the order's slot,
    /// instrument and venue id if it may go out. Pure, and not inlined: the session's warm-up
    /// runs the same code ([`Runner::warm`]).
    #[inline(never)]
    fn check_edit(
        &self,
        books: &[L2Book],
        now: Mono,
        label: &Label,
        price: Price,
        qty: Qty,
    ) -> Result<(u32, InstrumentId, VenueId), Blocked> {
        if self.paused {
            return Err(Blocked::Paused);
        }
        let (slot, order) = self.orders.find(label).ok_or(Blocked::UnknownOrder)?;
        if !order.status.is_live() {
            return Err(Blocked::UnknownOrder);
        }
        if !matches!(order.status, Status::Open | Status::PartlyFilled) || order.pending_cancel {
            return Err(Blocked::NotOpen);
        }
        let (instrument, venue_id) = (order.instrument, order.venue_id);
        let spec = self.specs.get(instrument.0 as usize).ok_or(Blocked::UnknownInstrument)?;
        if !spec.tick_rule.is_valid(price) {
            return Err(Blocked::OffGrid);
        }
        let candidate =
            Candidate { instrument, side: order.side, price, qty, replaces: Some(*label), filled: order.filled() };
        let reference = reference(self, books, instrument);
        self.risk.check(&candidate, &self.orders, reference, now)?;
        Ok((slot, instrument, venue_id))
    }
}

impl Context<'_> {
    /// Checks and queues a new order; returns its label, or why it was blocked.
    pub fn place(&mut self, order: OrderRequest) -> Result<Label, Blocked> {
        let s = &mut *self.state;
        if s.paused {
            return Err(Blocked::Paused);
        }
        let spec = s.specs.get(order.instrument.0 as usize).ok_or(Blocked::UnknownInstrument)?;
        if !spec.tick_rule.is_valid(order.price) {
            return Err(Blocked::OffGrid);
        }
        let candidate = Candidate {
            instrument: order.instrument,
            side: order.side,
            price: order.price,
            qty: order.qty,
            replaces: None,
            filled: Qty::ZERO,
        };
        let reference = reference(s, self.books, order.instrument);
        s.risk.check(&candidate, &s.orders, reference, self.now)?;
        if !self.out.has_room() {
            return Err(Blocked::OutboxFull);
        }
        let label = s.labels.next_label().ok_or(Blocked::Labels)?;
        s.orders
            .insert_pending(label, order.instrument, order.side, order.price, order.qty)
            .map_err(|_| Blocked::SlotsFull)?;
        self.out.push(Action::Place { label, order })?;
        s.risk.record_sent(self.now);
        Ok(label)
    }

    /// Checks and queues an amendment of a live order to a new price and size.
    pub fn edit(&mut self, label: Label, price: Price, qty: Qty) -> Result<(), Blocked> {
        let (slot, instrument, venue_id) = self.state.check_edit(self.books, self.now, &label, price, qty)?;
        self.out.push(Action::Edit { label, instrument, venue_id, price, qty })?;
        let s = &mut *self.state;
        s.orders.note_request_at(slot, Request::Edit, price, qty);
        s.risk.record_sent(self.now);
        Ok(())
    }

    /// Queues a cancel. Allowed while paused and after the kill switch; a second cancel of
    /// an order whose cancel is in flight queues nothing.
    pub fn cancel(&mut self, label: Label) -> Result<(), Blocked> {
        let order = *self.state.orders.get(&label).ok_or(Blocked::UnknownOrder)?;
        if !order.status.is_live() {
            return Err(Blocked::UnknownOrder);
        }
        if order.pending_cancel {
            return Ok(());
        }
        self.out.push(Action::Cancel { label, instrument: order.instrument, venue_id: order.venue_id })?;
        self.state.orders.note_request(&label, Request::Cancel, order.price, order.qty);
        Ok(())
    }

    /// Queues a cancel of all our orders (on one instrument, or everywhere).
    pub fn cancel_all(&mut self, instrument: Option<InstrumentId>) -> Result<(), Blocked> {
        self.out.push(Action::CancelAll { instrument })
    }

    pub fn now(&self) -> Mono {
        self.now
    }

    pub fn spec(&self, instrument: InstrumentId) -> Option<&InstrumentSpec> {
        self.state.specs.get(instrument.0 as usize)
    }

    pub fn book(&self, instrument: InstrumentId) -> Option<&L2Book> {
        self.books.get(instrument.0 as usize)
    }

    pub fn best_bid(&self, instrument: InstrumentId) -> Option<Level> {
        self.book(instrument)?.best_bid()
    }

    pub fn best_ask(&self, instrument: InstrumentId) -> Option<Level> {
        self.book(instrument)?.best_ask()
    }

    /// The mid in whole ticks (rounded down), when both sides are there and not crossed.
    pub fn mid(&self, instrument: InstrumentId) -> Option<Price> {
        mid(self.books, instrument)
    }

    /// The mark the session last set for `instrument` (e.g. from the ticker).
    pub fn mark(&self, instrument: InstrumentId) -> Option<Price> {
        self.state.marks.get(instrument.0 as usize).copied().flatten()
    }

    /// Signed position in lots.
    pub fn position(&self, instrument: InstrumentId) -> Qty {
        self.state.orders.position(instrument).qty()
    }

    /// Realised plus unrealised PnL of `instrument`, marked at the mid, in its PnL currency
    /// (see `pnl`); `None` without a two-sided book.
    pub fn pnl(&self, instrument: InstrumentId) -> Option<ticktrade_core::Decimal> {
        pnl(&self.state.orders, self.books, instrument)
    }

    /// Our live orders (pending, unknown, open, partly filled) on every instrument.
    pub fn open_orders(&self) -> impl Iterator<Item = &Order> {
        self.state.orders.live()
    }

    pub fn order(&self, label: &Label) -> Option<&Order> {
        self.state.orders.get(label)
    }

    pub fn is_paused(&self) -> bool {
        self.state.paused
    }

    pub fn killed(&self) -> Option<Blocked> {
        self.state.risk.killed()
    }
}

/// The mid of `instrument`'s book in whole ticks (rounded down), when both sides are there and
/// not crossed.
pub fn mid(books: &[L2Book], instrument: InstrumentId) -> Option<Price> {
    let book = books.get(instrument.0 as usize)?;
    let (bid, ask) = (book.best_bid()?.price, book.best_ask()?.price);
    (bid < ask).then(|| Price::from_raw(bid.raw() + (ask.raw() - bid.raw()) / 2))
}

/// Realised plus unrealised PnL of `instrument`, marked at the mid, in its PnL currency.
fn pnl(orders: &Orders, books: &[L2Book], instrument: InstrumentId) -> Option<ticktrade_core::Decimal> {
    let rule = orders.rule(instrument)?;
    rule.to_decimal(rule.pnl(&orders.position(instrument), mid(books, instrument)?))
}

fn reference(state: &State, books: &[L2Book], instrument: InstrumentId) -> Option<Price> {
    match state.band_reference {
        BandReference::Mid => mid(books, instrument),
        BandReference::Mark => state.marks.get(instrument.0 as usize).copied().flatten(),
    }
}

/// Drives one strategy: the session calls one method per decoded event, then drains `out`.
pub struct Runner<S> {
    strategy: S,
    state: State,
}

/// What `Runner::new` needs besides the strategy.
pub struct RunnerParts {
    pub orders: Orders,
    pub risk: Risk,
    pub labels: LabelGen,
    /// Indexed by `InstrumentId`, like the books the session passes in.
    pub specs: Vec<InstrumentSpec>,
    pub band_reference: BandReference,
}

impl<S: Strategy> Runner<S> {
    pub fn new(strategy: S, parts: RunnerParts) -> Runner<S> {
        let n = parts.specs.len();
        Runner {
            strategy,
            state: State {
                orders: parts.orders,
                risk: parts.risk,
                labels: parts.labels,
                specs: parts.specs,
                marks: vec![None; n],
                band_reference: parts.band_reference,
                paused: false,
            },
        }
    }

    pub fn strategy(&self) -> &S {
        &self.strategy
    }

    /// The strategy itself, between events (e.g. to read or reset its own counters).
    pub fn strategy_mut(&mut self) -> &mut S {
        &mut self.strategy
    }

    pub fn orders(&self) -> &Orders {
        &self.state.orders
    }

    pub fn risk(&self) -> &Risk {
        &self.state.risk
    }

    /// `instrument`'s PnL marked at the mid of `books`, as `Context::pnl` gives it.
    pub fn pnl(&self, instrument: InstrumentId, books: &[L2Book]) -> Option<ticktrade_core::Decimal> {
        pnl(&self.state.orders, books, instrument)
    }

    fn split<'a>(&'a mut self, books: &'a [L2Book], out: &'a mut Outbox, now: Mono) -> (&'a mut S, Context<'a>) {
        (&mut self.strategy, Context { state: &mut self.state, books, out, now })
    }

    /// The book of `instrument` changed (applied, not stale): loss check at the mid, then the
    /// strategy.
    pub fn on_book(&mut self, instrument: InstrumentId, books: &[L2Book], now: Mono, out: &mut Outbox) {
        self.check_loss(instrument, books, out);
        let Some(book) = books.get(instrument.0 as usize) else { return };
        let (strategy, mut ctx) = self.split(books, out, now);
        strategy.on_book(&mut ctx, instrument, book);
    }

    /// Runs the pure parts of a decision on `instrument` and drops their results: the loss
    /// check at the mid, and every check of an edit that would leave the order of `label` as it
    /// is. A busy-polling session calls it while it waits for a frame, so that this code is
    /// cached when the next book frame arrives. Nothing changes.
    #[inline(never)]
    pub fn warm(&self, instrument: InstrumentId, label: Option<&Label>, books: &[L2Book], now: Mono) -> bool {
        let s = &self.state;
        let loss = mid(books, instrument).and_then(|mark| s.risk.loss_breach(&s.orders, instrument, mark));
        let Some(order) = label.and_then(|label| s.orders.get(label)) else { return loss.is_some() };
        s.check_edit(books, now, &order.label, order.price, order.qty).is_ok() && loss.is_none()
    }

    pub fn on_trade(&mut self, trade: &Trade, books: &[L2Book], now: Mono, out: &mut Outbox) {
        let (strategy, mut ctx) = self.split(books, out, now);
        strategy.on_trade(&mut ctx, trade);
    }

    /// An order report (request result or notification). Duplicates and stale reports reach
    /// no callback.
    pub fn on_report(&mut self, report: &OrderReport, books: &[L2Book], now: Mono, out: &mut Outbox) {
        if let Some((order, event)) = self.state.orders.apply_report(report) {
            let (strategy, mut ctx) = self.split(books, out, now);
            strategy.on_order(&mut ctx, &order, event);
        }
    }

    /// The venue refused a request of ours.
    pub fn on_reject(
        &mut self,
        label: &Label,
        request: Request,
        reason: Reason,
        books: &[L2Book],
        now: Mono,
        out: &mut Outbox,
    ) {
        if let Some((order, event)) = self.state.orders.apply_reject(label, request, reason) {
            let (strategy, mut ctx) = self.split(books, out, now);
            strategy.on_order(&mut ctx, &order, event);
        }
    }

    /// One of our trades: booked once per trade id, loss-checked, then `on_fill` and, if the
    /// order's state changed, `on_order`.
    pub fn on_fill(&mut self, fill: &FillReport, books: &[L2Book], now: Mono, out: &mut Outbox) {
        let Some(change) = self.state.orders.apply_fill(fill) else { return };
        self.check_loss(fill.instrument, books, out);
        let (strategy, mut ctx) = self.split(books, out, now);
        strategy.on_fill(&mut ctx, fill);
        if let Some((order, event)) = change {
            strategy.on_order(&mut ctx, &order, event);
        }
    }

    pub fn on_timer(&mut self, books: &[L2Book], now: Mono, out: &mut Outbox) {
        let (strategy, mut ctx) = self.split(books, out, now);
        strategy.on_timer(&mut ctx);
    }

    /// Set by the session during resync and reconciliation: places and edits are blocked.
    pub fn set_paused(&mut self, paused: bool) {
        self.state.paused = paused;
    }

    /// The mark price of `instrument` (for the price band when it is measured from the mark).
    pub fn set_mark(&mut self, instrument: InstrumentId, mark: Price) {
        if let Some(slot) = self.state.marks.get_mut(instrument.0 as usize) {
            *slot = Some(mark);
        }
    }

    /// Trips the kill switch: queued orders and edits are dropped, a cancel-all is queued,
    /// and from now on only cancels go out.
    pub fn kill(&mut self, why: Blocked, out: &mut Outbox) {
        self.state.risk.kill(why);
        out.actions.retain(Action::is_cancel);
        // A full outbox now holds only cancels; the cancel-all covers the one it displaces.
        if !out.has_room() {
            out.actions.pop();
        }
        let _ = out.push(Action::CancelAll { instrument: None });
    }

    fn check_loss(&mut self, instrument: InstrumentId, books: &[L2Book], out: &mut Outbox) {
        let Some(mark) = mid(books, instrument) else { return };
        if let Some(why) = self.state.risk.check_loss(&self.state.orders, instrument, mark) {
            self.kill(why, out);
        }
    }

    /// After a disconnect: orders sent and never confirmed become `Unknown`.
    pub fn on_disconnect(&mut self, books: &[L2Book], now: Mono, out: &mut Outbox) {
        let mut changed = Vec::new();
        self.state.orders.mark_unknown(|order, event| changed.push((order, event)));
        self.notify(&changed, books, now, out);
    }

    /// Reconciles with the venue's open orders and positions (see `Orders::apply_snapshot`)
    /// and tells the strategy what changed. Off the hot path: it may allocate.
    pub fn apply_snapshot(
        &mut self,
        open: &[OrderReport],
        positions: &[(InstrumentId, i64, ticktrade_core::Decimal)],
        books: &[L2Book],
        now: Mono,
        out: &mut Outbox,
    ) {
        let mut changed = Vec::new();
        self.state.orders.apply_snapshot(open, positions, |order, event| changed.push((order, event)));
        self.notify(&changed, books, now, out);
    }

    fn notify(&mut self, changed: &[(Order, OrderEvent)], books: &[L2Book], now: Mono, out: &mut Outbox) {
        let (strategy, mut ctx) = self.split(books, out, now);
        for (order, event) in changed {
            strategy.on_order(&mut ctx, order, *event);
        }
    }
}

#[cfg(test)]
#[path = "context_tests.rs"]
mod tests;
