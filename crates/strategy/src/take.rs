//! `Take`, the built-in taker: when the resting size on one side of the top N levels outweighs
//! the other side by a set ratio, it crosses the spread with an immediate-or-cancel order at the
//! best opposite price, then waits out a cooldown.
//!
//! Owns: the imbalance rule and the time of its last order.
//! Must not: read a clock (the cooldown is measured on the `now` the session passes in), or
//! exceed its maximum position.

use ticktrade_book::L2Book;
use ticktrade_core::{InstrumentId, Mono, Qty, Side};

use crate::context::{Context, OrderRequest, Strategy, TimeInForce};
use crate::risk::Blocked;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TakeParams {
    pub instrument: InstrumentId,
    /// How many levels a side are summed.
    pub levels: usize,
    /// Fires when one side's sum ≥ `ratio_num / ratio_den` × the other's (exact integers).
    pub ratio_num: i128,
    pub ratio_den: i128,
    pub size: Qty,
    pub max_position: Qty,
    pub cooldown_ns: u64,
}

#[derive(Clone, Debug)]
pub struct Take {
    pub params: TakeParams,
    last_fired: Option<Mono>,
    pub last_blocked: Option<Blocked>,
}

impl Take {
    pub fn new(params: TakeParams) -> Take {
        Take { params, last_fired: None, last_blocked: None }
    }

    /// The side the book leans to, if the imbalance holds: more bids → buy (the price is
    /// expected to rise), more asks → sell.
    pub fn signal(&self, book: &L2Book) -> Option<Side> {
        let p = &self.params;
        let sum = |side| book.top(side, p.levels).map(|l| i128::from(l.qty.raw())).sum::<i128>();
        let (bids, asks) = (sum(Side::Buy), sum(Side::Sell));
        if bids == 0 || asks == 0 {
            return None;
        }
        if bids * p.ratio_den >= asks * p.ratio_num {
            Some(Side::Buy)
        } else if asks * p.ratio_den >= bids * p.ratio_num {
            Some(Side::Sell)
        } else {
            None
        }
    }
}

impl Strategy for Take {
    fn on_book(&mut self, ctx: &mut Context<'_>, instrument: InstrumentId, book: &L2Book) {
        let p = self.params;
        if instrument != p.instrument {
            return;
        }
        if self.last_fired.is_some_and(|t| ctx.now().since(t) < p.cooldown_ns) {
            return;
        }
        let Some(side) = self.signal(book) else { return };
        let Some(opposite) = book.best(side.opposite()) else { return };
        let position = ctx.position(p.instrument).raw();
        let room = match side {
            Side::Buy => p.max_position.raw() - position,
            Side::Sell => p.max_position.raw() + position,
        };
        let qty = p.size.raw().min(room);
        if qty <= 0 {
            return;
        }
        let order = OrderRequest {
            instrument: p.instrument,
            side,
            price: opposite.price,
            qty: Qty::from_raw(qty),
            post_only: false,
            reduce_only: false,
            time_in_force: TimeInForce::ImmediateOrCancel,
        };
        match ctx.place(order) {
            Ok(_) => self.last_fired = Some(ctx.now()),
            Err(why) => self.last_blocked = Some(why),
        }
    }
}
