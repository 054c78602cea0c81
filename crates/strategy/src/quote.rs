//! `Quote`, the built-in market maker: one bid and one ask a set distance from the mid, shifted
//! against the inventory, amended in place when the wanted price moves beyond a threshold.
//!
//! Owns: the quoting rule and the labels of its two live quotes. Orders adopted at
//! reconciliation (an earlier run's, found on the venue) are not among them and are cancelled.
//! Must not: exceed its own maximum position (a quote's size is cut to the room left, counting
//! the position), stack requests on an order whose last request is still in flight, or
//! cancel-and-replace what an edit can do (an edit keeps the label and saves a round trip).

use ticktrade_book::L2Book;
use ticktrade_core::{InstrumentId, Price, Qty, Side};

use crate::context::{Context, OrderRequest, Strategy, TimeInForce};
use crate::label::Label;
use crate::order::{FillReport, Order, OrderEvent, Status};
use crate::risk::Blocked;

/// How far from the mid each quote sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distance {
    Ticks(i64),
    /// Basis points of the mid, at least one tick.
    Bps(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuoteParams {
    pub instrument: InstrumentId,
    pub distance: Distance,
    /// Size of each quote, in lots.
    pub size: Qty,
    /// Largest absolute position, in lots.
    pub max_position: Qty,
    /// How many ticks both quotes move against the inventory at full position (linear in
    /// between): long → lower quotes, so the ask fills first.
    pub skew_ticks: i64,
    /// Amend only when the wanted price is more than this many ticks from the live one.
    pub requote_ticks: i64,
}

/// The price and size wanted on each side; `None` where it should not quote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wanted {
    pub bid: Option<(Price, Qty)>,
    pub ask: Option<(Price, Qty)>,
}

/// The market maker. Its state is just the two labels and the last refusal.
#[derive(Clone, Debug)]
pub struct Quote {
    pub params: QuoteParams,
    bid: Option<Label>,
    ask: Option<Label>,
    /// The last check that refused one of its requests (for the session's status line).
    pub last_blocked: Option<Blocked>,
}

impl Quote {
    pub fn new(params: QuoteParams) -> Quote {
        Quote { params, bid: None, ask: None, last_blocked: None }
    }

    pub fn bid(&self) -> Option<Label> {
        self.bid
    }

    pub fn ask(&self) -> Option<Label> {
        self.ask
    }

    /// The prices and sizes it wants for the current book and position; `None` on a side it
    /// should not quote.
    pub fn wanted(&self, ctx: &Context<'_>) -> Wanted {
        let p = &self.params;
        let (Some(mid), Some(bid), Some(ask), Some(spec)) =
            (ctx.mid(p.instrument), ctx.best_bid(p.instrument), ctx.best_ask(p.instrument), ctx.spec(p.instrument))
        else {
            return Wanted { bid: None, ask: None };
        };
        let distance = match p.distance {
            Distance::Ticks(n) => n,
            Distance::Bps(bps) => (i128::from(mid.raw()) * i128::from(bps) / 10_000).max(1) as i64,
        };
        let position = ctx.position(p.instrument).raw();
        let max = p.max_position.raw().max(1);
        let skew = (i128::from(p.skew_ticks) * i128::from(position) / i128::from(max)) as i64;
        // Stay passive: never at or through the other side's best.
        let bid_px = (mid.raw() - distance - skew).min(ask.price.raw() - 1);
        let ask_px = (mid.raw() + distance - skew).max(bid.price.raw() + 1);
        let rule = &spec.tick_rule;
        let bid_px = floor_to_grid(rule, bid_px);
        let ask_px = ceil_to_grid(rule, ask_px.max(bid_px + 1));
        let buy_room = p.max_position.raw() - position;
        let sell_room = p.max_position.raw() + position;
        let side = |px: i64, room: i64| {
            let qty = p.size.raw().min(room);
            (qty > 0 && px > 0).then_some((Price::from_raw(px), Qty::from_raw(qty)))
        };
        Wanted { bid: side(bid_px, buy_room), ask: side(ask_px, sell_room) }
    }

    fn requote(&mut self, ctx: &mut Context<'_>) {
        let mut wanted = self.wanted(ctx);
        // Never ask the venue to cross our own other quote (the risk check would refuse it):
        // while that quote rests at, or is being moved from, a price in the way, this side
        // waits one tick short of it and catches up on a later update.
        let reach = |label: Option<Label>, ctx: &Context<'_>| {
            let order = label.and_then(|l| ctx.order(&l).copied()).filter(|o| o.status.is_live())?;
            let pending = order.pending_edit.map_or(order.price, |(p, _)| p);
            Some((order.price.min(pending), order.price.max(pending)))
        };
        if let (Some((price, qty)), Some((own_ask, _))) = (wanted.bid, reach(self.ask, ctx)) {
            wanted.bid = (price < own_ask).then_some((price, qty)).or_else(|| {
                let px = floor_to_grid(&ctx.spec(self.params.instrument)?.tick_rule, own_ask.raw() - 1);
                (px > 0).then_some((Price::from_raw(px), qty))
            });
        }
        if let (Some((price, qty)), Some((_, own_bid))) = (wanted.ask, reach(self.bid, ctx)) {
            wanted.ask = (price > own_bid).then_some((price, qty)).or_else(|| {
                let px = ceil_to_grid(&ctx.spec(self.params.instrument)?.tick_rule, own_bid.raw() + 1);
                Some((Price::from_raw(px), qty))
            });
        }
        self.bid = self.manage(ctx, Side::Buy, self.bid, wanted.bid);
        self.ask = self.manage(ctx, Side::Sell, self.ask, wanted.ask);
    }

    /// Brings one side to `want`; returns the label that side now has.
    fn manage(
        &mut self,
        ctx: &mut Context<'_>,
        side: Side,
        live: Option<Label>,
        want: Option<(Price, Qty)>,
    ) -> Option<Label> {
        let live = live.and_then(|label| ctx.order(&label).filter(|o| o.status.is_live()).copied());
        match (live, want) {
            (None, None) => None,
            (Some(order), None) => {
                if let Err(why) = ctx.cancel(order.label) {
                    self.last_blocked = Some(why);
                }
                Some(order.label)
            }
            (None, Some((price, qty))) => {
                let request = OrderRequest {
                    instrument: self.params.instrument,
                    side,
                    price,
                    qty,
                    post_only: true,
                    reduce_only: false,
                    time_in_force: TimeInForce::GoodTilCancelled,
                };
                match ctx.place(request) {
                    Ok(label) => Some(label),
                    Err(why) => {
                        self.last_blocked = Some(why);
                        None
                    }
                }
            }
            (Some(order), Some((price, qty))) => {
                let settled = matches!(order.status, Status::Open | Status::PartlyFilled)
                    && order.pending_edit.is_none()
                    && !order.pending_cancel;
                // The venue's size is the total, filled part included.
                let total = order.filled().saturating_add(qty);
                let moved = (price.raw() - order.price.raw()).abs() > self.params.requote_ticks;
                if settled
                    && (moved || order.remaining() > qty)
                    && let Err(why) = ctx.edit(order.label, price, total)
                {
                    self.last_blocked = Some(why);
                }
                Some(order.label)
            }
        }
    }
}

/// The highest valid price at or below `px` (a stepped tick rule allows only some counts).
fn floor_to_grid(rule: &ticktrade_core::TickRule, mut px: i64) -> i64 {
    while px > 0 && !rule.is_valid(Price::from_raw(px)) {
        px -= 1;
    }
    px
}

/// The lowest valid price at or above `px`.
fn ceil_to_grid(rule: &ticktrade_core::TickRule, mut px: i64) -> i64 {
    while !rule.is_valid(Price::from_raw(px)) {
        px += 1;
    }
    px
}

impl Strategy for Quote {
    fn on_book(&mut self, ctx: &mut Context<'_>, instrument: InstrumentId, _book: &L2Book) {
        if instrument == self.params.instrument {
            self.requote(ctx);
        }
    }

    fn on_order(&mut self, ctx: &mut Context<'_>, order: &Order, event: OrderEvent) {
        if order.status.is_terminal() {
            if self.bid == Some(order.label) {
                self.bid = None;
            }
            if self.ask == Some(order.label) {
                self.ask = None;
            }
        }
        if let OrderEvent::Adopted = event {
            // An order of an earlier run: not one of our two quotes, so take it off the book.
            if self.bid != Some(order.label) && self.ask != Some(order.label) {
                let _ = ctx.cancel(order.label);
            }
        }
    }

    fn on_fill(&mut self, ctx: &mut Context<'_>, fill: &FillReport) {
        // The position moved: skew and room change now, not at the next book update.
        if fill.instrument == self.params.instrument {
            self.requote(ctx);
        }
    }
}
