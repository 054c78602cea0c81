//! A slow, obviously correct matcher: the reference for property tests and the baseline of
//! `ticktrade bench match`.
//!
//! Owns: one instrument's resting orders as a `Vec` in arrival order, matched by linear
//! scans (best price, then earliest arrival), positions per account as signed lots.
//! Implements the same rules as the engine for limit/market/IOC/FOK/post-only/cancel/edit
//! and self-trade `cancel_maker`, in integer ticks and lots, without validation, fees,
//! margin or events.
//! Must not: share code with the engine; its value is being independent and plain.

use std::collections::HashMap;

use ticktrade_core::Side;

/// A resting order in the naive book.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NaiveOrder {
    pub id: u64,
    pub account: u32,
    pub side: Side,
    pub price: i64,
    pub qty: i64,
}

/// One fill: (maker order, taker order, price, qty).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NaiveFill {
    pub maker: u64,
    pub taker: u64,
    pub price: i64,
    pub qty: i64,
}

/// How an incoming order may rest and trade.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NaiveKind {
    /// Good-til-cancelled limit.
    Limit,
    /// Immediate-or-cancel limit.
    Ioc,
    /// Fill-or-kill limit.
    Fok,
    /// Post-only: a crossing price moves one tick inside the spread.
    PostOnly,
    /// Post-only with reject: a crossing order is refused.
    PostOnlyReject,
    /// Market: no price limit, never rests.
    Market,
}

/// The naive matcher.
#[derive(Clone, Debug, Default)]
pub struct NaiveMatcher {
    /// Arrival order (an order that loses priority is moved to the end).
    pub orders: Vec<NaiveOrder>,
    pub positions: HashMap<u32, i64>,
}

/// The naive matcher refused a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NaiveError {
    PostOnlyReject,
    NotFound,
}

impl NaiveMatcher {
    pub fn new() -> NaiveMatcher {
        NaiveMatcher::default()
    }

    fn best_index(&self, side: Side) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (i, o) in self.orders.iter().enumerate() {
            if o.side != side {
                continue;
            }
            let better = match best {
                None => true,
                Some(b) => match side {
                    Side::Buy => o.price > self.orders[b].price,
                    Side::Sell => o.price < self.orders[b].price,
                },
            };
            if better {
                best = Some(i);
            }
        }
        best
    }

    pub fn best_price(&self, side: Side) -> Option<i64> {
        self.best_index(side).map(|i| self.orders[i].price)
    }

    fn crosses(side: Side, limit: Option<i64>, price: i64) -> bool {
        match (side, limit) {
            (_, None) => true,
            (Side::Buy, Some(l)) => price <= l,
            (Side::Sell, Some(l)) => price >= l,
        }
    }

    /// Places an order; fills are appended to `fills`.
    #[allow(clippy::too_many_arguments)]
    pub fn place(
        &mut self,
        id: u64,
        account: u32,
        side: Side,
        kind: NaiveKind,
        price: i64,
        qty: i64,
        fills: &mut Vec<NaiveFill>,
    ) -> Result<(), NaiveError> {
        let mut price = price;
        if matches!(kind, NaiveKind::PostOnly | NaiveKind::PostOnlyReject)
            && let Some(best) = self.best_price(side.opposite())
            && NaiveMatcher::crosses(side, Some(price), best)
        {
            if kind == NaiveKind::PostOnlyReject {
                return Err(NaiveError::PostOnlyReject);
            }
            price = best - side.sign();
        }
        let limit = if kind == NaiveKind::Market { None } else { Some(price) };
        if kind == NaiveKind::Fok {
            let available: i64 = self
                .orders
                .iter()
                .filter(|o| o.side != side && o.account != account && NaiveMatcher::crosses(side, limit, o.price))
                .map(|o| o.qty)
                .sum();
            if available < qty {
                return Ok(());
            }
        }
        let mut remaining = qty;
        while remaining > 0 {
            let Some(i) = self.best_index(side.opposite()) else { break };
            let maker = self.orders[i];
            if !NaiveMatcher::crosses(side, limit, maker.price) {
                break;
            }
            if maker.account == account {
                self.orders.remove(i);
                continue;
            }
            let take = remaining.min(maker.qty);
            remaining -= take;
            self.orders[i].qty -= take;
            if self.orders[i].qty == 0 {
                self.orders.remove(i);
            }
            *self.positions.entry(maker.account).or_default() -= side.sign() * take;
            *self.positions.entry(account).or_default() += side.sign() * take;
            fills.push(NaiveFill { maker: maker.id, taker: id, price: maker.price, qty: take });
        }
        if remaining > 0 && matches!(kind, NaiveKind::Limit | NaiveKind::PostOnly | NaiveKind::PostOnlyReject) {
            self.orders.push(NaiveOrder { id, account, side, price, qty: remaining });
        }
        Ok(())
    }

    pub fn cancel(&mut self, id: u64) -> Result<NaiveOrder, NaiveError> {
        let i = self.orders.iter().position(|o| o.id == id).ok_or(NaiveError::NotFound)?;
        Ok(self.orders.remove(i))
    }

    /// Changes a resting order's price and remaining size: it keeps its place only when the
    /// price is unchanged and the size does not grow; otherwise it is matched again and
    /// rests at the back.
    pub fn edit(&mut self, id: u64, price: i64, qty: i64, fills: &mut Vec<NaiveFill>) -> Result<(), NaiveError> {
        let i = self.orders.iter().position(|o| o.id == id).ok_or(NaiveError::NotFound)?;
        let o = self.orders[i];
        if price == o.price && qty <= o.qty {
            self.orders[i].qty = qty;
            return Ok(());
        }
        self.orders.remove(i);
        self.place(id, o.account, o.side, NaiveKind::Limit, price, qty, fills)
    }

    /// (price, total qty, number of orders) per level of `side`, best first.
    pub fn levels(&self, side: Side) -> Vec<(i64, i64, u32)> {
        let mut prices: Vec<i64> = self.orders.iter().filter(|o| o.side == side).map(|o| o.price).collect();
        prices.sort_unstable();
        prices.dedup();
        if side == Side::Buy {
            prices.reverse();
        }
        prices
            .into_iter()
            .map(|p| {
                let at = self.orders.iter().filter(|o| o.side == side && o.price == p);
                let (qty, n) = at.fold((0, 0), |(q, n), o| (q + o.qty, n + 1));
                (p, qty, n)
            })
            .collect()
    }

    /// The ids queued at `price` on `side`, oldest first.
    pub fn queue(&self, side: Side, price: i64) -> Vec<(u64, i64)> {
        self.orders.iter().filter(|o| o.side == side && o.price == price).map(|o| (o.id, o.qty)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn naive_matches_best_price_first_and_keeps_time_order() {
        let mut m = NaiveMatcher::new();
        let mut fills = Vec::new();
        m.place(1, 1, Side::Sell, NaiveKind::Limit, 101, 5, &mut fills).unwrap();
        m.place(2, 2, Side::Sell, NaiveKind::Limit, 100, 5, &mut fills).unwrap();
        m.place(3, 2, Side::Sell, NaiveKind::Limit, 101, 5, &mut fills).unwrap();
        m.place(4, 3, Side::Buy, NaiveKind::Ioc, 101, 12, &mut fills).unwrap();
        assert_eq!(
            fills,
            vec![
                NaiveFill { maker: 2, taker: 4, price: 100, qty: 5 },
                NaiveFill { maker: 1, taker: 4, price: 101, qty: 5 },
                NaiveFill { maker: 3, taker: 4, price: 101, qty: 2 },
            ]
        );
        assert_eq!(m.levels(Side::Sell), vec![(101, 3, 1)]);
        assert_eq!(m.positions[&3], 12);
        assert_eq!(
            m.place(5, 3, Side::Buy, NaiveKind::PostOnlyReject, 101, 1, &mut fills),
            Err(NaiveError::PostOnlyReject)
        );
    }
}
