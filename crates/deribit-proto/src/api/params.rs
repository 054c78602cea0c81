//! Request params of the methods ticktrade sends and the simulator serves.
//!
//! Owns: one struct per method family, with Deribit's names, required fields as plain fields
//! (a missing one fails decoding, which the server turns into `-32602` naming the field) and
//! optional ones as `Option`/`#[serde(default)]`.
//! Must not: validate values against instruments (that is the exchange's job).

use serde::{Deserialize, Serialize};

use super::Num;

/// String params that HTTP query strings (and some clients) send as numbers: `label=123`.
mod lenient {
    use serde::{Deserialize, Deserializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Text {
        Str(String),
        Num(serde_json::Number),
        Bool(bool),
    }

    impl Text {
        fn into_string(self) -> String {
            match self {
                Text::Str(s) => s,
                Text::Num(n) => n.to_string(),
                Text::Bool(b) => b.to_string(),
            }
        }
    }

    pub fn string<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
        Text::deserialize(deserializer).map(Text::into_string)
    }

    pub fn opt_string<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
        Option::<Text>::deserialize(deserializer).map(|t| t.map(Text::into_string))
    }
}

/// `public/auth`. Which fields are required depends on `grant_type`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthParams {
    pub grant_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient::opt_string")]
    pub client_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient::opt_string")]
    pub client_secret: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient::opt_string")]
    pub refresh_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient::opt_string")]
    pub signature: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient::opt_string")]
    pub nonce: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient::opt_string")]
    pub data: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient::opt_string")]
    pub state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// `private/logout`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogoutParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalidate_token: Option<bool>,
}

/// `public/test`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_result: Option<String>,
}

/// `public/hello`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelloParams {
    pub client_name: String,
    pub client_version: String,
}

/// `public/set_heartbeat`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeartbeatParams {
    pub interval: Num,
}

/// `private/{enable,disable}_cancel_on_disconnect`, `private/get_cancel_on_disconnect`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelOnDisconnectParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// `public/subscribe`, `private/subscribe`, and the unsubscribe pair.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubscribeParams {
    pub channels: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient::opt_string")]
    pub label: Option<String>,
}

/// `private/buy` and `private/sell`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderParams {
    pub instrument_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contracts: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "type")]
    pub order_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient::opt_string")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_in_force: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_show: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_only: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reject_post_only: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reduce_only: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_price: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// `trailing_stop` only: the distance from the price peak at which the order fires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_offset: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<i64>,
    /// Market maker protection: the order counts against the account's default MMP group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mmp: Option<bool>,
}

/// `private/edit` (by `order_id`) and `private/edit_by_label` (by `label` + `instrument_name`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EditParams {
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient::opt_string")]
    pub order_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient::opt_string")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instrument_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contracts: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_only: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reject_post_only: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reduce_only: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_price: Option<Num>,
    /// `trailing_stop` only: a new distance from the price peak.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_offset: Option<Num>,
}

/// Methods that take only an `order_id`: `private/cancel`, `get_order_state`, `get_user_trades_by_order`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderIdParams {
    #[serde(deserialize_with = "lenient::string")]
    pub order_id: String,
}

/// The filters of the cancel-all and open-orders families: every field optional here; each
/// method checks the ones it requires (`currency` for `*_by_currency`…).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilterParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instrument_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "type")]
    pub order_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient::opt_string")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detailed: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sorting: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_old: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expired: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subaccount_id: Option<i64>,
    /// The `*_and_time` reads: milliseconds, both ends included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_timestamp: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_timestamp: Option<i64>,
    /// `get_user_trades_by_instrument`: the first and last `trade_seq` returned, both included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_seq: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_seq: Option<u64>,
}

/// `private/close_position`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClosePositionParams {
    pub instrument_name: String,
    #[serde(rename = "type")]
    pub order_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<Num>,
}

/// `public/get_instrument`, `public/ticker`, `public/get_order_book`, `get_position`…
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstrumentParams {
    pub instrument_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
}

/// `public/get_order_book_by_instrument_id`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstrumentIdParams {
    pub instrument_id: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
}

/// `public/get_instruments`, `public/get_book_summary_by_currency`, `get_account_summary`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CurrencyParams {
    /// Required by most methods; `get_instruments` without it lists every currency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expired: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended: Option<bool>,
}

/// `public/get_index_price`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexParams {
    pub index_name: String,
}

/// `public/get_tradingview_chart_data`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChartParams {
    pub instrument_name: String,
    pub start_timestamp: i64,
    pub end_timestamp: i64,
    pub resolution: serde_json::Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buy_request_vector_decodes() {
        let text = include_str!("../../../../testdata/deribit/examples/private_buy.request.json");
        let request: serde_json::Value = serde_json::from_str(text).unwrap();
        let params: OrderParams = serde_json::from_str(&request["params"].to_string()).unwrap();
        assert!(!params.instrument_name.is_empty());
    }

    #[test]
    fn numeric_strings_are_accepted() {
        let params: OrderParams = serde_json::from_str(r#"{"instrument_name":"X","label":123}"#).unwrap();
        assert_eq!(params.label.as_deref(), Some("123"));
        let params: OrderIdParams = serde_json::from_str(r#"{"order_id":42}"#).unwrap();
        assert_eq!(params.order_id, "42");
    }

    #[test]
    fn missing_required_field_names_it() {
        let err = serde_json::from_str::<OrderParams>(r#"{"amount":10}"#).unwrap_err();
        assert!(err.to_string().contains("instrument_name"), "{err}");
    }
}
