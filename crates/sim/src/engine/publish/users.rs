//! Per-account channels (`user.orders`, `user.trades`, `user.changes`, `user.portfolio`) and
//! ticker change detection (`quote`, `incremental_ticker`).
//!
//! Owns: one event batch's orders, trades and positions per account and instrument, the last
//! best bid/ask sent per instrument.
//! Must not: send an account's data to another account's session.

use super::channel::selector_matches;
use super::*;
use ticktrade_exchange::{Frozen, IndexId, Tag};

/// Best bid and best ask.
pub(super) type Top = (Option<(Price, Qty)>, Option<(Price, Qty)>);

/// What one batch of exchange events did for one account on one instrument.
pub(super) struct UserBatch {
    pub account: AccountId,
    pub instr: InstrumentId,
    pub orders: Vec<api::Order>,
    pub trades: Vec<api::UserTrade>,
    pub position: bool,
}

impl Subscriptions {
    pub(super) fn has_session_for(&self, account: AccountId) -> bool {
        self.sessions.values().any(|e| e.account == Some(account) && !e.channels.is_empty())
    }

    pub(super) fn publish_quote(&mut self, market: &Market, instr: InstrumentId, name: &str, now_ms: i64) {
        let top = (market.best(instr, Side::Buy), market.best(instr, Side::Sell));
        if self.quote_last.get(&instr) == Some(&top) {
            return;
        }
        self.quote_last.insert(instr, top);
        let spec = market.spec(instr);
        let quote = api::Quote {
            instrument_name: spec.name.clone(),
            timestamp: now_ms,
            best_bid_price: top.0.map(|(p, _)| Num(spec.price_to_decimal(p))),
            best_bid_amount: top.0.map_or(Num::ZERO, |(_, q)| Num(spec.qty_to_decimal(q))),
            best_ask_price: top.1.map(|(p, _)| Num(spec.price_to_decimal(p))),
            best_ask_amount: top.1.map_or(Num::ZERO, |(_, q)| Num(spec.qty_to_decimal(q))),
        };
        self.send_all(name, &Arc::from(rpc::notification(name, &to_text(&quote), None)));
    }

    pub(super) fn publish_user(&self, market: &Market, batch: &UserBatch) {
        let instr = batch.instr;
        for (session, entry) in &self.sessions {
            if entry.account != Some(batch.account) {
                continue;
            }
            for (name, (channel, label)) in &entry.channels {
                let label = label.as_deref();
                let send = |data: String| {
                    self.send_text(*session, Arc::from(rpc::notification(name, &data, label)));
                };
                match channel {
                    Sub::UserOrders { selector, interval } if selector_matches(market, selector, instr) => {
                        if *interval == Interval::Raw {
                            batch.orders.iter().for_each(|o| send(to_text(o)));
                        } else if !batch.orders.is_empty() {
                            send(to_text(&batch.orders));
                        }
                    }
                    Sub::UserTrades { selector, .. }
                        if selector_matches(market, selector, instr) && !batch.trades.is_empty() =>
                    {
                        send(to_text(&batch.trades));
                    }
                    Sub::UserChanges { selector, .. } if selector_matches(market, selector, instr) => {
                        let changes = api::UserChanges {
                            instrument_name: market.name(instr).to_owned(),
                            orders: batch.orders.clone(),
                            trades: batch.trades.clone(),
                            positions: if batch.position {
                                vec![market.render_position(batch.account, instr)]
                            } else {
                                Vec::new()
                            },
                        };
                        send(to_text(&changes));
                    }
                    _ => {}
                }
            }
        }
    }

    pub(super) fn publish_portfolio(&self, market: &Market, account: AccountId, currency: &str) {
        for (session, entry) in &self.sessions {
            if entry.account != Some(account) {
                continue;
            }
            for (name, (channel, label)) in &entry.channels {
                let Sub::UserPortfolio { currency: wanted } = channel else { continue };
                if wanted == "ANY" || wanted == currency {
                    let data = to_text(&market.account_summary(account, currency, false));
                    self.send_text(*session, Arc::from(rpc::notification(name, &data, label.as_deref())));
                }
            }
        }
    }
}

impl Subscriptions {
    /// `user.mmp_trigger.*`: the account's sessions subscribed to the group's index or `any`.
    pub(super) fn publish_mmp_trigger(
        &self,
        market: &Market,
        account: AccountId,
        index: IndexId,
        group: Tag,
        frozen: Frozen,
    ) {
        let index_name = market.ex.catalogue().index_name(index);
        let data = api::MmpStatus {
            index_name: index_name.to_owned(),
            mmp_group: (!group.is_empty()).then(|| group.as_str().to_owned()),
            frozen_until: match frozen {
                Frozen::UntilReset => 0,
                Frozen::Until(t) => t.as_millis(),
            },
        };
        for (session, entry) in &self.sessions {
            if entry.account != Some(account) {
                continue;
            }
            for (name, (channel, label)) in &entry.channels {
                let Sub::UserMmpTrigger { index: wanted } = channel else { continue };
                if wanted == "any" || wanted == index_name {
                    self.send_text(*session, Arc::from(rpc::notification(name, &to_text(&data), label.as_deref())));
                }
            }
        }
    }
}

pub(super) fn user_batch(users: &mut Vec<UserBatch>, account: AccountId, instr: InstrumentId) -> &mut UserBatch {
    let at = match users.iter().position(|u| u.account == account && u.instr == instr) {
        Some(at) => at,
        None => {
            users.push(UserBatch { account, instr, orders: Vec::new(), trades: Vec::new(), position: false });
            users.len() - 1
        }
    };
    &mut users[at]
}

pub(super) fn incremental(ticker: &api::Ticker, kind: &str) -> String {
    let mut value = serde_json::to_value(ticker).unwrap_or_default();
    if let Some(object) = value.as_object_mut() {
        object.insert("type".to_owned(), serde_json::Value::String(kind.to_owned()));
    }
    value.to_string()
}
