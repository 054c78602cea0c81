//! Read-only queries over orders, trades and positions (`get_open_orders*`, `get_order_state`,
//! order history, user trades, position list).
//!
//! Owns: filtering and ordering of what the venue already holds.
//! Must not: mutate the venue.

use ticktrade_deribit_proto::api;

use super::orders::Filter;
use super::{AccountId, OrderRec, OrderState, Reject, Venue};

impl Venue {
    /// Open orders of `account` selected by `filter`, oldest first.
    pub fn open_orders(&self, account: AccountId, filter: &Filter) -> Vec<api::Order> {
        self.account_orders(account)
            .filter(|o| o.state == OrderState::Open && self.matches(o, filter))
            .map(|o| self.render_order(o))
            .collect()
    }

    /// Closed (filled/cancelled) orders of `account` on `instr`, newest first.
    pub fn order_history(&self, account: AccountId, filter: &Filter, count: usize) -> Vec<api::Order> {
        let mut orders: Vec<api::Order> = self
            .account_orders(account)
            .filter(|o| o.state != OrderState::Open && self.matches(o, filter))
            .map(|o| self.render_order(o))
            .collect();
        orders.reverse();
        orders.truncate(count);
        orders
    }

    fn account_orders(&self, account: AccountId) -> impl Iterator<Item = &OrderRec> {
        self.accounts.get(&account).map(|a| a.orders.iter()).into_iter().flatten().filter_map(|id| self.orders.get(id))
    }

    /// `private/get_order_state`.
    pub fn order_state(&self, account: AccountId, id: &str) -> Result<api::Order, Reject> {
        match self.orders.get(id) {
            Some(order) if order.account == account => Ok(self.render_order(order)),
            _ => Err(Reject::not_found()),
        }
    }

    /// The ids of `account`'s open orders with `label` on `instr`.
    pub fn ids_by_label(&self, account: AccountId, instr: Option<usize>, label: &str) -> Vec<String> {
        self.account_orders(account)
            .filter(|o| o.state == OrderState::Open && o.label == label && instr.is_none_or(|i| i == o.instr))
            .map(|o| o.id.clone())
            .collect()
    }

    /// User trades of `account`, newest first, filtered.
    pub fn user_trades(
        &self,
        account: AccountId,
        keep: impl Fn(&api::UserTrade) -> bool,
        count: usize,
    ) -> (Vec<api::UserTrade>, bool) {
        let Some(acc) = self.accounts.get(&account) else { return (Vec::new(), false) };
        let mut trades: Vec<api::UserTrade> =
            acc.trades.iter().rev().filter(|t| keep(t)).take(count + 1).cloned().collect();
        let has_more = trades.len() > count;
        trades.truncate(count);
        (trades, has_more)
    }

    /// Every instrument `account` has (or had) a position in.
    pub fn position_instruments(&self, account: AccountId) -> Vec<usize> {
        let mut instrs: Vec<usize> =
            self.accounts.get(&account).map(|a| a.positions.keys().copied().collect()).unwrap_or_default();
        instrs.sort_unstable();
        instrs
    }
}
