//! Params and results of the account reads beyond orders and positions (subaccounts, user
//! locks, self-trading config, announcements) and of combos (their list, details, creation
//! and leg prices).
//!
//! Owns: those shapes with Deribit's field names.
//! Must not: compute any of the values.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Num, Order, Position};

/// `private/get_subaccounts`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubaccountsParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with_portfolio: Option<bool>,
}

/// One currency of a subaccount's `portfolio` (keys are lower-case currency names).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubaccountPortfolio {
    pub currency: String,
    pub balance: Num,
    pub equity: Num,
    pub available_funds: Num,
    pub available_withdrawal_funds: Num,
    pub initial_margin: Num,
    pub maintenance_margin: Num,
    pub margin_balance: Num,
    pub additional_reserve: Num,
    pub spot_reserve: Num,
}

/// One account of `private/get_subaccounts` (the main account is listed too).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subaccount {
    pub id: i64,
    pub email: String,
    pub username: String,
    pub system_name: String,
    /// `main` or `subaccount`.
    #[serde(rename = "type")]
    pub account_type: String,
    pub is_password: bool,
    pub login_enabled: bool,
    pub margin_model: String,
    pub receive_notifications: bool,
    pub security_keys_enabled: bool,
    pub security_keys_assignments: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub portfolio: Option<BTreeMap<String, SubaccountPortfolio>>,
}

/// `private/get_subaccounts_details`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubaccountDetailsParams {
    pub currency: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with_open_orders: Option<bool>,
}

/// One account of `private/get_subaccounts_details`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubaccountDetails {
    pub uid: i64,
    pub positions: Vec<Position>,
    /// With `with_open_orders: true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_orders: Option<Vec<Order>>,
}

/// One currency of `private/get_user_locks`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserLock {
    pub currency: String,
    pub locked: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// `private/set_self_trading_config`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelfTradingParams {
    /// `reject_taker` or `cancel_maker`.
    pub mode: String,
    pub extended_to_subaccounts: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_rfq_self_match_prevention: Option<bool>,
}

/// One announcement (`public/get_announcements`, `private/get_new_announcements`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Announcement {
    pub id: i64,
    pub title: String,
    pub body: String,
    pub important: bool,
    pub publication_timestamp: i64,
}

/// `private/set_announcement_as_read`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnnouncementIdParams {
    pub announcement_id: i64,
}

/// `public/get_combos`, `public/get_combo_ids`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CombosParams {
    pub currency: String,
    /// `active`, `inactive` (`get_combo_ids` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}

/// `public/get_combo_details`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComboIdParams {
    pub combo_id: String,
}

/// One leg of a combo: `amount` is its signed ratio (negative: sold when the combo is bought).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComboLeg {
    pub instrument_name: String,
    pub amount: i64,
}

/// A combo (`get_combos`, `get_combo_details`, `create_combo`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Combo {
    pub id: String,
    pub instrument_id: u32,
    /// `active`, `inactive` or `rfq`.
    pub state: String,
    pub state_timestamp: i64,
    pub creation_timestamp: i64,
    pub legs: Vec<ComboLeg>,
}

/// One trade of `private/create_combo` and one leg of `private/get_leg_prices`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LegRequest {
    pub instrument_name: String,
    /// Sent as a string (`"1"`) or a number.
    pub amount: Num,
    /// `buy` or `sell`.
    pub direction: String,
}

/// `private/create_combo`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateComboParams {
    pub trades: Vec<LegRequest>,
}

/// `private/get_leg_prices`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LegPricesParams {
    pub legs: Vec<LegRequest>,
    pub price: Num,
}

/// One leg of `private/get_leg_prices`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LegPrice {
    pub instrument_name: String,
    pub direction: String,
    pub ratio: i64,
    pub price: Num,
}

/// `private/get_leg_prices` result: the leg prices and the combo amount.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LegPrices {
    pub legs: Vec<LegPrice>,
    pub amount: Num,
}
