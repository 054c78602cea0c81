//! Public reads over the venue's past prices: funding rate history and chart, mark price
//! history, delivery prices, historical volatility, the volatility index and index charts.
//!
//! Owns: decoding those methods' params (`-32602` names a missing or bad one) and rendering
//! the answers from the market's sampled history (`market::History`: marks once a second,
//! indexes once a minute and once an hour, each ring bounded).
//! Must not: change the venue or invent data. The simulator has no funding model, so every
//! interest figure is 0 (as `get_funding_rate_value` says); a delivery price is the index
//! sampled in the 08:00 UTC hour (Deribit's daily delivery time); volatility is the realised
//! volatility of the index's minute samples, annualised, in percent: over the day before
//! each hourly sample (`get_historical_volatility`), and over the hour before each minute
//! sample, as candles (`get_volatility_index_data`, where Deribit serves its DVOL).

use serde_json::value::RawValue;
use ticktrade_core::{InstrumentKind, Utc};
use ticktrade_deribit_proto::api::{self, Num};
use ticktrade_exchange::IndexId;

use super::methods::{instrument, json};
use crate::market::{Market, Samples, money, stat, vol_series};
use crate::rpc::{RpcError, params};

/// The methods answered here.
pub const METHODS: &[&str] = &[
    "public/get_funding_rate_history",
    "public/get_funding_chart_data",
    "public/get_mark_price_history",
    "public/get_delivery_prices",
    "public/get_historical_volatility",
    "public/get_volatility_index_data",
    "public/get_index_chart_data",
];

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 86_400_000;
/// Candles of `get_volatility_index_data` per page (Deribit's page size).
const VOL_PAGE: usize = 1_000;

/// Answers one of [`METHODS`] (`None`: not one of them).
pub fn call(market: &Market, now: Utc, method: &str, raw: Option<&RawValue>) -> Option<Result<String, RpcError>> {
    let now = now.as_millis();
    let result = match method {
        "public/get_funding_rate_history" => funding_history(market, raw),
        "public/get_funding_chart_data" => funding_chart(market, now, raw),
        "public/get_mark_price_history" => params::<api::FundingParams>(raw).and_then(|p| {
            let instr = instrument(market, &p.instrument_name)?;
            let points: Vec<api::TimedValue> = market
                .history
                .marks(instr)
                .map(|s| s.between(p.start_timestamp, p.end_timestamp).rev().map(|(t, v)| (t, money(v))).collect())
                .unwrap_or_default();
            json(&points)
        }),
        "public/get_delivery_prices" => delivery_prices(market, raw),
        "public/get_historical_volatility" => params::<api::CurrencyOnlyParams>(raw).and_then(|p| {
            let index = currency_index(market, &p.currency)?;
            let (Some(minutes), Some(hours)) = (market.history.index_minutes(index), market.history.index_hours(index))
            else {
                return json(&Vec::<api::TimedValue>::new());
            };
            let series = vol_series(minutes, DAY_MS);
            let points: Vec<api::TimedValue> = hours
                .between(i64::MIN, i64::MAX)
                .filter_map(|(t, _)| series.iter().find(|(m, _)| *m == t).map(|(_, v)| (t, stat(*v))))
                .collect();
            json(&points)
        }),
        "public/get_volatility_index_data" => volatility_index(market, raw),
        "public/get_index_chart_data" => params::<api::IndexChartParams>(raw).and_then(|p| {
            let index = market
                .ex
                .catalogue()
                .index(&p.index_name)
                .ok_or_else(|| RpcError::invalid_param("index_name", "wrong format"))?;
            let (span, hourly) = match p.range.as_str() {
                "1h" => (HOUR_MS, false),
                "1d" => (DAY_MS, false),
                "2d" => (2 * DAY_MS, false),
                "1m" => (30 * DAY_MS, true),
                "1y" => (365 * DAY_MS, true),
                "all" => (i64::MAX / 2, true),
                _ => return Err(RpcError::invalid_param("range", "invalid value")),
            };
            let samples = if hourly { market.history.index_hours(index) } else { market.history.index_minutes(index) };
            json(&points(samples, now - span, now))
        }),
        _ => return None,
    };
    Some(result)
}

fn points(samples: Option<&Samples>, start: i64, end: i64) -> Vec<api::TimedValue> {
    samples.map(|s| s.between(start, end).map(|(t, v)| (t, money(v))).collect()).unwrap_or_default()
}

/// The index a perpetual follows, or `-32602 instrument_name` for anything else.
fn perpetual_index(market: &Market, name: &str) -> Result<IndexId, RpcError> {
    let instr = instrument(market, name)?;
    let spec = market.spec(instr);
    if spec.kind != InstrumentKind::Future || spec.expiry.is_some() {
        return Err(RpcError::invalid_param("instrument_name", "not a perpetual"));
    }
    market
        .ex
        .catalogue()
        .get(instr)
        .map(|i| i.index)
        .ok_or_else(|| RpcError::invalid_param("instrument_name", "wrong format"))
}

/// A currency's USD index (`btc_usd`), else its USDC one.
fn currency_index(market: &Market, currency: &str) -> Result<IndexId, RpcError> {
    let lower = currency.to_ascii_lowercase();
    let catalogue = market.ex.catalogue();
    catalogue
        .index(&format!("{lower}_usd"))
        .or_else(|| catalogue.index(&format!("{lower}_usdc")))
        .ok_or_else(|| RpcError::invalid_param("currency", "invalid value"))
}

/// One entry per hourly index sample in the window, with the sample before it.
fn funding_history(market: &Market, raw: Option<&RawValue>) -> Result<String, RpcError> {
    let p: api::FundingParams = params(raw)?;
    let index = perpetual_index(market, &p.instrument_name)?;
    if p.end_timestamp < p.start_timestamp {
        return Err(RpcError::invalid_param("end_timestamp", "before start_timestamp"));
    }
    let Some(hours) = market.history.index_hours(index) else { return json(&Vec::<api::FundingRate>::new()) };
    let entries: Vec<api::FundingRate> = hours
        .between(p.start_timestamp, p.end_timestamp)
        .map(|(t, price)| {
            let prev = hours.at_or_before(t - 1).map_or(price, |(_, v)| v);
            api::FundingRate {
                timestamp: t,
                index_price: money(price),
                prev_index_price: money(prev),
                interest_8h: Num::ZERO,
                interest_1h: Num::ZERO,
            }
        })
        .collect();
    json(&entries)
}

fn funding_chart(market: &Market, now: i64, raw: Option<&RawValue>) -> Result<String, RpcError> {
    let p: api::FundingChartParams = params(raw)?;
    let index = perpetual_index(market, &p.instrument_name)?;
    let (span, hourly) = match p.length.as_str() {
        "8h" => (8 * HOUR_MS, false),
        "24h" => (DAY_MS, false),
        "1m" => (30 * DAY_MS, true),
        _ => return Err(RpcError::invalid_param("length", "invalid value")),
    };
    let samples = if hourly { market.history.index_hours(index) } else { market.history.index_minutes(index) };
    let data = points(samples, now - span, now)
        .into_iter()
        .map(|(timestamp, index_price)| api::FundingPoint { index_price, interest_8h: Num::ZERO, timestamp })
        .collect();
    json(&api::FundingChart { current_interest: Num::ZERO, interest_8h: Num::ZERO, data })
}

/// `YYYY-MM-DD` of a timestamp.
fn date(ms: i64) -> String {
    let (y, m, d) = ticktrade_core::time::civil::civil_from_days(ms.div_euclid(DAY_MS));
    format!("{y:04}-{m:02}-{d:02}")
}

fn delivery_prices(market: &Market, raw: Option<&RawValue>) -> Result<String, RpcError> {
    let p: api::DeliveryPricesParams = params(raw)?;
    let index = market
        .ex
        .catalogue()
        .index(&p.index_name)
        .ok_or_else(|| RpcError::invalid_param("index_name", "wrong format"))?;
    let count = p.count.unwrap_or(20).clamp(1, 1_000) as usize;
    let offset = p.offset.unwrap_or(0) as usize;
    let days: Vec<api::DeliveryPrice> = market
        .history
        .index_hours(index)
        .map(|hours| {
            hours
                .between(i64::MIN, i64::MAX)
                .rev()
                .filter(|(t, _)| t.rem_euclid(DAY_MS) / HOUR_MS == 8)
                .map(|(t, v)| api::DeliveryPrice { date: date(t), delivery_price: money(v) })
                .collect()
        })
        .unwrap_or_default();
    let records_total = days.len() as u32;
    let data = days.into_iter().skip(offset).take(count).collect();
    json(&api::DeliveryPrices { data, records_total })
}

fn resolution_ms(value: &serde_json::Value) -> Result<i64, RpcError> {
    let bad = || RpcError::invalid_param("resolution", "invalid value");
    let seconds = match value {
        serde_json::Value::String(s) if s == "1D" => 86_400,
        serde_json::Value::String(s) => s.parse::<i64>().map_err(|_| bad())?,
        serde_json::Value::Number(n) => n.as_i64().ok_or_else(bad)?,
        _ => return Err(bad()),
    };
    if !matches!(seconds, 1 | 60 | 3_600 | 43_200 | 86_400) {
        return Err(bad());
    }
    // Samples are a minute apart: finer resolutions get one-minute candles.
    Ok(seconds.max(60) * 1_000)
}

fn volatility_index(market: &Market, raw: Option<&RawValue>) -> Result<String, RpcError> {
    let p: api::VolatilityIndexParams = params(raw)?;
    let index = currency_index(market, &p.currency)?;
    let step = resolution_ms(&p.resolution)?;
    if p.end_timestamp < p.start_timestamp {
        return Err(RpcError::invalid_param("end_timestamp", "before start_timestamp"));
    }
    let series = market.history.index_minutes(index).map(|m| vol_series(m, HOUR_MS)).unwrap_or_default();
    let mut candles: Vec<(i64, f64, f64, f64, f64)> = Vec::new();
    for (t, v) in series.into_iter().filter(|(t, _)| (p.start_timestamp..=p.end_timestamp).contains(t)) {
        let start = t.div_euclid(step) * step;
        match candles.last_mut() {
            Some(c) if c.0 == start => {
                c.2 = c.2.max(v);
                c.3 = c.3.min(v);
                c.4 = v;
            }
            _ => candles.push((start, v, v, v, v)),
        }
    }
    // Deribit pages backwards: the newest page, and where the next (older) one ends.
    let continuation = (candles.len() > VOL_PAGE).then(|| candles[candles.len() - VOL_PAGE].0 - 1);
    let first = candles.len().saturating_sub(VOL_PAGE);
    let data = candles[first..].iter().map(|&(t, o, h, l, c)| (t, stat(o), stat(h), stat(l), stat(c))).collect();
    json(&api::VolatilityIndex { data, continuation })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::{Value, json};

    /// A market stepped every 20 s from 07:30 to 10:10 UTC under seed 3.
    fn aged() -> Market {
        let start = Utc::from_millis(1_767_252_600_000); // 2026-01-01 07:30
        let (catalogue, infos) = crate::market::builtin_catalogue(start).unwrap();
        let mut market = Market::new(catalogue, infos, 3, 20, start);
        let mut out = Vec::new();
        for k in 0..=480 {
            market.step(Utc::from_millis(start.as_millis() + k * 20_000), &mut out);
            out.clear();
        }
        market
    }

    fn ask(market: &Market, method: &str, params: Value) -> Result<Value, RpcError> {
        let raw = RawValue::from_string(params.to_string()).unwrap();
        let now = Utc::from_millis(1_767_262_200_000); // 10:10
        call(market, now, method, Some(&raw)).unwrap().map(|text| serde_json::from_str(&text).unwrap())
    }

    #[test]
    fn funding_history_is_the_hourly_index_with_its_predecessor() {
        let market = aged();
        let span = json!({"instrument_name": "BTC-PERPETUAL", "start_timestamp": 0, "end_timestamp": i64::MAX});
        let entries = ask(&market, "public/get_funding_rate_history", span).unwrap();
        let entries = entries.as_array().unwrap();
        // 07:30 (the first step), 08:00, 09:00, 10:00.
        let hours: Vec<i64> = entries.iter().map(|e| e["timestamp"].as_i64().unwrap() % 86_400_000 / 60_000).collect();
        assert_eq!(hours, vec![450, 480, 540, 600]);
        for w in entries.windows(2) {
            assert_eq!(w[1]["prev_index_price"], w[0]["index_price"]);
        }
        let index = market.ex.catalogue().index("btc_usd").unwrap();
        let last = market.history.index_hours(index).unwrap().at_or_before(i64::MAX).unwrap();
        let got = entries[3]["index_price"].as_f64().unwrap();
        assert!((got - last.1.to_f64_lossy()).abs() < 1e-6, "{got} vs {:?}", last.1);
        let dated = json!({"instrument_name": "BTC-9JAN26", "start_timestamp": 0, "end_timestamp": 1});
        let err = ask(&market, "public/get_funding_rate_history", dated).unwrap_err();
        assert_eq!(err.data.unwrap()["param"], "instrument_name");
    }

    #[test]
    fn delivery_prices_are_the_0800_samples() {
        let market = aged();
        let reply = ask(&market, "public/get_delivery_prices", json!({"index_name": "btc_usd"})).unwrap();
        assert_eq!(reply["records_total"], 1, "{reply}");
        assert_eq!(reply["data"][0]["date"], "2026-01-01");
        let err = ask(&market, "public/get_delivery_prices", json!({"index_name": "nope"})).unwrap_err();
        assert_eq!(err.data.unwrap()["param"], "index_name");
    }

    #[test]
    fn volatility_follows_the_minute_samples() {
        let market = aged();
        let index = market.ex.catalogue().index("btc_usd").unwrap();
        let minutes = market.history.index_minutes(index).unwrap();
        let window = json!({"currency": "BTC", "start_timestamp": 0, "end_timestamp": i64::MAX, "resolution": "3600"});
        let reply = ask(&market, "public/get_volatility_index_data", window).unwrap();
        let candles = reply["data"].as_array().unwrap();
        // Hours 07, 08, 09 and 10 have minute samples with two returns behind them.
        assert_eq!(candles.len(), 4, "{reply}");
        let series = vol_series(minutes, HOUR_MS);
        let last = series.last().unwrap().1;
        assert!((candles[3][4].as_f64().unwrap() - last).abs() < 1e-5, "{reply} vs {last}");
        for c in candles {
            let (o, h, l, cl) =
                (c[1].as_f64().unwrap(), c[2].as_f64().unwrap(), c[3].as_f64().unwrap(), c[4].as_f64().unwrap());
            assert!(l <= o.min(cl) && h >= o.max(cl) && l > 0.0, "{c}");
        }
        let hv = ask(&market, "public/get_historical_volatility", json!({"currency": "BTC"})).unwrap();
        assert_eq!(hv.as_array().unwrap().len(), 3, "{hv}"); // 08:00, 09:00, 10:00
        let bad = json!({"currency": "BTC", "start_timestamp": 0, "end_timestamp": 1, "resolution": "7"});
        assert_eq!(
            ask(&market, "public/get_volatility_index_data", bad).unwrap_err().data.unwrap()["param"],
            "resolution"
        );
    }

    #[test]
    fn charts_cover_their_range() {
        let market = aged();
        let hour =
            ask(&market, "public/get_index_chart_data", json!({"index_name": "btc_usd", "range": "1h"})).unwrap();
        assert_eq!(hour.as_array().unwrap().len(), 61, "{hour}"); // 09:10 … 10:10
        let all =
            ask(&market, "public/get_index_chart_data", json!({"index_name": "btc_usd", "range": "all"})).unwrap();
        assert_eq!(all.as_array().unwrap().len(), 4);
        let chart =
            ask(&market, "public/get_funding_chart_data", json!({"instrument_name": "BTC-PERPETUAL", "length": "8h"}))
                .unwrap();
        assert_eq!(chart["data"].as_array().unwrap().len(), 161); // every minute since 07:30
        let marks = json!({"instrument_name": "BTC-PERPETUAL", "start_timestamp": 1_767_261_600_000i64, "end_timestamp": i64::MAX});
        let marks = ask(&market, "public/get_mark_price_history", marks).unwrap();
        let stamps: Vec<i64> = marks.as_array().unwrap().iter().map(|m| m[0].as_i64().unwrap()).collect();
        assert_eq!(stamps.len(), 31, "20 s apart over 10 min"); // 10:00:00 … 10:10:00
        assert!(stamps.windows(2).all(|w| w[0] > w[1]), "newest first");
    }
}
