//! The methods the engine task answers: market data reads and everything that touches orders.
//!
//! Owns: decoding each method's params (typed `api` structs; `-32602` names the parameter),
//! calling the venue, and encoding the result as JSON text.
//! Must not: know sessions, auth or sockets. The caller has already checked that a private
//! method has an account.

use serde::Serialize;
use serde_json::value::RawValue;
use ticktrade_core::{Decimal, Side, Utc};
use ticktrade_deribit_proto::api::{self, Num};

use crate::venue::{AccountId, Event, Filter, Reject, Venue};
use crate::wire::{RpcError, params};

impl From<Reject> for RpcError {
    fn from(reject: Reject) -> RpcError {
        match reject.param {
            Some((param, reason)) => RpcError::invalid_param(param, reason),
            None => RpcError::new(reject.code, &reject.message),
        }
    }
}

fn json<T: Serialize>(value: &T) -> Result<String, RpcError> {
    serde_json::to_string(value).map_err(|_| RpcError::new(11094, "internal_server_error"))
}

/// Every method served by the engine (the rest are session methods).
pub const ENGINE_METHODS: &[&str] = &[
    "public/get_instruments",
    "public/get_instrument",
    "public/get_currencies",
    "public/get_order_book",
    "public/get_order_book_by_instrument_id",
    "public/ticker",
    "public/get_index_price",
    "public/get_index_price_names",
    "public/get_book_summary_by_currency",
    "public/get_book_summary_by_instrument",
    "public/get_last_trades_by_instrument",
    "public/get_tradingview_chart_data",
    "private/buy",
    "private/sell",
    "private/edit",
    "private/edit_by_label",
    "private/cancel",
    "private/cancel_all",
    "private/cancel_all_by_instrument",
    "private/cancel_all_by_currency",
    "private/cancel_all_by_kind_or_type",
    "private/cancel_by_label",
    "private/close_position",
    "private/get_open_orders",
    "private/get_open_orders_by_currency",
    "private/get_open_orders_by_instrument",
    "private/get_open_orders_by_label",
    "private/get_order_state",
    "private/get_order_history_by_instrument",
    "private/get_order_history_by_currency",
    "private/get_positions",
    "private/get_position",
    "private/get_account_summary",
    "private/get_account_summaries",
    "private/get_user_trades_by_instrument",
    "private/get_user_trades_by_currency",
    "private/get_user_trades_by_order",
];

fn instrument(venue: &Venue, name: &str) -> Result<usize, RpcError> {
    venue.find(name).ok_or_else(|| RpcError::invalid_param("instrument_name", "wrong format"))
}

fn filter_value(value: &Option<serde_json::Value>) -> Option<String> {
    match value {
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(serde_json::Value::Array(items)) => items.first().and_then(|v| v.as_str()).map(str::to_owned),
        _ => None,
    }
}

fn filter_of(venue: &Venue, p: &api::FilterParams) -> Result<Filter, RpcError> {
    let instr = match &p.instrument_name {
        Some(name) => Some(instrument(venue, name)?),
        None => None,
    };
    Ok(Filter { instr, currency: filter_value(&p.currency), kind: filter_value(&p.kind), label: p.label.clone() })
}

fn cancel_result(orders: Vec<api::Order>, detailed: bool) -> Result<String, RpcError> {
    if detailed {
        json(&serde_json::json!([{"currency": "any", "type": "limit", "result": orders}]))
    } else {
        json(&orders.len())
    }
}

/// Calls `method`. `account` is `Some` for private methods (checked by the caller).
pub fn call(
    venue: &mut Venue,
    now: Utc,
    account: Option<AccountId>,
    method: &str,
    raw: Option<&RawValue>,
    out: &mut Vec<Event>,
) -> Result<String, RpcError> {
    let now_ms = now.as_millis();
    let acc = || account.ok_or_else(|| RpcError::new(10000, "authorization_required"));
    match method {
        "public/get_instruments" => {
            let p: api::CurrencyParams = params(raw)?;
            if p.expired == Some(true) {
                return json(&Vec::<api::Instrument>::new());
            }
            let currency = p.currency.as_deref().unwrap_or("any");
            let list: Vec<&api::Instrument> = venue
                .instruments()
                .map(|(_, info)| info)
                .filter(|i| {
                    currency.eq_ignore_ascii_case("any")
                        || i.base_currency == currency
                        || i.settlement_currency == currency
                })
                .filter(|i| p.kind.as_deref().is_none_or(|k| k == "any" || i.kind == k))
                .collect();
            json(&list)
        }
        "public/get_instrument" => {
            let p: api::InstrumentParams = params(raw)?;
            json(venue.info(instrument(venue, &p.instrument_name)?))
        }
        "public/get_currencies" => json(&currencies(venue)),
        "public/get_order_book" => {
            let p: api::InstrumentParams = params(raw)?;
            let instr = instrument(venue, &p.instrument_name)?;
            json(&venue.order_book(instr, p.depth.unwrap_or(20).clamp(1, 10_000) as usize, now_ms))
        }
        "public/get_order_book_by_instrument_id" => {
            let p: api::InstrumentIdParams = params(raw)?;
            let instr = venue
                .find_by_id(p.instrument_id)
                .ok_or_else(|| RpcError::invalid_param("instrument_id", "wrong format"))?;
            json(&venue.order_book(instr, p.depth.unwrap_or(20).clamp(1, 10_000) as usize, now_ms))
        }
        "public/ticker" => {
            let p: api::InstrumentParams = params(raw)?;
            json(&venue.ticker(instrument(venue, &p.instrument_name)?, now_ms))
        }
        "public/get_index_price" => {
            let p: api::IndexParams = params(raw)?;
            let (instr, _) = venue
                .instruments()
                .find(|(_, i)| i.price_index == p.index_name)
                .ok_or_else(|| RpcError::invalid_param("index_name", "wrong format"))?;
            let price = Num(venue.spec(instr).price_to_decimal(venue.index_price(instr)));
            json(&api::IndexPrice { index_price: price, estimated_delivery_price: price })
        }
        "public/get_index_price_names" => {
            let mut names: Vec<&str> = venue.instruments().map(|(_, i)| i.price_index.as_str()).collect();
            names.sort_unstable();
            names.dedup();
            json(&names)
        }
        "public/get_book_summary_by_currency" => {
            let p: api::CurrencyParams = params(raw)?;
            let currency = p.currency.ok_or_else(|| RpcError::invalid_param("currency", "must be present"))?;
            let list: Vec<api::BookSummary> = venue
                .instruments()
                .filter(|(_, i)| i.base_currency == currency || currency.eq_ignore_ascii_case("any"))
                .filter(|(_, i)| p.kind.as_deref().is_none_or(|k| i.kind == k))
                .map(|(idx, _)| idx)
                .collect::<Vec<_>>()
                .into_iter()
                .map(|idx| venue.book_summary(idx, now_ms))
                .collect();
            json(&list)
        }
        "public/get_book_summary_by_instrument" => {
            let p: api::InstrumentParams = params(raw)?;
            json(&[venue.book_summary(instrument(venue, &p.instrument_name)?, now_ms)])
        }
        "public/get_last_trades_by_instrument" => {
            let p: api::InstrumentParams = params(raw)?;
            let instr = instrument(venue, &p.instrument_name)?;
            let count = p.count.unwrap_or(10).clamp(1, 1_000) as usize;
            let mut trades: Vec<api::PublicTrade> = venue.tape(instr).rev().take(count + 1).cloned().collect();
            let has_more = trades.len() > count;
            trades.truncate(count);
            json(&api::PublicTrades { trades, has_more })
        }
        "public/get_tradingview_chart_data" => {
            let p: api::ChartParams = params(raw)?;
            chart(venue, &p)
        }
        "private/buy" | "private/sell" => {
            let p: api::OrderParams = params(raw)?;
            let side = if method == "private/buy" { Side::Buy } else { Side::Sell };
            json(&venue.place(now, acc()?, side, &p, out)?)
        }
        "private/edit" | "private/edit_by_label" => {
            let p: api::EditParams = params(raw)?;
            let account = acc()?;
            let id = if method == "private/edit" {
                p.order_id.clone().ok_or_else(|| RpcError::invalid_param("order_id", "must be present"))?
            } else {
                let label = p.label.as_deref().ok_or_else(|| RpcError::invalid_param("label", "must be present"))?;
                let name = p
                    .instrument_name
                    .as_deref()
                    .ok_or_else(|| RpcError::invalid_param("instrument_name", "must be present"))?;
                let ids = venue.ids_by_label(account, Some(instrument(venue, name)?), label);
                match ids.as_slice() {
                    [one] => one.clone(),
                    [] => return Err(RpcError::new(10004, "order_not_found")),
                    _ => return Err(RpcError::new(13032, "non_unique_order_label")),
                }
            };
            json(&venue.edit(now, account, &id, &p, out)?)
        }
        "private/cancel" => {
            let p: api::OrderIdParams = params(raw)?;
            json(&venue.cancel(now, acc()?, &p.order_id, out)?)
        }
        "private/cancel_all"
        | "private/cancel_all_by_instrument"
        | "private/cancel_all_by_currency"
        | "private/cancel_all_by_kind_or_type"
        | "private/cancel_by_label" => {
            let p: api::FilterParams = params(raw)?;
            match method {
                "private/cancel_all_by_instrument" if p.instrument_name.is_none() => {
                    return Err(RpcError::invalid_param("instrument_name", "must be present"));
                }
                "private/cancel_all_by_currency" | "private/cancel_all_by_kind_or_type" if p.currency.is_none() => {
                    return Err(RpcError::invalid_param("currency", "must be present"));
                }
                "private/cancel_by_label" if p.label.is_none() => {
                    return Err(RpcError::invalid_param("label", "must be present"));
                }
                _ => {}
            }
            let filter = filter_of(venue, &p)?;
            let cancelled = venue.cancel_where(now, acc()?, &filter, "user_request", out);
            cancel_result(cancelled, p.detailed.unwrap_or(false))
        }
        "private/close_position" => {
            let p: api::ClosePositionParams = params(raw)?;
            json(&venue.close_position(now, acc()?, &p, out)?)
        }
        "private/get_open_orders"
        | "private/get_open_orders_by_currency"
        | "private/get_open_orders_by_instrument"
        | "private/get_open_orders_by_label" => {
            let p: api::FilterParams = params(raw)?;
            if method == "private/get_open_orders_by_instrument" && p.instrument_name.is_none() {
                return Err(RpcError::invalid_param("instrument_name", "must be present"));
            }
            if method == "private/get_open_orders_by_currency" && p.currency.is_none() {
                return Err(RpcError::invalid_param("currency", "must be present"));
            }
            json(&venue.open_orders(acc()?, &filter_of(venue, &p)?))
        }
        "private/get_order_state" => {
            let p: api::OrderIdParams = params(raw)?;
            json(&venue.order_state(acc()?, &p.order_id)?)
        }
        "private/get_order_history_by_instrument" | "private/get_order_history_by_currency" => {
            let p: api::FilterParams = params(raw)?;
            let count = p.count.unwrap_or(20).clamp(1, 1_000) as usize;
            json(&venue.order_history(acc()?, &filter_of(venue, &p)?, count))
        }
        "private/get_positions" => {
            let p: api::FilterParams = params(raw)?;
            let account = acc()?;
            let filter = filter_of(venue, &p)?;
            let list: Vec<api::Position> = venue
                .position_instruments(account)
                .into_iter()
                .filter(|i| {
                    let info = venue.info(*i);
                    filter.currency.as_deref().is_none_or(|c| c.eq_ignore_ascii_case("any") || info.base_currency == c)
                        && filter.kind.as_deref().is_none_or(|k| k == "any" || info.kind == k)
                })
                .map(|i| venue.render_position(account, i))
                .collect();
            json(&list)
        }
        "private/get_position" => {
            let p: api::InstrumentParams = params(raw)?;
            json(&venue.render_position(acc()?, instrument(venue, &p.instrument_name)?))
        }
        "private/get_account_summary" => {
            let p: api::CurrencyParams = params(raw)?;
            let currency = p.currency.ok_or_else(|| RpcError::invalid_param("currency", "must be present"))?;
            json(&venue.account_summary(acc()?, &currency, true))
        }
        "private/get_account_summaries" => {
            let account = acc()?;
            let mut currencies: Vec<String> = venue.instruments().map(|(_, i)| i.settlement_currency.clone()).collect();
            currencies.sort_unstable();
            currencies.dedup();
            let summaries: Vec<api::AccountSummary> =
                currencies.iter().map(|c| venue.account_summary(account, c, false)).collect();
            let extended = venue.account_summary(account, "BTC", true).extended;
            let mut result = serde_json::to_value(extended).unwrap_or_default();
            if let Some(object) = result.as_object_mut() {
                object.remove("limits");
                object.insert("summaries".to_owned(), serde_json::to_value(summaries).unwrap_or_default());
            }
            json(&result)
        }
        "private/get_user_trades_by_instrument" | "private/get_user_trades_by_currency" => {
            let p: api::FilterParams = params(raw)?;
            let count = p.count.unwrap_or(10).clamp(1, 1_000) as usize;
            let filter = filter_of(venue, &p)?;
            if method.ends_with("instrument") && filter.instr.is_none() {
                return Err(RpcError::invalid_param("instrument_name", "must be present"));
            }
            let name = filter.instr.map(|i| venue.info(i).instrument_name.clone());
            let currency = filter.currency.clone();
            let (trades, has_more) = venue.user_trades(
                acc()?,
                |t| {
                    name.as_deref().is_none_or(|n| t.instrument_name == n)
                        && currency
                            .as_deref()
                            .is_none_or(|c| c.eq_ignore_ascii_case("any") || t.instrument_name.starts_with(c))
                },
                count,
            );
            json(&api::UserTrades { trades, has_more })
        }
        "private/get_user_trades_by_order" => {
            let p: api::OrderIdParams = params(raw)?;
            let (trades, _) = venue.user_trades(acc()?, |t| t.order_id == p.order_id, 1_000);
            json(&trades)
        }
        _ => Err(RpcError::method_not_found()),
    }
}

fn currencies(venue: &Venue) -> Vec<api::Currency> {
    let mut names: Vec<String> = venue.instruments().map(|(_, i)| i.base_currency.clone()).collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .map(|currency| {
            let (long, coin, decimals) = match currency.as_str() {
                "BTC" => ("Bitcoin", "BITCOIN", 8),
                "ETH" => ("Ethereum", "ETHER", 6),
                _ => ("Simulated coin", "SIMULATED", 6),
            };
            let fee = Num(Decimal::new(1, 4).unwrap_or(Decimal::ZERO));
            api::Currency {
                currency_long: long.to_owned(),
                coin_type: coin.to_owned(),
                min_confirmations: 1,
                min_withdrawal_fee: fee,
                withdrawal_fee: fee,
                withdrawal_priorities: Vec::new(),
                network_currency: currency.clone(),
                network_fee: fee,
                decimals,
                currency,
            }
        })
        .collect()
}

fn chart(venue: &Venue, p: &api::ChartParams) -> Result<String, RpcError> {
    let instr = instrument(venue, &p.instrument_name)?;
    let minutes: i64 = match &p.resolution {
        serde_json::Value::String(s) if s == "1D" || s == "D" => 1_440,
        serde_json::Value::String(s) => {
            s.parse().map_err(|_| RpcError::invalid_param("resolution", "invalid format"))?
        }
        serde_json::Value::Number(n) => {
            n.as_i64().ok_or_else(|| RpcError::invalid_param("resolution", "invalid format"))?
        }
        _ => return Err(RpcError::invalid_param("resolution", "invalid format")),
    };
    let step = minutes.max(1) * 60_000;
    let spec = venue.spec(instr);
    let first = p.start_timestamp.div_euclid(step) * step;
    let n = ((p.end_timestamp - first) / step + 1).clamp(0, 5_000);
    let first = p.end_timestamp.div_euclid(step) * step - (n - 1).max(0) * step;
    let mut data =
        api::ChartData { status: if n > 0 { "ok" } else { "no_data" }.to_owned(), ..api::ChartData::default() };
    let mut close = Num(spec.price_to_decimal(venue.index_price(instr)));
    let trades: Vec<&api::PublicTrade> = venue.tape(instr).collect();
    for k in 0..n {
        let start = first + k * step;
        let in_bucket: Vec<&&api::PublicTrade> =
            trades.iter().filter(|t| t.timestamp >= start && t.timestamp < start + step).collect();
        let open = in_bucket.first().map_or(close, |t| t.price);
        let high = in_bucket.iter().map(|t| t.price).max().unwrap_or(open);
        let low = in_bucket.iter().map(|t| t.price).min().unwrap_or(open);
        close = in_bucket.last().map_or(open, |t| t.price);
        let volume =
            in_bucket.iter().try_fold(Decimal::ZERO, |acc, t| acc.checked_add(t.amount.0)).unwrap_or(Decimal::ZERO);
        data.ticks.push(start);
        data.open.push(open);
        data.high.push(high);
        data.low.push(low);
        data.close.push(close);
        data.volume.push(Num(volume));
        data.cost.push(Num(volume));
    }
    json(&data)
}
