//! Public market-data reads beyond books and tickers: trade history by currency and by time,
//! index names and the legacy index, contract sizes, expirations, trade volumes, funding.
//!
//! Owns: decoding those methods' params (`-32602` names a missing or bad one) and rendering
//! the answer from the exchange's state: its kept public trades (`recent_trades`, bounded per
//! instrument by the exchange's config), the catalogue and the index prices.
//! Must not: change the venue, or invent data: what the exchange does not keep answers an
//! empty list, and the simulator has no funding model, so funding over any period is 0.
//! Announcements: the simulator's one, published at start.

use ticktrade_core::{InstrumentId, InstrumentKind, InstrumentSpec, OptionType, Settlement};
use ticktrade_deribit_proto::api::{self, Num};
use ticktrade_exchange::{Money, PublicTrade};

use super::methods::{instrument, json};
use crate::market::{Market, money};
use crate::rpc::{RpcError, params};

/// The methods answered here.
pub const METHODS: &[&str] = &[
    "public/get_last_trades_by_currency",
    "public/get_last_trades_by_currency_and_time",
    "public/get_last_trades_by_instrument_and_time",
    "public/get_supported_index_names",
    "public/get_contract_size",
    "public/get_expirations",
    "public/get_index",
    "public/get_trade_volumes",
    "public/get_funding_rate_value",
    "public/get_announcements",
];

/// Answers one of [`METHODS`] (`None`: not one of them).
pub fn call(
    market: &Market,
    method: &str,
    raw: Option<&serde_json::value::RawValue>,
) -> Option<Result<String, RpcError>> {
    let result = match method {
        "public/get_last_trades_by_currency"
        | "public/get_last_trades_by_currency_and_time"
        | "public/get_last_trades_by_instrument_and_time" => last_trades(market, method, raw),
        "public/get_supported_index_names" => params::<api::IndexNamesParams>(raw).and_then(|p| {
            let wanted = p.index_type.unwrap_or_else(|| "all".to_owned());
            if !matches!(wanted.as_str(), "all" | "spot" | "derivative") {
                return Err(RpcError::invalid_param("type", "invalid value"));
            }
            let mut names: Vec<&str> = market
                .instruments()
                .filter(|(i, _)| {
                    let spot = market.spec(*i).kind == InstrumentKind::Spot;
                    wanted == "all" || (wanted == "spot") == spot
                })
                .map(|(_, info)| info.price_index.as_str())
                .collect();
            names.sort_unstable();
            names.dedup();
            json(&names)
        }),
        "public/get_contract_size" => params::<api::InstrumentParams>(raw).and_then(|p| {
            let spec = market.spec(instrument(market, &p.instrument_name)?);
            json(&api::ContractSize { contract_size: Num(spec.contract_size) })
        }),
        "public/get_expirations" => params::<api::ExpirationsParams>(raw).and_then(|p| expirations(market, &p)),
        "public/get_index" => params::<api::CurrencyParams>(raw).and_then(|p| {
            let currency = p.currency.ok_or_else(|| RpcError::invalid_param("currency", "must be present"))?;
            let name = format!("{}_usd", currency.to_ascii_lowercase());
            let price =
                market.index_price(&name).ok_or_else(|| RpcError::invalid_param("currency", "invalid value"))?;
            let mut result = api::LegacyIndex::new();
            result.insert(currency.to_ascii_uppercase(), money(price));
            result.insert("edp".to_owned(), money(price));
            json(&result)
        }),
        "public/get_trade_volumes" => params::<api::TradeVolumesParams>(raw).and_then(|p| {
            if p.extended == Some(true) {
                return Err(RpcError::invalid_param("extended", "7- and 30-day volumes are not kept"));
            }
            json(&trade_volumes(market))
        }),
        "public/get_funding_rate_value" => params::<api::FundingParams>(raw).and_then(|p| {
            let instr = instrument(market, &p.instrument_name)?;
            if !perpetual(market.spec(instr)) {
                return Err(RpcError::invalid_param("instrument_name", "not a perpetual"));
            }
            if p.end_timestamp < p.start_timestamp {
                return Err(RpcError::invalid_param("end_timestamp", "before start_timestamp"));
            }
            json(&Num::ZERO)
        }),
        // The simulator's one announcement (see `account_reads`).
        "public/get_announcements" => json(&[super::account_reads::announcement(market)]),
        _ => return None,
    };
    Some(result)
}

fn perpetual(spec: &InstrumentSpec) -> bool {
    spec.kind == InstrumentKind::Future && spec.expiry.is_none()
}

fn last_trades(market: &Market, method: &str, raw: Option<&serde_json::value::RawValue>) -> Result<String, RpcError> {
    let p: api::TradesParams = params(raw)?;
    let by_time = method.ends_with("_and_time");
    let required = |value: Option<i64>, name: &str| {
        value.ok_or_else(|| RpcError::invalid_param(name, "must be present")).map(Some)
    };
    let (start, end) = if by_time {
        (required(p.start_timestamp, "start_timestamp")?, required(p.end_timestamp, "end_timestamp")?)
    } else {
        (p.start_timestamp, p.end_timestamp)
    };
    let instruments: Vec<InstrumentId> = if method.contains("by_instrument") {
        let name = p
            .instrument_name
            .as_deref()
            .ok_or_else(|| RpcError::invalid_param("instrument_name", "must be present"))?;
        vec![instrument(market, name)?]
    } else {
        let currency = p.currency.as_deref().ok_or_else(|| RpcError::invalid_param("currency", "must be present"))?;
        let kind = p.kind.as_deref().unwrap_or("any");
        market
            .instruments()
            .map(|(i, _)| i)
            .filter(|i| market.currency_matches(*i, currency) && market.kind_matches(*i, kind))
            .collect()
    };
    let count = p.count.unwrap_or(10).clamp(1, 1_000) as usize;
    let ascending = match p.sorting.as_deref() {
        None | Some("default" | "desc") => false,
        Some("asc") => true,
        Some(_) => return Err(RpcError::invalid_param("sorting", "invalid value")),
    };
    let mut trades: Vec<&PublicTrade> = instruments
        .iter()
        .flat_map(|i| market.ex.recent_trades(*i))
        .filter(|t| {
            let ms = t.timestamp.as_millis();
            start.is_none_or(|s| ms >= s) && end.is_none_or(|e| ms <= e)
        })
        .collect();
    // Time, then the exchange's trade id: one order across instruments, stable under the seed.
    trades.sort_by_key(|t| (t.timestamp, t.trade_id));
    if !ascending {
        trades.reverse();
    }
    let has_more = trades.len() > count;
    let trades = trades.into_iter().take(count).map(|t| market.render_public_trade(t)).collect();
    json(&api::PublicTrades { trades, has_more })
}

fn expirations(market: &Market, p: &api::ExpirationsParams) -> Result<String, RpcError> {
    let (future, option) = match p.kind.as_str() {
        "any" => (true, true),
        "future" => (true, false),
        "option" => (false, true),
        _ => return Err(RpcError::invalid_param("kind", "invalid value")),
    };
    let codes = |kind: InstrumentKind| {
        let mut dated: Vec<(i64, String)> = market
            .instruments()
            .filter(|(i, info)| {
                let spec = market.spec(*i);
                spec.kind == kind && spec.expiry.is_some() && info.expiration_timestamp > 0 && {
                    let currency = p.currency.as_str();
                    currency == "any" || market.currency_matches(*i, currency)
                }
            })
            .filter_map(|(_, info)| {
                let code = info.instrument_name.split('-').nth(1)?;
                Some((info.expiration_timestamp, code.to_owned()))
            })
            .collect();
        dated.sort_unstable();
        dated.dedup();
        let mut codes: Vec<String> = dated.into_iter().map(|(_, code)| code).collect();
        codes.dedup();
        // Deribit lists the perpetual among the futures' expirations, last.
        let has_perpetual = market.instruments().any(|(i, _)| {
            perpetual(market.spec(i)) && (p.currency == "any" || market.currency_matches(i, &p.currency))
        });
        if kind == InstrumentKind::Future && has_perpetual {
            codes.push("PERPETUAL".to_owned());
        }
        codes
    };
    json(&api::Expirations {
        future: future.then(|| codes(InstrumentKind::Future)),
        option: option.then(|| codes(InstrumentKind::Option)),
    })
}

/// Volumes of the kept trades of the last 24 h, in each base currency: an inverse future's
/// amount is in USD and is converted at the trade's price.
fn trade_volumes(market: &Market) -> Vec<api::TradeVolume> {
    let mut bases: Vec<String> = market.instruments().map(|(_, info)| info.base_currency.clone()).collect();
    bases.sort_unstable();
    bases.dedup();
    let newest = market.instruments().flat_map(|(i, _)| market.ex.recent_trades(i).map(|t| t.timestamp)).max();
    let since_ms = newest.map_or(0, |t| t.as_millis() - 86_400_000);
    bases
        .into_iter()
        .map(|base| {
            let (mut calls, mut puts, mut futures, mut spot) = (Money::ZERO, Money::ZERO, Money::ZERO, Money::ZERO);
            for (i, _) in market.instruments().filter(|(_, info)| info.base_currency == base) {
                let spec = market.spec(i);
                for t in market.ex.recent_trades(i).filter(|t| t.timestamp.as_millis() >= since_ms) {
                    let amount = Money::from_decimal(spec.qty_to_decimal(t.qty));
                    let in_base = if spec.settlement == Settlement::Inverse && spec.kind == InstrumentKind::Future {
                        amount.div_decimal(spec.price_to_decimal(t.price))
                    } else {
                        amount
                    };
                    let bucket = match (spec.kind, spec.option_type) {
                        (InstrumentKind::Option, Some(OptionType::Call)) => &mut calls,
                        (InstrumentKind::Option, _) => &mut puts,
                        (InstrumentKind::Spot, _) => &mut spot,
                        _ => &mut futures,
                    };
                    *bucket += in_base;
                }
            }
            api::TradeVolume {
                currency: base,
                calls_volume: money(calls),
                puts_volume: money(puts),
                futures_volume: money(futures),
                spot_volume: money(spot),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::{Value, json};
    use ticktrade_core::Utc;

    /// A market that has traded for a minute under seed 7.
    fn traded() -> Market {
        let start = Utc::from_millis(1_767_254_400_000);
        let (catalogue, infos) = crate::market::builtin_catalogue(start).unwrap();
        let mut market = Market::new(catalogue, infos, 7, 2_000, start);
        let mut out = Vec::new();
        for s in 0..60 {
            market.step(Utc::from_millis(start.as_millis() + s * 1_000), &mut out);
        }
        market
    }

    fn ask(market: &Market, method: &str, params: Value) -> Result<Value, RpcError> {
        let raw = serde_json::value::RawValue::from_string(params.to_string()).unwrap();
        call(market, method, Some(&raw)).unwrap().map(|text| serde_json::from_str(&text).unwrap())
    }

    fn stamps(result: &Value) -> Vec<i64> {
        result["trades"].as_array().unwrap().iter().map(|t| t["timestamp"].as_i64().unwrap()).collect()
    }

    #[test]
    fn trades_by_time_are_windowed_sorted_and_counted() {
        let market = traded();
        let perp = market.find("BTC-PERPETUAL").unwrap();
        let kept: Vec<i64> = market.ex.recent_trades(perp).map(|t| t.timestamp.as_millis()).collect();
        assert!(kept.len() > 20, "only {} trades", kept.len());
        let (lo, hi) = (kept[kept.len() / 4], kept[kept.len() * 3 / 4]);
        let window = |sorting: &str, count: u32| {
            json!({"instrument_name": "BTC-PERPETUAL", "start_timestamp": lo, "end_timestamp": hi,
                   "sorting": sorting, "count": count})
        };
        let method = "public/get_last_trades_by_instrument_and_time";
        let expected: Vec<i64> = kept.iter().copied().filter(|t| (lo..=hi).contains(t)).collect();
        let asc = ask(&market, method, window("asc", 1_000)).unwrap();
        assert_eq!(stamps(&asc), expected);
        assert_eq!(asc["has_more"], false);
        let desc = ask(&market, method, window("desc", 3)).unwrap();
        let newest: Vec<i64> = expected.iter().rev().take(3).copied().collect();
        assert_eq!((stamps(&desc), desc["has_more"].as_bool()), (newest, Some(expected.len() > 3)));
        let none = ask(&market, method, json!({"instrument_name": "BTC-PERPETUAL", "start_timestamp": hi + 1_000_000, "end_timestamp": hi + 2_000_000})).unwrap();
        assert_eq!((stamps(&none).len(), none["has_more"].as_bool()), (0, Some(false)));
    }

    #[test]
    fn trades_by_currency_span_instruments_and_kinds() {
        let market = traded();
        let all =
            ask(&market, "public/get_last_trades_by_currency", json!({"currency": "BTC", "count": 1000})).unwrap();
        let names: std::collections::BTreeSet<&str> =
            all["trades"].as_array().unwrap().iter().map(|t| t["instrument_name"].as_str().unwrap()).collect();
        assert!(names.len() > 1, "{names:?}");
        assert!(names.iter().all(|n| n.starts_with("BTC")), "{names:?}");
        let times = stamps(&all);
        assert!(times.windows(2).all(|w| w[0] >= w[1]), "newest first by default");
        let futures = ask(
            &market,
            "public/get_last_trades_by_currency",
            json!({"currency": "BTC", "kind": "future", "count": 1000}),
        )
        .unwrap();
        assert!(
            futures["trades"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| !t["instrument_name"].as_str().unwrap().ends_with("-C"))
        );
    }

    #[test]
    fn missing_and_bad_params_are_named() {
        let market = traded();
        let param =
            |method: &str, params: Value| ask(&market, method, params).unwrap_err().data.unwrap()["param"].clone();
        assert_eq!(
            param("public/get_last_trades_by_currency_and_time", json!({"currency": "BTC", "end_timestamp": 1})),
            "start_timestamp"
        );
        assert_eq!(param("public/get_last_trades_by_currency", json!({})), "currency");
        assert_eq!(param("public/get_last_trades_by_currency", json!({"currency": "BTC", "sorting": "up"})), "sorting");
        assert_eq!(param("public/get_expirations", json!({"currency": "BTC", "kind": "spot"})), "kind");
        assert_eq!(param("public/get_contract_size", json!({"instrument_name": "NOPE"})), "instrument_name");
        assert_eq!(param("public/get_index", json!({"currency": "XYZ"})), "currency");
        assert_eq!(param("public/get_trade_volumes", json!({"extended": true})), "extended");
        let dated =
            market.instruments().find(|(i, _)| market.spec(*i).expiry.is_some()).unwrap().1.instrument_name.clone();
        let span = json!({"instrument_name": dated, "start_timestamp": 0, "end_timestamp": 1});
        assert_eq!(param("public/get_funding_rate_value", span), "instrument_name");
    }

    #[test]
    fn catalogue_reads_match_the_catalogue() {
        let market = traded();
        let size = ask(&market, "public/get_contract_size", json!({"instrument_name": "BTC-PERPETUAL"})).unwrap();
        assert_eq!(
            size["contract_size"].to_string(),
            market.info(market.find("BTC-PERPETUAL").unwrap()).contract_size.to_string()
        );
        let exp = ask(&market, "public/get_expirations", json!({"currency": "BTC", "kind": "future"})).unwrap();
        let futures: std::collections::BTreeSet<String> = market
            .instruments()
            .filter(|(i, info)| market.spec(*i).kind == InstrumentKind::Future && info.base_currency == "BTC")
            .filter_map(|(_, info)| info.instrument_name.split('-').nth(1).map(str::to_owned))
            .collect();
        let listed: Vec<String> = serde_json::from_value(exp["future"].clone()).unwrap();
        assert!(exp.get("option").is_none(), "{exp}");
        assert_eq!(listed.last().map(String::as_str), Some("PERPETUAL"));
        assert_eq!(listed.iter().cloned().collect::<std::collections::BTreeSet<_>>(), futures);
        assert_eq!(listed.len(), futures.len(), "no code twice: {listed:?}");
        let index = ask(&market, "public/get_index", json!({"currency": "btc"})).unwrap();
        assert_eq!(index["BTC"], index["edp"]);
        // Compared as text: `Value` would read the number through f64.
        let raw = serde_json::value::RawValue::from_string(json!({"currency": "btc"}).to_string()).unwrap();
        let text = call(&market, "public/get_index", Some(&raw)).unwrap().unwrap();
        assert!(text.contains(&format!(":{}", money(market.index_price("btc_usd").unwrap()))), "{text}");
        let names = ask(&market, "public/get_supported_index_names", json!({"type": "derivative"})).unwrap();
        assert!(names.as_array().unwrap().contains(&json!("btc_usd")), "{names}");
    }

    #[test]
    fn inverse_future_volume_is_converted_to_coin() {
        let market = traded();
        let volumes = ask(&market, "public/get_trade_volumes", json!({})).unwrap();
        let btc = volumes.as_array().unwrap().iter().find(|v| v["currency"] == "BTC").unwrap().clone();
        // Naive model: every kept BTC future trade, USD amount over price, in f64.
        let mut expected = 0.0;
        for (i, _) in market.instruments().filter(|(_, info)| info.base_currency == "BTC") {
            let spec = market.spec(i);
            if spec.kind != InstrumentKind::Future {
                continue;
            }
            for t in market.ex.recent_trades(i) {
                let amount = spec.qty_to_decimal(t.qty).to_f64_lossy();
                let price = spec.price_to_decimal(t.price).to_f64_lossy();
                expected += if spec.settlement == Settlement::Inverse { amount / price } else { amount };
            }
        }
        let got = btc["futures_volume"].as_f64().unwrap();
        assert!(expected > 0.0);
        assert!((got - expected).abs() <= expected * 1e-6, "{got} vs {expected}");
    }
}
