//! Changing live orders: cancel, cancel-all, edit, close-position, good-til-day expiry and
//! trigger orders (stop, take, trailing).
//!
//! Owns: edit's priority rule (an edit keeps queue priority only when the size goes down at
//! the same price; otherwise the order leaves the book and is matched again as a new taker
//! at the back of the queue), trigger evaluation on each price update, and GTD expiry.
//! Must not: read a clock; the caller drives time through `handle`, `set_*` and `advance`.

use ticktrade_core::{Decimal, InstrumentId, Price, Qty, Side, Utc};

use crate::catalogue::Instrument;
use crate::engine::Exchange;
use crate::event::Event;
use crate::ledger::{Delivery, LedgerKind, trade_entry};
use crate::money::Money;
use crate::order::{
    AccountId, CancelReason, ConnectionId, EditParams, Order, OrderRef, OrderState, OrderType, PlaceParams, Size,
    TimeInForce, TriggerKind,
};
use crate::reject::Reject;

impl Exchange {
    /// Expires good-til-day orders whose session ended. Called by `handle`; a server's timer
    /// may call it too (events go to `out`).
    pub fn advance(&mut self, now: Utc, out: &mut Vec<Event>) {
        if self.next_expiry.is_some_and(|t| now >= t) {
            self.settle_expired(now, out);
        }
        if self.gtd.is_empty() || !self.gtd.iter().any(|&(t, _)| now >= t) {
            return;
        }
        let mut ids = std::mem::take(&mut self.scratch.ids);
        ids.clear();
        self.gtd.retain(|&(t, id)| {
            if now >= t {
                ids.push(id);
                false
            } else {
                true
            }
        });
        for &id in &ids {
            self.cancel_resting(now, id, CancelReason::GoodTilDay, out);
        }
        self.scratch.ids = ids;
        self.flush(now, out);
    }

    /// Expiry: instruments whose expiration passed cancel their live orders (reason
    /// `expired`), settle every position at the mark price into the balance, and close
    /// their book (`10012 book_closed` afterwards).
    fn settle_expired(&mut self, now: Utc, out: &mut Vec<Event>) {
        let mut ids = std::mem::take(&mut self.scratch.ids);
        for i in 0..self.markets.len() {
            let instrument = InstrumentId(i as u32);
            let Some(inst) = self.catalogue.get(instrument) else { continue };
            if self.markets[i].settled || inst.expiration_timestamp.is_none_or(|t| now < t) {
                continue;
            }
            self.markets[i].settled = true;
            ids.clear();
            ids.extend(self.orders.values().filter(|o| o.instrument == instrument).map(|o| o.id));
            ids.sort_unstable();
            for &id in &ids {
                self.cancel_resting(now, id, CancelReason::Expired, out);
            }
            let price = self.mark_price(instrument);
            let index = self.index_price_of(instrument);
            let open_interest = self.markets[i].open_interest;
            let mut longs_pnl = Money::ZERO;
            let mut accounts: Vec<_> = self.accounts.keys().copied().collect();
            accounts.sort_unstable();
            for account in accounts {
                let Some(inst) = self.catalogue.get(instrument) else { continue };
                let Some(acc) = self.accounts.get_mut(&account) else { continue };
                let Some(pos) = acc.positions.get_mut(&instrument.0) else { continue };
                if pos.size == 0 {
                    continue;
                }
                let pnl = pos.floating_pnl(inst, price);
                let settled = pos.size;
                if settled > 0 {
                    longs_pnl += pnl;
                }
                pos.realized_pnl += pnl;
                pos.size = 0;
                pos.average_price = Money::ZERO;
                let currency = inst.settlement_currency;
                let bal = acc.balance_mut(currency);
                bal.balance += pnl;
                bal.session_rpl += pnl;
                out.push(Event::Position { account, instrument });
                let key = (account, currency);
                if !self.scratch.portfolios.contains(&key) {
                    self.scratch.portfolios.push(key);
                }
                let kind = LedgerKind::Delivery { position: settled, price };
                let entry = trade_entry(inst, account, currency, now, kind, pnl, Money::ZERO, pnl, (price, index));
                self.record_ledger(entry);
            }
            let delivery = Delivery {
                instrument,
                timestamp: now,
                price,
                index_price: index,
                open_interest,
                profit_loss: longs_pnl,
            };
            self.record_delivery(delivery);
            self.markets[i].open_interest = 0;
            self.note_ticker(instrument);
        }
        self.scratch.ids = ids;
        let markets = &self.markets;
        self.next_expiry = self
            .catalogue
            .iter()
            .filter(|i| !markets[i.spec.id.0 as usize].settled)
            .filter_map(|i| i.expiration_timestamp)
            .min();
        self.flush(now, out);
    }

    fn find_own(&self, account: AccountId, id: u64) -> Result<Order, Reject> {
        match self.orders.get(&id) {
            Some(o) if o.account != account => Err(Reject::NOT_OWNER_OF_ORDER),
            Some(o) => Ok(*o),
            None if self.closed.get(id).is_some_and(|o| o.account == account) => Err(Reject::NOT_OPEN_ORDER),
            None => Err(Reject::ORDER_NOT_FOUND),
        }
    }

    pub(crate) fn cancel(
        &mut self,
        now: Utc,
        account: AccountId,
        id: u64,
        out: &mut Vec<Event>,
    ) -> Result<Order, Reject> {
        self.find_own(account, id)?;
        self.cancel_resting(now, id, CancelReason::UserRequest, out).ok_or(Reject::ORDER_NOT_FOUND)
    }

    /// Cancels every live order of `account` that `pick` accepts, for `reason`; returns the count.
    pub(crate) fn cancel_where(
        &mut self,
        now: Utc,
        account: AccountId,
        reason: CancelReason,
        out: &mut Vec<Event>,
        pick: impl Fn(&Order, &Instrument) -> bool,
    ) -> u32 {
        let mut ids = std::mem::take(&mut self.scratch.ids);
        ids.clear();
        for o in self.orders.values() {
            if o.account == account && self.catalogue.get(o.instrument).is_some_and(|inst| pick(o, inst)) {
                ids.push(o.id);
            }
        }
        // Oldest first, so events come out in a stable order.
        ids.sort_unstable();
        let mut n = 0;
        for &id in &ids {
            if self.cancel_resting(now, id, reason, out).is_some() {
                n += 1;
            }
        }
        self.scratch.ids = ids;
        n
    }

    pub(crate) fn edit(
        &mut self,
        now: Utc,
        account: AccountId,
        p: &EditParams,
        out: &mut Vec<Event>,
    ) -> Result<Order, Reject> {
        if p.valid_until.is_some_and(|t| now > t) {
            return Err(Reject::TIMED_OUT);
        }
        let id = match p.order {
            OrderRef::Id(id) => id,
            OrderRef::Label { instrument, label } => {
                let mut found = self
                    .orders
                    .values()
                    .filter(|o| o.account == account && o.instrument == instrument && o.label == label);
                let first = found.next().ok_or(Reject::ORDER_NOT_FOUND)?;
                if found.next().is_some() {
                    return Err(Reject::NON_UNIQUE_ORDER_LABEL);
                }
                first.id
            }
        };
        let old = self.find_own(account, id)?;
        let inst = self.instrument(old.instrument)?;
        let new_amount = Exchange::size_to_qty(inst, p.size)?;
        if new_amount <= old.filled {
            return Err(Reject::INVALID_AMOUNT.with_data("amount must exceed the filled amount"));
        }
        let new_price = match p.price {
            Some(price) if old.order_type.needs_price() || old.state == OrderState::Open => {
                Some(Exchange::parse_price(inst, price, Reject::PRICE_WRONG_TICK)?)
            }
            _ => old.price,
        };
        let mut new_trigger = old.trigger;
        if let (Some(t), Some(tp)) = (new_trigger.as_mut(), p.trigger_price) {
            t.price = Exchange::parse_price(inst, tp, Reject::TRIGGER_PRICE_WRONG_TICK)?;
        }
        if let (Some(t), Some(offset)) = (new_trigger.as_mut(), p.trigger_offset) {
            // Trailing: a new distance from the peak moves the stop level with it.
            let Some(old_offset) = t.offset else { return Err(Reject::invalid_params("trigger_offset")) };
            let ticks = Exchange::parse_price(inst, offset, Reject::TRIGGER_PRICE_WRONG_TICK)?.raw();
            if ticks <= 0 {
                return Err(Reject::invalid_params("trigger_offset"));
            }
            t.price = Price::from_raw(t.price.raw() + old.side.sign() * (ticks - old_offset));
            t.offset = Some(ticks);
        }
        let mut order = old;
        order.amount = new_amount;
        order.price = new_price;
        order.trigger = new_trigger;
        order.replaced = true;
        order.updated = now;
        if p.post_only {
            order.post_only = true;
            order.reject_post_only = p.reject_post_only;
        }
        order.reduce_only |= p.reduce_only;
        if old.state == OrderState::Untriggered {
            self.orders.insert(id, order);
            out.push(Event::Order(order));
            let instrument = order.instrument;
            self.fire_triggers(now, instrument, out);
            return Ok(self.orders.get(&id).or_else(|| self.closed.get(id)).copied().unwrap_or(order));
        }
        let Some(price) = new_price else { return Err(Reject::NOT_OPEN_ORDER) };
        let old_price = old.price.unwrap_or(price);
        let book = &self.markets[old.instrument.0 as usize].book;
        let crosses = book.best_price(old.side.opposite()).is_some_and(|best| old.side.crosses(price, best));
        if order.post_only && crosses && price != old_price {
            if order.reject_post_only {
                return Err(Reject::POST_ONLY_REJECT);
            }
            let best = book.best_price(old.side.opposite()).unwrap_or(price);
            let rule = &inst.spec.tick_rule;
            let mut p2 = best.offset(-old.side.sign());
            while !rule.is_valid(p2) && p2.is_positive() {
                p2 = p2.offset(-old.side.sign());
            }
            order.price = Some(p2);
        }
        let price = order.price.unwrap_or(price);
        let exempt = self.accounts.get(&account).is_some_and(|a| a.margin_exempt);
        if !exempt && !order.reduce_only && order.remaining() > old.remaining() {
            let (currency, need) = crate::account::order_margin(
                inst,
                old.side,
                inst.price_money(price),
                order.remaining() - old.remaining(),
            );
            if need > self.available_funds(account, currency) {
                return Err(Reject::NOT_ENOUGH_FUNDS);
            }
        }
        if price == old_price && order.remaining() <= old.remaining() {
            // Keeps its place in the queue.
            self.touch(old.instrument, old.side, price);
            let _ = self.markets[old.instrument.0 as usize].book.reduce(id, order.remaining());
            self.reserve_margin(&old, old.remaining() - order.remaining(), false);
            self.orders.insert(id, order);
            self.note_portfolio(account, old.instrument);
            out.push(Event::Order(order));
            return Ok(order);
        }
        // Loses priority: out of the book, matched again, rests at the back.
        self.touch(old.instrument, old.side, old_price);
        self.markets[old.instrument.0 as usize].book.remove(id);
        self.orders.remove(&id);
        self.reserve_margin(&old, old.remaining(), false);
        self.gtd.retain(|&(_, g)| g != id);
        self.execute(now, order, out)
    }

    #[allow(clippy::too_many_arguments)] // The request's fields, unpacked.
    pub(crate) fn close_position(
        &mut self,
        now: Utc,
        account: AccountId,
        instrument: InstrumentId,
        order_type: OrderType,
        price: Option<Decimal>,
        connection: Option<ConnectionId>,
        out: &mut Vec<Event>,
    ) -> Result<Order, Reject> {
        let inst = self.instrument(instrument)?;
        let size = self.accounts.get(&account).and_then(|a| a.positions.get(&instrument.0)).map_or(0, |p| p.size);
        if size == 0 {
            return Err(Reject::INVALID_ARGUMENTS.with_data("no position"));
        }
        if !matches!(order_type, OrderType::Limit | OrderType::Market) {
            return Err(Reject::invalid_params("type"));
        }
        let side = if size > 0 { Side::Sell } else { Side::Buy };
        let amount = inst.spec.qty_to_decimal(Qty::from_raw(size.abs()));
        let params = PlaceParams {
            order_type,
            price,
            reduce_only: true,
            time_in_force: TimeInForce::GoodTilCancelled,
            size: Size::amount(amount),
            connection,
            ..PlaceParams::market(instrument, side, amount)
        };
        self.place(now, account, &params, None, out)
    }

    /// The current value of a trigger's reference price (`0.0` when unknown).
    pub(crate) fn trigger_reference(&self, instrument: InstrumentId, kind: TriggerKind) -> f64 {
        match kind {
            TriggerKind::LastPrice => {
                let last = self.markets[instrument.0 as usize].last;
                match (last, self.catalogue.get(instrument)) {
                    (Some(p), Some(inst)) => inst.price_f64(p),
                    _ => 0.0,
                }
            }
            // Triggers compare model prices; `f64` is enough there (no money moves).
            TriggerKind::MarkPrice => self.mark_price(instrument).to_f64_lossy(),
            TriggerKind::IndexPrice => self.index_price_of(instrument).to_f64_lossy(),
        }
    }

    /// Fires every trigger order of `instrument` whose condition holds, repeatedly (a fired
    /// order's trades move the last price and may fire more).
    pub(crate) fn fire_triggers(&mut self, now: Utc, instrument: InstrumentId, out: &mut Vec<Event>) {
        for _round in 0..16 {
            if self.markets[instrument.0 as usize].triggers.is_empty() {
                return;
            }
            let Some(inst) = self.catalogue.get(instrument) else { return };
            let tick = inst.tick_f64;
            let mut fired = std::mem::take(&mut self.scratch.ids);
            fired.clear();
            let refs = [
                self.trigger_reference(instrument, TriggerKind::IndexPrice),
                self.trigger_reference(instrument, TriggerKind::MarkPrice),
                self.trigger_reference(instrument, TriggerKind::LastPrice),
            ];
            for &id in &self.markets[instrument.0 as usize].triggers {
                let Some(order) = self.orders.get_mut(&id) else { continue };
                let Some(trigger) = order.trigger.as_mut() else { continue };
                let value = refs[match trigger.kind {
                    TriggerKind::IndexPrice => 0,
                    TriggerKind::MarkPrice => 1,
                    TriggerKind::LastPrice => 2,
                }];
                if value <= 0.0 {
                    continue;
                }
                let level = trigger.price.raw() as f64 * tick;
                let fire = match (order.order_type, order.side) {
                    (OrderType::StopLimit | OrderType::StopMarket, Side::Buy) => value >= level,
                    (OrderType::StopLimit | OrderType::StopMarket, Side::Sell) => value <= level,
                    (OrderType::TakeLimit | OrderType::TakeMarket, Side::Buy) => value <= level,
                    (OrderType::TakeLimit | OrderType::TakeMarket, Side::Sell) => value >= level,
                    (_, side) => {
                        // Trailing: follow the peak (sell) or trough (buy) by the offset.
                        let offset = trigger.offset.unwrap_or(0);
                        let better = match side {
                            Side::Sell => value > trigger.peak,
                            Side::Buy => value < trigger.peak || trigger.peak <= 0.0,
                        };
                        if better {
                            trigger.peak = value;
                            let peak_ticks = (value / tick).round() as i64;
                            trigger.price = Price::from_raw(peak_ticks + side.sign() * offset);
                        }
                        let level = trigger.price.raw() as f64 * tick;
                        match side {
                            Side::Sell => value <= level,
                            Side::Buy => value >= level,
                        }
                    }
                };
                if fire {
                    fired.push(id);
                }
            }
            if fired.is_empty() {
                self.scratch.ids = fired;
                return;
            }
            self.markets[instrument.0 as usize].triggers.retain(|id| !fired.contains(id));
            let batch: Vec<u64> = fired.clone();
            self.scratch.ids = fired;
            for id in batch {
                self.fire_one(now, id, out);
            }
        }
    }

    fn fire_one(&mut self, now: Utc, id: u64, out: &mut Vec<Event>) {
        let Some(mut trig) = self.orders.remove(&id) else { return };
        trig.triggered = true;
        trig.close(now, OrderState::Triggered, None);
        self.archive(trig);
        out.push(Event::Order(trig));
        let Some(inst) = self.catalogue.get(trig.instrument) else { return };
        let order_type = match trig.order_type {
            OrderType::StopLimit | OrderType::TakeLimit => OrderType::Limit,
            _ => OrderType::Market,
        };
        let amount = inst.spec.qty_to_decimal(trig.remaining());
        let price = trig.price.map(|p| inst.spec.price_to_decimal(p));
        let params = PlaceParams {
            order_type,
            price,
            time_in_force: trig.time_in_force,
            reduce_only: trig.reduce_only,
            post_only: false,
            reject_post_only: false,
            label: trig.label,
            // The fired order is the trigger's continuation: it goes with the trigger's
            // connection when that one disconnects.
            connection: trig.connection,
            ..PlaceParams::market(trig.instrument, trig.side, amount)
        };
        // A fired order that can no longer be placed (e.g. reduce-only with no position)
        // simply does not appear; the trigger is already archived as triggered.
        let _ = self.place(now, trig.account, &params, Some(id), out);
    }
}
