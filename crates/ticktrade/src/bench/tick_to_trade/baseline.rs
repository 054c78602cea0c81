//! The plain way to write tick-to-trade, measured in the same run as the hot loop: a tokio
//! task on a current-thread runtime, tokio-tungstenite (`TCP_NODELAY` on), each frame parsed
//! into a `serde_json::Value`, a `BTreeMap<i64, i64>` per side, a `format!`-built request.
//!
//! Owns: that pipeline and its stage readings (same clock, same stage definitions: t0 when the
//! WebSocket stream yields the message, which is after tungstenite has framed and UTF-8-checked
//! it, so the baseline's t0 is if anything later than the hot loop's).
//! Must not: use any of ticktrade's fast paths (exact numbers come from core's parsers on the
//! `Value`'s number text, as a careful plain implementation would do it).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::exchange::ExchangeSide;
use anyhow::{Context, anyhow};
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use ticktrade_core::{InstrumentSpec, Price};
use ticktrade_gateway::hot::feed::SyntheticFeed;
use ticktrade_gateway::hot::to_stamps;
use ticktrade_gateway::hot::{RawStamps, Recorded};
use ticktrade_latency::TscClock;
use tokio_tungstenite::tungstenite::Message;

use super::{Pacing, SideResult};

pub(crate) fn run(
    spec: &InstrumentSpec,
    feed: &Arc<SyntheticFeed>,
    clock: &TscClock,
    pacing: Pacing,
    every: u32,
) -> anyhow::Result<SideResult> {
    let config = pacing.config(0, feed.changes.len());
    let exchange = ExchangeSide::spawn(Arc::clone(feed), clock.clone(), config)?;
    let url = format!("ws://{}/ws/api/v2", exchange.addr);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let task_spec = spec.clone();
    let task_clock = clock.clone();
    let recorded = runtime.block_on(async move {
        tokio::spawn(client(url, task_spec, task_clock, every)).await.map_err(|e| anyhow!("baseline task: {e}"))?
    })?;
    let exchange = exchange.join()?;
    Ok(SideResult { recorded, exchange })
}

#[derive(Default)]
struct Book {
    bids: BTreeMap<i64, i64>,
    asks: BTreeMap<i64, i64>,
    last_change_id: Option<u64>,
}

async fn client(url: String, spec: InstrumentSpec, clock: TscClock, every: u32) -> anyhow::Result<Recorded> {
    let (mut ws, _) =
        tokio_tungstenite::connect_async_with_config(url.as_str(), None, true).await.context("baseline connect")?;
    let mut recorded = Recorded::default();
    let mut book = Book::default();
    let mut next_id = 1u64;
    let mut seen = 0u32;
    let anchor_mono = clock.to_mono(clock.raw());
    let anchor_utc = ticktrade_core::Clock::utc(&clock).0;
    while let Some(message) = ws.next().await {
        let message = message.context("baseline read")?;
        let t0 = clock.raw();
        let text = match message {
            Message::Text(text) => text,
            Message::Close(_) => break,
            _ => continue,
        };
        let recv_utc = anchor_utc + (clock.to_mono(t0).0 as i64 - anchor_mono.0 as i64);
        let mut raw = RawStamps::received(t0, recv_utc);
        let value: Value = match serde_json::from_str(text.as_str()) {
            Ok(value) => value,
            Err(_) => continue,
        };
        if value["method"] != "subscription" {
            continue;
        }
        let data = &value["params"]["data"];
        let Some(levels) = parse_levels(&spec, data) else { continue };
        let change_id = data["change_id"].as_u64().unwrap_or(0);
        raw.t[1] = clock.raw().0;
        let ok = apply(&mut book, data, change_id, &levels);
        raw.t[2] = clock.raw().0;
        if !ok {
            continue;
        }
        seen += 1;
        let best_bid = book.bids.last_key_value().map(|(p, _)| *p);
        let best_ask = book.asks.first_key_value().map(|(p, _)| *p);
        let price = match (best_bid, best_ask) {
            (Some(bid), Some(ask)) if bid < ask && seen >= every => Some(if bid + 1 < ask { bid + 1 } else { bid }),
            _ => None,
        };
        raw.t[3] = clock.raw().0;
        if let Some(price) = price {
            seen = 0;
            let request = format!(
                r#"{{"jsonrpc":"2.0","id":{},"method":"private/buy","params":{{"instrument_name":"{}","amount":{},"type":"limit","price":{},"label":"tt.{}.{}","post_only":true}}}}"#,
                next_id,
                spec.name,
                spec.format_qty(ticktrade_core::Qty::from_raw(1)),
                spec.format_price(Price::from_raw(price)),
                recv_utc,
                change_id
            );
            next_id += 1;
            raw.t[4] = clock.raw().0;
            ws.send(Message::text(request)).await.context("baseline write")?;
            raw.t[5] = clock.raw().0;
        }
        recorded.record(&to_stamps(&clock, &raw));
    }
    Ok(recorded)
}

/// `(is_bid, is_delete, price ticks, qty lots)` of every entry, or `None` if malformed.
fn parse_levels(spec: &InstrumentSpec, data: &Value) -> Option<Vec<(bool, bool, i64, i64)>> {
    let mut out = Vec::new();
    for (key, is_bid) in [("bids", true), ("asks", false)] {
        for entry in data[key].as_array()? {
            let action = entry[0].as_str()?;
            let price = spec.parse_price(&entry[1].as_number()?.to_string()).ok()?;
            let qty = spec.parse_qty(&entry[2].as_number()?.to_string()).ok()?;
            out.push((is_bid, action == "delete", price.raw(), qty.raw()));
        }
    }
    Some(out)
}

fn apply(book: &mut Book, data: &Value, change_id: u64, levels: &[(bool, bool, i64, i64)]) -> bool {
    match data["type"].as_str() {
        Some("snapshot") => {
            book.bids.clear();
            book.asks.clear();
        }
        Some("change") => {
            if data["prev_change_id"].as_u64() != book.last_change_id || book.last_change_id.is_none() {
                return false;
            }
        }
        _ => return false,
    }
    for &(is_bid, delete, price, qty) in levels {
        let side = if is_bid { &mut book.bids } else { &mut book.asks };
        if delete || qty <= 0 {
            side.remove(&price);
        } else {
            side.insert(price, qty);
        }
    }
    book.last_change_id = Some(change_id);
    true
}
