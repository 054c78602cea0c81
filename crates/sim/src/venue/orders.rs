//! Order entry and matching: place, edit, cancel, close, and the fills they cause.
//!
//! Owns: validation of order params against the instrument (Deribit's codes), price-time
//! matching, post-only repricing, reduce-only clamping, IOC/FOK, and position bookkeeping.
//! Must not: read a clock or know sessions; every call gets `now` and fills `out`.

use std::collections::BTreeMap;

use ticktrade_core::{Decimal, NumberError, Price, Qty, Side, Utc};
use ticktrade_deribit_proto::api::{self, Num};

use super::book::{LevelChange, net_changes};
use super::{AccountId, Event, MAKER, OrderRec, OrderState, Reject, TAKER, TAPE_LEN, Tif, Venue};

/// What one operation touched, turned into events by `flush`.
#[derive(Default)]
pub(super) struct Batch {
    changes: Vec<LevelChange>,
    /// Levels that existed before the operation, by (side, price), to label new/change/delete.
    existed: Vec<(Side, Price)>,
    trades: Vec<api::PublicTrade>,
    touched: BTreeMap<AccountId, (Vec<String>, Vec<api::UserTrade>)>,
}

impl Batch {
    fn touch(&mut self, account: AccountId, order_id: &str) {
        let entry = self.touched.entry(account).or_default();
        if !entry.0.iter().any(|id| id == order_id) {
            entry.0.push(order_id.to_owned());
        }
    }
}

/// Which orders a bulk cancel or query selects.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    pub instr: Option<usize>,
    pub currency: Option<String>,
    pub kind: Option<String>,
    pub label: Option<String>,
}

impl Venue {
    pub(super) fn matches(&self, order: &OrderRec, filter: &Filter) -> bool {
        let info = &self.instrs[order.instr].info;
        filter.instr.is_none_or(|i| i == order.instr)
            && filter.currency.as_deref().is_none_or(|c| c.eq_ignore_ascii_case("any") || info.base_currency == c)
            && filter.kind.as_deref().is_none_or(|k| k == "any" || info.kind == k)
            && filter.label.as_deref().is_none_or(|l| order.label == l)
    }

    fn parse_amount(&self, instr: usize, amount: Option<Num>, contracts: Option<Num>) -> Result<Qty, Reject> {
        let spec = &self.instrs[instr].spec;
        let amount = match (amount, contracts) {
            (Some(a), _) => a.0,
            (None, Some(c)) => {
                c.0.checked_mul(spec.contract_size).ok_or(Reject::param("contracts", "invalid value"))?
            }
            (None, None) => return Err(Reject::param("amount", "must be present")),
        };
        if amount.is_negative() || amount.is_zero() {
            return Err(Reject::new(10021, "invalid_amount"));
        }
        let qty = spec.qty_from_decimal(amount).map_err(|err| match err {
            NumberError::OffGrid => Reject::new(10027, "non_integer_contract_amount"),
            _ => Reject::new(10021, "invalid_amount"),
        })?;
        if qty < spec.min_qty() {
            return Err(Reject::new(10002, "qty_too_low"));
        }
        Ok(qty)
    }

    fn parse_price(&self, instr: usize, price: Num) -> Result<Price, Reject> {
        let spec = &self.instrs[instr].spec;
        if price.0.is_negative() || price.0.is_zero() {
            return Err(Reject::new(10005, "price_too_low 0"));
        }
        spec.price_from_decimal(price.0).map_err(|err| match err {
            NumberError::OffGrid => Reject::new(10043, "price_wrong_tick"),
            _ => Reject::param("price", "invalid format"),
        })
    }

    fn fresh_order_id(&mut self, instr: usize) -> String {
        let id = format!("{}-{}", self.instrs[instr].info.base_currency, self.next_order);
        self.next_order += 1;
        id
    }

    /// `private/buy` / `private/sell`.
    pub fn place(
        &mut self,
        now: Utc,
        account: AccountId,
        side: Side,
        params: &api::OrderParams,
        out: &mut Vec<Event>,
    ) -> Result<api::OrderWithTrades, Reject> {
        let instr = self.find(&params.instrument_name).ok_or_else(Reject::instrument)?;
        let mut amount = self.parse_amount(instr, params.amount, params.contracts)?;
        if let (Some(a), Some(c)) = (params.amount, params.contracts) {
            let spec = &self.instrs[instr].spec;
            if c.0.checked_mul(spec.contract_size) != Some(a.0) {
                return Err(Reject::param("contracts", "must match amount"));
            }
        }
        let market = match params.order_type.as_deref().unwrap_or("limit") {
            "limit" => false,
            "market" => true,
            "stop_limit" | "stop_market" | "take_limit" | "take_market" | "trailing_stop" | "market_limit" => {
                return Err(Reject::new(11030, "other_reject order type not supported by the simulator"));
            }
            _ => return Err(Reject::param("type", "invalid value")),
        };
        let tif = Tif::parse(params.time_in_force.as_deref())?;
        let mut price = match (market, params.price) {
            (false, Some(p)) => self.parse_price(instr, p)?,
            (false, None) => return Err(Reject::param("price", "must be present")),
            (true, _) => match side {
                Side::Buy => Price::from_raw(i64::MAX / 4),
                Side::Sell => Price::from_raw(i64::MIN / 4),
            },
        };
        let post_only = params.post_only.unwrap_or(false) && !market;
        let reject_post_only = params.reject_post_only.unwrap_or(false);
        if post_only
            && let Some((best, _)) = self.instrs[instr].book.best(side.opposite())
            && side.crosses(price, best)
        {
            if reject_post_only {
                return Err(Reject::new(11054, "post_only_reject"));
            }
            price = best.offset(-side.sign());
        }
        let reduce_only = params.reduce_only.unwrap_or(false);
        if reduce_only {
            let size = self.accounts.get(&account).and_then(|a| a.positions.get(&instr)).map_or(0, |p| p.size);
            let reducible = if size * side.sign() < 0 { size.abs() } else { 0 };
            if reducible == 0 {
                return Err(Reject::new(11030, "other_reject reduce_only would increase position"));
            }
            amount = Qty::from_raw(amount.raw().min(reducible));
        }
        let label = params.label.clone().unwrap_or_default();
        if label.len() > 64 {
            return Err(Reject::param("label", "too long"));
        }
        let now_ms = now.as_millis();
        let id = self.fresh_order_id(instr);
        let order = OrderRec {
            id: id.clone(),
            account,
            instr,
            side,
            price,
            market,
            amount,
            filled: Qty::from_raw(0),
            fill_notional: 0,
            state: OrderState::Open,
            tif,
            post_only,
            reject_post_only,
            reduce_only,
            label,
            created_ms: now_ms,
            updated_ms: now_ms,
            replaced: false,
            cancel_reason: None,
        };
        self.keys.insert(self.key_of(&id), id.clone());
        self.orders.insert(id.clone(), order);
        if !is_synthetic(account) {
            self.account(account).orders.push(id.clone());
        }
        let mut batch = Batch::default();
        batch.touch(account, &id);
        self.execute(now_ms, &id, &mut batch);
        let result = self.result_of(&id, account, &batch);
        self.flush(now, instr, batch, out);
        Ok(result)
    }

    fn result_of(&self, id: &str, account: AccountId, batch: &Batch) -> api::OrderWithTrades {
        let trades = batch
            .touched
            .get(&account)
            .map(|(_, trades)| trades.iter().filter(|t| t.order_id == id).cloned().collect())
            .unwrap_or_default();
        let order = self.orders.get(id).map(|o| self.render_order(o)).unwrap_or_default();
        api::OrderWithTrades { order, trades }
    }

    /// Matches an open order against the book, then rests, cancels or kills the remainder.
    fn execute(&mut self, now_ms: i64, id: &str, batch: &mut Batch) {
        let Some(order) = self.orders.get(id) else { return };
        let (instr, side, limit, tif, market) = (order.instr, order.side, order.price, order.tif, order.market);
        let opposite = side.opposite();
        if tif == Tif::Fok {
            let available: i64 = self.instrs[instr]
                .book
                .levels(opposite)
                .take_while(|(p, _)| side.crosses(limit, *p))
                .map(|(_, q)| q.raw())
                .sum();
            if available < order.remaining().raw() {
                self.close_order(id, OrderState::Cancelled, Some("fok"), now_ms, batch);
                return;
            }
        }
        while let Some(remaining) = self.orders.get(id).map(|o| o.remaining()).filter(|r| r.raw() > 0) {
            let Some((price, maker_id)) = self.instrs[instr].book.front(opposite) else { break };
            if !side.crosses(limit, price) {
                break;
            }
            let Some(maker) = self.orders.get(&self.id_of(maker_id)) else { break };
            let maker_key = maker.id.clone();
            let qty = Qty::from_raw(remaining.raw().min(maker.remaining().raw()));
            self.fill(now_ms, instr, id, &maker_key, price, qty, batch);
        }
        let Some(order) = self.orders.get(id) else { return };
        if order.remaining().raw() == 0 {
            return;
        }
        if market || matches!(order.tif, Tif::Ioc | Tif::Fok) {
            let reason = if market { "market_remainder" } else { "ioc" };
            self.close_order(id, OrderState::Cancelled, Some(reason), now_ms, batch);
            return;
        }
        self.note_before(instr, side, limit, batch);
        let key = self.key_of(id);
        let remaining = order.remaining();
        self.instrs[instr].book.rest(side, limit, key, remaining, &mut batch.changes);
    }

    /// Book keys are the numeric tail of the order id, so the book stays `u64`-keyed.
    pub(super) fn key_of(&self, id: &str) -> u64 {
        id.rsplit('-').next().and_then(|n| n.parse().ok()).unwrap_or(0)
    }

    pub(super) fn id_of(&self, key: u64) -> String {
        self.keys.get(&key).cloned().unwrap_or_default()
    }

    fn note_before(&self, instr: usize, side: Side, price: Price, batch: &mut Batch) {
        if batch.existed.iter().any(|(s, p)| *s == side && *p == price) {
            return;
        }
        if !self.instrs[instr].book.orders_at(side, price).is_empty() {
            batch.existed.push((side, price));
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn fill(
        &mut self,
        now_ms: i64,
        instr: usize,
        taker_id: &str,
        maker_id: &str,
        price: Price,
        qty: Qty,
        batch: &mut Batch,
    ) {
        let Some(maker) = self.orders.get_mut(maker_id) else { return };
        let (maker_side, maker_account) = (maker.side, maker.account);
        maker.filled += qty;
        maker.fill_notional += i128::from(price.raw()) * i128::from(qty.raw());
        maker.updated_ms = now_ms;
        let maker_done = maker.remaining().raw() == 0;
        if maker_done {
            maker.state = OrderState::Filled;
        }
        let key = self.key_of(maker_id);
        self.note_before(instr, maker_side, price, batch);
        if maker_done {
            self.instrs[instr].book.remove(maker_side, price, key, qty, &mut batch.changes);
        } else {
            self.instrs[instr].book.reduce(maker_side, price, qty, &mut batch.changes);
        }
        let Some(taker) = self.orders.get_mut(taker_id) else { return };
        taker.filled += qty;
        taker.fill_notional += i128::from(price.raw()) * i128::from(qty.raw());
        taker.updated_ms = now_ms;
        if taker.remaining().raw() == 0 {
            taker.state = OrderState::Filled;
        }
        let taker_account = taker.account;
        let taker_side = taker.side;
        self.apply_position(maker_account, instr, maker_side, price, qty);
        self.apply_position(taker_account, instr, taker_side, price, qty);

        let state = &mut self.instrs[instr];
        let tick_direction = match state.last_price {
            Some(last) if price > last => 0,
            Some(last) if price < last => 2,
            _ => 1,
        };
        state.last_price = Some(price);
        state.high = Some(state.high.map_or(price, |h| h.max(price)));
        state.low = Some(state.low.map_or(price, |l| l.min(price)));
        state.volume += qty;
        state.trade_seq += 1;
        let trade_seq = state.trade_seq;
        let trade_id = self.next_trade.to_string();
        self.next_trade += 1;
        let public =
            self.render_public_trade(instr, &trade_id, trade_seq, taker_side, price, qty, tick_direction, now_ms);
        let state = &mut self.instrs[instr];
        state.tape.push_back(public.clone());
        if state.tape.len() > TAPE_LEN {
            state.tape.pop_front();
        }
        batch.trades.push(public.clone());
        for (account, order_id, liquidity) in [(maker_account, maker_id, "M"), (taker_account, taker_id, "T")] {
            let Some(order) = self.orders.get(order_id) else { continue };
            if is_synthetic(account) {
                continue;
            }
            let mut trade = self.render_user_trade(order, &public, liquidity);
            let info = &self.instrs[instr].info;
            let fee = super::render::fee_of(&self.instrs[instr].spec, info, price, qty, liquidity == "M");
            let currency = info.settlement_currency.clone();
            trade.fee = Num(fee);
            let balance = self.balance(account, &currency);
            let acc = self.account(account);
            acc.balances.insert(
                currency.to_ascii_uppercase(),
                balance.checked_add(Decimal::ZERO.checked_add(fee).map_or(Decimal::ZERO, neg)).unwrap_or(balance),
            );
            acc.trades.push(trade.clone());
            batch.touch(account, order_id);
            if let Some(entry) = batch.touched.get_mut(&account) {
                entry.1.push(trade);
            }
        }
    }

    fn apply_position(&mut self, account: AccountId, instr: usize, side: Side, price: Price, qty: Qty) {
        let pos = self.account(account).positions.entry(instr).or_default();
        let delta = qty.raw() * side.sign();
        let notional = i128::from(price.raw()) * i128::from(qty.raw());
        if pos.size == 0 || pos.size.signum() == delta.signum() {
            pos.size += delta;
            pos.open_notional += notional;
            return;
        }
        let closing = delta.abs().min(pos.size.abs());
        pos.open_notional -= pos.open_notional * i128::from(closing) / i128::from(pos.size.abs());
        pos.size += delta;
        let opening = delta.abs() - closing;
        if opening > 0 {
            pos.open_notional = i128::from(price.raw()) * i128::from(opening);
        } else if pos.size == 0 {
            pos.open_notional = 0;
        }
    }

    pub(super) fn close_order(
        &mut self,
        id: &str,
        state: OrderState,
        reason: Option<&'static str>,
        now_ms: i64,
        batch: &mut Batch,
    ) {
        let Some(order) = self.orders.get_mut(id) else { return };
        let was_resting = order.state == OrderState::Open && !order.market;
        let (instr, side, price, remaining, account) =
            (order.instr, order.side, order.price, order.remaining(), order.account);
        order.state = state;
        order.cancel_reason = reason;
        order.updated_ms = now_ms;
        batch.touch(account, id);
        if was_resting {
            let key = self.key_of(id);
            if self.instrs[instr].book.orders_at(side, price).contains(&key) {
                self.note_before(instr, side, price, batch);
                self.instrs[instr].book.remove(side, price, key, remaining, &mut batch.changes);
            }
        }
    }

    /// Turns a batch into events: one book change, the public trades, one user bundle per account.
    pub(super) fn flush(&mut self, now: Utc, instr: usize, batch: Batch, out: &mut Vec<Event>) {
        let now_ms = now.as_millis();
        let existed = batch.existed;
        let net = net_changes(&batch.changes, |side, price| existed.iter().any(|(s, p)| *s == side && *p == price));
        self.next_change(instr, now_ms, net, out);
        if !batch.trades.is_empty() {
            out.push(Event::Trades { instr, trades: batch.trades });
        }
        for (account, (ids, trades)) in batch.touched {
            if is_synthetic(account) {
                self.purge_closed(&ids);
                continue;
            }
            let orders = ids.iter().filter_map(|id| self.orders.get(id)).map(|o| self.render_order(o)).collect();
            let position = Box::new(self.render_position(account, instr));
            out.push(Event::User { account, instr, orders, trades, position });
        }
    }

    /// Synthetic orders are forgotten once closed, so a long run does not grow without bound.
    fn purge_closed(&mut self, ids: &[String]) {
        for id in ids {
            if self.orders.get(id).is_some_and(|o| o.state != OrderState::Open) {
                self.orders.remove(id);
                self.keys.remove(&self.key_of(id));
            }
        }
    }

    fn owned_open(&self, account: AccountId, id: &str) -> Result<&OrderRec, Reject> {
        let order = self.orders.get(id).ok_or_else(Reject::not_found)?;
        if order.account != account {
            return Err(Reject::not_found());
        }
        if order.state != OrderState::Open {
            return Err(Reject::new(11044, "not_open_order"));
        }
        Ok(order)
    }

    /// `private/cancel`.
    pub fn cancel(
        &mut self,
        now: Utc,
        account: AccountId,
        id: &str,
        out: &mut Vec<Event>,
    ) -> Result<api::Order, Reject> {
        let instr = self.owned_open(account, id)?.instr;
        let mut batch = Batch::default();
        self.close_order(id, OrderState::Cancelled, Some("user_request"), now.as_millis(), &mut batch);
        self.flush(now, instr, batch, out);
        self.orders.get(id).map(|o| self.render_order(o)).ok_or_else(Reject::not_found)
    }

    /// Cancels every open order of `account` that `filter` selects; returns them.
    pub fn cancel_where(
        &mut self,
        now: Utc,
        account: AccountId,
        filter: &Filter,
        reason: &'static str,
        out: &mut Vec<Event>,
    ) -> Vec<api::Order> {
        let ids: Vec<(usize, String)> = self
            .accounts
            .get(&account)
            .map(|a| a.orders.iter())
            .into_iter()
            .flatten()
            .filter_map(|id| self.orders.get(id))
            .filter(|o| o.state == OrderState::Open && self.matches(o, filter))
            .map(|o| (o.instr, o.id.clone()))
            .collect();
        let mut cancelled = Vec::with_capacity(ids.len());
        for (instr, id) in ids {
            let mut batch = Batch::default();
            self.close_order(&id, OrderState::Cancelled, Some(reason), now.as_millis(), &mut batch);
            self.flush(now, instr, batch, out);
            if let Some(order) = self.orders.get(&id) {
                cancelled.push(self.render_order(order));
            }
        }
        cancelled
    }

    /// `private/edit` / `edit_by_label`: size-down keeps priority; anything else re-queues.
    pub fn edit(
        &mut self,
        now: Utc,
        account: AccountId,
        id: &str,
        params: &api::EditParams,
        out: &mut Vec<Event>,
    ) -> Result<api::OrderWithTrades, Reject> {
        let order = self.owned_open(account, id)?.clone();
        let instr = order.instr;
        let amount = match (params.amount, params.contracts) {
            (None, None) => order.amount,
            (a, c) => self.parse_amount(instr, a, c)?,
        };
        if amount <= order.filled {
            return Err(Reject::param("amount", "must be above the filled amount"));
        }
        let mut price = match params.price {
            Some(p) if !order.market => self.parse_price(instr, p)?,
            _ => order.price,
        };
        let post_only = params.post_only.unwrap_or(order.post_only);
        let reject_post_only = params.reject_post_only.unwrap_or(order.reject_post_only);
        if post_only
            && let Some((best, _)) = self.instrs[instr].book.best(order.side.opposite())
            && order.side.crosses(price, best)
        {
            if reject_post_only {
                let mut batch = Batch::default();
                self.close_order(id, OrderState::Cancelled, Some("edit_post_only_reject"), now.as_millis(), &mut batch);
                self.flush(now, instr, batch, out);
                return Err(Reject::new(11054, "post_only_reject"));
            }
            price = best.offset(-order.side.sign());
        }
        let now_ms = now.as_millis();
        let mut batch = Batch::default();
        batch.touch(account, id);
        let key = self.key_of(id);
        let keeps_priority = price == order.price && amount <= order.amount;
        if keeps_priority {
            let by = order.amount - amount;
            if by.raw() > 0 {
                self.note_before(instr, order.side, price, &mut batch);
                self.instrs[instr].book.reduce(order.side, price, by, &mut batch.changes);
            }
        } else {
            self.note_before(instr, order.side, order.price, &mut batch);
            self.instrs[instr].book.remove(order.side, order.price, key, order.remaining(), &mut batch.changes);
        }
        if let Some(rec) = self.orders.get_mut(id) {
            rec.amount = amount;
            rec.price = price;
            rec.post_only = post_only;
            rec.reject_post_only = reject_post_only;
            rec.replaced = true;
            rec.updated_ms = now_ms;
            if let Some(r) = params.reduce_only {
                rec.reduce_only = r;
            }
        }
        if !keeps_priority {
            self.execute(now_ms, id, &mut batch);
        }
        let result = self.result_of(id, account, &batch);
        self.flush(now, instr, batch, out);
        Ok(result)
    }

    /// `private/close_position`: a reduce-only order for the whole position.
    pub fn close_position(
        &mut self,
        now: Utc,
        account: AccountId,
        params: &api::ClosePositionParams,
        out: &mut Vec<Event>,
    ) -> Result<api::OrderWithTrades, Reject> {
        let instr = self.find(&params.instrument_name).ok_or_else(Reject::instrument)?;
        let size = self.accounts.get(&account).and_then(|a| a.positions.get(&instr)).map_or(0, |p| p.size);
        if size == 0 {
            return Err(Reject::new(11030, "other_reject no position to close"));
        }
        let side = if size > 0 { Side::Sell } else { Side::Buy };
        let spec = &self.instrs[instr].spec;
        let amount = Num(spec.qty_to_decimal(Qty::from_raw(size.abs())));
        let order = api::OrderParams {
            instrument_name: params.instrument_name.clone(),
            amount: Some(amount),
            order_type: Some(params.order_type.clone()),
            price: params.price,
            reduce_only: Some(true),
            ..api::OrderParams::default()
        };
        self.place(now, account, side, &order, out)
    }
}

fn is_synthetic(account: AccountId) -> bool {
    account == MAKER || account == TAKER
}

fn neg(value: Decimal) -> Decimal {
    Decimal::new(-value.mantissa(), value.scale()).unwrap_or(Decimal::ZERO)
}
