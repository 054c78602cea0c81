//! The history, settlement, account and combo methods over the real simulator, on a manual
//! clock: a client trades a perpetual and an option expiring the next morning, the clock
//! walks over 08:00 UTC (hourly and daily samples) and then over the option's expiry (its
//! delivery), and every method answers with the keys and JSON types of Deribit's vectors.
//!
//! The comparison is `common::shape`'s, strict, with no exempted key: every key of the
//! vector's object must be in the reply with the same type (`null` matches any type), and
//! every item of a reply's list must match one item of the vector's list of its instrument
//! kind (Deribit's lists mix kinds: a transaction log has trades and settlements, user locks
//! have locked and unlocked currencies). Lists checked here are non-empty.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::shape::{self, Exceptions, Kind, diff, kind_of_name};
use common::{Auth, WsClient};
use serde_json::{Value, json};
use ticktrade_core::{Clock, ManualClock, Utc};
use ticktrade_sim::{SimClock, SimConfig};

/// Calls `method` and compares its result with the vector; returns the result.
async fn check(c: &mut WsClient, failures: &mut Vec<String>, method: &str, params: Value) -> Value {
    let reply = c.call(method, params).await;
    failures.extend(shape::check_reply(method, &reply, None, &Exceptions::NONE));
    reply["result"].clone()
}

fn non_empty<'v>(value: &'v Value, what: &str) -> &'v Vec<Value> {
    let list = value.as_array().unwrap_or_else(|| panic!("{what}: not a list: {value}"));
    assert!(!list.is_empty(), "{what}: empty");
    list
}

/// Moves the clock and lets the engine's 10 ms timer step the market at the new time.
async fn walk(clock: &ManualClock, to_ms: i64) {
    let now = clock.utc().as_millis();
    clock.advance_nanos(((to_ms - now) * 1_000_000) as u64);
    tokio::time::sleep(Duration::from_millis(40)).await;
}

#[tokio::test]
async fn history_account_and_combo_methods_match_the_vectors() {
    // Thursday 2026-01-01 07:58 UTC: the built-in options of Friday 2 January expire at 08:00.
    let start = 1_767_254_280_000;
    let clock = Arc::new(ManualClock::new(Utc::from_millis(start)));
    let config = SimConfig {
        clock: SimClock::shared(clock.clone()),
        rate_per_s: 1,
        token_expires_s: 7 * 86_400,
        ..SimConfig::default()
    };
    let sim = ticktrade_sim::spawn_loopback(config).await.unwrap();
    let mut c = WsClient::connect(&sim.ws_url()).await;
    c.auth().await;
    // A heartbeat keeps the idle check off while the clock jumps.
    c.call("public/set_heartbeat", json!({"interval": 60})).await;

    let perp = json!({"instrument_name": "BTC-PERPETUAL", "amount": 100, "type": "market"});
    assert!(c.call("private/buy", perp).await["error"].is_null());
    let options = c.call("public/get_book_summary_by_currency", json!({"currency": "BTC", "kind": "option"})).await;
    let option = options["result"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["instrument_name"].as_str().unwrap().contains("-2JAN26-") && s["ask_price"].as_f64() > Some(0.0))
        .unwrap_or_else(|| panic!("no 2JAN26 option with an ask: {options}"))["instrument_name"]
        .as_str()
        .unwrap()
        .to_owned();
    let bought = c.call("private/buy", json!({"instrument_name": option, "amount": 1, "type": "market"})).await;
    assert_eq!(bought["result"]["order"]["filled_amount"].as_f64(), Some(1.0), "{bought}");

    // 07:58 → 08:03 in 30 s steps: minute samples, the 08:00 hourly sample and delivery price.
    for k in 1..=10 {
        walk(&clock, start + k * 30_000).await;
    }
    // The next morning, over the option's expiry; an order makes the exchange settle it.
    let expiry = 1_767_340_800_000; // 2026-01-02 08:00
    walk(&clock, expiry - 10_000).await;
    walk(&clock, expiry + 10_000).await;
    let close = json!({"instrument_name": "BTC-PERPETUAL", "type": "market"});
    assert!(c.call("private/close_position", close).await["error"].is_null());
    let now = clock.utc().as_millis();

    let mut f = Vec::new();
    let span = json!({"instrument_name": "BTC-PERPETUAL", "start_timestamp": start, "end_timestamp": now});
    let hours = check(&mut c, &mut f, "public/get_funding_rate_history", span.clone()).await;
    // 07:58 and 08:00, then the next morning's 07:59:50 and 08:00:10.
    assert_eq!(non_empty(&hours, "funding").len(), 4, "{hours}");
    let chart = check(
        &mut c,
        &mut f,
        "public/get_funding_chart_data",
        json!({"instrument_name": "BTC-PERPETUAL", "length": "1m"}),
    )
    .await;
    non_empty(&chart["data"], "funding chart");
    let recent = json!({"instrument_name": "BTC-PERPETUAL", "start_timestamp": now - 60_000, "end_timestamp": now});
    non_empty(&check(&mut c, &mut f, "public/get_mark_price_history", recent).await, "marks");
    let delivery = check(&mut c, &mut f, "public/get_delivery_prices", json!({"index_name": "btc_usd"})).await;
    let days: Vec<&str> =
        non_empty(&delivery["data"], "delivery").iter().map(|d| d["date"].as_str().unwrap()).collect();
    assert_eq!(days, vec!["2026-01-02", "2026-01-01"], "{delivery}");
    non_empty(&check(&mut c, &mut f, "public/get_historical_volatility", json!({"currency": "BTC"})).await, "hv");
    let window = json!({"currency": "BTC", "start_timestamp": start, "end_timestamp": now, "resolution": "60"});
    non_empty(&check(&mut c, &mut f, "public/get_volatility_index_data", window).await["data"], "dvol");
    let index = json!({"index_name": "btc_usd", "range": "2d"});
    non_empty(&check(&mut c, &mut f, "public/get_index_chart_data", index).await, "index chart");

    // The option's delivery, publicly and in the account's history and log.
    let by_instrument = json!({"instrument_name": option, "type": "delivery"});
    let public = check(&mut c, &mut f, "public/get_last_settlements_by_instrument", by_instrument.clone()).await;
    assert_eq!(non_empty(&public["settlements"], "last by instrument")[0]["timestamp"].as_i64(), Some(expiry + 10_000));
    non_empty(
        &check(&mut c, &mut f, "public/get_last_settlements_by_currency", json!({"currency": "BTC"})).await["settlements"],
        "last by currency",
    );
    let own = check(&mut c, &mut f, "private/get_settlement_history_by_instrument", by_instrument).await;
    assert_eq!(non_empty(&own["settlements"], "own")[0]["position"].as_f64(), Some(1.0), "{own}");
    non_empty(
        &check(&mut c, &mut f, "private/get_settlement_history_by_currency", json!({"currency": "BTC"})).await["settlements"],
        "own by currency",
    );
    let log = json!({"currency": "BTC", "start_timestamp": start.to_string(), "end_timestamp": now, "count": 50});
    let log = check(&mut c, &mut f, "private/get_transaction_log", log).await;
    let types: Vec<&str> = non_empty(&log["logs"], "log").iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(types.iter().filter(|t| **t == "delivery").count(), 1, "{log}");
    // The perpetual's buy and close, and the option's market buy, which took two levels.
    assert_eq!(types.iter().filter(|t| **t == "trade").count(), 4, "{log}");
    // Each entry's balance is the one before it plus its change.
    let logs = log["logs"].as_array().unwrap();
    for pair in logs.windows(2) {
        let (newer, older) = (&pair[0], &pair[1]);
        let before = newer["balance"].as_f64().unwrap() - newer["change"].as_f64().unwrap();
        assert!((before - older["balance"].as_f64().unwrap()).abs() < 1e-9, "{newer} after {older}");
    }
    let summary = c.call("private/get_account_summary", json!({"currency": "BTC"})).await;
    assert_eq!(log["logs"][0]["balance"], summary["result"]["balance"], "the newest entry's balance is the balance");

    // Account reads and settings.
    non_empty(&check(&mut c, &mut f, "private/get_subaccounts", json!({"with_portfolio": true})).await, "subaccounts");
    let buy = json!({"instrument_name": "BTC-PERPETUAL", "amount": 10, "type": "market"});
    c.call("private/buy", buy).await;
    let details = check(&mut c, &mut f, "private/get_subaccounts_details", json!({"currency": "BTC"})).await;
    non_empty(&details[0]["positions"], "details");
    non_empty(&check(&mut c, &mut f, "private/get_user_locks", json!({})).await, "locks");
    let mode = json!({"mode": "reject_taker", "extended_to_subaccounts": true});
    assert_eq!(check(&mut c, &mut f, "private/set_self_trading_config", mode).await, "ok");
    let extended = c.call("private/get_account_summary", json!({"currency": "BTC", "extended": true})).await;
    assert_eq!(extended["result"]["self_trading_reject_mode"], "reject_taker", "{extended}");
    let news = check(&mut c, &mut f, "private/get_new_announcements", json!({})).await;
    let id = non_empty(&news, "announcements")[0]["id"].clone();
    let read = json!({"announcement_id": id});
    assert_eq!(check(&mut c, &mut f, "private/set_announcement_as_read", read).await, "ok");
    assert_eq!(c.call("private/get_new_announcements", json!({})).await["result"], json!([]));

    // Combos.
    let combos = check(&mut c, &mut f, "public/get_combos", json!({"currency": "BTC"})).await;
    let first = non_empty(&combos, "combos")[0]["id"].clone();
    non_empty(
        &check(&mut c, &mut f, "public/get_combo_ids", json!({"currency": "BTC", "state": "active"})).await,
        "ids",
    );
    check(&mut c, &mut f, "public/get_combo_details", json!({"combo_id": first})).await;
    let trades = json!([{"instrument_name": "BTC-PERPETUAL", "amount": "10", "direction": "buy"},
        {"instrument_name": "ETH-PERPETUAL", "amount": "10", "direction": "sell"}]);
    let mixed = c.call("private/create_combo", json!({"trades": trades})).await;
    assert_eq!(mixed["error"]["code"], -32602, "legs of two coins: {mixed}");
    let trades = json!([{"instrument_name": "BTC-PERPETUAL", "amount": "10", "direction": "sell"},
        {"instrument_name": "BTC-27FEB26", "amount": "10", "direction": "buy"}]);
    let created = check(&mut c, &mut f, "private/create_combo", json!({"trades": trades})).await;
    assert_eq!(created["id"], "BTC-FS-27FEB26_PERP");
    let legs = json!([{"instrument_name": "BTC-PERPETUAL", "amount": 10, "direction": "sell"},
        {"instrument_name": "BTC-27FEB26", "amount": 10, "direction": "buy"}]);
    let prices = check(&mut c, &mut f, "private/get_leg_prices", json!({"legs": legs, "price": 100})).await;
    non_empty(&prices["legs"], "leg prices");

    assert!(f.is_empty(), "shape mismatches:\n{}", f.join("\n"));
    sim.shutdown().await;
}

// The shared comparison's rules (`common::shape`), checked once here.

#[test]
fn names_map_to_kinds() {
    assert_eq!(kind_of_name("BTC-27MAY20-8750-C"), Kind::Option);
    assert_eq!(kind_of_name("XRP_USDC-30MAY25-2d5-P"), Kind::Option);
    assert_eq!(kind_of_name("BTC-FS-2SEP22_PERP"), Kind::Combo);
    assert_eq!(kind_of_name("BTC-PERPETUAL"), Kind::Future);
    assert_eq!(kind_of_name("BTC-26JUN20"), Kind::Future);
    assert_eq!(kind_of_name("BTC_USDC-PERPETUAL"), Kind::Future);
    assert_eq!(kind_of_name("BTC_USDC"), Kind::Spot);
}

#[test]
fn a_kind_compares_the_items_of_that_kind() {
    let vector = json!([{"instrument_name": "BTC-26JUN20", "price": 1},
        {"instrument_name": "BTC-27MAY20-8750-C", "price": 1, "iv": 50}]);
    let option = json!([{"instrument_name": "BTC-2JAN26-90000-C", "price": 1}]);
    let mut out = Vec::new();
    // Without a kind the option trade passes as the future's; with one it meets the option's.
    diff("t", &vector, &option, None, &Exceptions::NONE, &mut out);
    assert!(out.is_empty(), "{out:?}");
    diff("t", &vector, &option, Some(Kind::Option), &Exceptions::NONE, &mut out);
    assert_eq!(out, vec!["t[0].iv: missing in simulator"]);
    out.clear();
    let mixed =
        json!([{"instrument_name": "BTC-PERPETUAL", "price": "x"}, {"instrument_name": "BTC-26JUN20", "price": 2}]);
    diff("t", &vector, &mixed, Some(Kind::Future), &Exceptions::NONE, &mut out);
    assert_eq!(out, vec!["t[0].price: vector number vs simulator string"]);
    out.clear();
    let futures_only = json!([{"instrument_name": "BTC-26JUN20", "price": 1}]);
    diff("t", &futures_only, &option, Some(Kind::Option), &Exceptions::NONE, &mut out);
    assert_eq!(out, vec!["t: the vector's list has no item about Some(Option)"]);
}

#[test]
fn objects_of_another_kind_differ_and_exceptions_skip() {
    let mut out = Vec::new();
    let option = json!({"instrument_name": "BTC-27MAY20-8750-C", "strike": 8750, "x": "a"});
    let future = json!({"instrument_name": "BTC-PERPETUAL", "x": 1});
    diff("t", &option, &future, Some(Kind::Option), &Exceptions::NONE, &mut out);
    assert_eq!(out, vec!["t: the simulator's object is about Some(Future), not Some(Option)"]);
    out.clear();
    let other = json!({"instrument_name": "BTC-2JAN26-90000-P", "x": 1});
    diff("t", &option, &other, Some(Kind::Option), &Exceptions::NONE, &mut out);
    assert_eq!(out, vec!["t.strike: missing in simulator", "t.x: vector string vs simulator number"]);
    out.clear();
    let except = Exceptions { keys: &[("strike", "why")], paths: &[("t.x", "why")] };
    diff("t", &option, &other, Some(Kind::Option), &except, &mut out);
    assert!(out.is_empty(), "{out:?}");
}
