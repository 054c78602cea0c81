//! The market-maker methods: `private/mass_quote`, `private/cancel_quotes` and market maker
//! protection (`set_mmp_config`, `get_mmp_config`, `get_mmp_status`, `reset_mmp`).
//!
//! Owns: decoding their params (`api::MassQuoteParams`, `api::MmpConfig`…), mapping names to
//! the exchange's ids, and encoding the results in the vectors' shapes. The rules (what
//! freezes, what a quote replaces, `13030 mmp_trigger`, `13040 mmp_required`, `13043
//! quotes_frozen`) are `ticktrade_exchange::mmp`'s; see its module docs.
//! Must not: know sessions or sockets; the caller has checked that an account is logged in.
//!
//! Where the simulator differs: `detailed: false` answers the same full object as
//! `detailed: true` (Deribit documents only the detailed shape); `cancel_quotes` always
//! answers the count.

use serde_json::value::RawValue;
use ticktrade_core::{Decimal, InstrumentKind, Side, Utc};
use ticktrade_deribit_proto::api::{self, Num};
use ticktrade_exchange::{
    AccountId as ExAccount, ConnectionId, Event, Frozen, MassQuote, MmpConfig, MmpKey, Quote, QuoteFilter, QuoteSide,
    Size, Tag,
};

use super::methods::{instrument, json};
use crate::market::{AccountId, Market};
use crate::rpc::{RpcError, params};

/// The methods answered here.
pub const METHODS: &[&str] = &[
    "private/mass_quote",
    "private/cancel_quotes",
    "private/set_mmp_config",
    "private/get_mmp_config",
    "private/get_mmp_status",
    "private/reset_mmp",
];

fn tag(param: &str, text: &str) -> Result<Tag, RpcError> {
    Tag::try_new(text).ok_or_else(|| RpcError::invalid_param(param, "too long"))
}

fn decimal(n: Option<Num>) -> Option<Decimal> {
    n.map(|n| n.0)
}

/// `None` or `all`: every index; otherwise one the catalogue knows.
fn index_filter(market: &Market, name: Option<&str>) -> Result<Option<ticktrade_exchange::IndexId>, RpcError> {
    match name {
        None | Some("all") => Ok(None),
        Some(name) => market
            .ex
            .catalogue()
            .index(name)
            .map(Some)
            .ok_or_else(|| RpcError::invalid_param("index_name", "wrong format")),
    }
}

fn render_config(market: &Market, key: &MmpKey, c: &MmpConfig) -> api::MmpConfig {
    api::MmpConfig {
        index_name: market.ex.catalogue().index_name(key.index).to_owned(),
        mmp_group: (!key.group.is_empty()).then(|| key.group.as_str().to_owned()),
        interval: c.interval_s,
        frozen_time: c.frozen_time_s,
        quantity_limit: c.quantity_limit.map(Num),
        delta_limit: c.delta_limit.map(Num),
        vega_limit: c.vega_limit.map(Num),
        max_quote_quantity: c.max_quote_quantity.map(Num),
    }
}

/// Calls `method` if it is one of [`METHODS`] (private: the caller has the session's account).
pub fn call(
    market: &mut Market,
    now: Utc,
    account: AccountId,
    connection: Option<ConnectionId>,
    method: &str,
    raw: Option<&RawValue>,
    out: &mut Vec<Event>,
) -> Option<Result<String, RpcError>> {
    if !METHODS.contains(&method) {
        return None;
    }
    Some(match method {
        "private/mass_quote" => mass_quote(market, now, account, connection, raw, out),
        "private/cancel_quotes" => cancel_quotes(market, now, account, raw, out),
        _ => mmp(market, now, ExAccount(account), method, raw),
    })
}

fn mmp(
    market: &mut Market,
    now: Utc,
    account: ExAccount,
    method: &str,
    raw: Option<&RawValue>,
) -> Result<String, RpcError> {
    if method == "private/set_mmp_config" {
        let p: api::MmpConfig = params(raw)?;
        let index = index_filter(market, Some(&p.index_name))?
            .ok_or_else(|| RpcError::invalid_param("index_name", "wrong format"))?;
        let group = tag("mmp_group", p.mmp_group.as_deref().unwrap_or(""))?;
        let config = MmpConfig {
            interval_s: p.interval,
            frozen_time_s: p.frozen_time,
            quantity_limit: decimal(p.quantity_limit),
            delta_limit: decimal(p.delta_limit),
            vega_limit: decimal(p.vega_limit),
            max_quote_quantity: decimal(p.max_quote_quantity),
        };
        for limit in [config.quantity_limit, config.delta_limit, config.vega_limit, config.max_quote_quantity] {
            if limit.is_some_and(|l| l.is_negative()) {
                return Err(RpcError::invalid_param("quantity_limit", "must be positive"));
            }
        }
        market.ex.set_mmp_config(account, index, group, config);
        return json(&render_config(market, &MmpKey { account, index, group }, &config));
    }
    let p: api::MmpGroupParams = params(raw)?;
    let index = index_filter(market, p.index_name.as_deref())?;
    let group = p.mmp_group.as_deref().map(|g| tag("mmp_group", g)).transpose()?;
    let wanted = |key: &MmpKey| index.is_none_or(|i| i == key.index) && group.is_none_or(|g| g == key.group);
    match method {
        "private/get_mmp_config" => {
            let list: Vec<api::MmpConfig> = market
                .ex
                .mmp_configs(account)
                .iter()
                .filter(|(k, _)| wanted(k))
                .map(|(k, c)| render_config(market, k, c))
                .collect();
            json(&list)
        }
        "private/get_mmp_status" => {
            let list: Vec<api::MmpStatus> = market
                .ex
                .mmp_status(now, account)
                .iter()
                .filter(|(k, _)| wanted(k))
                .map(|(k, frozen)| api::MmpStatus {
                    index_name: market.ex.catalogue().index_name(k.index).to_owned(),
                    mmp_group: (!k.group.is_empty()).then(|| k.group.as_str().to_owned()),
                    frozen_until: match frozen {
                        Frozen::UntilReset => 0,
                        Frozen::Until(t) => t.as_millis(),
                    },
                })
                .collect();
            json(&list)
        }
        _ => {
            let index = index.ok_or_else(|| RpcError::invalid_param("index_name", "must be present"))?;
            market.ex.reset_mmp(account, index, group.unwrap_or(Tag::EMPTY));
            json(&"ok")
        }
    }
}

fn quote_side(p: &api::QuoteSideParams) -> QuoteSide {
    QuoteSide {
        price: p.price.0,
        size: Size { amount: decimal(p.amount), contracts: decimal(p.contracts) },
        post_only: p.post_only.unwrap_or(false),
        reject_post_only: p.reject_post_only.unwrap_or(false),
    }
}

fn quote_error(instrument_name: &str, side: Side, code: i32, message: &str) -> api::QuoteError {
    api::QuoteError {
        instrument_name: instrument_name.to_owned(),
        side: if side == Side::Buy { "bid" } else { "ask" }.to_owned(),
        error: api::QuoteErrorDetail { message: message.to_owned(), code },
    }
}

fn mass_quote(
    market: &mut Market,
    now: Utc,
    account: AccountId,
    connection: Option<ConnectionId>,
    raw: Option<&RawValue>,
    out: &mut Vec<Event>,
) -> Result<String, RpcError> {
    let p: api::MassQuoteParams = params(raw)?;
    let mut errors = Vec::new();
    let mut quotes = Vec::with_capacity(p.quotes.len());
    for q in &p.quotes {
        let Ok(id) = instrument(market, &q.instrument_name) else {
            // An unknown instrument refuses its own sides only, like any other side error.
            for (side, given) in [(Side::Buy, q.bid.is_some()), (Side::Sell, q.ask.is_some())] {
                if given {
                    errors.push(quote_error(&q.instrument_name, side, 10020, "invalid_or_unsupported_instrument"));
                }
            }
            continue;
        };
        quotes.push(Quote {
            instrument: id,
            quote_set_id: tag("quote_set_id", &q.quote_set_id)?,
            bid: q.bid.as_ref().map(quote_side),
            ask: q.ask.as_ref().map(quote_side),
        });
    }
    let request = MassQuote {
        mmp_group: tag("mmp_group", &p.mmp_group)?,
        quote_id: tag("quote_id", &p.quote_id)?,
        valid_until: p.valid_until.map(Utc::from_millis),
        quotes,
        connection,
    };
    let start = out.len();
    let reply = if request.quotes.is_empty() && !errors.is_empty() {
        ticktrade_exchange::MassQuoteReply::default()
    } else {
        market.ex.mass_quote(now, ExAccount(account), &request, out)?
    };
    for (instrument, side, reject) in &reply.errors {
        errors.push(quote_error(&market.spec(*instrument).name, *side, reject.code, reject.message));
    }
    let trades = out[start..]
        .iter()
        .filter_map(|e| match e {
            Event::UserTrade(t)
                if t.account == ExAccount(account) && reply.orders.iter().any(|o| o.id == t.order_id) =>
            {
                Some(market.render_user_trade(t))
            }
            _ => None,
        })
        .collect();
    let orders = reply.orders.iter().map(|o| market.render_order(o)).collect();
    json(&api::MassQuoteResult { errors, orders, trades })
}

fn cancel_quotes(
    market: &mut Market,
    now: Utc,
    account: AccountId,
    raw: Option<&RawValue>,
    out: &mut Vec<Event>,
) -> Result<String, RpcError> {
    let p: api::CancelQuotesParams = params(raw)?;
    let need = |value: Option<&String>, param: &str| {
        value.cloned().ok_or_else(|| RpcError::invalid_param(param, "must be present"))
    };
    let filter = match p.cancel_type.as_str() {
        "all" => QuoteFilter::All,
        "delta" => QuoteFilter::Delta {
            min: decimal(p.min_delta).ok_or_else(|| RpcError::invalid_param("min_delta", "must be present"))?,
            max: decimal(p.max_delta).ok_or_else(|| RpcError::invalid_param("max_delta", "must be present"))?,
        },
        "quote_set_id" => QuoteFilter::QuoteSet(tag("quote_set_id", &need(p.quote_set_id.as_ref(), "quote_set_id")?)?),
        "instrument" => {
            QuoteFilter::Instrument(instrument(market, &need(p.instrument_name.as_ref(), "instrument_name")?)?)
        }
        "instrument_kind" => {
            let kind = need(p.kind.as_ref(), "kind")?;
            QuoteFilter::Kind(
                InstrumentKind::parse(&kind).ok_or_else(|| RpcError::invalid_param("kind", "invalid value"))?,
            )
        }
        "currency" => {
            let currency = need(p.currency.as_ref(), "currency")?;
            QuoteFilter::Currency(
                market
                    .ex
                    .catalogue()
                    .currency(&currency)
                    .ok_or_else(|| RpcError::invalid_param("currency", "invalid value"))?,
            )
        }
        "currency_pair" => {
            let pair = need(p.currency_pair.as_ref(), "currency_pair")?;
            QuoteFilter::Index(
                market
                    .ex
                    .catalogue()
                    .index(&pair)
                    .ok_or_else(|| RpcError::invalid_param("currency_pair", "invalid value"))?,
            )
        }
        _ => return Err(RpcError::invalid_param("cancel_type", "invalid value")),
    };
    let n = market.ex.cancel_quotes(now, ExAccount(account), filter, p.freeze_quotes.unwrap_or(false), out);
    json(&n)
}
