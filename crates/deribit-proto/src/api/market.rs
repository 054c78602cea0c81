//! Public market-data results: instruments, currencies, order books, summaries, charts, and the
//! book notification payloads.
//!
//! Owns: `Instrument`, `Currency`, `OrderBook`, `BookSummary`, `ChartData`, `BookData`,
//! `GroupedBookData` with Deribit's names.
//! Must not: hold book state; these are snapshots produced by the exchange side.

use serde::{Deserialize, Serialize};

use super::{Num, Ticker};

/// One entry of `public/get_instruments`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Instrument {
    pub instrument_name: String,
    pub instrument_id: u32,
    pub kind: String,
    pub instrument_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub future_type: Option<String>,
    pub base_currency: String,
    pub quote_currency: String,
    pub counter_currency: String,
    pub settlement_currency: String,
    /// Absent for spot pairs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settlement_period: Option<String>,
    pub price_index: String,
    pub tick_size: Num,
    pub tick_size_steps: Vec<TickSizeStep>,
    pub contract_size: Num,
    pub min_trade_amount: Num,
    pub maker_commission: Num,
    pub taker_commission: Num,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_leverage: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_liquidation_commission: Option<Num>,
    pub block_trade_commission: Num,
    pub block_trade_min_trade_amount: Num,
    pub block_trade_tick_size: Num,
    pub is_active: bool,
    pub state: String,
    pub creation_timestamp: i64,
    pub expiration_timestamp: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strike: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub option_type: Option<String>,
}

/// One `tick_size_steps` entry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TickSizeStep {
    pub above_price: Num,
    pub tick_size: Num,
}

/// One entry of `public/get_currencies`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Currency {
    pub currency: String,
    pub currency_long: String,
    pub coin_type: String,
    pub min_confirmations: i64,
    pub min_withdrawal_fee: Num,
    pub withdrawal_fee: Num,
    pub withdrawal_priorities: Vec<WithdrawalPriority>,
    pub network_currency: String,
    pub network_fee: Num,
    pub decimals: i64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WithdrawalPriority {
    pub name: String,
    pub value: Num,
}

/// `public/get_order_book` result: ticker fields plus both sides, best first.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderBook {
    #[serde(flatten)]
    pub ticker: Ticker,
    pub change_id: i64,
    pub bids: Vec<(Num, Num)>,
    pub asks: Vec<(Num, Num)>,
}

/// One entry of `public/get_book_summary_by_*`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BookSummary {
    pub instrument_name: String,
    pub base_currency: String,
    pub quote_currency: String,
    pub creation_timestamp: i64,
    pub volume: Num,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_usd: Option<Num>,
    pub open_interest: Num,
    pub high: Option<Num>,
    pub low: Option<Num>,
    pub last: Option<Num>,
    pub price_change: Option<Num>,
    pub bid_price: Option<Num>,
    pub ask_price: Option<Num>,
    pub mid_price: Option<Num>,
    pub mark_price: Num,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_delivery_price: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_funding: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub funding_8h: Option<Num>,
    /// Options only: the pricing inputs and the mark's implied volatility (percent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub underlying_price: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub underlying_index: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interest_rate: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark_iv: Option<Num>,
}

/// `public/get_tradingview_chart_data` result (column arrays).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChartData {
    pub status: String,
    pub ticks: Vec<i64>,
    pub open: Vec<Num>,
    pub high: Vec<Num>,
    pub low: Vec<Num>,
    pub close: Vec<Num>,
    pub volume: Vec<Num>,
    pub cost: Vec<Num>,
}

/// `book.{instrument}.{interval}` data: a snapshot (`prev_change_id` absent, all `new`) or a change.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BookData {
    #[serde(rename = "type")]
    pub kind: String,
    pub instrument_name: String,
    pub timestamp: i64,
    pub change_id: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev_change_id: Option<i64>,
    pub bids: Vec<(String, Num, Num)>,
    pub asks: Vec<(String, Num, Num)>,
}

/// `book.{instrument}.{group}.{depth}.{interval}` data: the full top-`depth` window each time.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupedBookData {
    pub instrument_name: String,
    pub timestamp: i64,
    pub change_id: i64,
    pub bids: Vec<(Num, Num)>,
    pub asks: Vec<(Num, Num)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result_text(name: &str) -> String {
        let path = format!("{}/../../testdata/deribit/examples/{name}", env!("CARGO_MANIFEST_DIR"));
        let value: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        value["result"].to_string()
    }

    #[test]
    fn market_vectors_decode() {
        let instruments: Vec<Instrument> =
            serde_json::from_str(&result_text("public_get_instruments.response.json")).unwrap();
        assert_eq!(instruments[1].instrument_name, "BTC-PERPETUAL");
        let currencies: Vec<Currency> =
            serde_json::from_str(&result_text("public_get_currencies.response.json")).unwrap();
        assert_eq!(currencies.len(), 2);
        let chart: ChartData =
            serde_json::from_str(&result_text("public_get_tradingview_chart_data.response.json")).unwrap();
        assert_eq!(chart.ticks.len(), 2);
    }
}
