//! Every method and channel the simulator serves answers with the same keys and value types as
//! the recorded Deribit vectors in `testdata/deribit/examples/` (recursive key/type comparison;
//! the vector's keys must all be present in the simulator's reply with the same JSON type).
//!
//! Documented exceptions (`EXCEPTIONS`): option-only fields (this walk trades a perpetual),
//! trigger-order fields (it places no trigger order), fee-schedule and cross-collateral fields
//! the simulator does not serve, map-valued
//! fields whose keys are data (`*_map`: index names), and fields the vectors carry from later
//! API versions that the simulator does not produce. `null` is compatible with any type (Deribit
//! sends `null` for absent values such as `price_change` before the first trade).

#![allow(clippy::unwrap_used)]

mod common;

use common::shape::{Exceptions, Kind, diff, kind_of_name};
use common::{Auth, WsClient, shape, sim, type_of, vector};
use serde_json::{Value, json};

/// Single paths not compared, and why.
const PATH_EXCEPTIONS: &[(&str, &str)] = &[(
    "private/cancel.price",
    "the vector cancels an untriggered stop-market order, whose price is the string \"market_price\"",
)];

/// Keys not compared, anywhere in a reply, and why.
const EXCEPTIONS: &[(&str, &str)] = &[
    ("iv", "options only"),
    ("underlying_price", "options only"),
    ("underlying_index", "options only"),
    ("interest_rate", "options only"),
    ("greeks", "options only"),
    ("mark_iv", "options only"),
    ("bid_iv", "options only"),
    ("ask_iv", "options only"),
    ("strike", "options only"),
    ("option_type", "options only"),
    ("trigger", "only on trigger orders; this walk places none"),
    ("trigger_price", "only on trigger orders; this walk places none"),
    ("triggered", "only on trigger orders; this walk places none"),
    ("fees", "the per-kind fee schedule object is not served (fees are charged per instrument)"),
    ("block_rfq_self_match_prevention", "block RFQ not simulated"),
    ("referrer_id", "affiliate program not simulated"),
    ("risk_reducing", "portfolio margin not simulated"),
    ("is_secondary_oto", "linked orders not simulated"),
    ("primary_order_id", "linked orders not simulated"),
    ("oto_order_ids", "linked orders not simulated"),
    ("original_order_type", "market_limit not simulated"),
    ("is_primary_otoco", "linked orders not simulated"),
    ("app_name", "OAuth apps not simulated"),
    ("refresh_amount", "iceberg orders not simulated"),
    ("display_amount", "iceberg orders not simulated"),
    ("implv", "advanced option orders not simulated"),
    ("usd", "advanced option orders not simulated"),
    ("advanced", "advanced option orders not simulated"),
    ("auto_replaced", "auto-replacing not simulated"),
    ("total_maintenance_margin_usd", "cross-collateral not simulated"),
    ("total_initial_margin_usd", "cross-collateral not simulated"),
    ("total_equity_usd", "cross-collateral not simulated"),
    ("total_margin_balance_usd", "cross-collateral not simulated"),
    ("total_delta_total_usd", "cross-collateral not simulated"),
];

/// Appends every place where `actual` lacks a key of `expected` or has another type.
fn shape_diff(path: &str, expected: &Value, actual: &Value, out: &mut Vec<String>) {
    if expected.is_null() || actual.is_null() || PATH_EXCEPTIONS.iter().any(|(p, _)| *p == path) {
        return;
    }
    if type_of(expected) != type_of(actual) {
        out.push(format!("{path}: vector {} vs simulator {}", type_of(expected), type_of(actual)));
        return;
    }
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (key, value) in e {
                if EXCEPTIONS.iter().any(|(k, _)| k == key) {
                    continue;
                }
                if key.ends_with("_map") || key == "limits" {
                    continue; // keys are data (index names) or account-tier specific
                }
                match a.get(key) {
                    Some(actual) => shape_diff(&format!("{path}.{key}"), value, actual, out),
                    None => out.push(format!("{path}.{key}: missing in simulator")),
                }
            }
        }
        (Value::Array(e), Value::Array(a)) => {
            if let (Some(e0), Some(a0)) = (e.first(), a.first()) {
                shape_diff(&format!("{path}[0]"), e0, a0, out);
            }
        }
        _ => {}
    }
}

struct Checker {
    failures: Vec<String>,
    checked: usize,
}

impl Checker {
    fn method(&mut self, method: &str, reply: &Value) {
        let expected = shape::vector_for(method, None).1;
        assert!(reply.get("error").is_none(), "{method} failed: {reply}");
        let mut diffs = Vec::new();
        shape_diff(method, &expected["result"], &reply["result"], &mut diffs);
        self.failures.extend(diffs);
        self.checked += 1;
    }

    fn channel(&mut self, vector_name: &str, frame: &Value) {
        let expected = vector(vector_name);
        let mut diffs = Vec::new();
        shape_diff(vector_name, &expected["params"]["data"], &frame["params"]["data"], &mut diffs);
        self.failures.extend(diffs);
        self.checked += 1;
    }
}

#[tokio::test]
async fn replies_match_the_vectors_key_for_key() {
    let sim = sim().await;
    let mut c = WsClient::connect(&sim.ws_url()).await;
    let mut check = Checker { failures: Vec::new(), checked: 0 };
    let auth = c.auth().await;
    check.method("public/auth", &auth);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let btc = json!({"instrument_name": "BTC-PERPETUAL"});
    let perp_id = c.call("public/get_instrument", btc.clone()).await["result"]["instrument_id"].as_i64().unwrap();
    let public: Vec<(&str, Value)> = vec![
        ("public/test", json!({})),
        ("public/get_time", json!({})),
        ("public/hello", json!({"client_name": "vectors", "client_version": "1"})),
        ("public/status", json!({})),
        ("public/set_heartbeat", json!({"interval": 60})),
        ("public/disable_heartbeat", json!({})),
        ("public/get_instruments", json!({"currency": "BTC"})),
        ("public/get_instrument", btc.clone()),
        ("public/get_currencies", json!({})),
        ("public/get_order_book", btc.clone()),
        ("public/get_order_book_by_instrument_id", json!({"instrument_id": perp_id})),
        ("public/ticker", btc.clone()),
        ("public/get_index_price", json!({"index_name": "btc_usd"})),
        ("public/get_book_summary_by_currency", json!({"currency": "BTC"})),
        ("public/get_book_summary_by_instrument", btc.clone()),
        (
            "public/get_tradingview_chart_data",
            json!({"instrument_name": "BTC-PERPETUAL", "start_timestamp": now - 3_600_000, "end_timestamp": now, "resolution": "30"}),
        ),
    ];
    for (method, params) in public {
        let reply = c.call(method, params).await;
        check.method(method, &reply);
    }

    // Channels: subscribe to everything, then trade so user channels fire.
    let channels = json!([
        "book.BTC-PERPETUAL.raw",
        "book.BTC-PERPETUAL.none.10.100ms",
        "trades.BTC-PERPETUAL.raw",
        "ticker.BTC-PERPETUAL.100ms",
        "incremental_ticker.BTC-PERPETUAL",
        "quote.BTC-PERPETUAL",
        "deribit_price_index.btc_usd",
        "user.orders.BTC-PERPETUAL.raw",
        "user.orders.any.any.100ms",
        "user.trades.BTC-PERPETUAL.raw",
        "user.trades.any.any.raw",
        "user.changes.BTC-PERPETUAL.raw",
        "user.changes.future.BTC.raw",
        "user.portfolio.btc"
    ]);
    let reply = c.call("private/subscribe", json!({"channels": channels})).await;
    assert_eq!(reply["result"].as_array().unwrap().len(), 14, "{reply}");
    check.method("private/subscribe", &reply);
    let reply = c.call("public/subscribe", json!({"channels": ["book.ETH-PERPETUAL.100ms"]})).await;
    check.method("public/subscribe", &reply);

    let bought = c
        .call(
            "private/buy",
            json!({"instrument_name": "BTC-PERPETUAL", "amount": 30, "type": "market", "label": "vec-m"}),
        )
        .await;
    check.method("private/buy", &bought);
    let buy_id = bought["result"]["order"]["order_id"].as_str().unwrap().to_owned();
    let best_ask = c.call("public/ticker", btc.clone()).await["result"]["best_ask_price"].as_f64().unwrap();
    let far = ((best_ask + 2_000.0) / 0.5).round() * 0.5;
    let sold = c
        .call("private/sell", json!({"instrument_name": "BTC-PERPETUAL", "amount": 10, "price": far, "label": "vec"}))
        .await;
    check.method("private/sell", &sold);
    let sell_id = sold["result"]["order"]["order_id"].as_str().unwrap().to_owned();

    let private: Vec<(&str, Value)> = vec![
        ("private/edit", json!({"order_id": sell_id, "amount": 20, "price": far})),
        (
            "private/edit_by_label",
            json!({"label": "vec", "instrument_name": "BTC-PERPETUAL", "amount": 10, "price": far}),
        ),
        ("private/get_open_orders", json!({})),
        ("private/get_open_orders_by_currency", json!({"currency": "BTC"})),
        ("private/get_open_orders_by_instrument", btc.clone()),
        ("private/get_order_state", json!({"order_id": sell_id})),
        ("private/get_order_history_by_instrument", btc.clone()),
        ("private/get_positions", json!({"currency": "BTC"})),
        ("private/get_position", btc.clone()),
        ("private/get_account_summary", json!({"currency": "BTC"})),
        ("private/get_user_trades_by_instrument", btc.clone()),
        ("private/get_user_trades_by_currency", json!({"currency": "BTC"})),
        ("private/get_user_trades_by_order", json!({"order_id": buy_id})),
        (
            "private/get_user_trades_by_instrument_and_time",
            json!({"instrument_name": "BTC-PERPETUAL", "start_timestamp": now - 60_000, "end_timestamp": now + 600_000}),
        ),
        (
            "private/get_user_trades_by_currency_and_time",
            json!({"currency": "BTC", "start_timestamp": now - 60_000, "end_timestamp": now + 600_000, "sorting": "asc"}),
        ),
        ("private/get_order_state_by_label", json!({"currency": "BTC", "label": "vec"})),
        ("private/get_open_orders_by_label", json!({"currency": "BTC", "label": "vec"})),
        ("private/get_order_history_by_currency", json!({"currency": "BTC"})),
        ("private/get_account_summaries", json!({})),
        ("public/get_index_price_names", json!({})),
        ("public/get_last_trades_by_instrument", btc.clone()),
        ("private/enable_cancel_on_disconnect", json!({})),
        ("private/get_cancel_on_disconnect", json!({})),
        ("private/disable_cancel_on_disconnect", json!({})),
        ("private/cancel", json!({"order_id": sell_id})),
    ];
    for (method, params) in private {
        let reply = c.call(method, params).await;
        check.method(method, &reply);
    }
    for (method, params) in [
        ("private/cancel_all", json!({})),
        ("private/cancel_all_by_instrument", btc.clone()),
        ("private/cancel_all_by_currency", json!({"currency": "BTC"})),
        ("private/cancel_all_by_kind_or_type", json!({"currency": "BTC", "kind": "future"})),
        ("private/cancel_by_label", json!({"label": "vec"})),
    ] {
        c.call("private/sell", json!({"instrument_name": "BTC-PERPETUAL", "amount": 10, "price": far, "label": "vec"}))
            .await;
        let reply = c.call(method, params).await;
        assert_eq!(reply["result"], 1, "{method}: {reply}");
        check.method(method, &reply);
    }
    let closed = c.call("private/close_position", json!({"instrument_name": "BTC-PERPETUAL", "type": "market"})).await;
    check.method("private/close_position", &closed);

    // Market maker tools: configure a group, quote (one side refused so `errors` has an
    // item), cancel, then freeze the group with a crossing quote and read and reset it.
    let config = json!({"index_name": "btc_usd", "mmp_group": "vec", "interval": 60, "frozen_time": 0,
        "quantity_limit": 1_000_000, "delta_limit": 100, "vega_limit": 1, "max_quote_quantity": 2.5});
    let reply = c.call("private/set_mmp_config", config).await;
    check.method("private/set_mmp_config", &reply);
    let reply = c.call("private/get_mmp_config", json!({"index_name": "btc_usd", "mmp_group": "vec"})).await;
    assert_eq!(reply["result"].as_array().map(Vec::len), Some(1), "{reply}");
    check.method("private/get_mmp_config", &reply);
    let low = ((best_ask - 2_000.0) / 0.5).round() * 0.5;
    let quotes = json!({"quote_id": "1", "mmp_group": "vec", "detailed": true, "quotes": [
        {"instrument_name": "BTC-PERPETUAL", "quote_set_id": "futures",
         "bid": {"price": low, "amount": 10}, "ask": {"price": far, "amount": 10}},
        {"instrument_name": "BTC-PERPETUAL", "quote_set_id": "futures", "bid": {"price": low + 0.1, "amount": 10}},
    ]});
    let reply = c.call("private/mass_quote", quotes).await;
    assert_eq!(reply["result"]["orders"].as_array().map(Vec::len), Some(2), "{reply}");
    assert_eq!(reply["result"]["errors"][0]["error"]["code"], 10043, "{reply}");
    check.method("private/mass_quote", &reply);
    let reply =
        c.call("private/cancel_quotes", json!({"cancel_type": "quote_set_id", "quote_set_id": "futures"})).await;
    assert_eq!(reply["result"], 2, "{reply}");
    check.method("private/cancel_quotes", &reply);
    let tight =
        json!({"index_name": "btc_usd", "mmp_group": "vec", "interval": 60, "frozen_time": 0, "quantity_limit": 1});
    c.call("private/set_mmp_config", tight).await;
    let crossing = json!({"quote_id": "2", "mmp_group": "vec", "quotes": [
        {"instrument_name": "BTC-PERPETUAL", "quote_set_id": "futures", "bid": {"price": far, "amount": 10}}]});
    let reply = c.call("private/mass_quote", crossing.clone()).await;
    assert!(!reply["result"]["trades"].as_array().unwrap().is_empty(), "{reply}");
    let status = c.call("private/get_mmp_status", json!({"index_name": "btc_usd", "mmp_group": "vec"})).await;
    assert_eq!(status["result"][0]["frozen_until"], 0, "{status}");
    check.method("private/get_mmp_status", &status);
    let refused = c.call("private/mass_quote", crossing).await;
    assert_eq!(refused["result"]["errors"][0]["error"]["code"], 13030, "{refused}");
    let reply = c.call("private/reset_mmp", json!({"index_name": "btc_usd", "mmp_group": "vec"})).await;
    check.method("private/reset_mmp", &reply);
    let status = c.call("private/get_mmp_status", json!({"index_name": "btc_usd"})).await;
    assert_eq!(status["result"], json!([]), "{status}");
    c.call("private/close_position", json!({"instrument_name": "BTC-PERPETUAL", "type": "market"})).await;

    // Margins of a resting order and of a hypothetical one; the currency-pair cancel.
    let resting = c.call("private/sell", json!({"instrument_name": "BTC-PERPETUAL", "amount": 10, "price": far})).await;
    let resting_id = resting["result"]["order"]["order_id"].clone();
    let reply = c.call("private/get_order_margin_by_ids", json!({"ids": [resting_id]})).await;
    assert!(reply["result"][0]["initial_margin"].as_f64().unwrap() > 0.0, "{reply}");
    check.method("private/get_order_margin_by_ids", &reply);
    let reply = c
        .call("private/get_margins", json!({"instrument_name": "BTC-PERPETUAL", "amount": 10_000, "price": far}))
        .await;
    assert!(reply["result"]["buy"].as_f64().unwrap() > 0.0, "{reply}");
    check.method("private/get_margins", &reply);
    let reply = c.call("private/cancel_all_by_currency_pair", json!({"currency_pair": "BTC_USD"})).await;
    assert_eq!(reply["result"], 1, "{reply}");
    check.method("private/cancel_all_by_currency_pair", &reply);

    // A trigger order far from the market, for the trigger history (its `new` entry).
    let stop = json!({"instrument_name": "BTC-PERPETUAL", "amount": 10, "type": "stop_market",
        "trigger": "index_price", "trigger_price": far});
    let stop_id = c.call("private/buy", stop).await["result"]["order"]["order_id"].clone();
    let reply = c.call("private/get_trigger_order_history", json!({"currency": "BTC", "count": 10})).await;
    assert_eq!(reply["result"]["entries"][0]["trigger_order_id"], stop_id, "{reply}");
    check.method("private/get_trigger_order_history", &reply);
    c.call("private/cancel", json!({"order_id": stop_id})).await;

    // Market data over the trades above (each list is non-empty, so its items are compared).
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let span =
        json!({"instrument_name": "BTC-PERPETUAL", "start_timestamp": now - 3_600_000, "end_timestamp": now + 60_000});
    let market_data: Vec<(&str, Value, &str)> = vec![
        ("public/get_last_trades_by_currency", json!({"currency": "BTC"}), "trades"),
        (
            "public/get_last_trades_by_currency_and_time",
            json!({"currency": "BTC", "start_timestamp": now - 3_600_000, "end_timestamp": now + 60_000}),
            "trades",
        ),
        ("public/get_last_trades_by_instrument_and_time", span.clone(), "trades"),
        ("public/get_supported_index_names", json!({}), ""),
        ("public/get_contract_size", btc.clone(), ""),
        ("public/get_expirations", json!({"currency": "BTC", "kind": "any"}), "future"),
        ("public/get_index", json!({"currency": "BTC"}), ""),
        ("public/get_trade_volumes", json!({}), ""),
        ("public/get_funding_rate_value", span.clone(), ""),
        ("public/get_announcements", json!({}), "-"),
    ];
    for (method, params, list) in market_data {
        let reply = c.call(method, params).await;
        let items = if list.is_empty() { &reply["result"] } else { &reply["result"][list] };
        if list != "-" {
            assert!(!items.is_array() || !items.as_array().unwrap().is_empty(), "{method}: empty {reply}");
        }
        check.method(method, &reply);
    }

    let notifications = [
        ("book.BTC-PERPETUAL.raw", "book.instrument_name.interval.notification.snapshot.docs_v2_1_1.json"),
        ("book.BTC-PERPETUAL.raw", "book.instrument_name.interval.notification.change.docs_v2_1_1.json"),
        ("book.BTC-PERPETUAL.none.10.100ms", "book.instrument_name.group.depth.interval.notification.docs_v2_1_1.json"),
        ("trades.BTC-PERPETUAL.raw", "trades.instrument_name.interval.notification.docs_v2_1_1.json"),
        ("ticker.BTC-PERPETUAL.100ms", "ticker.instrument_name.interval.notification.docs_v2_1_1.json"),
        (
            "incremental_ticker.BTC-PERPETUAL",
            "incremental_ticker.instrument_name.notification.snapshot.docs_v2_1_1.json",
        ),
        ("incremental_ticker.BTC-PERPETUAL", "incremental_ticker.instrument_name.notification.change.docs_v2_1_1.json"),
        ("quote.BTC-PERPETUAL", "quote.instrument_name.notification.docs_v2_1_1.json"),
        ("deribit_price_index.btc_usd", "deribit_price_index.index_name.notification.docs_v2_1_1.json"),
        ("user.orders.BTC-PERPETUAL.raw", "user.orders.instrument_name.raw.notification.docs_v2_1_1.json"),
        ("user.orders.any.any.100ms", "user.orders.kind.currency.interval.notification.docs_v2_1_1.json"),
        ("user.trades.BTC-PERPETUAL.raw", "user.trades.instrument_name.interval.notification.docs_v2_1_1.json"),
        ("user.trades.any.any.raw", "user.trades.kind.currency.interval.notification.real_ccxt.json"),
        ("user.changes.BTC-PERPETUAL.raw", "user.changes.instrument_name.interval.notification.docs_v2_1_1.json"),
        ("user.changes.future.BTC.raw", "user.changes.kind.currency.interval.notification.docs_v2_1_1.json"),
        ("user.portfolio.btc", "user.portfolio.currency.notification.docs_v2_1_1.json"),
        ("book.ETH-PERPETUAL.100ms", "book.instrument_name.interval.notification.snapshot.real_probe_inverse.json"),
    ];
    for (channel, vector_name) in notifications {
        let frame = c.notification(channel).await;
        check.channel(vector_name, &frame);
    }
    let user_changes = c.notification("user.changes.BTC-PERPETUAL.raw").await;
    assert!(user_changes["params"]["data"]["orders"].is_array());

    for (method, params) in [
        ("private/unsubscribe", json!({"channels": ["user.portfolio.btc"]})),
        ("public/unsubscribe", json!({"channels": ["book.ETH-PERPETUAL.100ms"]})),
    ] {
        let reply = c.call(method, params).await;
        check.method(method, &reply);
    }
    let reply = c.call("private/unsubscribe_all", json!({})).await;
    check.method("private/unsubscribe_all", &reply);
    let reply = c.call("public/unsubscribe_all", json!({})).await;
    check.method("public/unsubscribe_all", &reply);

    assert!(check.checked >= 60, "only {} comparisons", check.checked);
    assert!(check.failures.is_empty(), "shape mismatches:\n{}", check.failures.join("\n"));
    sim.shutdown().await;
}

/// Served methods no vector test can check key for key, and why.
const UNCHECKED: &[(&str, &str)] =
    &[("private/logout", "answers by closing the connection; there is no response vector")];

/// Every method the simulator serves is called by a vector test (this file or
/// `history_vectors.rs`) and its reply compared with its vector, or is in `UNCHECKED`.
#[test]
fn every_served_method_is_checked_against_its_vector() {
    let tests = [include_str!("vectors.rs"), include_str!("history_vectors.rs")];
    let missing: Vec<&str> = ticktrade_sim::coverage::served()
        .filter(|m| !UNCHECKED.iter().any(|(u, _)| u == m))
        .filter(|m| !tests.iter().any(|t| t.contains(&format!("\"{m}\""))))
        .collect();
    assert!(missing.is_empty(), "served methods no vector test checks: {missing:?}");
}

// The shared comparison's rules, checked once here.

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
