//! Pre-trade risk checks: every order and every edit passes them before it reaches the outbox,
//! and a blocked one never leaves the process. Also the kill switch and its loss trigger.
//!
//! Owns: `Limits` (in integer units, converted from the config once), `Risk` (the rate window
//! and the kill switch), `Blocked` (which check refused, with its limit) and `Exposure` (what
//! our live orders add on each side).
//! Must not: allocate after `Risk::new`, read a clock (time is an argument), or look at anything
//! but the order, the book's reference price and our own order state.
//!
//! Checks, in order: order size, notional, price band, open orders, position (counting our live
//! orders on the side that would increase it), self-cross against our own resting orders, and
//! the order rate. Cheap checks first; the two that scan our live orders share one pass.

use ticktrade_core::{Decimal, InstrumentKind, InstrumentSpec, Mono, Price, Qty, Settlement, Side};

use crate::label::Label;
use crate::order::Orders;

/// Why an order or edit was not sent. `Copy`: it goes back to the strategy by value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Blocked {
    #[error("paused (resync or reconciliation in progress)")]
    Paused,
    #[error("kill switch is on: only cancels go out")]
    Killed,
    #[error("order size above the limit of {limit} lots")]
    OrderQty { limit: Qty },
    #[error("order notional above the limit of {limit}")]
    Notional { limit: Decimal },
    #[error("price outside {band_bps} bps of the reference {reference}")]
    PriceBand { reference: Price, band_bps: u32 },
    #[error("no reference price (mid or mark) for the price band")]
    NoReference,
    #[error("position would exceed {limit} lots")]
    Position { limit: Qty },
    #[error("open orders at the limit of {limit}")]
    OpenOrders { limit: u32 },
    #[error("order rate above {max_orders} per {window_ms} ms")]
    Rate { max_orders: u32, window_ms: u64 },
    #[error("would cross our own resting order at {resting}")]
    SelfCross { resting: Price },
    #[error("loss beyond the limit of {limit}: kill switch tripped")]
    MaxLoss { limit: Decimal },
    #[error("size must be positive")]
    NonPositiveQty,
    #[error("price is off the instrument's tick grid")]
    OffGrid,
    #[error("no such instrument")]
    UnknownInstrument,
    #[error("no live order with that label")]
    UnknownOrder,
    #[error("order not open yet, or being cancelled")]
    NotOpen,
    #[error("all order slots hold live orders")]
    SlotsFull,
    #[error("outbox full")]
    OutboxFull,
    #[error("label counter exhausted")]
    Labels,
}

/// Per-instrument limits in the instrument's units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InstrumentLimits {
    pub max_order_qty: Option<Qty>,
    /// In notional units (`Notional`), with the configured decimal for messages.
    pub max_order_notional: Option<(i128, Decimal)>,
    pub max_position: Option<Qty>,
    /// In the instrument's PnL units (`PnlRule`), with the configured decimal.
    pub max_loss: Option<(i128, Decimal)>,
    pub notional: Notional,
}

/// How an order's notional is counted, in integer units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Notional {
    /// Inverse futures: the amount is already the notional (lots of the amount step).
    #[default]
    Amount,
    /// Everything else: price × amount, in ticks × lots.
    PriceTimesAmount,
}

impl Notional {
    pub fn for_spec(spec: &InstrumentSpec) -> Notional {
        match (spec.kind, spec.settlement) {
            (InstrumentKind::Future | InstrumentKind::FutureCombo, Settlement::Inverse) => Notional::Amount,
            _ => Notional::PriceTimesAmount,
        }
    }

    #[inline]
    pub fn of(self, price: Price, qty: Qty) -> i128 {
        match self {
            Notional::Amount => i128::from(qty.raw()),
            Notional::PriceTimesAmount => i128::from(price.raw()) * i128::from(qty.raw()),
        }
    }

    /// `limit` (in the quote currency) in this rule's units, rounded down.
    pub fn units_of(self, spec: &InstrumentSpec, limit: Decimal) -> i128 {
        let unit = match self {
            Notional::Amount => (i128::from(spec.qty_unit.mantissa()), u32::from(spec.qty_unit.scale())),
            Notional::PriceTimesAmount => (
                i128::from(spec.tick().mantissa()) * i128::from(spec.qty_unit.mantissa()),
                u32::from(spec.tick().scale()) + u32::from(spec.qty_unit.scale()),
            ),
        };
        floor_div(limit, unit)
    }
}

/// `value / (unit.0 × 10^-unit.1)`, rounded down.
pub(crate) fn floor_div(value: Decimal, unit: (i128, u32)) -> i128 {
    let v = i128::from(value.mantissa());
    let vs = u32::from(value.scale());
    let (num, den) = if unit.1 >= vs {
        (v.saturating_mul(ticktrade_core::POW10_I128[(unit.1 - vs).min(38) as usize]), unit.0)
    } else {
        (v, unit.0.saturating_mul(ticktrade_core::POW10_I128[(vs - unit.1).min(38) as usize]))
    };
    num.div_euclid(den.max(1))
}

/// Which price the band is measured from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BandReference {
    Mid,
    Mark,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PriceBand {
    pub band_bps: u32,
    pub reference: BandReference,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    pub max_orders: u32,
    pub window_ns: u64,
}

/// All limits. `None` turns a check off.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Indexed by `InstrumentId`.
    pub instruments: Vec<InstrumentLimits>,
    pub max_open_orders: Option<u32>,
    pub rate: Option<RateLimit>,
    pub price_band: Option<PriceBand>,
    pub self_cross: bool,
}

/// An order (or an edit's new values) to check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub instrument: ticktrade_core::InstrumentId,
    pub side: Side,
    pub price: Price,
    pub qty: Qty,
    /// The order being edited: its current size does not count twice.
    pub replaces: Option<Label>,
    /// What the order being edited has filled (zero for a new order): the caller has just
    /// looked it up, so the checks do not again.
    pub filled: Qty,
}

/// What our live orders on one instrument add up to, and how many live orders there are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Exposure {
    pub open_buy: Qty,
    pub open_sell: Qty,
    pub best_own_bid: Option<Price>,
    pub best_own_ask: Option<Price>,
    /// Live orders on every instrument.
    pub n_live: u32,
}

impl Exposure {
    /// One pass over the live orders, leaving out the one `skip` names.
    pub fn of(orders: &Orders, instrument: ticktrade_core::InstrumentId, skip: Option<&Label>) -> Exposure {
        let mut e = Exposure::default();
        for order in orders.live() {
            if skip == Some(&order.label) {
                continue;
            }
            e.n_live += 1;
            if order.instrument != instrument {
                continue;
            }
            // An edit in flight may take effect: count the larger of the two sizes.
            let qty = order.pending_edit.map_or(order.qty, |(_, q)| q.max(order.qty));
            let remaining = qty.saturating_sub(order.filled()).max(Qty::ZERO);
            // Until the venue confirms an edit, the order may rest at either price.
            let (low, high) = order
                .pending_edit
                .map_or((order.price, order.price), |(p, _)| (p.min(order.price), p.max(order.price)));
            match order.side {
                Side::Buy => {
                    e.open_buy += remaining;
                    e.best_own_bid = e.best_own_bid.max(Some(high));
                }
                Side::Sell => {
                    e.open_sell += remaining;
                    e.best_own_ask = Some(e.best_own_ask.map_or(low, |p| p.min(low)));
                }
            }
        }
        e
    }
}

/// The checks' state: limits, the recent order times, the kill switch.
#[derive(Clone, Debug)]
pub struct Risk {
    limits: Limits,
    /// Send times of the last `max_orders` orders and edits, oldest at `rate_head`.
    sent: Vec<Mono>,
    rate_head: usize,
    killed: Option<Blocked>,
}

impl Risk {
    pub fn new(limits: Limits) -> Risk {
        let n = limits.rate.map_or(0, |r| r.max_orders as usize);
        Risk { limits, sent: Vec::with_capacity(n), rate_head: 0, killed: None }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Why the kill switch is on, if it is.
    pub fn killed(&self) -> Option<Blocked> {
        self.killed
    }

    /// Trips the kill switch (operator, session or loss limit). It stays on for the run.
    pub fn kill(&mut self, why: Blocked) {
        self.killed.get_or_insert(why);
    }

    /// Runs every check on `order`. `reference` is the band's reference price (mid or mark,
    /// as configured) when there is one.
    pub fn check(
        &self,
        order: &Candidate,
        orders: &Orders,
        reference: Option<Price>,
        now: Mono,
    ) -> Result<(), Blocked> {
        if self.killed.is_some() {
            return Err(Blocked::Killed);
        }
        if !order.qty.is_positive() {
            return Err(Blocked::NonPositiveQty);
        }
        let limits = self.limits.instruments.get(order.instrument.0 as usize).copied().unwrap_or_default();
        // An edit's size is the venue's total, filled part included; what can still trade is
        // the rest, and that is what the size, notional and position limits bound.
        let tradable = order.qty.saturating_sub(order.filled).max(Qty::ZERO);
        if let Some(limit) = limits.max_order_qty
            && tradable > limit
        {
            return Err(Blocked::OrderQty { limit });
        }
        if let Some((units, limit)) = limits.max_order_notional
            && limits.notional.of(order.price, tradable) > units
        {
            return Err(Blocked::Notional { limit });
        }
        if let Some(band) = self.limits.price_band {
            let reference = reference.ok_or(Blocked::NoReference)?;
            let distance = i128::from(order.price.raw()) - i128::from(reference.raw());
            if distance.abs() * 10_000 > i128::from(band.band_bps) * i128::from(reference.raw()).abs() {
                return Err(Blocked::PriceBand { reference, band_bps: band.band_bps });
            }
        }
        let needs_scan =
            self.limits.max_open_orders.is_some() || limits.max_position.is_some() || self.limits.self_cross;
        if needs_scan {
            let e = Exposure::of(orders, order.instrument, order.replaces.as_ref());
            if let Some(limit) = self.limits.max_open_orders
                && e.n_live >= limit
            {
                return Err(Blocked::OpenOrders { limit });
            }
            if let Some(limit) = limits.max_position {
                let position = orders.position(order.instrument).qty;
                // An edit's filled part is already in the position.
                let adding = i128::from(tradable.raw());
                let after = match order.side {
                    Side::Buy => i128::from(position) + i128::from(e.open_buy.raw()) + adding,
                    Side::Sell => -i128::from(position) + i128::from(e.open_sell.raw()) + adding,
                };
                if after > i128::from(limit.raw()) {
                    return Err(Blocked::Position { limit });
                }
            }
            if self.limits.self_cross {
                let resting = match order.side {
                    Side::Buy => e.best_own_ask.filter(|ask| order.price >= *ask),
                    Side::Sell => e.best_own_bid.filter(|bid| order.price <= *bid),
                };
                if let Some(resting) = resting {
                    return Err(Blocked::SelfCross { resting });
                }
            }
        }
        if let Some(rate) = self.limits.rate
            && self.sent.len() >= rate.max_orders as usize
        {
            // Full window: the oldest of the last `max_orders` must have left it.
            let oldest = self.sent.get(self.rate_head).copied().unwrap_or_default();
            if now.since(oldest) < rate.window_ns || rate.max_orders == 0 {
                return Err(Blocked::Rate { max_orders: rate.max_orders, window_ms: rate.window_ns / 1_000_000 });
            }
        }
        Ok(())
    }

    /// Counts an order or edit that passed and was queued at `now`.
    pub fn record_sent(&mut self, now: Mono) {
        let Some(rate) = self.limits.rate else { return };
        let n = rate.max_orders as usize;
        if n == 0 {
            return;
        }
        if self.sent.len() < n {
            self.sent.push(now);
        } else {
            self.sent[self.rate_head] = now;
            self.rate_head = (self.rate_head + 1) % n;
        }
    }

    /// Trips the kill switch if `instrument`'s PnL marked at `mark` is a loss beyond its limit.
    /// Returns the reason when this call tripped it.
    pub fn check_loss(
        &mut self,
        orders: &Orders,
        instrument: ticktrade_core::InstrumentId,
        mark: Price,
    ) -> Option<Blocked> {
        if self.killed.is_some() {
            return None;
        }
        let why = self.loss_breach(orders, instrument, mark)?;
        self.killed = Some(why);
        Some(why)
    }

    /// The loss limit `instrument`'s PnL marked at `mark` breaks, if any (the test of
    /// [`Self::check_loss`], without tripping anything).
    pub fn loss_breach(
        &self,
        orders: &Orders,
        instrument: ticktrade_core::InstrumentId,
        mark: Price,
    ) -> Option<Blocked> {
        let (units, limit) = self.limits.instruments.get(instrument.0 as usize)?.max_loss?;
        let rule = orders.rule(instrument)?;
        let pnl = rule.pnl(&orders.position(instrument), mark);
        (pnl < -units).then_some(Blocked::MaxLoss { limit })
    }
}

#[cfg(test)]
#[path = "risk_tests.rs"]
mod tests;
