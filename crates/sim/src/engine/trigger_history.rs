//! `private/get_trigger_order_history`: the life of the account's stop, take and trailing
//! orders, read from the exchange's live orders and its closed-order history.
//!
//! Owns: turning trigger orders into Deribit's history entries, newest first: one `new`
//! entry when a trigger order was placed (`request: "trigger:order"`), one `triggered` entry
//! when it fired (`request: "trigger:order"`, `order_id` = the order it placed) and one
//! `cancelled` entry when it was cancelled (`request: "cancel"`). `trigger` is the short
//! form (`index`, `mark`, `last`); `price` is the limit price, or the trigger price for
//! market-type orders; `offset` is a trailing stop's distance (`0` otherwise). Paging:
//! `count` (default 20, at most 1000) and `continuation`, an opaque token
//! (`"<timestamp>.<trigger_order_id>.<order_state>"` of the last entry returned, Deribit's
//! `"<timestamp>.<trigger_order_id>"` plus the state, since placing and firing can share a
//! millisecond); `null` on the last page.
//! Must not: keep its own log: what the exchange no longer keeps (history beyond
//! `Config::history_len`) is gone here too.

use serde::Deserialize;
use serde_json::value::RawValue;
use ticktrade_core::Price;
use ticktrade_deribit_proto::api::{self, Num};
use ticktrade_exchange::{AccountId as ExAccount, Order, OrderFilter, OrderState, TriggerKind, TypeFilter};

use super::methods::{instrument, json};
use crate::market::{AccountId, Market};
use crate::rpc::{RpcError, params};

pub const METHODS: &[&str] = &["private/get_trigger_order_history"];

#[derive(Deserialize)]
struct HistoryParams {
    currency: String,
    #[serde(default)]
    instrument_name: Option<String>,
    #[serde(default)]
    count: Option<u32>,
    #[serde(default)]
    continuation: Option<String>,
}

/// Calls `method` if it is one of [`METHODS`] (private: the caller has the session's account).
pub fn call(
    market: &Market,
    account: AccountId,
    method: &str,
    raw: Option<&RawValue>,
) -> Option<Result<String, RpcError>> {
    if !METHODS.contains(&method) {
        return None;
    }
    Some(history(market, ExAccount(account), raw))
}

fn history(market: &Market, account: ExAccount, raw: Option<&RawValue>) -> Result<String, RpcError> {
    let p: HistoryParams = params(raw)?;
    let currency = if p.currency.eq_ignore_ascii_case("any") {
        None
    } else {
        Some(
            market
                .ex
                .catalogue()
                .currency(&p.currency)
                .ok_or_else(|| RpcError::invalid_param("currency", "invalid value"))?,
        )
    };
    let instrument = p.instrument_name.as_deref().map(|name| instrument(market, name)).transpose()?;
    let filter = OrderFilter { instrument, currency, kind: None, order_type: TypeFilter::TriggerAll };
    let triggers: Vec<Order> =
        market.ex.open_orders(account, filter).into_iter().chain(market.ex.order_history(account, filter)).collect();
    // The orders fired triggers placed, by trigger id.
    let all = OrderFilter { instrument, currency, ..OrderFilter::default() };
    let spawned: Vec<Order> = market
        .ex
        .open_orders(account, all)
        .into_iter()
        .chain(market.ex.order_history(account, all))
        .filter(|o| o.trigger_order_id.is_some())
        .collect();
    let mut entries: Vec<(i64, String, api::TriggerOrderEntry)> = Vec::new();
    for t in &triggers {
        let Some(trigger) = t.trigger else { continue };
        let spec = market.spec(t.instrument);
        let id = market.order_id_text(t);
        let entry = |timestamp: i64, order_state: &str, request: &str, order_id: String| api::TriggerOrderEntry {
            trigger: match trigger.kind {
                TriggerKind::IndexPrice => "index",
                TriggerKind::MarkPrice => "mark",
                TriggerKind::LastPrice => "last",
            }
            .to_owned(),
            timestamp,
            trigger_price: Num(spec.price_to_decimal(trigger.price)),
            trigger_order_id: id.clone(),
            order_state: order_state.to_owned(),
            request: request.to_owned(),
            price: Num(spec.price_to_decimal(t.price.unwrap_or(trigger.price))),
            order_id,
            offset: Num(spec.price_to_decimal(Price::from_raw(trigger.offset.unwrap_or(0)))),
            instrument_name: spec.name.clone(),
            amount: Num(spec.qty_to_decimal(t.amount)),
            direction: t.side.as_str().to_owned(),
        };
        let created = t.created.as_millis();
        entries.push((created, id.clone(), entry(created, "new", "trigger:order", id.clone())));
        let updated = t.updated.as_millis();
        match t.state {
            OrderState::Triggered => {
                let placed = spawned.iter().find(|o| o.trigger_order_id == Some(t.id));
                let order_id = placed.map_or_else(|| id.clone(), |o| market.order_id_text(o));
                entries.push((updated, id.clone(), entry(updated, "triggered", "trigger:order", order_id)));
            }
            OrderState::Cancelled => {
                entries.push((updated, id.clone(), entry(updated, "cancelled", "cancel", id.clone())))
            }
            _ => {}
        }
    }
    // Newest first; within one millisecond the later event first.
    entries.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then_with(|| state_rank(&b.2.order_state).cmp(&state_rank(&a.2.order_state)))
            .then_with(|| b.1.cmp(&a.1))
    });
    if let Some(token) = &p.continuation {
        let bad = || RpcError::invalid_param("continuation", "invalid value");
        let mut parts = token.splitn(3, '.');
        let ts: i64 = parts.next().and_then(|t| t.parse().ok()).ok_or_else(bad)?;
        let id = parts.next().ok_or_else(bad)?;
        let state = parts.next().unwrap_or("new");
        // Skip up to and including the entry the token names.
        match entries.iter().position(|(t, i, e)| *t == ts && i == id && e.order_state == state) {
            Some(at) => {
                entries.drain(..=at);
            }
            None => entries.retain(|(t, _, _)| *t < ts),
        }
    }
    let count = p.count.unwrap_or(20).clamp(1, 1_000) as usize;
    let continuation = (entries.len() > count).then(|| {
        let (ts, id, entry) = &entries[count - 1];
        format!("{ts}.{id}.{}", entry.order_state)
    });
    entries.truncate(count);
    json(&api::TriggerOrderHistory { entries: entries.into_iter().map(|(_, _, e)| e).collect(), continuation })
}

fn state_rank(state: &str) -> u8 {
    if state == "new" { 0 } else { 1 }
}
