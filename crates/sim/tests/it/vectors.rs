//! Every method and channel the simulator serves answers with the same keys and value types as
//! the recorded Deribit vectors in `testdata/deribit/examples/` (`common::shape`: the vector's
//! keys must all be present in the simulator's reply with the same JSON type, and each reply is
//! compared with the vector about the same instrument kind).
//!
//! The walk trades the perpetual and an option, and places trigger orders: one rests
//! untriggered, one fires when the walk's own market buy sweeps past its trigger price, one is
//! cancelled. A method whose vectors show futures and options is compared once per kind;
//! option replies with no Deribit vector (ticker, order book, ticker channel) are compared
//! with a recorded option ticker frame (`testdata/deribit/market_data/cryptofeed/`).
//!
//! Documented exceptions (`EXCEPTIONS`, `PATH_EXCEPTIONS`): fee-schedule and cross-collateral
//! fields the simulator does not serve, map-valued fields whose keys are data (`*_map`: index
//! names), rate `limits` (account-tier specific), fields the vectors carry from later API
//! versions that the simulator does not produce, and one single path named below. `null` is
//! compatible with any type (Deribit sends `null` for absent values such as `price_change`
//! before the first trade).

#![allow(clippy::unwrap_used)]

use crate::common;

use common::shape::{self, Exceptions, Kind};
use common::{Auth, WsClient, sim, vector};
use serde_json::{Value, json};

/// Single paths not compared (`[]` stands for any list index), and why.
const PATH_EXCEPTIONS: &[(&str, &str)] = &[(
    "public/get_book_summary_by_currency[].mark_iv",
    "the v2.1.1 docs example gives futures `mark_iv`, which Deribit's field reference documents for \
         options only (the option comparisons check it)",
)];

/// Keys not compared, anywhere in a reply, and why.
const EXCEPTIONS: &[(&str, &str)] = &[
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
    ("delta_total_map", "keys are data (index names)"),
    ("estimated_liquidation_ratio_map", "keys are data (index names)"),
    ("options_gamma_map", "keys are data (index names)"),
    ("options_theta_map", "keys are data (index names)"),
    ("options_vega_map", "keys are data (index names)"),
    ("limits", "rate limits are account-tier specific"),
];

const EXCEPT: Exceptions<'static> = Exceptions { keys: EXCEPTIONS, paths: PATH_EXCEPTIONS };

struct Checker {
    failures: Vec<String>,
    checked: usize,
}

impl Checker {
    /// Compares a reply about futures (or no instrument) with the method's vector of futures.
    fn method(&mut self, method: &str, reply: &Value) {
        self.method_of(Kind::Future, method, reply);
    }

    /// Compares the objects of `kind` in a reply with the method's vector of that kind.
    fn method_of(&mut self, kind: Kind, method: &str, reply: &Value) {
        self.failures.extend(shape::check_reply(method, reply, Some(kind), &EXCEPT));
        self.checked += 1;
    }

    /// Compares a reply with the named vector file of `method`.
    fn against(&mut self, kind: Kind, method: &str, vector_name: &str, reply: &Value) {
        assert!(reply.get("error").is_none(), "{method} failed: {reply}");
        self.object(kind, &format!("{method} ({vector_name})"), &vector(vector_name)["result"], &reply["result"]);
    }

    /// Compares one object with an expected one taken from a vector or a recording.
    fn object(&mut self, kind: Kind, label: &str, expected: &Value, actual: &Value) {
        shape::diff(label, expected, actual, Some(kind), &EXCEPT, &mut self.failures);
        self.checked += 1;
    }

    fn channel(&mut self, vector_name: &str, frame: &Value) {
        self.channel_of(Kind::Future, vector_name, frame);
    }

    fn channel_of(&mut self, kind: Kind, vector_name: &str, frame: &Value) {
        let expected = vector(vector_name);
        let (want, got) = (&expected["params"]["data"], &frame["params"]["data"]);
        shape::diff(vector_name, want, got, Some(kind), &EXCEPT, &mut self.failures);
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
        ("public/get_currencies", json!({})),
        ("public/get_order_book", btc.clone()),
        ("public/get_order_book_by_instrument_id", json!({"instrument_id": perp_id})),
        ("public/ticker", btc.clone()),
        ("public/get_index_price", json!({"index_name": "btc_usd"})),
        (
            "public/get_tradingview_chart_data",
            json!({"instrument_name": "BTC-PERPETUAL", "start_timestamp": now - 3_600_000, "end_timestamp": now, "resolution": "30"}),
        ),
    ];
    for (method, params) in public {
        let reply = c.call(method, params).await;
        check.method(method, &reply);
    }
    let (option, option_tick) = option_market(&mut c, &mut check, now).await;

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
        ("private/get_order_history_by_currency", json!({"currency": "BTC"})),
        ("private/get_account_summaries", json!({})),
        ("public/get_index_price_names", json!({})),
        ("public/get_last_trades_by_instrument", btc.clone()),
        ("private/enable_cancel_on_disconnect", json!({})),
        ("private/get_cancel_on_disconnect", json!({})),
        ("private/disable_cancel_on_disconnect", json!({})),
    ];
    for (method, params) in private {
        let reply = c.call(method, params).await;
        check.method(method, &reply);
    }
    option_trading(&mut c, &mut check, &option, option_tick, now).await;
    let cancelled = c.call("private/cancel", json!({"order_id": sell_id})).await;
    assert_eq!(cancelled["result"]["order_state"], "cancelled", "{cancelled}");
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

    trigger_orders(&mut c, &mut check, far).await;

    // Market data over the trades above (each list is non-empty, so its items are compared).
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let span =
        json!({"instrument_name": "BTC-PERPETUAL", "start_timestamp": now - 3_600_000, "end_timestamp": now + 60_000});
    let market_data: Vec<(&str, Value, &str)> = vec![
        ("public/get_last_trades_by_currency", json!({"currency": "BTC", "kind": "future"}), "trades"),
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

/// The data of a recorded `ticker.<option>.raw` frame: no Deribit vector shows an option's
/// ticker, the cryptofeed recording in `testdata/deribit/market_data/` does.
fn recorded_option_ticker() -> Value {
    let path = common::examples_dir().join("../market_data/cryptofeed/DERIBIT-5dd9ce.0__2021-04-05.frames.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .map(|frame| frame["msg"]["params"]["data"].clone())
        .find(|data| data["greeks"].is_object())
        .unwrap_or_else(|| panic!("no option ticker in {}", path.display()))
}

/// Picks a quoted BTC option a week or more from expiry and compares the public option
/// replies: book summaries, the instrument, its ticker (method and channel) and order book.
/// Returns the option and its tick size.
async fn option_market(c: &mut WsClient, check: &mut Checker, now: i64) -> (String, f64) {
    let instruments = c.call("public/get_instruments", json!({"currency": "BTC", "kind": "option"})).await;
    let later: Vec<&str> = instruments["result"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["expiration_timestamp"].as_i64().unwrap() > now + 7 * 86_400_000)
        .map(|i| i["instrument_name"].as_str().unwrap())
        .collect();
    let summaries = c.call("public/get_book_summary_by_currency", json!({"currency": "BTC"})).await;
    check.method("public/get_book_summary_by_currency", &summaries);
    check.method_of(Kind::Option, "public/get_book_summary_by_currency", &summaries);
    let option = summaries["result"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| {
            later.contains(&s["instrument_name"].as_str().unwrap())
                && s["bid_price"].as_f64() > Some(0.0)
                && s["ask_price"].as_f64() > Some(0.0)
        })
        .unwrap_or_else(|| panic!("no quoted option: {summaries}"))["instrument_name"]
        .as_str()
        .unwrap()
        .to_owned();
    let params = json!({"instrument_name": option});
    let summary = c.call("public/get_book_summary_by_instrument", params.clone()).await;
    assert!(summary["result"][0]["mark_iv"].as_f64() > Some(0.0), "{summary}");
    check.method_of(Kind::Option, "public/get_book_summary_by_instrument", &summary);
    let instrument = c.call("public/get_instrument", params.clone()).await;
    check.method_of(Kind::Option, "public/get_instrument", &instrument);

    let recorded = recorded_option_ticker();
    let ticker = c.call("public/ticker", params.clone()).await;
    assert!(ticker["result"]["mark_iv"].as_f64() > Some(0.0), "{ticker}");
    assert!(ticker["result"]["greeks"]["vega"].as_f64() > Some(0.0), "{ticker}");
    check.object(Kind::Option, "public/ticker (recorded option ticker)", &recorded, &ticker["result"]);
    let mut with_levels = recorded.clone();
    let perpetual_book = vector("public_get_order_book.response.json");
    for key in ["bids", "asks", "change_id"] {
        with_levels[key] = perpetual_book["result"][key].clone();
    }
    let book = c.call("public/get_order_book", json!({"instrument_name": option, "depth": 5})).await;
    check.object(Kind::Option, "public/get_order_book (recorded option ticker)", &with_levels, &book["result"]);
    let channel = format!("ticker.{option}.100ms");
    c.call("public/subscribe", json!({"channels": [channel]})).await;
    let frame = c.notification(&channel).await;
    check.object(Kind::Option, &channel, &recorded, &frame["params"]["data"]);
    c.call("public/unsubscribe", json!({"channels": [channel]})).await;
    (option, instrument["result"]["tick_size"].as_f64().unwrap())
}

/// Trades the option: a resting bid at the lowest price (open orders, edit), then a market
/// buy, whose fills the option trades channel and the trade lists compare (once per kind
/// where their vectors show both).
async fn option_trading(c: &mut WsClient, check: &mut Checker, option: &str, tick: f64, now: i64) {
    let bid = json!({"instrument_name": option, "amount": 1, "price": tick, "label": "vec-option"});
    let placed = c.call("private/buy", bid).await;
    assert_eq!(placed["result"]["order"]["order_state"], "open", "{placed}");
    let order_id = placed["result"]["order"]["order_id"].clone();
    let by_instrument = json!({"instrument_name": option});
    for (method, params) in [
        ("private/get_open_orders", json!({})),
        ("private/get_open_orders_by_currency", json!({"currency": "BTC"})),
        ("private/get_open_orders_by_instrument", by_instrument.clone()),
        ("private/get_open_orders_by_label", json!({"currency": "BTC", "label": "vec-option"})),
        ("private/edit", json!({"order_id": order_id, "amount": 2, "price": tick})),
    ] {
        let reply = c.call(method, params).await;
        check.method_of(Kind::Option, method, &reply);
    }
    let cancelled = c.call("private/cancel", json!({"order_id": order_id})).await;
    assert_eq!(cancelled["result"]["order_state"], "cancelled", "{cancelled}");

    let channel = "trades.option.BTC.raw";
    c.call("public/subscribe", json!({"channels": [channel]})).await;
    let bought = c.call("private/buy", json!({"instrument_name": option, "amount": 1, "type": "market"})).await;
    assert_eq!(bought["result"]["order"]["filled_amount"].as_f64(), Some(1.0), "{bought}");
    assert!(bought["result"]["trades"][0]["iv"].as_f64() > Some(0.0), "{bought}");
    let frame = c.notification(channel).await;
    check.channel_of(Kind::Option, "trades.kind.currency.interval.notification.docs_v2_1_1.json", &frame);
    c.call("public/unsubscribe", json!({"channels": [channel]})).await;
    let (start, end) = (now - 60_000, now + 600_000);
    let option_span = json!({"instrument_name": option, "start_timestamp": start, "end_timestamp": end});
    let both = [Kind::Future, Kind::Option];
    let trade_lists: [(&str, Value, &[Kind]); 8] = [
        ("private/get_user_trades_by_instrument", by_instrument.clone(), &[Kind::Option]),
        ("private/get_user_trades_by_instrument_and_time", option_span.clone(), &[Kind::Option]),
        ("private/get_user_trades_by_currency", json!({"currency": "BTC", "count": 50}), &both),
        (
            "private/get_user_trades_by_currency_and_time",
            json!({"currency": "BTC", "start_timestamp": start, "end_timestamp": end, "count": 50}),
            &both,
        ),
        ("public/get_last_trades_by_instrument", by_instrument, &[Kind::Option]),
        ("public/get_last_trades_by_instrument_and_time", option_span, &[Kind::Option]),
        ("public/get_last_trades_by_currency", json!({"currency": "BTC", "kind": "option"}), &[Kind::Option]),
        (
            "public/get_last_trades_by_currency_and_time",
            json!({"currency": "BTC", "kind": "option", "start_timestamp": start, "end_timestamp": end}),
            &[Kind::Option],
        ),
    ];
    for (method, params, kinds) in trade_lists {
        let reply = c.call(method, params).await;
        let mut present = Vec::new();
        shape::kinds_in(&reply["result"], &mut present);
        for kind in kinds {
            assert!(present.contains(kind), "{method}: no {kind:?} trade in {reply}");
            check.method_of(*kind, method, &reply);
        }
    }
}

/// Trigger orders on the perpetual, compared with the vector of one (`private/sell`'s
/// v2.1.1 stop-limit order): a stop-limit sell resting untriggered, a buy stop fired by this
/// client's own market buy through the asks (order state, order history, trigger history),
/// and the cancel of an untriggered stop-market order (`private/cancel`'s vector).
async fn trigger_orders(c: &mut WsClient, check: &mut Checker, far: f64) {
    const PERP: &str = "BTC-PERPETUAL";
    let trigger_vector = "private_sell.response.docs_v2_1_1.json";
    let trigger_order = vector(trigger_vector)["result"]["order"].clone();
    let low = far - 4_000.0;
    let resting = json!({"instrument_name": PERP, "amount": 10, "type": "stop_limit", "trigger": "mark_price",
        "trigger_price": low, "price": low});
    let reply = c.call("private/sell", resting).await;
    assert_eq!(reply["result"]["order"]["order_state"], "untriggered", "{reply}");
    check.against(Kind::Future, "private/sell", trigger_vector, &reply);
    let resting_id = reply["result"]["order"]["order_id"].clone();

    // A buy stop at the second ask and a market buy of the first three levels: the last price
    // reaches the stop. The synthetic market may move the book in between; then try again.
    let mut fired = None;
    for _ in 0..5 {
        let book = c.call("public/get_order_book", json!({"instrument_name": PERP, "depth": 5})).await;
        let asks = book["result"]["asks"].as_array().unwrap().clone();
        assert!(asks.len() >= 3, "{book}");
        let stop = json!({"instrument_name": PERP, "amount": 10, "type": "stop_market", "trigger": "last_price",
            "trigger_price": asks[1][0]});
        let stop_id = c.call("private/buy", stop).await["result"]["order"]["order_id"].clone();
        let sweep: f64 = asks[..3].iter().map(|level| level[1].as_f64().unwrap()).sum();
        c.call("private/buy", json!({"instrument_name": PERP, "amount": sweep, "type": "market"})).await;
        let state = c.call("private/get_order_state", json!({"order_id": stop_id})).await;
        if state["result"]["order_state"] == "triggered" {
            fired = Some(state["result"].clone());
            break;
        }
        c.call("private/cancel", json!({"order_id": stop_id})).await;
    }
    let fired = fired.unwrap_or_else(|| panic!("no stop fired in five sweeps"));
    assert_eq!(fired["triggered"], true, "{fired}");
    check.object(Kind::Future, "private/get_order_state (a fired stop)", &trigger_order, &fired);
    let history =
        c.call("private/get_order_history_by_instrument", json!({"instrument_name": PERP, "count": 100})).await;
    let orders = history["result"].as_array().unwrap();
    let in_history = orders
        .iter()
        .find(|o| o["order_id"] == fired["order_id"])
        .unwrap_or_else(|| panic!("the fired stop is not in the history: {history}"));
    check.object(Kind::Future, "private/get_order_history_by_instrument (a fired stop)", &trigger_order, in_history);
    assert!(orders.iter().any(|o| o["trigger_order_id"] == fired["order_id"]), "no order placed by the stop");
    let reply = c.call("private/get_trigger_order_history", json!({"currency": "BTC", "count": 10})).await;
    let states: Vec<&str> =
        reply["result"]["entries"].as_array().unwrap().iter().map(|e| e["order_state"].as_str().unwrap()).collect();
    assert!(states.contains(&"triggered") && states.contains(&"new"), "{reply}");
    check.method("private/get_trigger_order_history", &reply);

    let stop = json!({"instrument_name": PERP, "amount": 10, "type": "stop_market", "trigger": "index_price",
        "trigger_price": far});
    let stop_id = c.call("private/buy", stop).await["result"]["order"]["order_id"].clone();
    let reply = c.call("private/cancel", json!({"order_id": stop_id})).await;
    assert_eq!(reply["result"]["order_state"], "cancelled", "{reply}");
    check.method("private/cancel", &reply);
    c.call("private/cancel", json!({"order_id": resting_id})).await;
    c.call("private/close_position", json!({"instrument_name": PERP, "type": "market"})).await;
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
