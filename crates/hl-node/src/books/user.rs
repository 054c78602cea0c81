//! A user's resting orders, read off the books at request time (`openOrders`,
//! `frontendOpenOrders`, `orderStatus`).
//!
//! Owns: the look-ups by user and by oid. Must not: keep an index per user (it would cost
//! every block for requests that may never come): a request scans the books once.

use ticktrade_core::Side;

use super::{Books, OwnedL4Order, UserKey};

impl Books {
    /// `user`'s resting orders, coin by coin (in the coin table's order), bids best first
    /// then asks, FIFO within a price. A request-time scan of every book (no per-block index).
    pub fn user_orders(&self, user: &UserKey) -> Vec<OwnedL4Order> {
        let mut out = Vec::new();
        for (id, spec) in self.coins.iter() {
            let Some(book) = self.book(id).filter(|b| !b.stale) else { continue };
            for side in [Side::Buy, Side::Sell] {
                for level in book.book.levels(side) {
                    for order in book.book.orders_at(side, level.price) {
                        if order.payload.is_user(user) {
                            out.push(OwnedL4Order::new(&spec.name, spec.units, order));
                        }
                    }
                }
            }
        }
        out
    }

    /// The resting order `oid` (any coin), if it is `user`'s.
    pub fn user_order(&self, user: &UserKey, oid: u64) -> Option<OwnedL4Order> {
        self.coins.iter().find_map(|(id, spec)| {
            let order = self.book(id).filter(|b| !b.stale)?.book.get(oid)?;
            order.payload.is_user(user).then(|| OwnedL4Order::new(&spec.name, spec.units, order))
        })
    }

    /// The resting order of `user` with client order id `cloid` (lower case), if any.
    pub fn user_order_by_cloid(&self, user: &UserKey, cloid: &str) -> Option<OwnedL4Order> {
        self.coins.iter().find_map(|(id, spec)| {
            let book = self.book(id).filter(|b| !b.stale)?;
            let order = book.book.iter().find(|o| o.payload.is_user(user) && o.payload.has_cloid(cloid))?;
            Some(OwnedL4Order::new(&spec.name, spec.units, order))
        })
    }
}
