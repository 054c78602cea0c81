//! Price-time matching of one incoming order, fills, and the book/ticker/portfolio events.
//!
//! Owns: the match loop (limit, market, market_limit; IOC/FOK; self-trade handling), fill
//! bookkeeping on both sides (order state, positions, balances, fees, user and public trades,
//! last price, volume, open interest, candles) and the end-of-request flush that turns the
//! levels a request touched into `BookLevel` events closed by a `BookBatch` with Deribit's
//! `change_id`/`prev_change_id`.
//! Must not: validate requests (engine.rs does) or allocate once its buffers are warm.

use std::ops::Mul;

use ticktrade_core::{InstrumentId, InstrumentKind, Price, Qty, Side, Utc};

use crate::account::{fee, order_margin};
use crate::engine::{Candle, Exchange, SelfTrade};
use crate::event::{BookAction, BookBatch, BookLevel, Event, PublicTrade, UserTrade};
use crate::ledger::{LedgerKind, trade_entry};
use crate::money::Money;
use crate::order::{AccountId, CancelReason, Liquidity, Order, OrderState, OrderType, TimeInForce};
use crate::reject::Reject;

const MINUTE_NS: i64 = 60_000_000_000;

/// One side of a fill, as `settle_fill` books it.
#[derive(Clone, Copy)]
struct Fill {
    now: Utc,
    trade_id: u64,
    order_id: u64,
    side: Side,
    price: Price,
    qty: Qty,
    liquidity: Liquidity,
    /// (mark, index) at the fill.
    marks: (Money, Money),
}

impl Exchange {
    /// Matches a validated, not-yet-resting order and rests what is left when its type
    /// allows. Returns the order's final state.
    pub(crate) fn execute(&mut self, now: Utc, mut order: Order, out: &mut Vec<Event>) -> Result<Order, Reject> {
        let idx = order.instrument.0 as usize;
        let side = order.side;
        let opposite = side.opposite();
        let mut limit = order.price;
        if order.order_type == OrderType::MarketLimit {
            // Trades at the best opposite price only; the rest rests there as a limit order.
            limit = self.markets[idx].book.best_price(opposite);
            if limit.is_none() {
                order.close(now, OrderState::Cancelled, Some(CancelReason::ImmediateOrCancel));
                self.archive(order);
                out.push(Event::Order(order));
                return Ok(order);
            }
        }
        if order.time_in_force == TimeInForce::FillOrKill && !self.can_fill(&order, limit) {
            order.close(now, OrderState::Cancelled, Some(CancelReason::FillOrKill));
            self.archive(order);
            out.push(Event::Order(order));
            return Ok(order);
        }
        let mut stopped_by_self_trade = false;
        let index = self.catalogue.get(order.instrument).map(|i| i.index);
        while order.remaining().is_positive() {
            if order.mmp && index.is_some_and(|i| self.mmp_frozen(now, order.account, i, order.mmp_group)) {
                break; // An MMP taker whose own fills froze its group stops here.
            }
            let book = &self.markets[idx].book;
            let Some(front) = book.front(opposite) else { break };
            if limit.is_some_and(|l| !side.crosses(l, front.price)) {
                break;
            }
            let (maker_id, maker_price, maker_account) = (front.id, front.price, front.payload);
            if maker_account == order.account {
                match self.self_trade(order.account) {
                    SelfTrade::CancelMaker => {
                        self.cancel_resting(now, maker_id, CancelReason::SelfTrade, out);
                        continue;
                    }
                    SelfTrade::RejectTaker => {
                        if order.filled.is_zero() {
                            return Err(Reject::ORDER_OVERLAP);
                        }
                        stopped_by_self_trade = true;
                        break;
                    }
                }
            }
            self.touch(order.instrument, opposite, maker_price);
            let Some(fill) = self.markets[idx].book.fill_front(opposite, order.remaining()) else { break };
            self.apply_fill(now, &mut order, fill.id, fill.price, fill.qty, out);
        }
        let remaining = order.remaining();
        if remaining.is_zero() {
            order.close(now, OrderState::Filled, None);
            self.archive(order);
        } else if stopped_by_self_trade {
            order.close(now, OrderState::Cancelled, Some(CancelReason::SelfTrade));
            self.archive(order);
        } else if order.mmp && index.is_some_and(|i| self.mmp_frozen(now, order.account, i, order.mmp_group)) {
            order.close(now, OrderState::Cancelled, Some(CancelReason::MmpTrigger));
            self.archive(order);
        } else {
            let rests = match order.order_type {
                OrderType::MarketLimit => {
                    order.order_type = OrderType::Limit;
                    order.original_order_type = Some(OrderType::MarketLimit);
                    order.price = limit;
                    true
                }
                OrderType::Market => false,
                _ => matches!(order.time_in_force, TimeInForce::GoodTilCancelled | TimeInForce::GoodTilDay),
            };
            match (rests, order.price) {
                (true, Some(price)) => self.rest(now, &mut order, price),
                _ => {
                    order.close(now, OrderState::Cancelled, Some(CancelReason::ImmediateOrCancel));
                    self.archive(order);
                }
            }
        }
        self.note_portfolio(order.account, order.instrument);
        out.push(Event::Order(order));
        Ok(order)
    }

    /// Whether `order` could fill completely now (fill-or-kill), counting only other
    /// accounts' orders (own orders would be cancelled or stop the match).
    fn can_fill(&self, order: &Order, limit: Option<Price>) -> bool {
        let book = &self.markets[order.instrument.0 as usize].book;
        let opposite = order.side.opposite();
        let need = order.remaining();
        let mut got = Qty::ZERO;
        for level in book.levels(opposite) {
            if limit.is_some_and(|l| !order.side.crosses(l, level.price)) {
                break;
            }
            for resting in book.orders_at(opposite, level.price) {
                if resting.payload == order.account {
                    if self.self_trade(order.account) == SelfTrade::RejectTaker {
                        return false;
                    }
                    continue;
                }
                got += resting.qty;
                if got >= need {
                    return true;
                }
            }
        }
        false
    }

    /// Puts the rest of `order` in the book and reserves its margin.
    pub(crate) fn rest(&mut self, now: Utc, order: &mut Order, price: Price) {
        order.state = OrderState::Open;
        order.updated = now;
        self.touch(order.instrument, order.side, price);
        let market = &mut self.markets[order.instrument.0 as usize];
        // Ids are unique and the quantity positive, so `add` cannot fail here.
        let _ = market.book.add(order.id, order.side, price, order.remaining(), order.account);
        self.orders.insert(order.id, *order);
        if let Some(expires) = order.expires {
            self.gtd.push((expires, order.id));
        }
        self.reserve_margin(order, order.remaining(), true);
    }

    /// Adds (`sign` = 1) or releases (−1) the margin `qty` of a resting order reserves.
    pub(crate) fn reserve_margin(&mut self, order: &Order, qty: Qty, add: bool) {
        if order.reduce_only || qty.is_zero() {
            return;
        }
        let Some(inst) = self.catalogue.get(order.instrument) else { return };
        let price = order.price.map_or(Money::ZERO, |p| inst.price_money(p));
        let (currency, im) = order_margin(inst, order.side, price, qty);
        let initial = &self.initial_balances;
        let account = self.accounts.entry(order.account).or_insert_with(|| crate::account::Account::new(initial));
        let bal = account.balance_mut(currency);
        if add {
            bal.orders_im += im;
        } else {
            bal.orders_im -= im;
        }
        if add {
            bal.n_open_orders += 1;
        } else if order.remaining() == qty {
            // The order leaves the book.
            bal.n_open_orders = bal.n_open_orders.saturating_sub(1);
            if bal.n_open_orders == 0 {
                bal.orders_im = Money::ZERO; // Exact already; a guard against drift all the same.
            }
        }
    }

    /// Removes a resting order from the book as cancelled.
    pub(crate) fn cancel_resting(
        &mut self,
        now: Utc,
        id: u64,
        reason: CancelReason,
        out: &mut Vec<Event>,
    ) -> Option<Order> {
        let mut order = self.orders.remove(&id)?;
        if order.state == OrderState::Open {
            if let Some(price) = order.price {
                self.touch(order.instrument, order.side, price);
            }
            self.markets[order.instrument.0 as usize].book.remove(id);
            self.reserve_margin(&order, order.remaining(), false);
        } else {
            self.markets[order.instrument.0 as usize].triggers.retain(|&t| t != id);
        }
        order.close(now, OrderState::Cancelled, Some(reason));
        self.archive(order);
        self.note_portfolio(order.account, order.instrument);
        out.push(Event::Order(order));
        Some(order)
    }

    /// Keeps a closed order for queries, dropping the oldest beyond `history_len`.
    pub(crate) fn archive(&mut self, order: Order) {
        self.closed.push(order);
    }

    /// Books one fill between the taker `order` and resting order `maker_id`.
    fn apply_fill(&mut self, now: Utc, order: &mut Order, maker_id: u64, price: Price, qty: Qty, out: &mut Vec<Event>) {
        let idx = order.instrument.0 as usize;
        let notional = i128::from(price.raw()) * i128::from(qty.raw());
        order.filled += qty;
        order.filled_notional += notional;
        order.updated = now;
        let maker = match self.orders.get_mut(&maker_id) {
            Some(m) => {
                m.filled += qty;
                m.filled_notional += notional;
                m.updated = now;
                if m.remaining().is_zero() {
                    m.state = OrderState::Filled;
                }
                *m
            }
            None => return,
        };
        // Release the margin the filled part reserved, before the record may leave `orders`.
        let mut before = maker;
        before.filled -= qty;
        self.reserve_margin(&before, qty, false);
        if maker.state == OrderState::Filled {
            self.orders.remove(&maker_id);
            self.archive(maker);
        }
        let market = &mut self.markets[idx];
        market.trade_seq += 1;
        let trade_seq = market.trade_seq;
        let tick_direction = match market.last {
            Some(last) if price > last => 0,
            Some(last) if price < last => 2,
            Some(_) => {
                if market.tick_direction == 0 || market.tick_direction == 1 {
                    1
                } else {
                    3
                }
            }
            None => 0,
        };
        market.tick_direction = tick_direction;
        market.last = Some(price);
        market.volume += qty;
        market.last_update = now;
        let minute = Utc(now.0.div_euclid(MINUTE_NS) * MINUTE_NS);
        match market.candles.back_mut() {
            Some(c) if c.start == minute => {
                c.high = c.high.max(price);
                c.low = c.low.min(price);
                c.close = price;
                c.volume += qty;
            }
            _ => {
                if market.candles.len() >= self.config.candles_len.max(1) {
                    market.candles.pop_front();
                }
                market.candles.push_back(Candle {
                    start: minute,
                    open: price,
                    high: price,
                    low: price,
                    close: price,
                    volume: qty,
                });
            }
        }
        let trade_id = self.next_trade_id;
        self.next_trade_id += 1;
        let mark = self.mark_price(order.instrument);
        let index = self.index_price_of(order.instrument);
        let public = PublicTrade {
            instrument: order.instrument,
            trade_id,
            trade_seq,
            timestamp: now,
            price,
            qty,
            direction: order.side,
            tick_direction,
            index_price: index,
            mark_price: mark,
        };
        let market = &mut self.markets[idx];
        if market.recent.len() >= self.config.recent_trades_len.max(1) {
            market.recent.pop_front();
        }
        market.recent.push_back(public);
        out.push(Event::Order(maker));
        for (o, liquidity) in [(&maker, Liquidity::Maker), (&*order, Liquidity::Taker)] {
            let fill =
                Fill { now, trade_id, order_id: o.id, side: o.side, price, qty, liquidity, marks: (mark, index) };
            let (fee, pnl) = self.settle_fill(o.account, order.instrument, fill);
            let Some(inst) = self.catalogue.get(order.instrument) else { return };
            let trade = UserTrade {
                account: o.account,
                instrument: order.instrument,
                trade_id,
                trade_seq,
                timestamp: now,
                order_id: o.id,
                order_type: if o.order_type == OrderType::Market { OrderType::Market } else { OrderType::Limit },
                side: o.side,
                price,
                qty,
                liquidity,
                fee,
                fee_currency: inst.settlement_currency,
                state: if o.remaining().is_zero() { OrderState::Filled } else { OrderState::Open },
                reduce_only: o.reduce_only,
                post_only: o.post_only,
                label: o.label,
                profit_loss: pnl,
                index_price: index,
                mark_price: mark,
                tick_direction,
            };
            if self.config.history_len > 0 {
                if self.user_trades.len() >= self.config.history_len {
                    self.user_trades.pop_front();
                }
                self.user_trades.push_back(trade);
            }
            out.push(Event::UserTrade(trade));
            out.push(Event::Position { account: o.account, instrument: order.instrument });
            self.note_portfolio(o.account, order.instrument);
        }
        out.push(Event::PublicTrade(public));
        self.note_ticker(order.instrument);
        if maker.mmp {
            self.mmp_fill(now, &maker, qty, out);
        }
        if order.mmp {
            self.mmp_fill(now, order, qty, out);
        }
    }

    /// Position, balance, fee and open-interest effects of one side of a fill.
    /// Returns (fee, realised PnL).
    fn settle_fill(&mut self, account: AccountId, instrument: InstrumentId, f: Fill) -> (Money, Money) {
        let Some(inst) = self.catalogue.get(instrument) else { return (Money::ZERO, Money::ZERO) };
        let initial = &self.initial_balances;
        let acc = self.accounts.entry(account).or_insert_with(|| crate::account::Account::new(initial));
        let fee = fee(inst, f.price, f.qty, f.liquidity == Liquidity::Maker);
        let trade = |position_before, position_after| LedgerKind::Trade {
            trade_id: f.trade_id,
            order_id: f.order_id,
            side: f.side,
            price: f.price,
            qty: f.qty,
            liquidity: f.liquidity,
            position_before,
            position_after,
        };
        if inst.spec.kind == InstrumentKind::Spot {
            let amount = inst.amount_money(f.qty);
            let value = amount.mul(inst.price_money(f.price));
            let (amount, value) = if f.side == Side::Buy { (amount, value) } else { (-amount, -value) };
            acc.balance_mut(inst.base).balance += amount;
            let quote = acc.balance_mut(inst.quote);
            quote.balance -= value + fee;
            quote.fees += fee;
            let (base, quote_currency) = (inst.base, inst.quote);
            let entries = [
                trade_entry(inst, account, base, f.now, trade(0, 0), amount, Money::ZERO, Money::ZERO, f.marks),
                trade_entry(
                    inst,
                    account,
                    quote_currency,
                    f.now,
                    trade(0, 0),
                    -(value + fee),
                    fee,
                    Money::ZERO,
                    f.marks,
                ),
            ];
            for entry in entries {
                self.record_ledger(entry);
            }
            return (fee, Money::ZERO);
        }
        let pos = acc.positions.entry(instrument.0).or_default();
        pos.instrument = instrument;
        let before = pos.size;
        let pnl = pos.apply_fill(inst, f.side, f.price, f.qty);
        pos.fees += fee;
        let after = pos.size;
        let bal = acc.balance_mut(inst.settlement_currency);
        bal.balance += pnl - fee;
        bal.session_rpl += pnl;
        bal.fees += fee;
        self.markets[instrument.0 as usize].open_interest += after.max(0) - before.max(0);
        let entry = trade_entry(
            inst,
            account,
            inst.settlement_currency,
            f.now,
            trade(before, after),
            pnl - fee,
            fee,
            pnl,
            f.marks,
        );
        self.record_ledger(entry);
        (fee, pnl)
    }

    /// Records a level's quantity before this request first changes it.
    pub(crate) fn touch(&mut self, instrument: InstrumentId, side: Side, price: Price) {
        let touched = &self.scratch.touched;
        if touched.iter().any(|&(i, s, p, _)| i == instrument && s == side && p == price) {
            return;
        }
        let qty = self.markets[instrument.0 as usize].book.level(side, price).map_or(Qty::ZERO, |l| l.qty);
        self.scratch.touched.push((instrument, side, price, qty));
    }

    pub(crate) fn note_portfolio(&mut self, account: AccountId, instrument: InstrumentId) {
        let Some(inst) = self.catalogue.get(instrument) else { return };
        let currency = inst.settlement_currency;
        if !self.scratch.portfolios.contains(&(account, currency)) {
            self.scratch.portfolios.push((account, currency));
        }
    }

    pub(crate) fn note_ticker(&mut self, instrument: InstrumentId) {
        if !self.scratch.tickers.contains(&instrument) {
            self.scratch.tickers.push(instrument);
        }
    }

    /// Emits the book changes, tickers and portfolios this request caused.
    pub(crate) fn flush(&mut self, now: Utc, out: &mut Vec<Event>) {
        let mut touched = std::mem::take(&mut self.scratch.touched);
        // Group by instrument, keep the order levels were touched within each.
        touched.sort_by_key(|&(i, _, _, _)| i);
        let mut start = 0;
        while start < touched.len() {
            let instrument = touched[start].0;
            let end = start + touched[start..].iter().take_while(|t| t.0 == instrument).count();
            let market = &mut self.markets[instrument.0 as usize];
            let best_before = (market.book.best_price(Side::Buy), market.book.best_price(Side::Sell));
            let mut n_changes = 0;
            for &(_, side, price, before) in &touched[start..end] {
                let after = market.book.level(side, price).map_or(Qty::ZERO, |l| l.qty);
                if after == before {
                    continue;
                }
                let action = if before.is_zero() {
                    BookAction::New
                } else if after.is_zero() {
                    BookAction::Delete
                } else {
                    BookAction::Change
                };
                out.push(Event::BookLevel(BookLevel { instrument, side, action, price, qty: after }));
                n_changes += 1;
            }
            if n_changes > 0 {
                let prev_change_id = market.change_id;
                market.change_id += 1;
                market.last_update = now;
                out.push(Event::BookBatch(BookBatch {
                    instrument,
                    change_id: market.change_id,
                    prev_change_id,
                    timestamp: now,
                }));
                let _ = best_before;
                self.note_ticker(instrument);
            }
            start = end;
        }
        touched.clear();
        self.scratch.touched = touched;
        for &instrument in &self.scratch.tickers {
            out.push(Event::Ticker { instrument });
        }
        self.scratch.tickers.clear();
        for &(account, currency) in &self.scratch.portfolios {
            out.push(Event::Portfolio { account, currency });
        }
        self.scratch.portfolios.clear();
    }
}
