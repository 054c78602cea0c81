//! Which Deribit API v2 methods the simulator serves, which it deliberately does not, and the
//! answer a client gets for the latter.
//!
//! Owns: the out-of-scope list with the area each method belongs to, the list of in-scope
//! methods not served yet, [`not_served`] (the error for any method the dispatch does not
//! know) and [`render_table`], the coverage table of `docs/PROTOCOLS.md`. The served methods
//! are not listed here: they are the dispatch's own lists (`session::*_METHODS`,
//! `engine::FAMILIES`), so the table cannot claim a method the dispatch lacks.
//! Must not: route or answer a served method.
//!
//! A test (`tests/it/coverage.rs`) checks that every method of `testdata/deribit/examples/` is in
//! exactly one of served / out of scope / not yet served, that every served method is
//! answered by something other than "method not found", and that `docs/PROTOCOLS.md` is the
//! rendering of this module (`UPDATE_PROTOCOLS=1` rewrites it).

use crate::rpc::RpcError;

/// An area of Deribit's API the simulator does not offer: none of it changes what an order
/// does, and each needs a world outside one exchange (chains, other users, a custodian).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Area {
    Wallet,
    Transfers,
    AddressBook,
    ApiKeys,
    Subaccounts,
    Affiliate,
    Custody,
    BlockRfq,
    BlockTrades,
    AccountSettings,
    PortfolioMargin,
    Yield,
}

impl Area {
    /// What the area is, for the error's `data` and the table.
    pub fn describe(self) -> &'static str {
        match self {
            Area::Wallet => "wallets, deposits and withdrawals",
            Area::Transfers => "transfers between accounts",
            Area::AddressBook => "address books and beneficiaries",
            Area::ApiKeys => "API-key administration",
            Area::Subaccounts => "subaccount administration",
            Area::Affiliate => "affiliate programmes and rewards",
            Area::Custody => "custody",
            Area::BlockRfq => "block RFQ and RFQ",
            Area::BlockTrades => "block and broker trades (a second party signs them)",
            Area::AccountSettings => "account settings outside trading (e-mail, access log)",
            Area::PortfolioMargin => "portfolio margin and margin-model changes",
            Area::Yield => "yield-bearing tokens",
        }
    }
}

/// Methods of Deribit's API v2 the simulator does not offer, by area.
pub const OUT_OF_SCOPE: &[(&str, Area)] = &[
    ("private/create_deposit_address", Area::Wallet),
    ("private/get_current_deposit_address", Area::Wallet),
    ("private/get_deposits", Area::Wallet),
    ("private/get_withdrawals", Area::Wallet),
    ("private/withdraw", Area::Wallet),
    ("private/cancel_withdrawal", Area::Wallet),
    ("private/cancel_transfer_by_id", Area::Transfers),
    ("private/get_transfers", Area::Transfers),
    ("private/submit_transfer_between_subaccounts", Area::Transfers),
    ("private/submit_transfer_to_subaccount", Area::Transfers),
    ("private/submit_transfer_to_user", Area::Transfers),
    ("private/move_positions", Area::Transfers),
    ("private/add_to_address_book", Area::AddressBook),
    ("private/remove_from_address_book", Area::AddressBook),
    ("private/update_in_address_book", Area::AddressBook),
    ("private/get_address_book", Area::AddressBook),
    ("private/delete_address_beneficiary", Area::AddressBook),
    ("private/get_address_beneficiary", Area::AddressBook),
    ("private/list_address_beneficiaries", Area::AddressBook),
    ("private/save_address_beneficiary", Area::AddressBook),
    ("private/set_clearance_originator", Area::AddressBook),
    ("private/change_api_key_name", Area::ApiKeys),
    ("private/change_scope_in_api_key", Area::ApiKeys),
    ("private/create_api_key", Area::ApiKeys),
    ("private/disable_api_key", Area::ApiKeys),
    ("private/edit_api_key", Area::ApiKeys),
    ("private/enable_api_key", Area::ApiKeys),
    ("private/list_api_keys", Area::ApiKeys),
    ("private/remove_api_key", Area::ApiKeys),
    ("private/reset_api_key", Area::ApiKeys),
    ("public/exchange_token", Area::Subaccounts),
    ("public/fork_token", Area::Subaccounts),
    ("private/change_subaccount_name", Area::Subaccounts),
    ("private/create_subaccount", Area::Subaccounts),
    ("private/remove_subaccount", Area::Subaccounts),
    ("private/set_email_for_subaccount", Area::Subaccounts),
    ("private/toggle_notifications_from_subaccount", Area::Subaccounts),
    ("private/toggle_subaccount_login", Area::Subaccounts),
    ("private/set_disabled_trading_products", Area::Subaccounts),
    ("private/enable_affiliate_program", Area::Affiliate),
    ("private/get_affiliate_program_info", Area::Affiliate),
    ("private/get_reward_eligibility", Area::Affiliate),
    ("private/list_custody_accounts", Area::Custody),
    ("private/accept_block_rfq", Area::BlockRfq),
    ("private/add_block_rfq_quote", Area::BlockRfq),
    ("private/cancel_all_block_rfq_quotes", Area::BlockRfq),
    ("private/cancel_block_rfq", Area::BlockRfq),
    ("private/cancel_block_rfq_quote", Area::BlockRfq),
    ("private/cancel_block_rfq_trigger", Area::BlockRfq),
    ("private/create_block_rfq", Area::BlockRfq),
    ("private/edit_block_rfq_quote", Area::BlockRfq),
    ("private/get_block_rfq_makers", Area::BlockRfq),
    ("private/get_block_rfq_quotes", Area::BlockRfq),
    ("private/get_block_rfq_user_info", Area::BlockRfq),
    ("private/get_block_rfqs", Area::BlockRfq),
    ("private/trade_block_rfq", Area::BlockRfq),
    ("public/get_block_rfq_trades", Area::BlockRfq),
    ("private/send_rfq", Area::BlockRfq),
    ("public/get_rfqs", Area::BlockRfq),
    ("private/approve_block_trade", Area::BlockTrades),
    ("private/execute_block_trade", Area::BlockTrades),
    ("private/get_block_trade", Area::BlockTrades),
    ("private/get_block_trade_requests", Area::BlockTrades),
    ("private/get_block_trades", Area::BlockTrades),
    ("private/get_pending_block_trades", Area::BlockTrades),
    ("private/invalidate_block_trade_signature", Area::BlockTrades),
    ("private/reject_block_trade", Area::BlockTrades),
    ("private/simulate_block_trade", Area::BlockTrades),
    ("private/verify_block_trade", Area::BlockTrades),
    ("private/get_broker_trade_requests", Area::BlockTrades),
    ("private/get_broker_trades", Area::BlockTrades),
    ("private/get_email_language", Area::AccountSettings),
    ("private/set_email_language", Area::AccountSettings),
    ("private/get_access_log", Area::AccountSettings),
    ("private/change_margin_model", Area::PortfolioMargin),
    ("private/pme_simulate", Area::PortfolioMargin),
    ("private/simulate_portfolio", Area::PortfolioMargin),
    ("public/get_apr_history", Area::Yield),
];

/// Trading-relevant methods the simulator should serve and does not yet: they answer
/// "method not found" like an unknown method, and the table says so.
pub const NOT_YET_SERVED: &[&str] = &[];

/// Every method the dispatch answers, in dispatch order.
pub fn served() -> impl Iterator<Item = &'static str> {
    crate::session::CONNECTION_METHODS
        .iter()
        .chain(crate::session::SUBSCRIBE_METHODS)
        .chain(crate::engine::FAMILIES.into_iter().flatten())
        .copied()
}

/// The area of an out-of-scope method.
pub fn out_of_scope(method: &str) -> Option<Area> {
    OUT_OF_SCOPE.iter().find(|(m, _)| *m == method).map(|(_, area)| *area)
}

/// The answer to a method the dispatch does not serve: Deribit's "method not found"
/// (`-32601`), with `data` saying why when the simulator deliberately leaves it out.
pub fn not_served(method: &str) -> RpcError {
    match out_of_scope(method) {
        Some(area) => RpcError::with_data(
            -32601,
            "Method not found",
            serde_json::json!({
                "reason": format!("the simulator does not offer {}", area.describe()),
                "method": method,
            }),
        ),
        None => RpcError::method_not_found(),
    }
}

/// How one method is covered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coverage {
    Served,
    OutOfScope(Area),
    NotYetServed,
}

/// Every classified method with its coverage, sorted by name.
pub fn table() -> Vec<(&'static str, Coverage)> {
    let mut rows: Vec<(&'static str, Coverage)> = served()
        .map(|m| (m, Coverage::Served))
        .chain(OUT_OF_SCOPE.iter().map(|(m, area)| (*m, Coverage::OutOfScope(*area))))
        .chain(NOT_YET_SERVED.iter().map(|m| (*m, Coverage::NotYetServed)))
        .collect();
    rows.sort_by(|a, b| a.0.cmp(b.0));
    rows
}

/// `docs/PROTOCOLS.md`: the coverage table, generated.
pub fn render_table() -> String {
    let rows = table();
    let count = |want: fn(&Coverage) -> bool| rows.iter().filter(|(_, c)| want(c)).count();
    let mut out = String::new();
    out.push_str("# Protocol coverage\n\n");
    out.push_str("Generated from `crates/sim/src/coverage.rs` and the simulator's dispatch lists; ");
    out.push_str("`cargo test -p ticktrade-sim --test it coverage` fails when this file is stale ");
    out.push_str("(`UPDATE_PROTOCOLS=1` rewrites it).\n\n");
    out.push_str("## Deribit API v2 in `ticktrade sim`\n\n");
    out.push_str("Every method of the vectors in `testdata/deribit/examples/`. *Served*: answered with the ");
    out.push_str("vectors' shapes. *Out of scope*: answered `-32601 Method not found` with `data.reason` ");
    out.push_str("naming the area. *Not yet served*: in scope, answered `-32601` without a reason.\n\n");
    out.push_str(&format!(
        "{} served, {} out of scope, {} not yet served.\n\n",
        count(|c| *c == Coverage::Served),
        count(|c| matches!(c, Coverage::OutOfScope(_))),
        count(|c| *c == Coverage::NotYetServed),
    ));
    out.push_str("Served answers come from the simulator's own state. Price history: each instrument's ");
    out.push_str("mark sampled once a second (ten minutes kept), each index once a minute (a week) and ");
    out.push_str("once an hour (a year); a delivery price is the index sampled in the 08:00 UTC hour; ");
    out.push_str("volatility is the realised volatility of the index's minute samples, annualised, in ");
    out.push_str("percent. Settlements and the transaction log: the exchange's ledger of each account's ");
    out.push_str("fills and deliveries, with the balance after each (expiries settle at the mark; there ");
    out.push_str("is no daily settlement and no funding model, so every interest figure is 0). Combos ");
    out.push_str("are listed, created and priced (`get_leg_prices`) but not traded. An API key is one ");
    out.push_str("account: `get_subaccounts` lists it as the main account.\n\n");
    out.push_str("| method | coverage |\n|---|---|\n");
    for (method, coverage) in rows {
        let cell = match coverage {
            Coverage::Served => "served".to_owned(),
            Coverage::OutOfScope(area) => format!("out of scope: {}", area.describe()),
            Coverage::NotYetServed => "not yet served".to_owned(),
        };
        out.push_str(&format!("| `{method}` | {cell} |\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_is_classified_once() {
        let rows = table();
        for pair in rows.windows(2) {
            assert_ne!(pair[0].0, pair[1].0, "{} is classified twice", pair[0].0);
        }
    }

    #[test]
    fn out_of_scope_answers_say_why() {
        let err = not_served("private/withdraw");
        assert_eq!((err.code, err.message.as_str()), (-32601, "Method not found"));
        let data = err.data.unwrap_or_default();
        assert_eq!(data["reason"], "the simulator does not offer wallets, deposits and withdrawals");
        assert_eq!(not_served("public/nope"), RpcError::method_not_found());
    }
}
