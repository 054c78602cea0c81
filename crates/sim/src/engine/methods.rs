//! The methods the engine task answers: everything that touches orders, the account's order
//! and trade reads, and the dispatch of the other families (`call`: trading, order reads,
//! then `books` and the family modules; each function under 150 lines).
//!
//! Owns: decoding each method's params (typed `api` structs; `-32602` names the parameter),
//! turning them into `ticktrade_exchange::Request`s or queries, and encoding the result as
//! JSON text. Every trading decision (validation, matching, fees, margin, positions) is the
//! exchange's; its `Reject`s become Deribit's error objects unchanged.
//! Must not: know sessions, auth or sockets (a request's connection id is only a tag the
//! exchange records on the orders it places, for cancel-on-disconnect). The caller has
//! already checked that a private method has an account.

use serde::Serialize;
use serde_json::value::RawValue;
use ticktrade_core::{InstrumentId, InstrumentKind, Side, Utc};
use ticktrade_deribit_proto::api;
use ticktrade_exchange::{
    AccountId as ExAccount, ConnectionId, EditParams, Event, Label, Order, OrderFilter, OrderRef, OrderState,
    OrderType, PlaceParams, Reply, Request, Size, TimeInForce, TradeFilter, TriggerKind, TypeFilter, parse_order_id,
};

use crate::market::{AccountId, Market};
use crate::rpc::{RpcError, params};

pub(super) fn json<T: Serialize>(value: &T) -> Result<String, RpcError> {
    serde_json::to_string(value).map_err(|_| RpcError::new(11094, "internal_server_error"))
}

/// Public book, ticker, index and trade reads the engine answers (`books`).
pub const BOOK_METHODS: &[&str] = &[
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
];

/// Methods that place, change or cancel orders.
pub const TRADING_METHODS: &[&str] = &[
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
];

/// Reads of the account's own orders, positions and trades.
pub const ORDER_READ_METHODS: &[&str] = &[
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
    "private/get_user_trades_by_instrument_and_time",
    "private/get_user_trades_by_currency_and_time",
    "private/get_order_state_by_label",
];

pub(super) fn instrument(market: &Market, name: &str) -> Result<InstrumentId, RpcError> {
    market.find(name).ok_or_else(|| RpcError::invalid_param("instrument_name", "wrong format"))
}

fn filter_value(value: &Option<serde_json::Value>) -> Option<String> {
    match value {
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(serde_json::Value::Array(items)) => items.first().and_then(|v| v.as_str()).map(str::to_owned),
        _ => None,
    }
}

/// The exchange's order filter for the cancel-all and open-orders families.
fn order_filter(market: &Market, p: &api::FilterParams) -> Result<OrderFilter, RpcError> {
    let instrument = match &p.instrument_name {
        Some(name) => Some(instrument(market, name)?),
        None => None,
    };
    let currency = match filter_value(&p.currency) {
        Some(c) if c.eq_ignore_ascii_case("any") => None,
        Some(c) => Some(
            market
                .ex
                .catalogue()
                .currency(&c.to_ascii_uppercase())
                .ok_or_else(|| RpcError::invalid_param("currency", "invalid value"))?,
        ),
        None => None,
    };
    let kind = match filter_value(&p.kind) {
        Some(k) if k == "any" => None,
        Some(k) => Some(InstrumentKind::parse(&k).ok_or_else(|| RpcError::invalid_param("kind", "invalid value"))?),
        None => None,
    };
    let order_type = match p.order_type.as_deref() {
        None => TypeFilter::All,
        Some(t) => TypeFilter::parse(t).ok_or_else(|| RpcError::invalid_param("type", "invalid value"))?,
    };
    Ok(OrderFilter { instrument, currency, kind, order_type })
}

fn label(text: Option<&str>) -> Result<Label, RpcError> {
    Label::new(text.unwrap_or("")).map_err(|_| RpcError::invalid_param("label", "too long"))
}

fn order_id(text: &str) -> Result<u64, RpcError> {
    parse_order_id(text).ok_or_else(|| RpcError::new(10004, "order_not_found"))
}

/// The order after a request plus its own fills in this request (Deribit's `trades`).
fn with_trades(market: &Market, order: &Order, out: &[Event]) -> api::OrderWithTrades {
    let trades = out
        .iter()
        .filter_map(|e| match e {
            Event::UserTrade(t) if t.order_id == order.id && t.account == order.account => {
                Some(market.render_user_trade(t))
            }
            _ => None,
        })
        .collect();
    api::OrderWithTrades { order: market.render_order(order), trades }
}

fn place_params(
    market: &Market,
    side: Side,
    p: &api::OrderParams,
    connection: Option<ConnectionId>,
) -> Result<PlaceParams, RpcError> {
    let instr = instrument(market, &p.instrument_name)?;
    let order_type = match p.order_type.as_deref() {
        None => OrderType::Limit,
        Some(t) => OrderType::parse(t).ok_or_else(|| RpcError::invalid_param("type", "invalid value"))?,
    };
    let time_in_force = match p.time_in_force.as_deref() {
        None => TimeInForce::GoodTilCancelled,
        Some(t) => TimeInForce::parse(t).ok_or_else(|| RpcError::invalid_param("time_in_force", "invalid value"))?,
    };
    let trigger = match p.trigger.as_deref() {
        None => None,
        Some(t) => Some(TriggerKind::parse(t).ok_or_else(|| RpcError::invalid_param("trigger", "invalid value"))?),
    };
    Ok(PlaceParams {
        instrument: instr,
        side,
        size: Size { amount: p.amount.map(|n| n.0), contracts: p.contracts.map(|n| n.0) },
        order_type,
        price: p.price.map(|n| n.0),
        time_in_force,
        post_only: p.post_only.unwrap_or(false),
        reject_post_only: p.reject_post_only.unwrap_or(false),
        reduce_only: p.reduce_only.unwrap_or(false),
        label: label(p.label.as_deref())?,
        trigger,
        trigger_price: p.trigger_price.map(|n| n.0),
        trigger_offset: p.trigger_offset.map(|n| n.0),
        mmp: p.mmp.unwrap_or(false),
        mmp_group: ticktrade_exchange::Tag::EMPTY,
        quote: None,
        valid_until: p.valid_until.map(Utc::from_millis),
        connection,
    })
}

fn reply_order(reply: Reply) -> Result<Order, RpcError> {
    match reply {
        Reply::Order(order) => Ok(order),
        Reply::Count(_) => Err(RpcError::new(11094, "internal_server_error")),
    }
}

fn check_owner(order: Option<&Order>, account: AccountId) -> Result<&Order, RpcError> {
    order.filter(|o| o.account == ExAccount(account)).ok_or_else(|| RpcError::new(10004, "order_not_found"))
}

/// The private method families kept in their own modules: the session's account is checked
/// once, here, before any of them runs.
const PRIVATE_FAMILIES: [&[&str]; 4] =
    [super::quotes::METHODS, super::trigger_history::METHODS, super::margins::METHODS, super::account_reads::METHODS];

/// Calls `method`. `account` is `Some` for private methods (checked by the caller);
/// `connection` is the WebSocket session sending it (`None` over HTTP).
pub fn call(
    market: &mut Market,
    now: Utc,
    account: Option<AccountId>,
    connection: Option<ConnectionId>,
    method: &str,
    raw: Option<&RawValue>,
    out: &mut Vec<Event>,
) -> Result<String, RpcError> {
    if TRADING_METHODS.contains(&method) {
        trading(market, now, account, connection, method, raw, out)
    } else if BOOK_METHODS.contains(&method) {
        super::books::call(market, now, method, raw)
    } else if ORDER_READ_METHODS.contains(&method) {
        order_reads(market, account, method, raw)
    } else {
        families(market, now, account, connection, method, raw, out)
    }
}

/// Orders placed, edited, cancelled; positions closed.
fn trading(
    market: &mut Market,
    now: Utc,
    account: Option<AccountId>,
    connection: Option<ConnectionId>,
    method: &str,
    raw: Option<&RawValue>,
    out: &mut Vec<Event>,
) -> Result<String, RpcError> {
    let acc = || account.ok_or_else(|| RpcError::new(10000, "authorization_required"));
    match method {
        "private/buy" | "private/sell" => {
            let p: api::OrderParams = params(raw)?;
            let side = if method == "private/buy" { Side::Buy } else { Side::Sell };
            let request = Request::Place(place_params(market, side, &p, connection)?);
            let start = out.len();
            let order = reply_order(market.handle(now, acc()?, request, out)?)?;
            json(&with_trades(market, &order, &out[start..]))
        }
        "private/edit" | "private/edit_by_label" => {
            let p: api::EditParams = params(raw)?;
            let account = acc()?;
            let order = if method == "private/edit" {
                let text =
                    p.order_id.as_deref().ok_or_else(|| RpcError::invalid_param("order_id", "must be present"))?;
                let id = order_id(text)?;
                check_owner(market.ex.order(id), account)?;
                OrderRef::Id(id)
            } else {
                let text = p.label.as_deref().ok_or_else(|| RpcError::invalid_param("label", "must be present"))?;
                let name = p
                    .instrument_name
                    .as_deref()
                    .ok_or_else(|| RpcError::invalid_param("instrument_name", "must be present"))?;
                OrderRef::Label { instrument: instrument(market, name)?, label: label(Some(text))? }
            };
            let edit = EditParams {
                order,
                size: Size { amount: p.amount.map(|n| n.0), contracts: p.contracts.map(|n| n.0) },
                price: p.price.map(|n| n.0),
                post_only: p.post_only.unwrap_or(false),
                reject_post_only: p.reject_post_only.unwrap_or(false),
                reduce_only: p.reduce_only.unwrap_or(false),
                trigger_price: p.trigger_price.map(|n| n.0),
                trigger_offset: p.trigger_offset.map(|n| n.0),
                valid_until: None,
            };
            let start = out.len();
            let order = reply_order(market.handle(now, account, Request::Edit(edit), out)?)?;
            json(&with_trades(market, &order, &out[start..]))
        }
        "private/cancel" => {
            let p: api::OrderIdParams = params(raw)?;
            let account = acc()?;
            let id = order_id(&p.order_id)?;
            check_owner(market.ex.order(id), account)?;
            let order = reply_order(market.handle(now, account, Request::Cancel { order_id: id }, out)?)?;
            json(&market.render_order(&order))
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
            let account = acc()?;
            let filter = order_filter(market, &p)?;
            let request = match &p.label {
                Some(text) if method == "private/cancel_by_label" => {
                    Request::CancelByLabel { label: label(Some(text))?, currency: filter.currency }
                }
                _ => Request::CancelAll(filter),
            };
            let start = out.len();
            let reply = market.handle(now, account, request, out)?;
            if p.detailed.unwrap_or(false) {
                let orders: Vec<api::Order> = out[start..]
                    .iter()
                    .filter_map(|e| match e {
                        Event::Order(o) if o.account == ExAccount(account) && o.state == OrderState::Cancelled => {
                            Some(market.render_order(o))
                        }
                        _ => None,
                    })
                    .collect();
                json(&serde_json::json!([{"currency": "any", "type": "limit", "result": orders}]))
            } else {
                match reply {
                    Reply::Count(n) => json(&n),
                    Reply::Order(_) => json(&1),
                }
            }
        }
        "private/close_position" => {
            let p: api::ClosePositionParams = params(raw)?;
            let instr = instrument(market, &p.instrument_name)?;
            let order_type = match p.order_type.as_str() {
                "limit" => OrderType::Limit,
                "market" => OrderType::Market,
                _ => return Err(RpcError::invalid_param("type", "invalid value")),
            };
            let price = p.price.map(|n| n.0);
            let request = Request::ClosePosition { instrument: instr, order_type, price, connection };
            let start = out.len();
            let order = reply_order(market.handle(now, acc()?, request, out)?)?;
            json(&with_trades(market, &order, &out[start..]))
        }
        _ => Err(RpcError::method_not_found()),
    }
}

/// Open orders, order state and history, positions, account summaries, user trades.
fn order_reads(
    market: &Market,
    account: Option<AccountId>,
    method: &str,
    raw: Option<&RawValue>,
) -> Result<String, RpcError> {
    let acc = || account.ok_or_else(|| RpcError::new(10000, "authorization_required"));
    match method {
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
            let filter = order_filter(market, &p)?;
            let orders: Vec<api::Order> = market
                .ex
                .open_orders(ExAccount(acc()?), filter)
                .iter()
                .filter(|o| p.label.as_deref().is_none_or(|l| o.label.as_str() == l))
                .map(|o| market.render_order(o))
                .collect();
            json(&orders)
        }
        "private/get_order_state_by_label" => {
            let p: api::FilterParams = params(raw)?;
            if p.currency.is_none() {
                return Err(RpcError::invalid_param("currency", "must be present"));
            }
            let wanted =
                label(Some(p.label.as_deref().ok_or_else(|| RpcError::invalid_param("label", "must be present"))?))?;
            let filter = order_filter(market, &p)?;
            let account = ExAccount(acc()?);
            // Live orders first (oldest first), then the kept closed ones (newest first).
            let orders: Vec<api::Order> = market
                .ex
                .open_orders(account, filter)
                .iter()
                .chain(market.ex.order_history(account, filter).iter())
                .filter(|o| o.label == wanted)
                .map(|o| market.render_order(o))
                .collect();
            json(&orders)
        }
        "private/get_order_state" => {
            let p: api::OrderIdParams = params(raw)?;
            let order = check_owner(market.ex.order(order_id(&p.order_id)?), acc()?)?;
            json(&market.render_order(order))
        }
        "private/get_order_history_by_instrument" | "private/get_order_history_by_currency" => {
            let p: api::FilterParams = params(raw)?;
            let count = p.count.unwrap_or(20).clamp(1, 1_000) as usize;
            let filter = order_filter(market, &p)?;
            let orders: Vec<api::Order> = market
                .ex
                .order_history(ExAccount(acc()?), filter)
                .iter()
                .take(count)
                .map(|o| market.render_order(o))
                .collect();
            json(&orders)
        }
        "private/get_positions" => {
            let p: api::FilterParams = params(raw)?;
            let account = acc()?;
            let filter = order_filter(market, &api::FilterParams { instrument_name: None, ..p.clone() })?;
            let list: Vec<api::Position> = market
                .position_instruments(account)
                .into_iter()
                .filter(|i| {
                    let info = market.info(*i);
                    let currency = filter.currency.map(|c| market.ex.catalogue().currency_name(c).to_owned());
                    currency.is_none_or(|c| info.base_currency == c || info.settlement_currency == c)
                        && filter.kind.is_none_or(|k| market.spec(*i).kind == k)
                })
                .map(|i| market.render_position(account, i))
                .collect();
            json(&list)
        }
        "private/get_position" => {
            let p: api::InstrumentParams = params(raw)?;
            json(&market.render_position(acc()?, instrument(market, &p.instrument_name)?))
        }
        "private/get_account_summary" => {
            let p: api::CurrencyParams = params(raw)?;
            let currency = p.currency.ok_or_else(|| RpcError::invalid_param("currency", "must be present"))?;
            json(&market.account_summary(acc()?, &currency, true))
        }
        "private/get_account_summaries" => {
            let account = acc()?;
            let summaries: Vec<api::AccountSummary> =
                market.settlement_currencies().iter().map(|c| market.account_summary(account, c, false)).collect();
            let extended = market.account_summary(account, "BTC", true).extended;
            let mut result = serde_json::to_value(extended).unwrap_or_default();
            if let Some(object) = result.as_object_mut() {
                object.remove("limits");
                object.insert("summaries".to_owned(), serde_json::to_value(summaries).unwrap_or_default());
            }
            json(&result)
        }
        "private/get_user_trades_by_instrument"
        | "private/get_user_trades_by_currency"
        | "private/get_user_trades_by_instrument_and_time"
        | "private/get_user_trades_by_currency_and_time" => user_trades(market, acc()?, method, raw),
        "private/get_user_trades_by_order" => {
            let p: api::OrderIdParams = params(raw)?;
            let id = order_id(&p.order_id)?;
            let filter = TradeFilter { order_id: Some(id), ..TradeFilter::default() };
            let trades: Vec<api::UserTrade> =
                market.ex.user_trades(ExAccount(acc()?), filter).map(|t| market.render_user_trade(t)).collect();
            json(&trades)
        }
        _ => Err(RpcError::method_not_found()),
    }
}

/// The method families kept in their own modules.
fn families(
    market: &mut Market,
    now: Utc,
    account: Option<AccountId>,
    connection: Option<ConnectionId>,
    method: &str,
    raw: Option<&RawValue>,
    out: &mut Vec<Event>,
) -> Result<String, RpcError> {
    if PRIVATE_FAMILIES.iter().any(|family| family.contains(&method)) {
        let account = account.ok_or_else(|| RpcError::new(10000, "authorization_required"))?;
        return super::quotes::call(market, now, account, connection, method, raw, out)
            .or_else(|| super::trigger_history::call(market, account, method, raw))
            .or_else(|| super::margins::call(market, now, account, method, raw, out))
            .or_else(|| super::account_reads::call(market, account, method, raw))
            .unwrap_or_else(|| Err(RpcError::method_not_found()));
    }
    super::market_data::call(market, method, raw)
        .or_else(|| super::history_data::call(market, now, method, raw))
        .or_else(|| super::settlements::call(market, account, method, raw))
        .or_else(|| super::combo_methods::call(market, now, method, raw))
        .unwrap_or_else(|| Err(RpcError::method_not_found()))
}

/// `get_user_trades_by_{instrument,currency}[_and_time]`: newest first unless `sorting` is
/// `asc`; the `_and_time` variants require both ends of the window; `kind` narrows the
/// instruments of a currency; `start_seq`/`end_seq` (by instrument) bound the sequence numbers.
fn user_trades(market: &Market, account: AccountId, method: &str, raw: Option<&RawValue>) -> Result<String, RpcError> {
    let p: api::FilterParams = params(raw)?;
    let count = p.count.unwrap_or(10).clamp(1, 1_000) as usize;
    if method.contains("by_instrument") && p.instrument_name.is_none() {
        return Err(RpcError::invalid_param("instrument_name", "must be present"));
    }
    if method.contains("by_currency") && p.currency.is_none() {
        return Err(RpcError::invalid_param("currency", "must be present"));
    }
    let (start, end) = if method.ends_with("_and_time") {
        let start = p.start_timestamp.ok_or_else(|| RpcError::invalid_param("start_timestamp", "must be present"))?;
        let end = p.end_timestamp.ok_or_else(|| RpcError::invalid_param("end_timestamp", "must be present"))?;
        (Some(start), Some(end))
    } else {
        (p.start_timestamp, p.end_timestamp)
    };
    let ascending = match p.sorting.as_deref() {
        None | Some("default" | "desc") => false,
        Some("asc") => true,
        Some(_) => return Err(RpcError::invalid_param("sorting", "invalid value")),
    };
    // The trade readers take two kinds of their own, `combo` and `any`, besides the
    // instrument kinds.
    let kind = filter_value(&p.kind).filter(|k| k != "any");
    if let Some(k) = kind.as_deref()
        && k != "combo"
        && InstrumentKind::parse(k).is_none()
    {
        return Err(RpcError::invalid_param("kind", "invalid value"));
    }
    let filter = order_filter(market, &api::FilterParams { kind: None, ..p.clone() })?;
    let trade_filter = TradeFilter { instrument: filter.instrument, currency: None, order_id: None };
    let currency = filter.currency;
    // Sequence numbers count per instrument: Deribit takes them on `…_by_instrument` only.
    let by_instrument = method.contains("by_instrument");
    let mut trades: Vec<&ticktrade_exchange::UserTrade> = market
        .ex
        .user_trades(ExAccount(account), trade_filter)
        .filter(|t| {
            currency.is_none_or(|c| {
                t.fee_currency == c || market.ex.catalogue().get(t.instrument).is_some_and(|i| i.base == c)
            })
        })
        .filter(|t| kind.as_deref().is_none_or(|k| market.kind_matches(t.instrument, k)))
        .filter(|t| {
            let ms = t.timestamp.as_millis();
            start.is_none_or(|s| ms >= s) && end.is_none_or(|e| ms <= e)
        })
        .filter(|t| {
            !by_instrument
                || (p.start_seq.is_none_or(|s| t.trade_seq >= s) && p.end_seq.is_none_or(|e| t.trade_seq <= e))
        })
        .collect();
    if !ascending {
        trades.reverse();
    }
    let has_more = trades.len() > count;
    let trades = trades.into_iter().take(count).map(|t| market.render_user_trade(t)).collect();
    json(&api::UserTrades { trades, has_more })
}
