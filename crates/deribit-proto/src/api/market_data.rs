//! Params and results of the public market-data reads beyond books and tickers: trade
//! history by currency and time, index names, contract sizes, expirations, the legacy index,
//! trade volumes and funding values.
//!
//! Owns: those shapes with Deribit's field names.
//! Must not: compute any of the values (the simulator renders them from the exchange).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Num;

/// `public/get_last_trades_by_currency[_and_time]`, `…_by_instrument_and_time`. Which of
/// `currency`/`instrument_name` and the timestamps are required depends on the method.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TradesParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instrument_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_timestamp: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_timestamp: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// `asc`, `desc` or `default` (= `desc`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sorting: Option<String>,
}

/// `public/get_supported_index_names`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexNamesParams {
    /// `all`, `spot` or `derivative`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub index_type: Option<String>,
}

/// `public/get_contract_size` result.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContractSize {
    pub contract_size: Num,
}

/// `public/get_expirations`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpirationsParams {
    pub currency: String,
    pub kind: String,
}

/// `public/get_expirations` result: expiry codes (`27JUN25`) per kind asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expirations {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub future: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub option: Option<Vec<String>>,
}

/// `public/get_index` result: the currency's index price under its name (`"BTC"`) and the
/// estimated delivery price under `"edp"`.
pub type LegacyIndex = BTreeMap<String, Num>;

/// `public/get_trade_volumes`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TradeVolumesParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended: Option<bool>,
}

/// One currency of `public/get_trade_volumes`: 24 h volumes in the base currency.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TradeVolume {
    pub currency: String,
    pub calls_volume: Num,
    pub puts_volume: Num,
    pub futures_volume: Num,
    pub spot_volume: Num,
}

/// `public/get_funding_rate_value`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FundingParams {
    pub instrument_name: String,
    pub start_timestamp: i64,
    pub end_timestamp: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(name: &str) -> serde_json::Value {
        let path = format!("{}/../../testdata/deribit/examples/{name}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        value["result"].clone()
    }

    #[test]
    fn result_vectors_decode() {
        let v = result("public_get_contract_size.response.docs_v2_1_1.json");
        assert_eq!(
            serde_json::from_value::<ContractSize>(v).map(|c| c.contract_size.to_string()).ok(),
            Some("10".into())
        );
        let v = result("public_get_expirations.response.json");
        let e: Option<Expirations> = serde_json::from_value(v).ok();
        assert_eq!(e.and_then(|e| e.future).map(|f| f.len()), Some(3));
        let v = result("public_get_index.response.docs_v2_1_1.json");
        let index: Option<LegacyIndex> = serde_json::from_value(v).ok();
        assert_eq!(index.map(|i| i.keys().cloned().collect::<Vec<_>>()), Some(vec!["BTC".into(), "edp".into()]));
        let v = result("public_get_trade_volumes.response.json");
        let volumes: Option<Vec<TradeVolume>> = serde_json::from_value(v).ok();
        assert_eq!(volumes.map(|v| v[1].currency.clone()), Some("ETH".into()));
    }

    #[test]
    fn index_type_is_renamed() {
        let p: Option<IndexNamesParams> = serde_json::from_str(r#"{"type":"spot"}"#).ok();
        assert_eq!(p.and_then(|p| p.index_type).as_deref(), Some("spot"));
    }
}

/// One entry of `private/get_trigger_order_history`: an event in a trigger order's life.
/// `trigger` is short (`index`, `mark`, `last`); `order_state` is `new` (placed),
/// `triggered` or `cancelled`; `request` is `trigger:order` (placed or fired) or `cancel`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriggerOrderEntry {
    pub trigger: String,
    pub timestamp: i64,
    pub trigger_price: Num,
    pub trigger_order_id: String,
    pub order_state: String,
    pub request: String,
    pub price: Num,
    /// The order the trigger placed once fired; until then the trigger order's own id.
    pub order_id: String,
    /// Trailing stops: the distance from the peak; `0` for the others.
    pub offset: Num,
    pub instrument_name: String,
    pub amount: Num,
    pub direction: String,
}

/// The result of `private/get_trigger_order_history`: newest first; `continuation` is the
/// token to pass for the next page (`null` on the last page).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriggerOrderHistory {
    pub entries: Vec<TriggerOrderEntry>,
    pub continuation: Option<String>,
}
