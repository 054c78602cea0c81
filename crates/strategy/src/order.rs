//! Order state by label, and positions from fills: what the hot thread believes about its own
//! orders, merged from request results, order notifications, fills and venue snapshots that may
//! arrive in any order and more than once.
//!
//! Owns: `Orders` — a slab of order slots with a label index (capacity fixed at start-up),
//! positions per instrument, and the set of recent trade ids.
//! Must not: allocate after `Orders::new`, do I/O, read a clock, or decide anything: it
//! records; risk and the strategy read it.
//!
//! Why it converges (the reasoning of the control plane's `OrderTracker`): an order keeps the
//! greatest venue report under a total order — terminal beats live, more filled beats less,
//! a later venue timestamp beats an earlier one, then the status and the content as
//! tie-breaks. A maximum is commutative, associative and idempotent, so any interleaving of
//! any duplicates ends in the same state. Fills are a set keyed by trade id, so a duplicate
//! never doubles a position; an order's filled amount is the larger of what its reports say
//! and what its distinct fills add up to.
//!
//! Reconciliation after a reconnect (`Orders::apply_snapshot`): the venue's open orders merge
//! as reports, and live ones carrying our label prefix that this run did not know are adopted;
//! our live orders the venue no longer lists are cancelled; positions are replaced.
//!
//! Slots: a terminal order keeps its slot (so a late duplicate report finds it and changes
//! nothing) until a new order needs one; then the oldest terminal slot is reused. Size the
//! capacity well above the open-order limit.

use std::collections::VecDeque;

use ticktrade_core::{Decimal, InstrumentId, Price, Qty, Side};

use crate::label::{FixedIndex, Label, RecentTrades, TradeId, VenueId};
use crate::pnl::{PnlRule, Position};

/// Where an order stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Status {
    /// Sent, no word from the venue yet.
    PendingNew,
    /// Sent before a disconnect and never confirmed: reconciliation resolves it by label.
    Unknown,
    Open,
    PartlyFilled,
    Rejected,
    Cancelled,
    Filled,
}

impl Status {
    pub const fn is_terminal(self) -> bool {
        matches!(self, Status::Filled | Status::Cancelled | Status::Rejected)
    }

    /// True while the order may still trade (counts towards exposure and open-order limits).
    pub const fn is_live(self) -> bool {
        !self.is_terminal()
    }
}

/// What the venue said an order's state is (Deribit's `order_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum VenueState {
    Open,
    Rejected,
    Cancelled,
    Filled,
}

/// A venue's reason for refusing something: its error code and a short text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Reason {
    pub code: i32,
    pub text: crate::label::Inline<48>,
}

impl Reason {
    pub fn new(code: i32, text: &str) -> Reason {
        Reason { code, text: crate::label::Inline::truncated(text) }
    }
}

/// One report of an order from the venue (request result, notification or snapshot entry),
/// already in the instrument's ticks and lots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderReport {
    pub label: Label,
    pub venue_id: VenueId,
    pub instrument: InstrumentId,
    pub side: Side,
    pub price: Price,
    pub qty: Qty,
    pub filled: Qty,
    /// The venue's average fill price (may be off the tick grid).
    pub avg_price: Decimal,
    pub state: VenueState,
    /// The venue's last-update time (Deribit: `last_update_timestamp`, ms).
    pub updated_ms: i64,
}

/// One of our trades (Deribit `user.trades` entry, or a trade in a request result).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FillReport {
    pub trade_id: TradeId,
    pub label: Label,
    pub instrument: InstrumentId,
    pub side: Side,
    pub price: Price,
    pub qty: Qty,
}

/// Which request of ours the venue refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Request {
    Place,
    Edit,
    Cancel,
}

/// An order as the hot thread knows it. `Copy`, so callbacks get it by value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Order {
    pub label: Label,
    pub venue_id: VenueId,
    pub instrument: InstrumentId,
    pub side: Side,
    pub price: Price,
    pub qty: Qty,
    pub status: Status,
    pub avg_price: Decimal,
    /// The last refusal of a request on this order, if any.
    pub reason: Option<Reason>,
    /// Edit sent and not yet confirmed: the new price and size.
    pub pending_edit: Option<(Price, Qty)>,
    pub pending_cancel: bool,
    reported_filled: Qty,
    fills_filled: Qty,
    /// Precedence key of the kept report: (terminal, filled, updated_ms, state).
    kept: Option<(bool, Qty, i64, VenueState)>,
}

impl Order {
    /// Filled so far: the larger of the reports' figure and the distinct fills' sum.
    pub fn filled(&self) -> Qty {
        self.reported_filled.max(self.fills_filled)
    }

    pub fn remaining(&self) -> Qty {
        self.qty.saturating_sub(self.filled()).max(Qty::ZERO)
    }

    fn derive_status(&mut self) {
        let filled = self.filled();
        self.status = match self.kept {
            Some((true, _, _, VenueState::Filled)) => Status::Filled,
            Some((true, _, _, VenueState::Cancelled)) => Status::Cancelled,
            Some((true, _, _, _)) => Status::Rejected,
            _ if self.qty.is_positive() && filled >= self.qty => Status::Filled,
            _ if filled.is_positive() => Status::PartlyFilled,
            Some(_) => Status::Open,
            None => self.status,
        };
    }
}

/// What changed, for the strategy's `on_order`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrderEvent {
    Accepted,
    PartlyFilled,
    Filled,
    Cancelled,
    Rejected,
    /// A new price or size took effect.
    Amended,
    /// An edit or cancel was refused; the order itself is unchanged.
    RequestRejected(Request),
    /// A live order with our prefix that this run did not know (found by reconciliation).
    Adopted,
    /// Its fate after a disconnect is unknown until reconciliation.
    Unknown,
}

/// `Orders` has no free slot (every slot holds a live order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("all {0} order slots hold live orders")]
pub struct SlotsFull(pub usize);

/// Sizes fixed at start-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrdersConfig {
    pub order_slots: usize,
    pub trade_memory: usize,
}

/// Our orders by label, positions by instrument, recent trade ids.
#[derive(Clone, Debug)]
pub struct Orders {
    slots: Vec<Option<Order>>,
    free: Vec<u32>,
    /// Slots of live orders, oldest first: what the risk checks scan.
    live: Vec<u32>,
    retired: VecDeque<u32>,
    by_label: FixedIndex<32>,
    positions: Vec<Position>,
    rules: Vec<PnlRule>,
    trades: RecentTrades,
    prefix: Label,
}

impl Orders {
    /// `rules[i]` is the PnL rule of instrument `InstrumentId(i)`; `prefix` is `<prefix>-`,
    /// the mark of orders this account's runs placed.
    pub fn new(config: OrdersConfig, rules: Vec<PnlRule>, prefix: &[u8]) -> Orders {
        let n = config.order_slots.max(1);
        Orders {
            slots: vec![None; n],
            free: (0..n as u32).rev().collect(),
            live: Vec::with_capacity(n),
            retired: VecDeque::with_capacity(n),
            by_label: FixedIndex::with_capacity(n),
            positions: vec![Position::default(); rules.len()],
            rules,
            trades: RecentTrades::with_capacity(config.trade_memory),
            prefix: Label::try_from_bytes(prefix).unwrap_or_default(),
        }
    }

    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    pub fn get(&self, label: &Label) -> Option<&Order> {
        self.find(label).map(|(_, order)| order)
    }

    /// The order of `label` and its slot, for a caller that updates it after checks
    /// ([`Self::note_request_at`]) without a second lookup.
    pub fn find(&self, label: &Label) -> Option<(u32, &Order)> {
        let slot = self.by_label.get(label)?;
        self.slots[slot as usize].as_ref().map(|order| (slot, order))
    }

    /// Whether a report of `label` concerns this session: an order it tracks, or one with the
    /// account's run prefix (a previous run's, adopted at reconciliation). Anything else is
    /// another client's order on the same account.
    pub fn is_ours(&self, label: &Label) -> bool {
        self.by_label.get(label).is_some() || (!self.prefix.is_empty() && label.starts_with(self.prefix.as_bytes()))
    }

    /// Live orders (pending, unknown, open, partly filled), oldest first.
    pub fn live(&self) -> impl Iterator<Item = &Order> {
        self.live.iter().filter_map(|slot| self.slots[*slot as usize].as_ref())
    }

    pub fn position(&self, instrument: InstrumentId) -> Position {
        self.positions.get(instrument.0 as usize).copied().unwrap_or_default()
    }

    pub fn rule(&self, instrument: InstrumentId) -> Option<&PnlRule> {
        self.rules.get(instrument.0 as usize)
    }

    /// Records a new order we are about to send, as `PendingNew`.
    pub fn insert_pending(
        &mut self,
        label: Label,
        instrument: InstrumentId,
        side: Side,
        price: Price,
        qty: Qty,
    ) -> Result<Order, SlotsFull> {
        let slot = self.take_slot()?;
        let order = Order {
            label,
            venue_id: VenueId::EMPTY,
            instrument,
            side,
            price,
            qty,
            status: Status::PendingNew,
            avg_price: Decimal::ZERO,
            reason: None,
            pending_edit: None,
            pending_cancel: false,
            reported_filled: Qty::ZERO,
            fills_filled: Qty::ZERO,
            kept: None,
        };
        self.slots[slot as usize] = Some(order);
        self.by_label.insert(label, slot);
        self.live.push(slot);
        Ok(order)
    }

    fn take_slot(&mut self) -> Result<u32, SlotsFull> {
        if let Some(slot) = self.free.pop() {
            return Ok(slot);
        }
        while let Some(slot) = self.retired.pop_front() {
            if let Some(old) = self.slots[slot as usize].take_if(|o| o.status.is_terminal()) {
                self.by_label.remove(&old.label);
                return Ok(slot);
            }
        }
        Err(SlotsFull(self.slots.len()))
    }

    fn slot_mut(&mut self, label: &Label) -> Option<(u32, &mut Order)> {
        let slot = self.by_label.get(label)?;
        self.slots[slot as usize].as_mut().map(|o| (slot, o))
    }

    /// Notes an edit or cancel we are about to send.
    pub fn note_request(&mut self, label: &Label, request: Request, price: Price, qty: Qty) {
        if let Some(slot) = self.by_label.get(label) {
            self.note_request_at(slot, request, price, qty);
        }
    }

    /// [`Self::note_request`] for the slot [`Self::find`] gave.
    pub fn note_request_at(&mut self, slot: u32, request: Request, price: Price, qty: Qty) {
        if let Some(order) = self.slots.get_mut(slot as usize).and_then(Option::as_mut) {
            match request {
                Request::Edit => order.pending_edit = Some((price, qty)),
                Request::Cancel => order.pending_cancel = true,
                Request::Place => {}
            }
        }
    }

    /// Merges one report. `None` if it changed nothing (a duplicate or an older report), or
    /// names an order that is not ours.
    pub fn apply_report(&mut self, report: &OrderReport) -> Option<(Order, OrderEvent)> {
        let key = (report.state != VenueState::Open, report.filled, report.updated_ms, report.state);
        let Some((slot, order)) = self.slot_mut(&report.label) else {
            return self.adopt(report, key);
        };
        if order.kept.is_some_and(|kept| precedes(key, report, kept, order)) {
            return None;
        }
        let before = *order;
        order.kept = Some(key);
        order.venue_id = report.venue_id;
        order.price = report.price;
        order.qty = report.qty;
        order.reported_filled = report.filled;
        order.avg_price = report.avg_price;
        if before.pending_edit == Some((report.price, report.qty)) {
            order.pending_edit = None;
        }
        order.derive_status();
        let after = *order;
        if after.status.is_terminal() && !before.status.is_terminal() {
            self.retire(slot);
        }
        let event = event_between(&before, &after)?;
        Some((after, event))
    }

    fn adopt(&mut self, report: &OrderReport, key: (bool, Qty, i64, VenueState)) -> Option<(Order, OrderEvent)> {
        if report.state != VenueState::Open
            || self.prefix.is_empty()
            || !report.label.starts_with(self.prefix.as_bytes())
        {
            return None;
        }
        let mut order =
            self.insert_pending(report.label, report.instrument, report.side, report.price, report.qty).ok()?;
        order.venue_id = report.venue_id;
        order.reported_filled = report.filled;
        order.avg_price = report.avg_price;
        order.kept = Some(key);
        order.derive_status();
        let (_, slot) = self.slot_mut(&report.label)?;
        *slot = order;
        Some((order, OrderEvent::Adopted))
    }

    /// The venue refused a request. A refused place ends the order; a refused edit or cancel
    /// leaves it as it was.
    pub fn apply_reject(&mut self, label: &Label, request: Request, reason: Reason) -> Option<(Order, OrderEvent)> {
        let (slot, order) = self.slot_mut(label)?;
        order.reason = Some(reason);
        match request {
            Request::Place => {
                // A refusal is the lowest terminal report: any real terminal report wins.
                let key = (true, Qty::ZERO, i64::MIN, VenueState::Rejected);
                if order.kept.is_some_and(|kept| kept >= key) {
                    return None;
                }
                order.kept = Some(key);
                order.derive_status();
                let after = *order;
                self.retire(slot);
                Some((after, OrderEvent::Rejected))
            }
            Request::Edit => {
                order.pending_edit = None;
                Some((*order, OrderEvent::RequestRejected(Request::Edit)))
            }
            Request::Cancel => {
                order.pending_cancel = false;
                Some((*order, OrderEvent::RequestRejected(Request::Cancel)))
            }
        }
    }

    /// Books a fill once. `None` for a duplicate trade id. The order (if we know it) comes back
    /// with its new filled amount and the event it caused, if any.
    pub fn apply_fill(&mut self, fill: &FillReport) -> Option<Option<(Order, OrderEvent)>> {
        if !self.trades.insert(fill.trade_id) {
            return None;
        }
        let i = fill.instrument.0 as usize;
        if let (Some(rule), Some(position)) = (self.rules.get(i), self.positions.get_mut(i)) {
            rule.book_fill(position, fill.side, fill.price, fill.qty);
        }
        let Some((slot, order)) = self.slot_mut(&fill.label) else {
            return Some(None);
        };
        let before = *order;
        order.fills_filled = order.fills_filled.saturating_add(fill.qty);
        order.derive_status();
        let after = *order;
        if after.status.is_terminal() && !before.status.is_terminal() {
            self.retire(slot);
        }
        Some(event_between(&before, &after).map(|e| (after, e)))
    }

    /// After a disconnect: orders sent and never confirmed become `Unknown`; requests in flight
    /// are forgotten (their answers are lost with the connection).
    pub fn mark_unknown(&mut self, mut on_change: impl FnMut(Order, OrderEvent)) {
        for order in self.slots.iter_mut().flatten() {
            order.pending_edit = None;
            order.pending_cancel = false;
            if order.status == Status::PendingNew {
                order.status = Status::Unknown;
                on_change(*order, OrderEvent::Unknown);
            }
        }
    }

    /// Reconciles with the venue's view after a reconnect: `open` is every open order of the
    /// account, `positions` the position of each instrument (signed lots, average price). Open
    /// orders are merged as reports (unknown ones with our prefix adopted); our live orders the
    /// venue does not list are cancelled; positions are replaced. Call it with the session
    /// paused and only after every report received before the snapshot request was applied:
    /// fills with new trade ids then add on top of the venue's positions.
    pub fn apply_snapshot(
        &mut self,
        open: &[OrderReport],
        positions: &[(InstrumentId, i64, Decimal)],
        mut on_change: impl FnMut(Order, OrderEvent),
    ) {
        for report in open {
            if let Some((order, event)) = self.apply_report(report) {
                on_change(order, event);
            }
        }
        for slot in 0..self.slots.len() {
            let Some(order) = self.slots[slot].as_mut() else { continue };
            if order.status.is_terminal() || open.iter().any(|r| r.label == order.label) {
                continue;
            }
            // Lowest terminal report with what we know was filled: the venue's own final
            // report (cancelled or filled, with its figure) beats it when it comes.
            order.kept = Some((true, order.filled(), i64::MIN, VenueState::Cancelled));
            order.pending_edit = None;
            order.pending_cancel = false;
            order.derive_status();
            let after = *order;
            self.retire(slot as u32);
            on_change(after, OrderEvent::Cancelled);
        }
        for (instrument, qty, avg_price) in positions {
            let i = instrument.0 as usize;
            if let (Some(rule), Some(position)) = (self.rules.get(i), self.positions.get_mut(i)) {
                *position = rule.position_from_venue(*qty, *avg_price);
            }
        }
    }

    /// Moves a slot whose order just ended from the live list to the reuse queue. A slot is
    /// live once per use, so it retires once per use and neither list outgrows the slot count.
    fn retire(&mut self, slot: u32) {
        let Some(at) = self.live.iter().position(|s| *s == slot) else { return };
        // Order-preserving: live orders stay oldest first (a handful, so cheap).
        self.live.remove(at);
        self.retired.push_back(slot);
    }
}

/// True when the kept report (`kept`, with the order's current content) outranks or equals
/// the incoming one, so the incoming report changes nothing.
fn precedes(
    incoming: (bool, Qty, i64, VenueState),
    report: &OrderReport,
    kept: (bool, Qty, i64, VenueState),
    order: &Order,
) -> bool {
    let by_key = kept.cmp(&incoming);
    let by_content = (order.qty, order.price, order.venue_id, order.avg_price.mantissa(), order.avg_price.scale())
        .cmp(&(report.qty, report.price, report.venue_id, report.avg_price.mantissa(), report.avg_price.scale()));
    by_key.then(by_content).is_ge()
}

fn event_between(before: &Order, after: &Order) -> Option<OrderEvent> {
    if before.status != after.status {
        return Some(match after.status {
            Status::Open => OrderEvent::Accepted,
            Status::PartlyFilled => OrderEvent::PartlyFilled,
            Status::Filled => OrderEvent::Filled,
            Status::Cancelled => OrderEvent::Cancelled,
            Status::Rejected => OrderEvent::Rejected,
            Status::Unknown => OrderEvent::Unknown,
            Status::PendingNew => return None,
        });
    }
    if before.filled() != after.filled() {
        return Some(OrderEvent::PartlyFilled);
    }
    if (before.price, before.qty) != (after.price, after.qty) {
        return Some(OrderEvent::Amended);
    }
    None
}

#[cfg(test)]
#[path = "order_tests.rs"]
mod tests;
