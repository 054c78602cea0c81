//! Result and notification objects of sessions, trading and accounts.
//!
//! Owns: `AuthResult`, `Order`, `UserTrade`, `OrderWithTrades`, `Position`, `AccountSummary`,
//! `UserChanges`, `PublicTrade`, `Ticker` with Deribit's field names.
//! Must not: compute anything; fields are filled by the exchange side.

use serde::{Deserialize, Serialize};

use super::{Num, OrderPrice};

/// `public/auth` result.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthResult {
    pub access_token: String,
    pub expires_in: i64,
    pub refresh_token: String,
    pub scope: String,
    pub token_type: String,
    #[serde(default)]
    pub enabled_features: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sid: Option<String>,
}

/// `public/test`, `public/hello` result.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionResult {
    pub version: String,
}

/// `public/status` result.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusResult {
    pub locked: bool,
    pub locked_currencies: Vec<String>,
}

/// `private/get_cancel_on_disconnect` result.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CancelOnDisconnectResult {
    pub scope: String,
    pub enabled: bool,
}

/// The order object: `buy`/`sell`/`edit` results, `get_order_state`, `user.orders.*`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Order {
    pub order_id: String,
    pub instrument_name: String,
    pub direction: String,
    pub amount: Num,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contracts: Option<Num>,
    pub filled_amount: Num,
    /// `"market_price"` on an untriggered market-type trigger order.
    pub price: OrderPrice,
    pub average_price: Num,
    pub order_state: String,
    pub order_type: String,
    pub time_in_force: String,
    pub post_only: bool,
    pub reduce_only: bool,
    pub replaced: bool,
    pub label: String,
    pub max_show: Num,
    pub api: bool,
    pub web: bool,
    pub is_liquidation: bool,
    pub is_rebalance: bool,
    pub creation_timestamp: i64,
    pub last_update_timestamp: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reject_post_only: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_price: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub triggered: Option<bool>,
    /// Trailing stops only: the distance from the price peak.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_offset: Option<Num>,
    /// Trailing stops only: the trigger's price when the order was placed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_reference_price: Option<Num>,
    /// Orders a trigger order placed: that trigger order's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_order_id: Option<String>,
    /// The order's MMP flag (always sent by Deribit's current API).
    pub mmp: bool,
    /// `true` when market maker protection cancelled the order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mmp_cancelled: Option<bool>,
    /// Mass quotes only: `quote: true`, their `mmp_group`, `quote_set_id` and `quote_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mmp_group: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote_set_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote_id: Option<String>,
}

/// The user trade object: `result.trades[]`, `get_user_trades_*`, `user.trades.*`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct UserTrade {
    pub trade_id: String,
    pub trade_seq: i64,
    pub order_id: String,
    pub instrument_name: String,
    pub direction: String,
    pub price: Num,
    pub amount: Num,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contracts: Option<Num>,
    pub fee: Num,
    pub fee_currency: String,
    pub liquidity: String,
    pub mark_price: Num,
    pub index_price: Num,
    pub matching_id: Option<String>,
    pub order_type: String,
    pub post_only: bool,
    pub reduce_only: bool,
    pub state: String,
    pub tick_direction: i32,
    pub timestamp: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profit_loss: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_trade: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<bool>,
    /// Fills of mass quotes only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote_set_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote_id: Option<String>,
    /// Options only: the implied volatility of the fill's price, in percent, and the
    /// underlying price it was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iv: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub underlying_price: Option<Num>,
}

/// `private/buy`, `sell`, `edit`, `close_position` result.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderWithTrades {
    pub order: Order,
    pub trades: Vec<UserTrade>,
}

/// `get_user_trades_by_instrument|currency` result.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserTrades {
    pub trades: Vec<UserTrade>,
    pub has_more: bool,
}

/// The position object: `get_position(s)`, `user.changes.*`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Position {
    pub instrument_name: String,
    pub kind: String,
    pub direction: String,
    pub size: Num,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_currency: Option<Num>,
    pub average_price: Num,
    pub mark_price: Num,
    pub index_price: Num,
    pub settlement_price: Num,
    pub delta: Num,
    pub initial_margin: Num,
    pub maintenance_margin: Num,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_orders_margin: Option<Num>,
    pub floating_profit_loss: Num,
    pub realized_profit_loss: Num,
    pub total_profit_loss: Num,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_liquidation_price: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leverage: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interest_value: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realized_funding: Option<Num>,
}

/// `private/get_account_summary` result and `user.portfolio.*` data.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AccountSummary {
    pub currency: String,
    pub balance: Num,
    pub equity: Num,
    pub available_funds: Num,
    pub available_withdrawal_funds: Num,
    pub margin_balance: Num,
    pub initial_margin: Num,
    pub maintenance_margin: Num,
    pub projected_initial_margin: Num,
    pub projected_maintenance_margin: Num,
    pub delta_total: Num,
    pub projected_delta_total: Num,
    pub total_pl: Num,
    pub session_rpl: Num,
    pub session_upl: Num,
    pub futures_pl: Num,
    pub futures_session_rpl: Num,
    pub futures_session_upl: Num,
    pub options_pl: Num,
    pub options_session_rpl: Num,
    pub options_session_upl: Num,
    pub options_delta: Num,
    pub options_gamma: Num,
    pub options_theta: Num,
    pub options_vega: Num,
    pub options_value: Num,
    pub options_gamma_map: serde_json::Map<String, serde_json::Value>,
    pub options_theta_map: serde_json::Map<String, serde_json::Value>,
    pub options_vega_map: serde_json::Map<String, serde_json::Value>,
    pub delta_total_map: serde_json::Map<String, serde_json::Value>,
    pub fee_balance: Num,
    pub spot_reserve: Num,
    pub additional_reserve: Num,
    pub estimated_liquidation_ratio: Num,
    pub estimated_liquidation_ratio_map: serde_json::Map<String, serde_json::Value>,
    pub margin_model: String,
    pub cross_collateral_enabled: bool,
    pub portfolio_margining_enabled: bool,
    /// Only with `extended: true` (and on `get_account_summary`, never on the channel).
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub extended: Option<AccountExtended>,
}

/// Fields `get_account_summary` adds (`extended`), including the rate `limits`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountExtended {
    pub id: i64,
    pub email: String,
    pub username: String,
    pub system_name: String,
    #[serde(rename = "type")]
    pub account_type: String,
    pub creation_timestamp: i64,
    pub security_keys_enabled: bool,
    pub mmp_enabled: bool,
    pub login_enabled: bool,
    pub interuser_transfers_enabled: bool,
    pub self_trading_reject_mode: String,
    pub self_trading_extended_to_subaccounts: bool,
    pub limits: serde_json::Value,
}

/// `user.changes.*` data: everything one matching-engine event changed on an instrument.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserChanges {
    pub instrument_name: String,
    pub orders: Vec<Order>,
    pub trades: Vec<UserTrade>,
    pub positions: Vec<Position>,
}

/// A public trade: `trades.*` data, `get_last_trades_by_instrument`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PublicTrade {
    pub trade_id: String,
    pub trade_seq: i64,
    pub instrument_name: String,
    pub direction: String,
    pub price: Num,
    pub amount: Num,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contracts: Option<Num>,
    pub index_price: Num,
    pub mark_price: Num,
    pub tick_direction: i32,
    pub timestamp: i64,
    /// Options only: the implied volatility of the trade's price, in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iv: Option<Num>,
}

/// `get_last_trades_by_instrument` result.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublicTrades {
    pub trades: Vec<PublicTrade>,
    pub has_more: bool,
}

/// 24 h statistics inside a ticker.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TickerStats {
    pub high: Option<Num>,
    pub low: Option<Num>,
    pub price_change: Option<Num>,
    pub volume: Num,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_usd: Option<Num>,
}

/// `public/ticker` result, `ticker.*` data, and the fixed part of `get_order_book`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Ticker {
    pub instrument_name: String,
    pub timestamp: i64,
    pub state: String,
    pub stats: TickerStats,
    pub open_interest: Num,
    pub best_bid_price: Option<Num>,
    pub best_bid_amount: Num,
    pub best_ask_price: Option<Num>,
    pub best_ask_amount: Num,
    pub index_price: Num,
    pub estimated_delivery_price: Num,
    pub min_price: Num,
    pub max_price: Num,
    pub mark_price: Num,
    pub last_price: Option<Num>,
    pub settlement_price: Num,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_funding: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub funding_8h: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interest_value: Option<Num>,
    /// Options only: the pricing inputs (`underlying_index` names the underlying future, or
    /// is `index_price`), the implied volatilities in percent, and the greeks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub underlying_price: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub underlying_index: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interest_rate: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark_iv: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bid_iv: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ask_iv: Option<Num>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub greeks: Option<Greeks>,
}

/// An option's Black–Scholes sensitivities as Deribit reports them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Greeks {
    pub delta: Num,
    pub gamma: Num,
    pub vega: Num,
    pub theta: Num,
    pub rho: Num,
}

/// `quote.*` data.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quote {
    pub instrument_name: String,
    pub timestamp: i64,
    pub best_bid_price: Option<Num>,
    pub best_bid_amount: Num,
    pub best_ask_price: Option<Num>,
    pub best_ask_amount: Num,
}

/// `deribit_price_index.*` data.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PriceIndex {
    pub index_name: String,
    pub price: Num,
    pub timestamp: i64,
}

/// `public/get_index_price` result.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexPrice {
    pub index_price: Num,
    pub estimated_delivery_price: Num,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vector(name: &str) -> String {
        let path = format!("{}/../../testdata/deribit/examples/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(path).unwrap()
    }

    fn result_text(name: &str) -> String {
        let value: serde_json::Value = serde_json::from_str(&vector(name)).unwrap();
        value["result"].to_string()
    }

    #[test]
    fn order_vectors_decode() {
        for name in ["private_buy.response.json", "private_edit.response.json", "private_close_position.response.json"]
        {
            let parsed: OrderWithTrades = serde_json::from_str(&result_text(name)).unwrap();
            assert!(!parsed.order.order_id.is_empty(), "{name}");
        }
        let orders: Vec<Order> = serde_json::from_str(&result_text("private_get_open_orders.response.json")).unwrap();
        assert_eq!(orders.len(), 1);
    }

    #[test]
    fn position_ticker_auth_decode() {
        let position: Position = serde_json::from_str(&result_text("private_get_position.response.json")).unwrap();
        assert_eq!(position.instrument_name, "BTC-PERPETUAL");
        let ticker: Ticker = serde_json::from_str(&result_text("public_ticker.response.json")).unwrap();
        assert_eq!(ticker.best_bid_price, Num::parse("36289.5"));
        let auth: AuthResult = serde_json::from_str(&result_text("public_auth.response.json")).unwrap();
        assert_eq!(auth.token_type, "bearer");
        let summary: AccountSummary =
            serde_json::from_str(&result_text("private_get_account_summary.response.json")).unwrap();
        assert_eq!(summary.currency, "BTC");
        assert!(summary.extended.is_some());
    }
}

/// `private/get_margins`: the initial margin a buy and a sell of the given size and price
/// would reserve, and the price band orders must stay within.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Margins {
    pub buy: Num,
    pub sell: Num,
    pub min_price: Num,
    pub max_price: Num,
}

/// One entry of `private/get_order_margin_by_ids`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderMargin {
    pub order_id: String,
    pub initial_margin: Num,
    pub initial_margin_currency: String,
}
