//! Market-maker tools: `private/mass_quote`, `private/cancel_quotes` and market maker
//! protection (`set_mmp_config`, `get_mmp_config`, `get_mmp_status`, `reset_mmp`).
//!
//! Owns: their params and results with Deribit's names (shapes from the recorded vectors:
//! a mass-quote result is `{"errors":[{"instrument_name","side","error":{"message","code"}}],
//! "orders":[…],"trades":[…]}`; an MMP config is `{"index_name","mmp_group","interval",
//! "frozen_time","quantity_limit","delta_limit","vega_limit","max_quote_quantity"}` with the
//! limits present only when set; a status is `{"index_name","mmp_group","frozen_until"}`,
//! `frozen_until: 0` meaning frozen until `reset_mmp`).
//! Must not: decide anything; the exchange enforces MMP.

use serde::{Deserialize, Serialize};

use super::{Num, Order, UserTrade};

/// One side (`bid`/`ask`) of a quote.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuoteSideParams {
    pub price: Num,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contracts: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_only: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reject_post_only: Option<bool>,
}

/// One entry of `quotes`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuoteParams {
    pub instrument_name: String,
    pub quote_set_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bid: Option<QuoteSideParams>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ask: Option<QuoteSideParams>,
}

/// `private/mass_quote`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MassQuoteParams {
    pub quote_id: String,
    pub mmp_group: String,
    pub quotes: Vec<QuoteParams>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detailed: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_for_response: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<i64>,
}

/// `error` of a refused quote side.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuoteErrorDetail {
    pub message: String,
    pub code: i32,
}

/// One refused quote side.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuoteError {
    pub instrument_name: String,
    /// `bid` or `ask`.
    pub side: String,
    pub error: QuoteErrorDetail,
}

/// The result of `private/mass_quote`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MassQuoteResult {
    pub errors: Vec<QuoteError>,
    pub orders: Vec<Order>,
    pub trades: Vec<UserTrade>,
}

/// `private/cancel_quotes` (result: the number of cancelled quotes).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelQuotesParams {
    /// `delta`, `quote_set_id`, `instrument`, `instrument_kind`, `currency`, `currency_pair`
    /// or `all`.
    pub cancel_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_delta: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_delta: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote_set_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instrument_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency_pair: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detailed: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freeze_quotes: Option<bool>,
}

/// `private/set_mmp_config` params, and the config object `set_mmp_config` and
/// `get_mmp_config` answer with. `interval` and `frozen_time` are seconds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MmpConfig {
    pub index_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mmp_group: Option<String>,
    pub interval: u32,
    pub frozen_time: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantity_limit: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta_limit: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vega_limit: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_quote_quantity: Option<Num>,
}

/// `get_mmp_config`, `get_mmp_status` and `reset_mmp` params (`index_name` may be `all` for
/// the reads; `reset_mmp` needs a real one).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MmpGroupParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mmp_group: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_rfq: Option<bool>,
}

/// One frozen group in `get_mmp_status`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MmpStatus {
    pub index_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mmp_group: Option<String>,
    /// Milliseconds since the epoch; `0` = until `reset_mmp`.
    pub frozen_until: i64,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn vector_params_decode() {
        let p: MassQuoteParams = serde_json::from_str(
            r#"{"detailed":true,"quote_id":"1","mmp_group":"default","quotes":[{"instrument_name":"BTC-PERPETUAL",
            "quote_set_id":"futures","ask":{"price":43800,"amount":10},"bid":{"price":43700,"amount":10}}]}"#,
        )
        .unwrap();
        assert_eq!(p.quotes[0].ask.as_ref().unwrap().price.to_string(), "43800");
        let c: MmpConfig = serde_json::from_str(
            r#"{"index_name":"btc_usd","mmp_group":"MassQuoteBot7","interval":60,"frozen_time":0,
            "quantity_limit":3,"max_quote_quantity":2.5}"#,
        )
        .unwrap();
        assert_eq!((c.interval, c.delta_limit), (60, None));
        let q: CancelQuotesParams =
            serde_json::from_str(r#"{"cancel_type":"delta","min_delta":0.4,"max_delta":0.6}"#).unwrap();
        assert_eq!(q.min_delta.unwrap().to_string(), "0.4");
    }
}
