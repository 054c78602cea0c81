//! Params and results of the reads over a venue's past: funding rate history and chart,
//! mark price history, delivery prices, historical volatility and the volatility index,
//! index charts, settlements and the transaction log.
//!
//! Owns: those shapes with Deribit's field names; a timestamp param may arrive as a number
//! or as a string of digits (`private/get_transaction_log` is documented with strings).
//! Must not: compute any of the values (the simulator renders them from its own history).

use serde::{Deserialize, Deserializer, Serialize};

use super::Num;

/// A millisecond timestamp sent as a number or as a string of digits.
fn millis<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Number(i64),
        Text(String),
    }
    match Either::deserialize(d)? {
        Either::Number(n) => Ok(n),
        Either::Text(t) => t.parse().map_err(serde::de::Error::custom),
    }
}

/// One hour of `public/get_funding_rate_history`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FundingRate {
    pub timestamp: i64,
    pub index_price: Num,
    pub prev_index_price: Num,
    pub interest_8h: Num,
    pub interest_1h: Num,
}

/// `public/get_funding_chart_data`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FundingChartParams {
    pub instrument_name: String,
    /// `8h`, `24h` or `1m`.
    pub length: String,
}

/// One point of `public/get_funding_chart_data`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FundingPoint {
    pub index_price: Num,
    pub interest_8h: Num,
    pub timestamp: i64,
}

/// `public/get_funding_chart_data` result.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FundingChart {
    pub current_interest: Num,
    pub interest_8h: Num,
    pub data: Vec<FundingPoint>,
}

/// `[timestamp, value]`: `get_mark_price_history` (params: `FundingParams`), `get_historical_volatility`,
/// `get_index_chart_data`.
pub type TimedValue = (i64, Num);

/// `public/get_delivery_prices`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryPricesParams {
    pub index_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
}

/// One day of `public/get_delivery_prices`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryPrice {
    /// `YYYY-MM-DD`.
    pub date: String,
    pub delivery_price: Num,
}

/// `public/get_delivery_prices` result: newest first.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryPrices {
    pub data: Vec<DeliveryPrice>,
    pub records_total: u32,
}

/// `public/get_historical_volatility` and the currency of other per-currency reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CurrencyOnlyParams {
    pub currency: String,
}

/// `public/get_volatility_index_data`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VolatilityIndexParams {
    pub currency: String,
    pub start_timestamp: i64,
    pub end_timestamp: i64,
    /// Seconds as a string or number (`"60"`, `3600`), or `"1D"`.
    pub resolution: serde_json::Value,
}

/// `public/get_volatility_index_data` result: `[timestamp, open, high, low, close]` candles.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VolatilityIndex {
    pub data: Vec<(i64, Num, Num, Num, Num)>,
    /// Where the next page starts (`null`: no more).
    pub continuation: Option<i64>,
}

/// `public/get_index_chart_data`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexChartParams {
    pub index_name: String,
    /// `1h`, `1d`, `2d`, `1m`, `1y` or `all`.
    pub range: String,
}

/// `public/get_last_settlements_by_*` and `private/get_settlement_history_by_*`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettlementsParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instrument_name: Option<String>,
    /// `settlement`, `delivery` or `bankruptcy`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub settlement_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuation: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_start_timestamp: Option<i64>,
}

/// One settlement or delivery.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settlement {
    #[serde(rename = "type")]
    pub settlement_type: String,
    pub timestamp: i64,
    pub session_profit_loss: Num,
    pub profit_loss: Num,
    pub position: Num,
    pub mark_price: Num,
    pub instrument_name: String,
    pub index_price: Num,
}

/// A page of settlements, newest first.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settlements {
    pub settlements: Vec<Settlement>,
    /// Token for the next page (`null`: no more).
    pub continuation: Option<String>,
}

/// `private/get_transaction_log`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransactionLogParams {
    pub currency: String,
    #[serde(deserialize_with = "millis")]
    pub start_timestamp: i64,
    #[serde(deserialize_with = "millis")]
    pub end_timestamp: i64,
    /// `trade`, `maker`, `taker`, `open`, `close`, `delivery`, `settlement`… (one word).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// The `id` below which the next page starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuation: Option<i64>,
}

/// One entry of `private/get_transaction_log` (a fill, or a delivery with the settlement
/// fields). Keys Deribit sends as `null` are `Option`s written as `null`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransactionLogEntry {
    pub id: i64,
    pub user_seq: i64,
    pub user_id: i64,
    pub username: String,
    #[serde(rename = "type")]
    pub entry_type: String,
    pub timestamp: i64,
    pub currency: String,
    pub instrument_name: Option<String>,
    /// `open buy`, `close sell`, `buy` (spot), `long`/`short` (delivery)…
    pub side: String,
    pub trade_id: Option<String>,
    pub order_id: Option<String>,
    pub price: Option<Num>,
    pub price_currency: String,
    pub amount: Num,
    pub position: Option<Num>,
    pub change: Num,
    pub cashflow: Num,
    pub balance: Num,
    pub equity: Num,
    pub commission: Option<Num>,
    pub interest_pl: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark_price: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profit_as_cashflow: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_rpl: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_upl: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_interest_pl: Option<Num>,
    /// `"Source: api"` for fills; an object for deliveries.
    pub info: serde_json::Value,
}

/// `private/get_transaction_log` result, newest first.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransactionLog {
    pub logs: Vec<TransactionLogEntry>,
    /// The `id` to pass as `continuation` for the next page (`null`: no more).
    pub continuation: Option<i64>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn transaction_log_timestamps_read_as_numbers_or_digits() {
        let p: TransactionLogParams = serde_json::from_str(
            r#"{"currency":"BTC","start_timestamp":"1613657734000","end_timestamp":1613660407000}"#,
        )
        .unwrap();
        assert_eq!((p.start_timestamp, p.end_timestamp), (1_613_657_734_000, 1_613_660_407_000));
        let bad = serde_json::from_str::<TransactionLogParams>(
            r#"{"currency":"BTC","start_timestamp":"soon","end_timestamp":1}"#,
        );
        assert!(bad.is_err());
    }
}
