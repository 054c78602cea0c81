//! Price inputs and read-only queries.
//!
//! Owns: index/mark price inputs (which re-evaluate triggers), order/position/account/trade
//! queries, book snapshots (the L2 view of the L4 book), tickers, recent trades, candles, and
//! the text form of order and trade ids (`ETH-584849853`, `ETH-SLIS-12`).
//! Must not: change orders or positions (except through triggers fired by a price input).

use std::ops::Div;

use ticktrade_book::l4::{L4Book, L4Level};
use ticktrade_core::{Decimal, InstrumentId, InstrumentKind, Price, Qty, Side, Utc};

use crate::account::{AccountSummary, Marks, Position};
use crate::catalogue::{CurrencyId, IndexId};
use crate::engine::{Candle, Exchange, filter_matches};
use crate::event::{Event, PublicTrade, UserTrade};
use crate::money::Money;
use crate::order::{AccountId, Label, Order, OrderFilter, OrderType, TriggerKind};

/// `public/ticker` data for one instrument.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ticker {
    pub instrument: InstrumentId,
    pub best_bid: Option<L4Level>,
    pub best_ask: Option<L4Level>,
    pub last: Option<Price>,
    pub mark_price: Money,
    pub index_price: Money,
    /// Traded quantity since start, in lots.
    pub volume: Qty,
    /// Sum of long positions, in lots.
    pub open_interest: i64,
    pub change_id: u64,
    pub timestamp: Utc,
}

/// A position with the market figures `private/get_position` shows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PositionView {
    pub position: Position,
    pub kind: InstrumentKind,
    pub mark_price: Money,
    pub index_price: Money,
    pub floating_pnl: Money,
    /// Realised plus floating PnL.
    pub total_pnl: Money,
    pub initial_margin: Money,
    pub maintenance_margin: Money,
    pub delta: Money,
    /// Size in the amount unit (USD for inverse futures, coin otherwise), signed.
    pub size_amount: Money,
    /// Futures only: size in the base coin at the mark, signed.
    pub size_currency: Money,
}

/// Which user trades to return.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TradeFilter {
    pub instrument: Option<InstrumentId>,
    pub currency: Option<CurrencyId>,
    pub order_id: Option<u64>,
}

impl Exchange {
    /// Sets an index (`btc_usd`…) and re-evaluates index-triggered orders and tickers.
    pub fn set_index(&mut self, now: Utc, index: IndexId, value: Decimal, out: &mut Vec<Event>) {
        let Some(slot) = self.index_prices.get_mut(usize::from(index.0)) else { return };
        *slot = Money::from_decimal(value);
        for i in 0..self.markets.len() {
            let instrument = InstrumentId(i as u32);
            if self.catalogue.get(instrument).is_some_and(|inst| inst.index == index) {
                if !self.markets[i].triggers.is_empty() {
                    self.fire_triggers(now, instrument, out);
                }
                self.note_ticker(instrument);
            }
        }
        self.flush(now, out);
    }

    /// Sets an instrument's mark price and re-evaluates its triggers.
    pub fn set_mark(&mut self, now: Utc, instrument: InstrumentId, value: Decimal, out: &mut Vec<Event>) {
        let Some(market) = self.markets.get_mut(instrument.0 as usize) else { return };
        market.mark = Money::from_decimal(value);
        self.fire_triggers(now, instrument, out);
        self.note_ticker(instrument);
        self.flush(now, out);
    }

    pub(crate) fn has_triggers(&self, instrument: InstrumentId) -> bool {
        self.markets.get(instrument.0 as usize).is_some_and(|m| !m.triggers.is_empty())
    }

    /// Sets the mark from an `f64` (the synthetic market's models).
    pub(crate) fn set_mark_f64(&mut self, instrument: InstrumentId, value: f64) {
        if let Some(market) = self.markets.get_mut(instrument.0 as usize) {
            market.mark = Money::from_f64_model(value);
        }
    }

    pub(crate) fn set_index_f64(&mut self, index: IndexId, value: f64) {
        if let Some(slot) = self.index_prices.get_mut(usize::from(index.0)) {
            *slot = Money::from_f64_model(value);
        }
    }

    pub fn index_price(&self, index: IndexId) -> Money {
        self.index_prices.get(usize::from(index.0)).copied().unwrap_or(Money::ZERO)
    }

    /// The index an instrument follows.
    pub fn index_price_of(&self, instrument: InstrumentId) -> Money {
        self.catalogue.get(instrument).map_or(Money::ZERO, |inst| self.index_price(inst.index))
    }

    /// Mark price: as set, else the index for futures and spot, else the last trade.
    pub fn mark_price(&self, instrument: InstrumentId) -> Money {
        let Some(market) = self.markets.get(instrument.0 as usize) else { return Money::ZERO };
        if market.mark.is_positive() {
            return market.mark;
        }
        let Some(inst) = self.catalogue.get(instrument) else { return Money::ZERO };
        let index = self.index_price(inst.index);
        if index.is_positive() && inst.spec.kind != InstrumentKind::Option {
            return index;
        }
        market.last.map_or(Money::ZERO, |p| inst.price_money(p))
    }

    /// A live or recently closed order.
    pub fn order(&self, id: u64) -> Option<&Order> {
        self.orders.get(&id).or_else(|| self.closed.get(id))
    }

    /// `get_order_state_by_label` / `get_open_orders_by_label`: live orders with a label.
    pub fn orders_by_label(&self, account: AccountId, label: Label) -> impl Iterator<Item = &Order> + '_ {
        self.orders.values().filter(move |o| o.account == account && o.label == label)
    }

    /// `get_open_orders*`: live (open and untriggered) orders of `account`, oldest first.
    pub fn open_orders(&self, account: AccountId, filter: OrderFilter) -> Vec<Order> {
        let mut v: Vec<Order> = self
            .orders
            .values()
            .filter(|o| o.account == account)
            .filter(|o| self.catalogue.get(o.instrument).is_some_and(|inst| filter_matches(&filter, o, inst)))
            .copied()
            .collect();
        v.sort_unstable_by_key(|o| o.id);
        v
    }

    /// `get_order_history_by_*`: closed orders of `account` kept in history, newest first.
    pub fn order_history(&self, account: AccountId, filter: OrderFilter) -> Vec<Order> {
        self.closed
            .iter()
            .filter(|o| o.account == account)
            .filter(|o| self.catalogue.get(o.instrument).is_some_and(|inst| filter_matches(&filter, o, inst)))
            .copied()
            .collect()
    }

    /// `get_position`: the position (a zero-size one when there is none).
    pub fn position(&self, account: AccountId, instrument: InstrumentId) -> Position {
        self.accounts
            .get(&account)
            .and_then(|a| a.positions.get(&instrument.0))
            .copied()
            .unwrap_or(Position { instrument, ..Position::default() })
    }

    /// `get_position` with market figures (a zero-size view when there is no position).
    pub fn position_view(&self, account: AccountId, instrument: InstrumentId) -> Option<PositionView> {
        let inst = self.catalogue.get(instrument)?;
        let position = self.position(account, instrument);
        let mark = self.mark_price(instrument);
        let index = self.index_price(inst.index);
        let floating = position.floating_pnl(inst, mark);
        let (im, mm) = position.margins(inst, mark);
        let size_amount = inst.qty_unit_money.mul_int(position.size);
        let size_currency =
            if inst.is_inverse_future() && mark.is_positive() { size_amount.div(mark) } else { size_amount };
        Some(PositionView {
            position,
            kind: inst.spec.kind,
            mark_price: mark,
            index_price: index,
            floating_pnl: floating,
            total_pnl: position.realized_pnl + floating,
            initial_margin: im,
            maintenance_margin: mm,
            delta: position.delta(inst, index),
            size_amount,
            size_currency,
        })
    }

    /// `get_positions`: positions of `account` settled in `currency`, optionally of one kind.
    pub fn positions(
        &self,
        account: AccountId,
        currency: Option<CurrencyId>,
        kind: Option<InstrumentKind>,
    ) -> Vec<Position> {
        let Some(acc) = self.accounts.get(&account) else { return Vec::new() };
        let mut v: Vec<Position> = acc
            .positions
            .values()
            .filter(|p| p.size != 0)
            .filter(|p| {
                self.catalogue.get(p.instrument).is_some_and(|inst| {
                    currency.is_none_or(|c| c == inst.settlement_currency) && kind.is_none_or(|k| k == inst.spec.kind)
                })
            })
            .copied()
            .collect();
        v.sort_unstable_by_key(|p| p.instrument);
        v
    }

    /// `get_account_summary` in one currency.
    pub fn account_summary(&self, account: AccountId, currency: CurrencyId) -> AccountSummary {
        let Some(acc) = self.accounts.get(&account) else {
            let balance = self.initial_balances.get(usize::from(currency.0)).copied().unwrap_or(Money::ZERO);
            return AccountSummary {
                currency,
                balance,
                equity: balance,
                margin_balance: balance,
                available_funds: balance,
                ..AccountSummary::default()
            };
        };
        acc.summary(currency, |id| {
            let instrument = InstrumentId(id);
            let inst = self.catalogue.get(instrument)?;
            Some((inst, Marks { mark: self.mark_price(instrument), index: self.index_price(inst.index) }))
        })
    }

    /// `get_user_trades_by_*`: the account's recent trades (kept in history), oldest first.
    pub fn user_trades(&self, account: AccountId, filter: TradeFilter) -> impl Iterator<Item = &UserTrade> + '_ {
        self.user_trades.iter().filter(move |t| {
            t.account == account
                && filter.instrument.is_none_or(|i| i == t.instrument)
                && filter.order_id.is_none_or(|o| o == t.order_id)
                && filter.currency.is_none_or(|c| c == t.fee_currency)
        })
    }

    /// The order-level book of an instrument (its `levels(side)` is the L2 snapshot).
    pub fn book(&self, instrument: InstrumentId) -> Option<&L4Book<AccountId>> {
        self.markets.get(instrument.0 as usize).map(|m| &m.book)
    }

    /// The last `change_id` published for the instrument's book.
    pub fn change_id(&self, instrument: InstrumentId) -> u64 {
        self.markets.get(instrument.0 as usize).map_or(0, |m| m.change_id)
    }

    /// Up to `depth` L2 levels of one side, best first.
    pub fn book_levels(
        &self,
        instrument: InstrumentId,
        side: Side,
        depth: usize,
    ) -> impl Iterator<Item = L4Level> + '_ {
        self.markets.get(instrument.0 as usize).into_iter().flat_map(move |m| m.book.levels(side).take(depth))
    }

    pub fn ticker(&self, instrument: InstrumentId) -> Option<Ticker> {
        let m = self.markets.get(instrument.0 as usize)?;
        Some(Ticker {
            instrument,
            best_bid: m.book.best(Side::Buy),
            best_ask: m.book.best(Side::Sell),
            last: m.last,
            mark_price: self.mark_price(instrument),
            index_price: self.index_price_of(instrument),
            volume: m.volume,
            open_interest: m.open_interest,
            change_id: m.change_id,
            timestamp: m.last_update,
        })
    }

    /// Recent public trades, oldest first.
    pub fn recent_trades(&self, instrument: InstrumentId) -> impl Iterator<Item = &PublicTrade> + '_ {
        self.markets.get(instrument.0 as usize).into_iter().flat_map(|m| m.recent.iter())
    }

    /// `get_tradingview_chart_data`: candles of `resolution_minutes` between `start` and
    /// `end`, built from the one-minute candles kept.
    pub fn candles(&self, instrument: InstrumentId, start: Utc, end: Utc, resolution_minutes: u32) -> Vec<Candle> {
        let Some(m) = self.markets.get(instrument.0 as usize) else { return Vec::new() };
        let span = i64::from(resolution_minutes.max(1)) * 60_000_000_000;
        let mut out: Vec<Candle> = Vec::new();
        for c in m.candles.iter().filter(|c| c.start >= start && c.start <= end) {
            let bucket = Utc(c.start.0.div_euclid(span) * span);
            match out.last_mut() {
                Some(last) if last.start == bucket => {
                    last.high = last.high.max(c.high);
                    last.low = last.low.min(c.low);
                    last.close = c.close;
                    last.volume += c.volume;
                }
                _ => out.push(Candle { start: bucket, ..*c }),
            }
        }
        out
    }

    /// Appends Deribit's text form of an order id: `ETH-584849853`, or for trigger orders
    /// `ETH-SLIS-12` (`SL` stop, `TP` take, `TS` trailing; then `I`/`M`/`L` for the
    /// index/mark/last trigger; then `S`).
    pub fn write_order_id(&self, order: &Order, out: &mut String) {
        let prefix = self.catalogue.get(order.instrument).map_or("X", |i| i.order_id_prefix.as_str());
        out.push_str(prefix);
        out.push('-');
        if let Some(trigger) = order.trigger {
            out.push_str(match order.order_type {
                OrderType::TakeLimit | OrderType::TakeMarket => "TP",
                OrderType::TrailingStop => "TS",
                _ => "SL",
            });
            out.push(match trigger.kind {
                TriggerKind::IndexPrice => 'I',
                TriggerKind::MarkPrice => 'M',
                TriggerKind::LastPrice => 'L',
            });
            out.push_str("S-");
        }
        out.push_str(itoa::Buffer::new().format(order.id));
    }

    /// Appends Deribit's text form of a trade id: `ETH-2696083` (settlement-currency prefix).
    pub fn write_trade_id(&self, instrument: InstrumentId, trade_id: u64, out: &mut String) {
        if let Some(inst) = self.catalogue.get(instrument) {
            out.push_str(self.catalogue.currency_name(inst.settlement_currency));
            out.push('-');
        }
        out.push_str(itoa::Buffer::new().format(trade_id));
    }

    /// The text form of an order id, for display and tests.
    pub fn order_id_text(&self, order: &Order) -> String {
        let mut s = String::with_capacity(24);
        self.write_order_id(order, &mut s);
        s
    }
}

/// The number in any of Deribit's order id forms (`ETH-584849853`, `ETH-SLIS-12`, `12`).
pub fn parse_order_id(text: &str) -> Option<u64> {
    text.rsplit('-').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_ids_parse_in_every_form() {
        assert_eq!(parse_order_id("ETH-584849853"), Some(584_849_853));
        assert_eq!(parse_order_id("ETH-SLIS-12"), Some(12));
        assert_eq!(parse_order_id("USDC-104819327443"), Some(104_819_327_443));
        assert_eq!(parse_order_id("17"), Some(17));
        assert_eq!(parse_order_id("ETH-"), None);
    }
}
