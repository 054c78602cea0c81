//! The venue's state as Deribit API objects: orders, trades, positions, tickers, books, accounts.
//!
//! Owns: the conversion of ticks/lots into exact decimals and the constant fields the simulator
//! reports (no margin model: margins are zero, balances fixed; see `account_summary`).
//! Must not: mutate the venue.

use ticktrade_core::{Decimal, InstrumentSpec, Price, Qty, Settlement, Side};
use ticktrade_deribit_proto::api::{self, Num};

use super::{AccountId, OrderRec, OrderState, Venue};

/// `a / b` to `scale` decimal places (truncated), exact integer arithmetic.
pub fn div(a: Decimal, b: Decimal, scale: u8) -> Decimal {
    if b.is_zero() {
        return Decimal::ZERO;
    }
    // a/b = (ma / mb) · 10^(sb - sa); mantissa at `scale` = ma · 10^(scale + sb - sa) / mb.
    let shift = i32::from(scale) + i32::from(b.scale()) - i32::from(a.scale());
    let mut num = i128::from(a.mantissa());
    let mut den = i128::from(b.mantissa());
    if shift >= 0 {
        num = num.saturating_mul(10i128.saturating_pow(shift.unsigned_abs()));
    } else {
        den = den.saturating_mul(10i128.saturating_pow(shift.unsigned_abs()));
    }
    i64::try_from(num / den).ok().and_then(|m| Decimal::new(m, scale).ok()).unwrap_or(Decimal::ZERO)
}

fn price_num(spec: &InstrumentSpec, price: Price) -> Num {
    Num(spec.price_to_decimal(price))
}

fn qty_num(spec: &InstrumentSpec, qty: Qty) -> Num {
    Num(spec.qty_to_decimal(qty))
}

/// Average of Σ price·qty over qty, in price units (8 extra places, truncated).
fn average(spec: &InstrumentSpec, notional: i128, qty: i64) -> Num {
    if qty == 0 {
        return Num::ZERO;
    }
    let ticks = i64::try_from(notional).ok().and_then(|n| Decimal::new(n, 0).ok()).unwrap_or(Decimal::ZERO);
    let avg_ticks = div(ticks, Decimal::from_int(qty), 8);
    Num(avg_ticks.checked_mul(spec.tick()).unwrap_or(Decimal::ZERO))
}

/// The fee of one fill in the settlement currency: commission × notional, where the notional
/// of an inverse instrument is amount / price (truncated to 10 places) and of a linear one
/// amount × price.
pub fn fee_of(spec: &InstrumentSpec, info: &api::Instrument, price: Price, qty: Qty, maker: bool) -> Decimal {
    let commission = if maker { info.maker_commission.0 } else { info.taker_commission.0 };
    let amount = spec.qty_to_decimal(qty);
    let price = spec.price_to_decimal(price);
    let notional = match spec.settlement {
        Settlement::Inverse if info.kind != "option" => div(amount, price, 10),
        _ if info.kind == "option" => amount.checked_mul(price).unwrap_or(Decimal::ZERO),
        _ => amount.checked_mul(price).unwrap_or(Decimal::ZERO),
    };
    let fee = notional.checked_mul(commission).unwrap_or(Decimal::ZERO);
    // Keep 10 places, as Deribit reports fees (truncating keeps the arithmetic exact).
    div(fee, Decimal::ONE, 10)
}

impl Venue {
    pub(super) fn render_order(&self, order: &OrderRec) -> api::Order {
        let spec = &self.instrs[order.instr].spec;
        let average_price = average(spec, order.fill_notional, order.filled.raw());
        let price = if order.market {
            // Deribit shows "market_price"; the simulator reports the average (or 0) as a number.
            average_price
        } else {
            price_num(spec, order.price)
        };
        api::Order {
            order_id: order.id.clone(),
            instrument_name: spec.name.clone(),
            direction: order.side.as_str().to_owned(),
            amount: qty_num(spec, order.amount),
            contracts: Some(Num(div(spec.qty_to_decimal(order.amount), spec.contract_size, 8))),
            filled_amount: qty_num(spec, order.filled),
            price,
            average_price,
            order_state: order.state.as_str().to_owned(),
            order_type: if order.market { "market" } else { "limit" }.to_owned(),
            time_in_force: order.tif.as_str().to_owned(),
            post_only: order.post_only,
            reduce_only: order.reduce_only,
            replaced: order.replaced,
            label: order.label.clone(),
            max_show: qty_num(spec, order.amount),
            api: true,
            web: false,
            is_liquidation: false,
            is_rebalance: false,
            creation_timestamp: order.created_ms,
            last_update_timestamp: order.updated_ms,
            cancel_reason: (order.state == OrderState::Cancelled)
                .then(|| order.cancel_reason.unwrap_or("user_request").to_owned()),
            reject_post_only: order.post_only.then_some(order.reject_post_only),
            ..api::Order::default()
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn render_public_trade(
        &self,
        instr: usize,
        trade_id: &str,
        trade_seq: i64,
        taker: Side,
        price: Price,
        qty: Qty,
        tick_direction: i32,
        now_ms: i64,
    ) -> api::PublicTrade {
        let state = &self.instrs[instr];
        api::PublicTrade {
            trade_id: trade_id.to_owned(),
            trade_seq,
            instrument_name: state.spec.name.clone(),
            direction: taker.as_str().to_owned(),
            price: price_num(&state.spec, price),
            amount: qty_num(&state.spec, qty),
            contracts: Some(Num(div(state.spec.qty_to_decimal(qty), state.spec.contract_size, 8))),
            index_price: price_num(&state.spec, state.index),
            mark_price: price_num(&state.spec, state.index),
            tick_direction,
            timestamp: now_ms,
        }
    }

    pub(super) fn render_user_trade(
        &self,
        order: &OrderRec,
        public: &api::PublicTrade,
        liquidity: &str,
    ) -> api::UserTrade {
        let info = &self.instrs[order.instr].info;
        api::UserTrade {
            trade_id: public.trade_id.clone(),
            trade_seq: public.trade_seq,
            order_id: order.id.clone(),
            instrument_name: public.instrument_name.clone(),
            direction: order.side.as_str().to_owned(),
            price: public.price,
            amount: public.amount,
            contracts: public.contracts,
            fee: Num::ZERO,
            fee_currency: info.settlement_currency.clone(),
            liquidity: liquidity.to_owned(),
            mark_price: public.mark_price,
            index_price: public.index_price,
            matching_id: None,
            order_type: if order.market { "market" } else { "limit" }.to_owned(),
            post_only: order.post_only,
            reduce_only: order.reduce_only,
            state: order.state.as_str().to_owned(),
            tick_direction: public.tick_direction,
            timestamp: public.timestamp,
            label: (!order.label.is_empty()).then(|| order.label.clone()),
            profit_loss: Some(Num::ZERO),
            self_trade: Some(false),
            api: Some(true),
        }
    }

    /// The position object of `account` on `instr` (a zero-size object when flat: the
    /// simulator's choice for the undocumented case).
    pub fn render_position(&self, account: AccountId, instr: usize) -> api::Position {
        let state = &self.instrs[instr];
        let spec = &state.spec;
        let pos = self.accounts.get(&account).and_then(|a| a.positions.get(&instr)).copied().unwrap_or_default();
        let size = spec.qty_to_decimal(Qty::from_raw(pos.size));
        let index = spec.price_to_decimal(state.index);
        let size_currency = match spec.settlement {
            Settlement::Inverse => div(size, index, 8),
            Settlement::Linear => size,
        };
        let direction = match pos.size {
            0 => "zero",
            s if s > 0 => "buy",
            _ => "sell",
        };
        let perpetual = state.info.settlement_period.as_deref() == Some("perpetual");
        api::Position {
            instrument_name: spec.name.clone(),
            kind: state.info.kind.clone(),
            direction: direction.to_owned(),
            size: Num(size),
            size_currency: Some(Num(size_currency)),
            average_price: average(spec, pos.open_notional, pos.size.abs()),
            mark_price: Num(index),
            index_price: Num(index),
            settlement_price: Num(index),
            delta: Num(size_currency),
            initial_margin: Num::ZERO,
            maintenance_margin: Num::ZERO,
            open_orders_margin: Some(Num::ZERO),
            floating_profit_loss: Num::ZERO,
            realized_profit_loss: Num::ZERO,
            total_profit_loss: Num::ZERO,
            estimated_liquidation_price: Some(Num::ZERO),
            leverage: Some(50),
            interest_value: perpetual.then_some(Num::ZERO),
            realized_funding: perpetual.then_some(Num::ZERO),
        }
    }

    /// `public/ticker` for `instr` at `now_ms`.
    pub fn ticker(&self, instr: usize, now_ms: i64) -> api::Ticker {
        let state = &self.instrs[instr];
        let spec = &state.spec;
        let bid = state.book.best(Side::Buy);
        let ask = state.book.best(Side::Sell);
        let index = price_num(spec, state.index);
        let band = (state.index.raw() / 20).max(1);
        let perpetual = state.info.settlement_period.as_deref() == Some("perpetual");
        let volume = spec.qty_to_decimal(state.volume);
        api::Ticker {
            instrument_name: spec.name.clone(),
            timestamp: now_ms,
            state: "open".to_owned(),
            stats: api::TickerStats {
                high: state.high.map(|p| price_num(spec, p)),
                low: state.low.map(|p| price_num(spec, p)),
                price_change: None,
                volume: Num(volume),
                volume_usd: (spec.settlement == Settlement::Inverse).then_some(Num(volume)),
            },
            open_interest: Num(self.open_interest(instr)),
            best_bid_price: Some(bid.map_or(Num::ZERO, |(p, _)| price_num(spec, p))),
            best_bid_amount: bid.map_or(Num::ZERO, |(_, q)| qty_num(spec, q)),
            best_ask_price: Some(ask.map_or(Num::ZERO, |(p, _)| price_num(spec, p))),
            best_ask_amount: ask.map_or(Num::ZERO, |(_, q)| qty_num(spec, q)),
            index_price: index,
            estimated_delivery_price: index,
            min_price: price_num(spec, state.index.offset(-band)),
            max_price: price_num(spec, state.index.offset(band)),
            mark_price: index,
            last_price: Some(state.last_price.map_or(index, |p| price_num(spec, p))),
            settlement_price: index,
            current_funding: perpetual.then_some(Num::ZERO),
            funding_8h: perpetual.then_some(Num::ZERO),
            interest_value: perpetual.then_some(Num::ZERO),
        }
    }

    fn open_interest(&self, instr: usize) -> Decimal {
        let longs: i64 = self.accounts.values().filter_map(|a| a.positions.get(&instr)).map(|p| p.size.max(0)).sum();
        self.instrs[instr].spec.qty_to_decimal(Qty::from_raw(longs))
    }

    /// `public/get_order_book`.
    pub fn order_book(&self, instr: usize, depth: usize, now_ms: i64) -> api::OrderBook {
        let spec = &self.instrs[instr].spec;
        let side =
            |s| self.levels(instr, s, depth).into_iter().map(|(p, q)| (price_num(spec, p), qty_num(spec, q))).collect();
        api::OrderBook {
            ticker: self.ticker(instr, now_ms),
            change_id: self.change_id(instr),
            bids: side(Side::Buy),
            asks: side(Side::Sell),
        }
    }

    /// `public/get_book_summary_by_*`.
    pub fn book_summary(&self, instr: usize, now_ms: i64) -> api::BookSummary {
        let ticker = self.ticker(instr, now_ms);
        let info = &self.instrs[instr].info;
        let bid = ticker.best_bid_price.filter(|p| !p.0.is_zero());
        let ask = ticker.best_ask_price.filter(|p| !p.0.is_zero());
        let mid = match (bid, ask) {
            (Some(b), Some(a)) => b.0.checked_add(a.0).map(|s| Num(div(s, Decimal::from_int(2), 8))),
            _ => None,
        };
        api::BookSummary {
            instrument_name: info.instrument_name.clone(),
            base_currency: info.base_currency.clone(),
            quote_currency: info.quote_currency.clone(),
            creation_timestamp: now_ms,
            volume: ticker.stats.volume,
            volume_usd: ticker.stats.volume_usd,
            open_interest: ticker.open_interest,
            high: ticker.stats.high,
            low: ticker.stats.low,
            last: ticker.last_price,
            price_change: None,
            bid_price: bid,
            ask_price: ask,
            mid_price: mid,
            mark_price: ticker.mark_price,
            estimated_delivery_price: Some(ticker.estimated_delivery_price),
            current_funding: ticker.current_funding,
            funding_8h: ticker.funding_8h,
        }
    }

    /// `private/get_account_summary` / `user.portfolio.*`: fixed balances, no margin model.
    pub fn account_summary(&self, account: AccountId, currency: &str, extended: bool) -> api::AccountSummary {
        let balance = Num(self.balance(account, currency));
        let limits = serde_json::json!({
            "limits_per_currency": false,
            "non_matching_engine": {"burst": 100, "rate": 20},
            "matching_engine": {"trading": {"total": {"burst": 50, "rate": 20}}, "cancel_all": {"burst": 50, "rate": 20}}
        });
        api::AccountSummary {
            currency: currency.to_ascii_uppercase(),
            balance,
            equity: balance,
            available_funds: balance,
            available_withdrawal_funds: balance,
            margin_balance: balance,
            margin_model: "segregated_sm".to_owned(),
            extended: extended.then(|| api::AccountExtended {
                id: i64::from(account),
                email: format!("sim{account}@ticktrade.invalid"),
                username: format!("sim{account}"),
                system_name: format!("sim{account}"),
                account_type: "main".to_owned(),
                creation_timestamp: self.started_ms,
                self_trading_reject_mode: "cancel_maker".to_owned(),
                limits,
                ..api::AccountExtended::default()
            }),
            ..api::AccountSummary::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn div_is_truncated_and_exact() {
        let d = |s: &str| Decimal::parse(s).unwrap();
        assert_eq!(div(d("10"), d("4"), 8), d("2.5"));
        assert_eq!(div(d("1"), d("3"), 4), d("0.3333"));
        assert_eq!(div(d("0.5"), d("0.25"), 2), d("2"));
        assert_eq!(div(d("1"), d("0"), 2), Decimal::ZERO);
    }
}
