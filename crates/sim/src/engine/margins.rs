//! Margin reads and the currency-pair cancel: `private/get_margins`,
//! `private/get_order_margin_by_ids` and `private/cancel_all_by_currency_pair`.
//!
//! Owns: decoding their params and answering from the exchange's own margin model
//! (`ticktrade_exchange::account::order_margin`, the rule behind `10009 not_enough_funds`) and
//! price band (the ticker's `min_price`/`max_price`). A live order's margin is that of its
//! unfilled rest; a closed order reserves nothing (`0`). `currency_pair` names an index the
//! Deribit way (`BTC_USD` for `btc_usd`); the cancel covers every instrument on it, one
//! exchange request per instrument (the engine task runs them back to back).
//! Must not: compute margin itself.

use serde::Deserialize;
use serde_json::value::RawValue;
use ticktrade_core::{InstrumentKind, Side, Utc};
use ticktrade_deribit_proto::api::{self, Num};
use ticktrade_exchange::account::order_margin;
use ticktrade_exchange::{AccountId as ExAccount, Event, OrderFilter, Reply, Request, TypeFilter};

use super::methods::{instrument, json};
use crate::market::{AccountId, Market, money};
use crate::rpc::{RpcError, params};

pub const METHODS: &[&str] =
    &["private/get_margins", "private/get_order_margin_by_ids", "private/cancel_all_by_currency_pair"];

#[derive(Deserialize)]
struct MarginParams {
    instrument_name: String,
    amount: Num,
    price: Num,
}

#[derive(Deserialize)]
struct IdsParams {
    ids: Vec<String>,
}

#[derive(Deserialize)]
struct PairParams {
    currency_pair: String,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default, rename = "type")]
    order_type: Option<String>,
}

/// Calls `method` if it is one of [`METHODS`] (private: the caller has the session's account).
pub fn call(
    market: &mut Market,
    now: Utc,
    account: AccountId,
    method: &str,
    raw: Option<&RawValue>,
    out: &mut Vec<Event>,
) -> Option<Result<String, RpcError>> {
    if !METHODS.contains(&method) {
        return None;
    }
    Some(match method {
        "private/get_margins" => margins(market, now, raw),
        "private/get_order_margin_by_ids" => order_margins(market, ExAccount(account), raw),
        _ => cancel_by_pair(market, now, account, raw, out),
    })
}

fn margins(market: &Market, now: Utc, raw: Option<&RawValue>) -> Result<String, RpcError> {
    let p: MarginParams = params(raw)?;
    let id = instrument(market, &p.instrument_name)?;
    let inst =
        market.ex.catalogue().get(id).ok_or_else(|| RpcError::new(10020, "invalid_or_unsupported_instrument"))?;
    let qty = inst.spec.qty_from_decimal(p.amount.0).map_err(|_| RpcError::invalid_param("amount", "invalid value"))?;
    let price = ticktrade_exchange::Money::from_decimal(p.price.0);
    let (_, buy) = order_margin(inst, Side::Buy, price, qty);
    let (_, sell) = order_margin(inst, Side::Sell, price, qty);
    let ticker = market.ticker(id, now.as_millis());
    json(&api::Margins { buy: money(buy), sell: money(sell), min_price: ticker.min_price, max_price: ticker.max_price })
}

fn order_margins(market: &Market, account: ExAccount, raw: Option<&RawValue>) -> Result<String, RpcError> {
    let p: IdsParams = params(raw)?;
    let mut list = Vec::with_capacity(p.ids.len());
    for text in &p.ids {
        let order = ticktrade_exchange::parse_order_id(text)
            .and_then(|id| market.ex.order(id))
            .filter(|o| o.account == account)
            .ok_or_else(|| RpcError::new(10004, "order_not_found"))?;
        let inst =
            market.ex.catalogue().get(order.instrument).ok_or_else(|| RpcError::new(10004, "order_not_found"))?;
        let price = order.price.map_or(ticktrade_exchange::Money::ZERO, |p| inst.price_money(p));
        let (currency, im) = if order.state.is_live() && !order.reduce_only {
            order_margin(inst, order.side, price, order.remaining())
        } else {
            (inst.settlement_currency, ticktrade_exchange::Money::ZERO)
        };
        list.push(api::OrderMargin {
            order_id: market.order_id_text(order),
            initial_margin: money(im),
            initial_margin_currency: market.ex.catalogue().currency_name(currency).to_owned(),
        });
    }
    json(&list)
}

fn cancel_by_pair(
    market: &mut Market,
    now: Utc,
    account: AccountId,
    raw: Option<&RawValue>,
    out: &mut Vec<Event>,
) -> Result<String, RpcError> {
    let p: PairParams = params(raw)?;
    let index = market
        .ex
        .catalogue()
        .index(&p.currency_pair.to_ascii_lowercase())
        .ok_or_else(|| RpcError::invalid_param("currency_pair", "invalid value"))?;
    let kind = match p.kind.as_deref() {
        None | Some("any") => None,
        Some(k) => Some(InstrumentKind::parse(k).ok_or_else(|| RpcError::invalid_param("kind", "invalid value"))?),
    };
    let order_type = match p.order_type.as_deref() {
        None => TypeFilter::All,
        Some(t) => TypeFilter::parse(t).ok_or_else(|| RpcError::invalid_param("type", "invalid value"))?,
    };
    let instruments: Vec<_> = market.ex.catalogue().iter().filter(|i| i.index == index).map(|i| i.spec.id).collect();
    let mut n = 0;
    for id in instruments {
        let filter = OrderFilter { instrument: Some(id), currency: None, kind, order_type };
        if let Reply::Count(k) = market.handle(now, account, Request::CancelAll(filter), out)? {
            n += k;
        }
    }
    json(&n)
}
