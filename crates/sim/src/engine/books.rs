//! The public reads answered next to trading: instruments, currencies, books, tickers,
//! index prices, book summaries, the last trades of an instrument and TradingView candles.
//!
//! Owns: decoding those methods' params and rendering the answers from the exchange's live
//! state (books, tickers, kept trades and one-minute candles).
//! Must not: change the venue.

use serde_json::value::RawValue;
use ticktrade_core::{Decimal, Utc};
use ticktrade_deribit_proto::api::{self, Num};

use super::methods::{instrument, json};
use crate::market::{Market, money};
use crate::rpc::{RpcError, params};

/// Books, tickers, instruments, indexes, trades and charts.
pub fn call(market: &Market, now: Utc, method: &str, raw: Option<&RawValue>) -> Result<String, RpcError> {
    let now_ms = now.as_millis();
    match method {
        "public/get_instruments" => {
            let p: api::CurrencyParams = params(raw)?;
            if p.expired == Some(true) {
                return json(&Vec::<api::Instrument>::new());
            }
            let currency = p.currency.as_deref().unwrap_or("any");
            let list: Vec<&api::Instrument> = market
                .instruments()
                .filter(|(i, _)| market.currency_matches(*i, currency))
                .filter(|(i, _)| p.kind.as_deref().is_none_or(|k| market.kind_matches(*i, k)))
                .map(|(_, info)| info)
                .collect();
            json(&list)
        }
        "public/get_instrument" => {
            let p: api::InstrumentParams = params(raw)?;
            json(market.info(instrument(market, &p.instrument_name)?))
        }
        "public/get_currencies" => json(&currencies(market)),
        "public/get_order_book" => {
            let p: api::InstrumentParams = params(raw)?;
            let instr = instrument(market, &p.instrument_name)?;
            json(&market.order_book(instr, p.depth.unwrap_or(20).clamp(1, 10_000) as usize, now_ms))
        }
        "public/get_order_book_by_instrument_id" => {
            let p: api::InstrumentIdParams = params(raw)?;
            let instr = market
                .find_by_id(p.instrument_id)
                .ok_or_else(|| RpcError::invalid_param("instrument_id", "wrong format"))?;
            json(&market.order_book(instr, p.depth.unwrap_or(20).clamp(1, 10_000) as usize, now_ms))
        }
        "public/ticker" => {
            let p: api::InstrumentParams = params(raw)?;
            json(&market.ticker(instrument(market, &p.instrument_name)?, now_ms))
        }
        "public/get_index_price" => {
            let p: api::IndexParams = params(raw)?;
            let price = market
                .index_price(&p.index_name)
                .ok_or_else(|| RpcError::invalid_param("index_name", "wrong format"))?;
            json(&api::IndexPrice { index_price: money(price), estimated_delivery_price: money(price) })
        }
        "public/get_index_price_names" => json(&market.index_names()),
        "public/get_book_summary_by_currency" => {
            let p: api::CurrencyParams = params(raw)?;
            let currency = p.currency.ok_or_else(|| RpcError::invalid_param("currency", "must be present"))?;
            let list: Vec<api::BookSummary> = market
                .instruments()
                .filter(|(_, i)| i.base_currency == currency || currency.eq_ignore_ascii_case("any"))
                .filter(|(i, _)| p.kind.as_deref().is_none_or(|k| market.kind_matches(*i, k)))
                .map(|(i, _)| market.book_summary(i, now_ms))
                .collect();
            json(&list)
        }
        "public/get_book_summary_by_instrument" => {
            let p: api::InstrumentParams = params(raw)?;
            json(&[market.book_summary(instrument(market, &p.instrument_name)?, now_ms)])
        }
        "public/get_last_trades_by_instrument" => {
            let p: api::InstrumentParams = params(raw)?;
            let instr = instrument(market, &p.instrument_name)?;
            let count = p.count.unwrap_or(10).clamp(1, 1_000) as usize;
            let recent: Vec<&ticktrade_exchange::PublicTrade> = market.ex.recent_trades(instr).collect();
            let mut trades: Vec<api::PublicTrade> =
                recent.iter().rev().take(count + 1).map(|t| market.render_public_trade(t)).collect();
            let has_more = trades.len() > count;
            trades.truncate(count);
            json(&api::PublicTrades { trades, has_more })
        }
        "public/get_tradingview_chart_data" => {
            let p: api::ChartParams = params(raw)?;
            chart(market, &p)
        }
        _ => Err(RpcError::method_not_found()),
    }
}

fn currencies(market: &Market) -> Vec<api::Currency> {
    market
        .currency_names()
        .into_iter()
        .map(|currency| {
            let (long, coin, decimals) = match currency.as_str() {
                "BTC" => ("Bitcoin", "BITCOIN", 8),
                "ETH" => ("Ethereum", "ETHER", 6),
                "USDC" => ("USD Coin", "USDC", 6),
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

fn chart(market: &Market, p: &api::ChartParams) -> Result<String, RpcError> {
    let instr = instrument(market, &p.instrument_name)?;
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
    let minutes = minutes.clamp(1, 1_440);
    let step = minutes * 60_000;
    let spec = market.spec(instr);
    let first = p.start_timestamp.div_euclid(step) * step;
    let n = ((p.end_timestamp - first) / step + 1).clamp(0, 5_000);
    let first = p.end_timestamp.div_euclid(step) * step - (n - 1).max(0) * step;
    let candles = market.ex.candles(instr, Utc::from_millis(first), Utc::from_millis(p.end_timestamp), minutes as u32);
    let mut data =
        api::ChartData { status: if n > 0 { "ok" } else { "no_data" }.to_owned(), ..api::ChartData::default() };
    let ticker = market.ticker(instr, p.end_timestamp);
    let mut close = ticker.last_price.unwrap_or(ticker.mark_price);
    for k in 0..n {
        let start = first + k * step;
        let price = |p| Num(spec.price_to_decimal(p));
        let (open, high, low, volume) = match candles.iter().find(|c| c.start.as_millis() == start) {
            Some(c) => {
                let o = price(c.open);
                close = price(c.close);
                (o, price(c.high), price(c.low), Num(spec.qty_to_decimal(c.volume)))
            }
            None => (close, close, close, Num::ZERO),
        };
        data.ticks.push(start);
        data.open.push(open);
        data.high.push(high);
        data.low.push(low);
        data.close.push(close);
        data.volume.push(volume);
        data.cost.push(volume);
    }
    json(&data)
}
