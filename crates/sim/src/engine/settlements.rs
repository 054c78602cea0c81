//! Settlements and the transaction log: `public/get_last_settlements_by_{currency,instrument}`,
//! `private/get_settlement_history_by_{currency,instrument}` and `private/get_transaction_log`.
//!
//! Owns: decoding those methods' params and rendering the exchange's ledger (each fill and
//! delivery of an account, with the balance and equity right after it) and its deliveries
//! (each expiry, with its delivery price and open interest), newest first, paged.
//! Must not: change the venue. The exchange settles only at expiry (`delivery`): it has no
//! daily settlement of futures (`settlement`) and no bankruptcy, so those types answer an
//! empty page. Both rings keep the exchange's `history_len` newest entries.
//!
//! Paging: settlements take `continuation` as the number of entries already returned
//! (opaque to the client, as Deribit's token is); the transaction log takes the `id` of the
//! last entry returned and continues below it, as Deribit documents.

use serde_json::value::RawValue;
use ticktrade_core::{InstrumentId, InstrumentKind, Side};
use ticktrade_deribit_proto::api::{self, Num};
use ticktrade_exchange::{AccountId as ExAccount, LedgerEntry, LedgerKind, Liquidity};

use super::methods::{instrument, json};
use crate::market::{AccountId, Market, money};
use crate::rpc::{RpcError, params};

/// The methods answered here (the `private/` ones need an account).
pub const METHODS: &[&str] = &[
    "public/get_last_settlements_by_currency",
    "public/get_last_settlements_by_instrument",
    "private/get_settlement_history_by_currency",
    "private/get_settlement_history_by_instrument",
    "private/get_transaction_log",
];

/// Answers one of [`METHODS`] (`None`: not one of them).
pub fn call(
    market: &Market,
    account: Option<AccountId>,
    method: &str,
    raw: Option<&RawValue>,
) -> Option<Result<String, RpcError>> {
    if !METHODS.contains(&method) {
        return None;
    }
    let needs_account = method.starts_with("private/");
    let account = match account {
        Some(a) => Some(a),
        None if needs_account => return Some(Err(RpcError::new(10000, "authorization_required"))),
        None => None,
    };
    Some(if method == "private/get_transaction_log" {
        account.map_or_else(|| Err(RpcError::new(10000, "authorization_required")), |a| transaction_log(market, a, raw))
    } else {
        settlements(market, if needs_account { account } else { None }, method, raw)
    })
}

/// Which instruments a settlements request covers.
fn scope(market: &Market, method: &str, p: &api::SettlementsParams) -> Result<Vec<InstrumentId>, RpcError> {
    if method.ends_with("by_instrument") {
        let name = p
            .instrument_name
            .as_deref()
            .ok_or_else(|| RpcError::invalid_param("instrument_name", "must be present"))?;
        return Ok(vec![instrument(market, name)?]);
    }
    let currency = p.currency.as_deref().ok_or_else(|| RpcError::invalid_param("currency", "must be present"))?;
    if !currency.eq_ignore_ascii_case("any") && market.ex.catalogue().currency(&currency.to_ascii_uppercase()).is_none()
    {
        return Err(RpcError::invalid_param("currency", "invalid value"));
    }
    Ok(market.instruments().map(|(i, _)| i).filter(|i| market.currency_matches(*i, currency)).collect())
}

fn settlements(
    market: &Market,
    account: Option<AccountId>,
    method: &str,
    raw: Option<&RawValue>,
) -> Result<String, RpcError> {
    let p: api::SettlementsParams = params(raw)?;
    let wanted = scope(market, method, &p)?;
    let deliveries = match p.settlement_type.as_deref() {
        None | Some("delivery") => true,
        Some("settlement" | "bankruptcy") => false,
        Some(_) => return Err(RpcError::invalid_param("type", "invalid value")),
    };
    let count = p.count.unwrap_or(20).clamp(1, 1_000) as usize;
    let skip: usize = match &p.continuation {
        None => 0,
        Some(token) => token.parse().map_err(|_| RpcError::invalid_param("continuation", "invalid value"))?,
    };
    let before = p.search_start_timestamp.unwrap_or(i64::MAX);
    let amount = |i: InstrumentId, lots: i64| Num(market.spec(i).qty_to_decimal(ticktrade_core::Qty::from_raw(lots)));
    let mut all: Vec<api::Settlement> = Vec::new();
    if deliveries {
        match account {
            None => {
                for d in market.ex.deliveries().rev().filter(|d| wanted.contains(&d.instrument)) {
                    all.push(api::Settlement {
                        settlement_type: "delivery".to_owned(),
                        timestamp: d.timestamp.as_millis(),
                        session_profit_loss: money(d.profit_loss),
                        profit_loss: money(d.profit_loss),
                        position: amount(d.instrument, d.open_interest),
                        mark_price: money(d.price),
                        instrument_name: market.name(d.instrument).to_owned(),
                        index_price: money(d.index_price),
                    });
                }
            }
            Some(account) => {
                for e in market.ex.ledger(ExAccount(account)).rev().filter(|e| wanted.contains(&e.instrument)) {
                    let LedgerKind::Delivery { position, price } = e.kind else { continue };
                    all.push(api::Settlement {
                        settlement_type: "delivery".to_owned(),
                        timestamp: e.timestamp.as_millis(),
                        session_profit_loss: money(e.profit_loss),
                        profit_loss: money(e.profit_loss),
                        position: amount(e.instrument, position),
                        mark_price: money(price),
                        instrument_name: market.name(e.instrument).to_owned(),
                        index_price: money(e.index_price),
                    });
                }
            }
        }
    }
    all.retain(|s| s.timestamp <= before);
    let more = all.len() > skip + count;
    let settlements: Vec<api::Settlement> = all.into_iter().skip(skip).take(count).collect();
    let continuation = more.then(|| (skip + settlements.len()).to_string());
    json(&api::Settlements { settlements, continuation })
}

fn transaction_log(market: &Market, account: AccountId, raw: Option<&RawValue>) -> Result<String, RpcError> {
    let p: api::TransactionLogParams = params(raw)?;
    let currency = market
        .ex
        .catalogue()
        .currency(&p.currency.to_ascii_uppercase())
        .ok_or_else(|| RpcError::invalid_param("currency", "invalid value"))?;
    let count = p.count.unwrap_or(100).clamp(1, 250) as usize;
    let keep = |e: &LedgerEntry| -> Result<bool, RpcError> {
        let trade = match e.kind {
            LedgerKind::Trade { liquidity, position_before, position_after, .. } => {
                Some((liquidity, position_after.abs() > position_before.abs() || position_before == 0))
            }
            LedgerKind::Delivery { .. } => None,
        };
        Ok(match p.query.as_deref() {
            None => true,
            Some("trade") => trade.is_some(),
            Some("maker") => trade.is_some_and(|(l, _)| l == Liquidity::Maker),
            Some("taker") => trade.is_some_and(|(l, _)| l == Liquidity::Taker),
            Some("open") => trade.is_some_and(|(_, open)| open),
            Some("close") => trade.is_some_and(|(_, open)| !open),
            Some("delivery" | "settlement") => trade.is_none(),
            Some(_) => return Err(RpcError::invalid_param("query", "invalid value")),
        })
    };
    let mut logs = Vec::new();
    let mut more = false;
    for e in market.ex.ledger(ExAccount(account)).rev() {
        let id = e.seq as i64 + 1;
        let ms = e.timestamp.as_millis();
        if e.currency != currency
            || ms < p.start_timestamp
            || ms > p.end_timestamp
            || p.continuation.is_some_and(|c| id >= c)
            || !keep(e)?
        {
            continue;
        }
        if logs.len() == count {
            more = true;
            break;
        }
        logs.push(entry(market, account, e));
    }
    let continuation = if more { logs.last().map(|l: &api::TransactionLogEntry| l.id) } else { None };
    json(&api::TransactionLog { logs, continuation })
}

/// One ledger entry as Deribit's transaction log shows it.
fn entry(market: &Market, account: AccountId, e: &LedgerEntry) -> api::TransactionLogEntry {
    let spec = market.spec(e.instrument);
    let amount = |lots: i64| Num(spec.qty_to_decimal(ticktrade_core::Qty::from_raw(lots)));
    let id = e.seq as i64 + 1;
    let mut log = api::TransactionLogEntry {
        id,
        user_seq: id,
        user_id: i64::from(account),
        username: format!("sim{account}"),
        timestamp: e.timestamp.as_millis(),
        currency: market.ex.catalogue().currency_name(e.currency).to_owned(),
        instrument_name: Some(market.name(e.instrument).to_owned()),
        price_currency: spec.quote_currency.clone(),
        change: money(e.change),
        cashflow: money(e.change),
        balance: money(e.balance),
        equity: money(e.equity),
        interest_pl: Some(Num::ZERO),
        ..api::TransactionLogEntry::default()
    };
    match e.kind {
        LedgerKind::Trade { trade_id, order_id, side, price, qty, liquidity, position_before, position_after } => {
            let dir = if side == Side::Buy { "buy" } else { "sell" };
            let opens = position_before == 0 || position_before.signum() == side.sign();
            log.entry_type = "trade".to_owned();
            log.side = if spec.kind == InstrumentKind::Spot {
                dir.to_owned()
            } else {
                format!("{} {dir}", if opens { "open" } else { "close" })
            };
            let mut text = String::new();
            market.ex.write_trade_id(e.instrument, trade_id, &mut text);
            log.trade_id = Some(text);
            log.order_id = Some(match market.ex.order(order_id) {
                Some(order) => market.order_id_text(order),
                None => {
                    let prefix = market.ex.catalogue().get(e.instrument).map_or("", |i| i.order_id_prefix.as_str());
                    format!("{prefix}-{order_id}")
                }
            });
            log.price = Some(Num(spec.price_to_decimal(price)));
            log.amount = Num(spec.qty_to_decimal(qty));
            log.position = Some(amount(position_after));
            log.commission = Some(money(e.fee));
            log.user_role = Some(if liquidity == Liquidity::Maker { "maker" } else { "taker" }.to_owned());
            log.mark_price = Some(money(e.mark_price));
            log.profit_as_cashflow = Some(false);
            log.info = serde_json::json!("Source: api");
        }
        LedgerKind::Delivery { position, price } => {
            log.entry_type = "delivery".to_owned();
            log.side = if position > 0 { "long" } else { "short" }.to_owned();
            log.price = Some(money(price));
            log.amount = amount(position.abs());
            log.position = Some(amount(position));
            log.session_rpl = Some(money(e.profit_loss));
            log.session_upl = Some(Num::ZERO);
            log.total_interest_pl = Some(Num::ZERO);
            log.info = serde_json::json!({"settlement_price": money(price), "floating_pl": money(e.profit_loss)});
        }
    }
    log
}
