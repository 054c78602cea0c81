//! Account reads and settings beyond orders and positions: `private/get_subaccounts`,
//! `get_subaccounts_details`, `get_user_locks`, `set_self_trading_config`,
//! `get_new_announcements`, `set_announcement_as_read`; and the simulator's one
//! announcement, which `public/get_announcements` lists too.
//!
//! Owns: decoding those methods' params and rendering their answers from the account's
//! state; the self-trading mode goes to the exchange, which matches with it.
//! Must not: create, rename or remove accounts (subaccount administration is out of scope:
//! an API key is one account, listed as the `main` account with no subaccounts), or lock
//! one (the simulator never locks a currency, so every lock reads `locked: false`).

use serde_json::value::RawValue;
use ticktrade_core::InstrumentId;
use ticktrade_deribit_proto::api;
use ticktrade_exchange::{AccountId as ExAccount, CurrencyId, SelfTrade};

use super::methods::json;
use crate::market::{AccountId, Market, money};
use crate::rpc::{RpcError, params};

/// The methods answered here (each needs an account).
pub const METHODS: &[&str] = &[
    "private/get_subaccounts",
    "private/get_subaccounts_details",
    "private/get_user_locks",
    "private/set_self_trading_config",
    "private/get_new_announcements",
    "private/set_announcement_as_read",
];

/// The simulator's announcement: published when it starts (its id is that time, as
/// Deribit's ids are their publication times).
pub fn announcement(market: &Market) -> api::Announcement {
    api::Announcement {
        id: market.started_ms(),
        title: "ticktrade simulator".to_owned(),
        body: "This venue is ticktrade's simulator: a synthetic market, simulated balances, no deposits or \
               withdrawals."
            .to_owned(),
        important: false,
        publication_timestamp: market.started_ms(),
    }
}

/// Answers one of [`METHODS`] (`None`: not one of them).
pub fn call(
    market: &mut Market,
    account: AccountId,
    method: &str,
    raw: Option<&RawValue>,
) -> Option<Result<String, RpcError>> {
    let result = match method {
        "private/get_subaccounts" => params::<api::SubaccountsParams>(raw).and_then(|p| {
            let portfolio = p.with_portfolio.unwrap_or(false).then(|| {
                market
                    .settlement_currencies()
                    .into_iter()
                    .filter_map(|name| {
                        let id = market.ex.catalogue().currency(&name)?;
                        Some((name.to_ascii_lowercase(), portfolio(market, account, id, &name)))
                    })
                    .collect()
            });
            json(&[api::Subaccount {
                id: i64::from(account),
                email: format!("sim{account}@ticktrade.invalid"),
                username: format!("sim{account}"),
                system_name: format!("sim{account}"),
                account_type: "main".to_owned(),
                is_password: false,
                login_enabled: true,
                margin_model: "segregated_sm".to_owned(),
                receive_notifications: false,
                security_keys_enabled: false,
                security_keys_assignments: Vec::new(),
                portfolio,
            }])
        }),
        "private/get_subaccounts_details" => params::<api::SubaccountDetailsParams>(raw).and_then(|p| {
            if market.ex.catalogue().currency(&p.currency.to_ascii_uppercase()).is_none() {
                return Err(RpcError::invalid_param("currency", "invalid value"));
            }
            let positions: Vec<api::Position> = market
                .position_instruments(account)
                .into_iter()
                .filter(|i: &InstrumentId| market.currency_matches(*i, &p.currency))
                .map(|i| market.render_position(account, i))
                .collect();
            let open_orders = p.with_open_orders.unwrap_or(false).then(|| {
                let filter = ticktrade_exchange::OrderFilter {
                    currency: market.ex.catalogue().currency(&p.currency.to_ascii_uppercase()),
                    ..ticktrade_exchange::OrderFilter::default()
                };
                market.ex.open_orders(ExAccount(account), filter).iter().map(|o| market.render_order(o)).collect()
            });
            json(&[api::SubaccountDetails { uid: i64::from(account), positions, open_orders }])
        }),
        "private/get_user_locks" => {
            let locks: Vec<api::UserLock> = market
                .currency_names()
                .into_iter()
                .map(|currency| api::UserLock { currency, locked: false, message: None })
                .collect();
            json(&locks)
        }
        "private/set_self_trading_config" => params::<api::SelfTradingParams>(raw).and_then(|p| {
            let mode = match p.mode.as_str() {
                "cancel_maker" => SelfTrade::CancelMaker,
                "reject_taker" => SelfTrade::RejectTaker,
                _ => return Err(RpcError::invalid_param("mode", "invalid value")),
            };
            market.ex.set_self_trade(ExAccount(account), mode);
            json(&"ok")
        }),
        "private/get_new_announcements" => {
            let list =
                if market.announcement_read.contains(&account) { Vec::new() } else { vec![announcement(market)] };
            json(&list)
        }
        "private/set_announcement_as_read" => params::<api::AnnouncementIdParams>(raw).and_then(|p| {
            if p.announcement_id != announcement(market).id {
                return Err(RpcError::invalid_param("announcement_id", "not found"));
            }
            if !market.announcement_read.contains(&account) {
                market.announcement_read.push(account);
            }
            json(&"ok")
        }),
        _ => return None,
    };
    Some(result)
}

fn portfolio(market: &Market, account: AccountId, currency: CurrencyId, name: &str) -> api::SubaccountPortfolio {
    let s = market.ex.account_summary(ExAccount(account), currency);
    api::SubaccountPortfolio {
        currency: name.to_ascii_lowercase(),
        balance: money(s.balance),
        equity: money(s.equity),
        available_funds: money(s.available_funds),
        available_withdrawal_funds: money(s.available_funds),
        initial_margin: money(s.initial_margin),
        maintenance_margin: money(s.maintenance_margin),
        margin_balance: money(s.margin_balance),
        additional_reserve: money(ticktrade_exchange::Money::ZERO),
        spot_reserve: money(ticktrade_exchange::Money::ZERO),
    }
}
