//! The exchange's state as Deribit API objects: instruments, orders, trades, positions,
//! tickers, books, book summaries and account summaries.
//!
//! Owns: turning ticks, lots and `Money` into exact decimals, the constant fields the
//! simulator reports (no funding, no liquidation model: those fields are 0), and the option
//! fields Deribit adds to tickers, book summaries and trades (`greeks` computes them).
//! Must not: mutate the exchange.

use ticktrade_core::{Decimal, InstrumentId, InstrumentKind, InstrumentSpec, OptionType, Price, Qty, Settlement, Side};
use ticktrade_deribit_proto::api::{self, Num};
use ticktrade_deribit_proto::ratelimit::RateLimits;
use ticktrade_exchange::{
    AccountId as ExAccount, CancelReason, Catalogue, Instrument, Money, Order, OrderState, OrderType, PublicTrade,
    UserTrade,
};

use super::greeks::{self, OptionInputs};
use super::{AccountId, Market};

/// Exact money as a JSON number.
pub fn money(value: Money) -> Num {
    Num(value.to_decimal())
}

fn price_num(spec: &InstrumentSpec, price: Price) -> Num {
    Num(spec.price_to_decimal(price))
}

fn qty_num(spec: &InstrumentSpec, qty: Qty) -> Num {
    Num(spec.qty_to_decimal(qty))
}

fn contracts(spec: &InstrumentSpec, qty: Qty) -> Num {
    let amount = Money::from_decimal(spec.qty_to_decimal(qty));
    money(amount / Money::from_decimal(spec.contract_size))
}

/// Σ price·qty (ticks × lots) over qty, in price units.
fn average(spec: &InstrumentSpec, notional: i128, qty: i64) -> Num {
    if qty == 0 {
        return Num::ZERO;
    }
    let tick = Money::from_decimal(spec.tick());
    match i64::try_from(notional) {
        Ok(n) => money(tick.mul_ratio(n, qty)),
        Err(_) => money(Money::from_f64_model(notional as f64 / qty as f64) * tick),
    }
}

fn expiry_ms(inst: &Instrument) -> i64 {
    inst.expiration_timestamp.map_or(ticktrade_deribit_proto::instrument::PERPETUAL_EXPIRY_MS, |t| t.as_millis())
}

/// The `get_instruments` object of a built-in instrument.
pub fn instrument_info(catalogue: &Catalogue, inst: &Instrument) -> api::Instrument {
    let spec = &inst.spec;
    let kind = match spec.kind {
        InstrumentKind::Future => "future",
        InstrumentKind::Option => "option",
        InstrumentKind::Spot => "spot",
        InstrumentKind::FutureCombo => "future_combo",
        InstrumentKind::OptionCombo => "option_combo",
    };
    let linear = spec.settlement == Settlement::Linear;
    let instrument_type = if linear { "linear" } else { "reversed" };
    let future = spec.kind == InstrumentKind::Future;
    let steps = spec
        .tick_rule
        .steps()
        .map(|s| api::TickSizeStep { above_price: Num(s.above_price), tick_size: Num(s.tick) })
        .collect();
    api::Instrument {
        instrument_name: spec.name.clone(),
        instrument_id: inst.instrument_id,
        kind: kind.to_owned(),
        instrument_type: instrument_type.to_owned(),
        future_type: future.then(|| instrument_type.to_owned()),
        base_currency: spec.base_currency.clone(),
        quote_currency: spec.quote_currency.clone(),
        counter_currency: spec.quote_currency.clone(),
        settlement_currency: catalogue.currency_name(inst.settlement_currency).to_owned(),
        settlement_period: (spec.kind != InstrumentKind::Spot).then(|| inst.settlement_period.as_str().to_owned()),
        price_index: inst.price_index.clone(),
        tick_size: Num(spec.tick()),
        tick_size_steps: steps,
        contract_size: Num(spec.contract_size),
        min_trade_amount: Num(spec.min_trade_amount),
        maker_commission: Num(inst.maker_commission),
        taker_commission: Num(inst.taker_commission),
        max_leverage: future.then_some(i64::from(inst.max_leverage)),
        max_liquidation_commission: future.then(|| Num(Decimal::new(75, 4).unwrap_or(Decimal::ZERO))),
        block_trade_commission: Num(inst.block_trade_commission),
        block_trade_min_trade_amount: Num(inst.block_trade_min_trade_amount),
        block_trade_tick_size: Num(inst.block_trade_tick_size),
        is_active: inst.is_active,
        state: "open".to_owned(),
        creation_timestamp: inst.creation_timestamp.as_millis(),
        expiration_timestamp: expiry_ms(inst),
        strike: spec.strike.map(Num),
        option_type: spec.option_type.map(|t| t.as_str().to_owned()),
    }
}

impl Market {
    pub fn render_order(&self, order: &Order) -> api::Order {
        let spec = self.spec(order.instrument);
        let average_price = average(spec, order.filled_notional, order.filled.raw());
        // A market-type order has no price: Deribit writes "market_price" while it waits for
        // its trigger, and the average price once it has traded (or was triggered).
        let price = match order.price {
            Some(p) => api::OrderPrice::Value(price_num(spec, p)),
            None if order.order_type.is_trigger() && !order.triggered => api::OrderPrice::MarketPrice,
            None => api::OrderPrice::Value(average_price),
        };
        let trigger = order.trigger;
        api::Order {
            order_id: self.order_id_text(order),
            instrument_name: spec.name.clone(),
            direction: order.side.as_str().to_owned(),
            amount: qty_num(spec, order.amount),
            contracts: Some(contracts(spec, order.amount)),
            filled_amount: qty_num(spec, order.filled),
            price,
            average_price,
            order_state: order.state.as_str().to_owned(),
            order_type: order.order_type.as_str().to_owned(),
            time_in_force: order.time_in_force.as_str().to_owned(),
            post_only: order.post_only,
            reduce_only: order.reduce_only,
            replaced: order.replaced,
            label: order.label.as_str().to_owned(),
            max_show: qty_num(spec, order.amount),
            // Deribit marks quotes `api: false` (they come through the mass-quote interface).
            api: order.quote.is_none(),
            web: false,
            is_liquidation: false,
            is_rebalance: false,
            creation_timestamp: order.created.as_millis(),
            last_update_timestamp: order.updated.as_millis(),
            cancel_reason: (order.state == OrderState::Cancelled)
                .then(|| order.cancel_reason.map_or("user_request", |r| r.as_str()).to_owned()),
            reject_post_only: order.post_only.then_some(order.reject_post_only),
            trigger_price: trigger.map(|t| price_num(spec, t.price)),
            trigger: trigger.map(|t| t.kind.as_str().to_owned()),
            triggered: order.order_type.is_trigger().then_some(order.triggered),
            trigger_offset: trigger.and_then(|t| t.offset).map(|ticks| price_num(spec, Price::from_raw(ticks))),
            trigger_reference_price: trigger
                .filter(|t| t.offset.is_some())
                .map(|t| money(Money::from_f64_model(t.reference))),
            trigger_order_id: order.trigger_order_id.and_then(|id| self.ex.order(id)).map(|t| self.order_id_text(t)),
            mmp: order.mmp,
            mmp_cancelled: (order.cancel_reason == Some(CancelReason::MmpTrigger)).then_some(true),
            quote: order.quote.map(|_| true),
            mmp_group: order.quote.map(|_| order.mmp_group.as_str().to_owned()),
            quote_set_id: order.quote.map(|q| q.quote_set_id.as_str().to_owned()),
            quote_id: order.quote.map(|q| q.quote_id.as_str().to_owned()),
        }
    }

    pub fn trade_id_text(&self, instrument: InstrumentId, trade_id: u64) -> String {
        let mut text = String::new();
        self.ex.write_trade_id(instrument, trade_id, &mut text);
        text
    }

    pub fn render_public_trade(&self, trade: &PublicTrade) -> api::PublicTrade {
        let spec = self.spec(trade.instrument);
        api::PublicTrade {
            trade_id: self.trade_id_text(trade.instrument, trade.trade_id),
            trade_seq: trade.trade_seq as i64,
            instrument_name: spec.name.clone(),
            direction: trade.direction.as_str().to_owned(),
            price: price_num(spec, trade.price),
            amount: qty_num(spec, trade.qty),
            contracts: Some(contracts(spec, trade.qty)),
            index_price: money(trade.index_price),
            mark_price: money(trade.mark_price),
            tick_direction: i32::from(trade.tick_direction),
            timestamp: trade.timestamp.as_millis(),
            iv: self.trade_iv(trade.instrument, trade.index_price, trade.price, trade.timestamp.as_millis()),
        }
    }

    /// The model inputs of an option at `underlying` and `now_ms`; `None` for other kinds.
    fn option_inputs(&self, instrument: InstrumentId, underlying: Money, now_ms: i64) -> Option<OptionInputs> {
        let spec = self.spec(instrument);
        let strike = spec.strike.filter(|_| spec.kind == InstrumentKind::Option)?;
        Some(OptionInputs::new(
            underlying.to_f64_lossy(),
            strike.to_f64_lossy(),
            now_ms,
            expiry_ms(self.ex.catalogue().get(instrument)?),
            spec.option_type? == OptionType::Call,
            spec.settlement == Settlement::Inverse,
        ))
    }

    /// An option trade's implied volatility (percent); `None` for other kinds.
    fn trade_iv(&self, instrument: InstrumentId, index: Money, price: Price, at_ms: i64) -> Option<Num> {
        let option = self.option_inputs(instrument, index, at_ms)?;
        let price = self.spec(instrument).price_to_decimal(price).to_f64_lossy();
        Some(greeks::iv_percent(option.implied_vol(price)))
    }

    pub fn render_user_trade(&self, trade: &UserTrade) -> api::UserTrade {
        let spec = self.spec(trade.instrument);
        let quote = self.ex.quote_of_trade(trade);
        let order_id = self.ex.order(trade.order_id).map_or_else(
            || {
                format!(
                    "{}-{}",
                    self.ex.catalogue().get(trade.instrument).map_or("X", |i| &i.order_id_prefix),
                    trade.order_id
                )
            },
            |o| self.order_id_text(o),
        );
        api::UserTrade {
            trade_id: self.trade_id_text(trade.instrument, trade.trade_id),
            trade_seq: trade.trade_seq as i64,
            order_id,
            instrument_name: spec.name.clone(),
            direction: trade.side.as_str().to_owned(),
            price: price_num(spec, trade.price),
            amount: qty_num(spec, trade.qty),
            contracts: Some(contracts(spec, trade.qty)),
            fee: money(trade.fee),
            fee_currency: self.ex.catalogue().currency_name(trade.fee_currency).to_owned(),
            liquidity: trade.liquidity.as_str().to_owned(),
            mark_price: money(trade.mark_price),
            index_price: money(trade.index_price),
            matching_id: None,
            order_type: trade.order_type.as_str().to_owned(),
            post_only: trade.post_only,
            reduce_only: trade.reduce_only,
            state: trade.state.as_str().to_owned(),
            tick_direction: i32::from(trade.tick_direction),
            timestamp: trade.timestamp.as_millis(),
            label: (!trade.label.is_empty()).then(|| trade.label.as_str().to_owned()),
            profit_loss: Some(money(trade.profit_loss)),
            self_trade: Some(false),
            api: Some(true),
            quote_set_id: quote.map(|q| q.quote_set_id.as_str().to_owned()),
            quote_id: quote.map(|q| q.quote_id.as_str().to_owned()),
            iv: self.trade_iv(trade.instrument, trade.index_price, trade.price, trade.timestamp.as_millis()),
            underlying_price: (spec.kind == InstrumentKind::Option).then(|| money(trade.index_price)),
        }
    }

    /// The position object of `account` on `instrument` (a zero-size object when flat).
    pub fn render_position(&self, account: AccountId, instrument: InstrumentId) -> api::Position {
        let spec = self.spec(instrument);
        let info = self.info(instrument);
        let Some(view) = self.ex.position_view(ExAccount(account), instrument) else {
            return api::Position { instrument_name: spec.name.clone(), ..api::Position::default() };
        };
        let pos = view.position;
        let perpetual = info.settlement_period.as_deref() == Some("perpetual");
        let future = spec.kind == InstrumentKind::Future;
        api::Position {
            instrument_name: spec.name.clone(),
            kind: info.kind.clone(),
            direction: pos.direction().to_owned(),
            size: money(view.size_amount),
            size_currency: future.then(|| money(view.size_currency)),
            average_price: money(pos.average_price),
            mark_price: money(view.mark_price),
            index_price: money(view.index_price),
            settlement_price: money(view.mark_price),
            delta: money(view.delta),
            initial_margin: money(view.initial_margin),
            maintenance_margin: money(view.maintenance_margin),
            open_orders_margin: Some(Num::ZERO),
            floating_profit_loss: money(view.floating_pnl),
            realized_profit_loss: money(pos.realized_pnl),
            total_profit_loss: money(view.total_pnl),
            estimated_liquidation_price: Some(Num::ZERO),
            leverage: future.then_some(50),
            interest_value: perpetual.then_some(Num::ZERO),
            realized_funding: perpetual.then_some(Num::ZERO),
        }
    }

    /// Instruments where `account` holds a position, in catalogue order.
    pub fn position_instruments(&self, account: AccountId) -> Vec<InstrumentId> {
        self.ex.positions(ExAccount(account), None, None).into_iter().map(|p| p.instrument).collect()
    }

    /// `public/ticker` for `instrument` at `now_ms`.
    pub fn ticker(&self, instrument: InstrumentId, now_ms: i64) -> api::Ticker {
        let spec = self.spec(instrument);
        let info = self.info(instrument);
        let t = self.ex.ticker(instrument);
        let bid = t.and_then(|t| t.best_bid);
        let ask = t.and_then(|t| t.best_ask);
        let mark = t.map_or(Money::ZERO, |t| t.mark_price);
        let index = t.map_or(Money::ZERO, |t| t.index_price);
        let volume = t.map_or(Qty::ZERO, |t| t.volume);
        let open_interest = t.map_or(0, |t| t.open_interest);
        let candles = self.ex.candles(instrument, ticktrade_core::Utc(0), ticktrade_core::Utc(i64::MAX), 1_440);
        let high = candles.iter().map(|c| c.high).max();
        let low = candles.iter().map(|c| c.low).min();
        // Price band of ±5 % around the mark (Deribit's `min_price`/`max_price`).
        let band = mark.mul_ratio(1, 20);
        let round = |m: Money| {
            let ticks = (m / Money::from_decimal(spec.tick())).to_decimal();
            let whole = ticks.mantissa() / 10_i64.pow(u32::from(ticks.scale()));
            price_num(spec, Price::from_raw(whole.max(0)))
        };
        let perpetual = info.settlement_period.as_deref() == Some("perpetual");
        let volume_num = qty_num(spec, volume);
        let option = self.option_inputs(instrument, index, now_ms);
        let price_f64 = |p: Price| spec.price_to_decimal(p).to_f64_lossy();
        let mark_vol = option.and_then(|o| o.implied_vol(mark.to_f64_lossy()));
        let side_iv =
            |price: Option<Price>| option.map(|o| greeks::iv_percent(price.and_then(|p| o.implied_vol(price_f64(p)))));
        api::Ticker {
            instrument_name: spec.name.clone(),
            timestamp: now_ms,
            state: "open".to_owned(),
            stats: api::TickerStats {
                high: high.map(|p| price_num(spec, p)),
                low: low.map(|p| price_num(spec, p)),
                price_change: None,
                volume: volume_num,
                volume_usd: (spec.kind == InstrumentKind::Future).then(|| match spec.settlement {
                    // Inverse futures trade USD amounts; linear ones coin amounts, valued at the mark.
                    Settlement::Inverse => volume_num,
                    Settlement::Linear => money(Money::from_decimal(volume_num.0) * mark),
                }),
            },
            open_interest: qty_num(spec, Qty::from_raw(open_interest)),
            best_bid_price: Some(bid.map_or(Num::ZERO, |l| price_num(spec, l.price))),
            best_bid_amount: bid.map_or(Num::ZERO, |l| qty_num(spec, l.qty)),
            best_ask_price: Some(ask.map_or(Num::ZERO, |l| price_num(spec, l.price))),
            best_ask_amount: ask.map_or(Num::ZERO, |l| qty_num(spec, l.qty)),
            index_price: money(index),
            estimated_delivery_price: money(index),
            min_price: round(mark - band),
            max_price: round(mark + band),
            mark_price: money(mark),
            last_price: Some(t.and_then(|t| t.last).map_or(money(mark), |p| price_num(spec, p))),
            settlement_price: money(mark),
            current_funding: perpetual.then_some(Num::ZERO),
            funding_8h: perpetual.then_some(Num::ZERO),
            interest_value: perpetual.then_some(Num::ZERO),
            underlying_price: option.map(|_| money(index)),
            underlying_index: option.map(|_| "index_price".to_owned()),
            interest_rate: option.map(|_| Num::ZERO),
            mark_iv: option.map(|_| greeks::iv_percent(mark_vol)),
            bid_iv: side_iv(bid.map(|l| l.price)),
            ask_iv: side_iv(ask.map(|l| l.price)),
            // At a mark no volatility explains (under the intrinsic value), the greeks of the
            // lowest volatility searched: those of the payoff.
            greeks: option.map(|o| greeks::render_greeks(o.greeks(mark_vol.unwrap_or(1e-4)))),
        }
    }

    /// `public/get_order_book`.
    pub fn order_book(&self, instrument: InstrumentId, depth: usize, now_ms: i64) -> api::OrderBook {
        let spec = self.spec(instrument);
        let side = |s| {
            self.levels(instrument, s, depth).into_iter().map(|(p, q)| (price_num(spec, p), qty_num(spec, q))).collect()
        };
        api::OrderBook {
            ticker: self.ticker(instrument, now_ms),
            change_id: self.change_id(instrument),
            bids: side(Side::Buy),
            asks: side(Side::Sell),
        }
    }

    /// `public/get_book_summary_by_*`.
    pub fn book_summary(&self, instrument: InstrumentId, now_ms: i64) -> api::BookSummary {
        let ticker = self.ticker(instrument, now_ms);
        let info = self.info(instrument);
        let bid = ticker.best_bid_price.filter(|p| !p.0.is_zero());
        let ask = ticker.best_ask_price.filter(|p| !p.0.is_zero());
        let mid = match (bid, ask) {
            (Some(b), Some(a)) => Some(money((Money::from_decimal(b.0) + Money::from_decimal(a.0)).div_int(2))),
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
            underlying_price: ticker.underlying_price,
            underlying_index: ticker.underlying_index,
            interest_rate: ticker.interest_rate,
            mark_iv: ticker.mark_iv,
        }
    }

    /// `private/get_account_summary` / `user.portfolio.*`, from the exchange's exact accounts.
    pub fn account_summary(&self, account: AccountId, currency: &str, extended: bool) -> api::AccountSummary {
        let name = currency.to_ascii_uppercase();
        let s = self.ex.catalogue().currency(&name).map(|c| self.ex.account_summary(ExAccount(account), c));
        let s = s.unwrap_or_default();
        // The documented defaults the sessions' credits start from.
        let RateLimits { non_matching: other, matching: me, .. } = RateLimits::default();
        let me = serde_json::json!({"burst": me.burst(), "rate": me.rate_per_s()});
        let limits = serde_json::json!({
            "limits_per_currency": false,
            "non_matching_engine": {"burst": other.burst(), "rate": other.rate_per_s()},
            "matching_engine": {"trading": {"total": me}, "cancel_all": me}
        });
        api::AccountSummary {
            currency: name,
            balance: money(s.balance),
            equity: money(s.equity),
            available_funds: money(s.available_funds),
            available_withdrawal_funds: money(s.available_funds.min(s.balance).max(Money::ZERO)),
            margin_balance: money(s.margin_balance),
            initial_margin: money(s.initial_margin),
            maintenance_margin: money(s.maintenance_margin),
            projected_initial_margin: money(s.initial_margin),
            projected_maintenance_margin: money(s.maintenance_margin),
            delta_total: money(s.delta_total),
            projected_delta_total: money(s.delta_total),
            total_pl: money(s.total_pl),
            session_rpl: money(s.session_rpl),
            session_upl: money(s.session_upl),
            futures_pl: money(s.total_pl),
            futures_session_rpl: money(s.session_rpl),
            futures_session_upl: money(s.session_upl),
            margin_model: "segregated_sm".to_owned(),
            extended: extended.then(|| api::AccountExtended {
                id: i64::from(account),
                email: format!("sim{account}@ticktrade.invalid"),
                username: format!("sim{account}"),
                system_name: format!("sim{account}"),
                account_type: "main".to_owned(),
                creation_timestamp: self.started_ms(),
                self_trading_reject_mode: match self.ex.self_trade(ticktrade_exchange::AccountId(account)) {
                    ticktrade_exchange::SelfTrade::CancelMaker => "cancel_maker",
                    ticktrade_exchange::SelfTrade::RejectTaker => "reject_taker",
                }
                .to_owned(),
                limits,
                ..api::AccountExtended::default()
            }),
            ..api::AccountSummary::default()
        }
    }

    /// Whether the exchange's order type names a market order (no limit price).
    pub fn is_market(order_type: OrderType) -> bool {
        !order_type.needs_price()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use ticktrade_core::Utc;

    use super::*;

    const START_MS: i64 = 1_767_254_400_000;

    /// A market that has traded for two minutes under seed 7.
    fn traded() -> Market {
        let start = Utc::from_millis(START_MS);
        let (catalogue, infos) = crate::market::builtin_catalogue(start).unwrap();
        let mut market = Market::new(catalogue, infos, 7, 2_000, start);
        let mut out = Vec::new();
        for s in 0..120 {
            market.step(Utc::from_millis(START_MS + s * 1_000), &mut out);
        }
        market
    }

    fn f(num: Option<Num>) -> f64 {
        num.unwrap().0.to_f64_lossy()
    }

    #[test]
    fn futures_of_both_settlements_report_usd_volume() {
        let market = traded();
        let now = START_MS + 120_000;
        let linear = market.ticker(market.find("BTC_USDC-PERPETUAL").unwrap(), now);
        let (coins, mark) = (linear.stats.volume.0.to_f64_lossy(), linear.mark_price.0.to_f64_lossy());
        assert!(coins > 0.0, "no linear volume");
        assert!((f(linear.stats.volume_usd) - coins * mark).abs() < 1e-6 * coins * mark, "{linear:?}");
        let inverse = market.ticker(market.find("BTC-PERPETUAL").unwrap(), now);
        assert_eq!(inverse.stats.volume_usd, Some(inverse.stats.volume));
        let spot = market.ticker(market.find("BTC_USDC").unwrap(), now);
        assert_eq!(spot.stats.volume_usd, None);
    }

    #[test]
    fn option_tickers_summaries_and_trades_carry_their_model() {
        let market = traded();
        let now = START_MS + 120_000;
        let quoted = |name: &&str| {
            let t = market.ticker(market.find(name).unwrap(), now);
            t.best_bid_price.is_some_and(|p| !p.0.is_zero()) && t.best_ask_price.is_some_and(|p| !p.0.is_zero())
        };
        let names: Vec<&str> =
            market.instruments().filter(|(_, i)| i.kind == "option").map(|(_, i)| i.instrument_name.as_str()).collect();
        let name = *names.iter().find(|n| quoted(n)).unwrap();
        let id = market.find(name).unwrap();
        let t = market.ticker(id, now);
        assert_eq!(t.underlying_index.as_deref(), Some("index_price"));
        assert_eq!(t.interest_rate, Some(Num::ZERO));
        assert_eq!(t.underlying_price, Some(t.index_price));
        let (bid_iv, mark_iv, ask_iv) = (f(t.bid_iv), f(t.mark_iv), f(t.ask_iv));
        assert!(mark_iv > 0.0, "{t:?}");
        // A higher premium needs a higher volatility.
        let (bid, mark, ask) = (f(t.best_bid_price), t.mark_price.0.to_f64_lossy(), f(t.best_ask_price));
        if bid < mark && mark < ask {
            assert!(bid_iv <= mark_iv && mark_iv <= ask_iv, "{t:?}");
        }
        // The model at the mark's volatility gives the mark back.
        let spec = market.spec(id);
        let inputs = market.option_inputs(id, Money::from_decimal(t.index_price.0), now).unwrap();
        let premium = inputs.premium_usd(mark_iv / 100.0)
            / if spec.settlement == Settlement::Inverse { inputs.underlying } else { 1.0 };
        assert!((premium - mark).abs() < 1e-3 * mark.max(1e-4), "{premium} vs mark {mark}");
        let delta = t.greeks.as_ref().unwrap().delta.0.to_f64_lossy();
        assert!(if spec.option_type == Some(OptionType::Call) {
            (0.0..=1.0).contains(&delta)
        } else {
            (-1.0..=0.0).contains(&delta)
        });
        let summary = market.book_summary(id, now);
        assert_eq!((summary.mark_iv, summary.underlying_index), (t.mark_iv, t.underlying_index));

        let future = market.ticker(market.find("BTC-PERPETUAL").unwrap(), now);
        assert_eq!((future.mark_iv, future.greeks, future.underlying_index), (None, None, None));
        let any_option_trade = names
            .iter()
            .filter_map(|n| market.ex.recent_trades(market.find(n).unwrap()).next().cloned())
            .next()
            .unwrap();
        assert!(f(market.render_public_trade(&any_option_trade).iv) > 0.0);
    }
}
