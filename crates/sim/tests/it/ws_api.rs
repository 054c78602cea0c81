//! Loopback integration: auth with all three grants, session methods, trading, subscriptions.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::{Auth, WsClient, sim};
use serde_json::json;
use std::sync::Arc;

use ticktrade_core::{ManualClock, Utc};
use ticktrade_sim::auth::{Secret, sign};
use ticktrade_sim::{SimClock, SimConfig};

#[tokio::test]
async fn auth_with_all_three_grants() {
    let sim = sim().await;
    let mut c = WsClient::connect(&sim.ws_url()).await;
    let denied = c.call("private/get_positions", json!({})).await;
    assert_eq!(denied["error"]["code"], 13009, "{denied}");

    let first = c.auth().await;
    assert_eq!(first["result"]["token_type"], "bearer");
    for key in ["usIn", "usOut", "usDiff", "testnet"] {
        assert!(first.get(key).is_some(), "envelope lacks {key}: {first}");
    }
    let refresh = first["result"]["refresh_token"].as_str().unwrap().to_owned();
    let again = c.call("public/auth", json!({"grant_type": "refresh_token", "refresh_token": refresh})).await;
    assert!(again["result"]["access_token"].is_string(), "{again}");
    let reused = c.call("public/auth", json!({"grant_type": "refresh_token", "refresh_token": refresh})).await;
    assert_eq!(reused["error"]["code"], 13009, "refresh tokens are single-use: {reused}");

    let mut c2 = WsClient::connect(&sim.ws_url()).await;
    let ts = ticktrade_sim_now_ms();
    let sig = sign(&Secret::new("ticktrade-sim-secret"), &format!("{ts}\nn0nce\n"));
    let signed = c2
        .call("public/auth", json!({"grant_type": "client_signature", "client_id": "ticktrade-sim", "timestamp": ts, "nonce": "n0nce", "data": "", "signature": sig}))
        .await;
    assert!(signed["result"]["access_token"].is_string(), "{signed}");
    let positions = c2.call("private/get_positions", json!({"currency": "BTC"})).await;
    assert!(positions["result"].is_array(), "{positions}");

    // A connection-scoped token is refused on another connection.
    let token = first["result"]["access_token"].as_str().unwrap();
    let stolen = c2.call("private/get_open_orders", json!({"access_token": token})).await;
    assert_eq!(stolen["error"]["code"], 13009, "{stolen}");

    let bad = c2
        .call(
            "public/auth",
            json!({"grant_type": "client_credentials", "client_id": "ticktrade-sim", "client_secret": "nope"}),
        )
        .await;
    assert_eq!(bad["error"]["code"], 13004, "{bad}");
    sim.shutdown().await;
}

/// Token expiry follows the simulator's clock, not the wall: a manual clock moved past the
/// lifetime expires the token at once, and the refresh token still works.
#[tokio::test]
async fn tokens_expire_on_the_simulators_clock() {
    let start = Utc::from_millis(1_700_000_000_000);
    let manual = Arc::new(ManualClock::new(start));
    let config = SimConfig { clock: SimClock::shared(manual.clone()), ..SimConfig::default() };
    let sim = ticktrade_sim::spawn_loopback(config).await.unwrap();
    let mut c = WsClient::connect(&sim.ws_url()).await;
    assert_eq!(c.call("public/get_time", json!({})).await["result"], json!(start.as_millis()));
    // The 899 s jump below would otherwise let the idle-connection check close the socket
    // before the next request; a heartbeat (on tokio's clock, so it never fires here) marks
    // the connection as kept alive, as a real client's would be.
    assert_eq!(c.call("public/set_heartbeat", json!({"interval": 60})).await["result"], "ok");
    let first = c.auth().await;
    assert_eq!(first["result"]["expires_in"], 900);
    let refresh = first["result"]["refresh_token"].as_str().unwrap().to_owned();
    let positions = json!({"currency": "BTC"});
    manual.advance_nanos(899 * SECOND_NS);
    assert!(c.call("private/get_positions", positions.clone()).await["result"].is_array());
    manual.advance_nanos(SECOND_NS);
    let expired = c.call("private/get_positions", positions.clone()).await;
    assert_eq!(expired["error"]["code"], 13009, "{expired}");
    assert_eq!(expired["error"]["data"]["reason"], "token_expired", "{expired}");
    assert_eq!(c.call("public/get_time", json!({})).await["result"], json!(start.as_millis() + 900_000));
    let again = c.call("public/auth", json!({"grant_type": "refresh_token", "refresh_token": refresh})).await;
    assert!(again["result"]["access_token"].is_string(), "{again}");
    assert!(c.call("private/get_positions", positions).await["result"].is_array());
    sim.shutdown().await;
}

const SECOND_NS: u64 = 1_000_000_000;

fn ticktrade_sim_now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

#[tokio::test]
async fn session_methods_and_errors() {
    let sim = sim().await;
    let mut c = WsClient::connect(&sim.ws_url()).await;
    assert_eq!(c.call("public/test", json!({})).await["result"]["version"], "1.2.26");
    assert!(c.call("public/get_time", json!({})).await["result"].as_i64().unwrap() > 1_600_000_000_000);
    assert!(
        c.call("public/hello", json!({"client_name": "t", "client_version": "1"})).await["result"]["version"]
            .is_string()
    );
    assert_eq!(c.call("public/status", json!({})).await["result"]["locked"], false);
    assert_eq!(c.call("public/nope", json!({})).await["error"]["code"], -32601);
    let missing = c.call("public/ticker", json!({})).await;
    assert_eq!(missing["error"]["code"], -32602);
    assert_eq!(missing["error"]["data"]["param"], "instrument_name", "{missing}");
    let wrong_type =
        c.call("public/get_order_book", json!({"instrument_name": "BTC-PERPETUAL", "depth": "deep"})).await;
    assert_eq!(wrong_type["error"]["data"]["param"], "depth", "{wrong_type}");
    let short = c.call("public/set_heartbeat", json!({"interval": 1})).await;
    assert_eq!(short["error"]["code"], -32602, "{short}");
    assert_eq!(c.call("public/set_heartbeat", json!({"interval": 30})).await["result"], "ok");
    assert_eq!(c.call("public/disable_heartbeat", json!({})).await["result"], "ok");
    c.auth().await;
    assert_eq!(c.call("private/enable_cancel_on_disconnect", json!({})).await["result"], "ok");
    assert_eq!(c.call("private/get_cancel_on_disconnect", json!({})).await["result"]["enabled"], true);
    sim.shutdown().await;
}

#[tokio::test]
async fn place_edit_cancel() {
    let sim = sim().await;
    let mut c = WsClient::connect(&sim.ws_url()).await;
    c.auth().await;
    let book = c.call("public/get_order_book", json!({"instrument_name": "BTC-PERPETUAL", "depth": 5})).await;
    let best_bid = book["result"]["best_bid_price"].as_f64().unwrap();
    // A resting buy far below the market.
    let price = ((best_bid - 1000.0) / 0.5).round() * 0.5;
    let placed = c
        .call("private/buy", json!({"instrument_name": "BTC-PERPETUAL", "amount": 100, "price": price, "label": "t1"}))
        .await;
    let order = &placed["result"]["order"];
    assert_eq!(order["order_state"], "open", "{placed}");
    let id = order["order_id"].as_str().unwrap().to_owned();
    let edited = c.call("private/edit", json!({"order_id": id, "amount": 50, "price": price})).await;
    assert_eq!(edited["result"]["order"]["amount"], 50, "{edited}");
    assert_eq!(edited["result"]["order"]["replaced"], true);
    let open = c.call("private/get_open_orders_by_instrument", json!({"instrument_name": "BTC-PERPETUAL"})).await;
    assert_eq!(open["result"].as_array().unwrap().len(), 1, "{open}");
    let state = c.call("private/get_order_state", json!({"order_id": id})).await;
    assert_eq!(state["result"]["label"], "t1");
    let cancelled = c.call("private/cancel", json!({"order_id": id})).await;
    assert_eq!(cancelled["result"]["order_state"], "cancelled", "{cancelled}");
    let again = c.call("private/cancel", json!({"order_id": id})).await;
    assert_eq!(again["error"]["code"], 11044, "{again}");
    assert_eq!(c.call("private/cancel", json!({"order_id": "BTC-999999"})).await["error"]["code"], 10004);

    // Validation codes.
    let off_tick =
        c.call("private/buy", json!({"instrument_name": "BTC-PERPETUAL", "amount": 10, "price": 100.25})).await;
    assert_eq!(off_tick["error"]["code"], 10043, "{off_tick}");
    let off_lot = c.call("private/buy", json!({"instrument_name": "BTC-PERPETUAL", "amount": 15, "price": 100})).await;
    assert_eq!(off_lot["error"]["code"], 10027, "{off_lot}");

    // A market buy fills against the synthetic book and builds a position.
    let bought =
        c.call("private/buy", json!({"instrument_name": "BTC-PERPETUAL", "amount": 20, "type": "market"})).await;
    assert_eq!(bought["result"]["order"]["order_state"], "filled", "{bought}");
    assert!(!bought["result"]["trades"].as_array().unwrap().is_empty());
    let position = c.call("private/get_position", json!({"instrument_name": "BTC-PERPETUAL"})).await;
    assert_eq!(position["result"]["size"], 20, "{position}");
    assert_eq!(position["result"]["direction"], "buy");
    let closed = c.call("private/close_position", json!({"instrument_name": "BTC-PERPETUAL", "type": "market"})).await;
    assert_eq!(closed["result"]["order"]["order_state"], "filled", "{closed}");
    let trades = c.call("private/get_user_trades_by_instrument", json!({"instrument_name": "BTC-PERPETUAL"})).await;
    assert!(trades["result"]["trades"].as_array().unwrap().len() >= 2, "{trades}");

    let resting =
        c.call("private/sell", json!({"instrument_name": "BTC-PERPETUAL", "amount": 10, "price": 1_000_000})).await;
    assert_eq!(resting["result"]["order"]["order_state"], "open");
    let n = c.call("private/cancel_all", json!({})).await;
    assert_eq!(n["result"], 1, "{n}");
    sim.shutdown().await;
}

#[tokio::test]
async fn book_subscription_snapshot_then_chained_changes() {
    let sim = sim().await;
    let mut public = WsClient::connect(&sim.ws_url()).await;
    let raw = public.call("public/subscribe", json!({"channels": ["book.BTC-PERPETUAL.raw"]})).await;
    assert_eq!(raw["error"]["code"], 13778, "raw needs auth: {raw}");
    let ack =
        public.call("public/subscribe", json!({"channels": ["book.BTC-PERPETUAL.100ms", "book.NOPE.100ms"]})).await;
    assert_eq!(ack["result"], json!(["book.BTC-PERPETUAL.100ms"]), "unknown channels are dropped: {ack}");
    check_chain(&mut public, "book.BTC-PERPETUAL.100ms").await;

    let mut private = WsClient::connect(&sim.ws_url()).await;
    private.auth().await;
    let ack = private.call("public/subscribe", json!({"channels": ["book.ETH-PERPETUAL.raw"]})).await;
    assert_eq!(ack["result"], json!(["book.ETH-PERPETUAL.raw"]));
    check_chain(&mut private, "book.ETH-PERPETUAL.raw").await;
    sim.shutdown().await;
}

async fn check_chain(c: &mut WsClient, channel: &str) {
    let snapshot = c.notification(channel).await;
    let data = &snapshot["params"]["data"];
    assert_eq!(data["type"], "snapshot", "{snapshot}");
    assert!(data.get("prev_change_id").is_none());
    assert!(!data["bids"].as_array().unwrap().is_empty());
    let mut last = data["change_id"].as_i64().unwrap();
    for _ in 0..5 {
        let change = c.notification(channel).await;
        let data = &change["params"]["data"];
        assert_eq!(data["type"], "change", "{change}");
        assert_eq!(data["prev_change_id"].as_i64().unwrap(), last, "chain broken: {change}");
        last = data["change_id"].as_i64().unwrap();
    }
}

#[tokio::test]
async fn user_channels_follow_orders() {
    let sim = sim().await;
    let mut c = WsClient::connect(&sim.ws_url()).await;
    c.auth().await;
    let channels = json!([
        "user.orders.any.any.raw",
        "user.trades.BTC-PERPETUAL.raw",
        "user.changes.BTC-PERPETUAL.100ms",
        "user.portfolio.btc"
    ]);
    let ack = c.call("private/subscribe", json!({"channels": channels, "label": "mine"})).await;
    assert_eq!(ack["result"].as_array().unwrap().len(), 4, "{ack}");
    c.call("private/buy", json!({"instrument_name": "BTC-PERPETUAL", "amount": 10, "type": "market"})).await;
    let order = c.notification("user.orders.any.any.raw").await;
    assert_eq!(order["params"]["label"], "mine");
    assert_eq!(order["params"]["data"]["direction"], "buy", "{order}");
    let trades = c.notification("user.trades.BTC-PERPETUAL.raw").await;
    assert!(trades["params"]["data"].is_array(), "{trades}");
    let changes = c.notification("user.changes.BTC-PERPETUAL.100ms").await;
    assert_eq!(changes["params"]["data"]["positions"][0]["size"], 10, "{changes}");
    let portfolio = c.notification("user.portfolio.btc").await;
    assert_eq!(portfolio["params"]["data"]["currency"], "BTC");
    sim.shutdown().await;
}

#[tokio::test]
async fn cancel_on_disconnect_cancels_but_logout_does_not() {
    let sim = sim().await;
    let mut c = WsClient::connect(&sim.ws_url()).await;
    c.auth().await;
    c.call("private/enable_cancel_on_disconnect", json!({})).await;
    let placed =
        c.call("private/sell", json!({"instrument_name": "BTC-PERPETUAL", "amount": 10, "price": 1_000_000})).await;
    let id = placed["result"]["order"]["order_id"].as_str().unwrap().to_owned();
    let mut user = WsClient::connect(&sim.ws_url()).await;
    user.auth().await;
    let user_cancel =
        user.call("private/sell", json!({"instrument_name": "BTC-PERPETUAL", "amount": 10, "price": 1_000_000})).await;
    let user_id = user_cancel["result"]["order"]["order_id"].as_str().unwrap().to_owned();
    let cancelled = user.call("private/cancel", json!({"order_id": user_id})).await;
    assert_eq!(cancelled["result"]["cancel_reason"], "user_request", "{cancelled}");
    drop(user);
    drop(c);
    let mut watcher = WsClient::connect(&sim.ws_url()).await;
    watcher.auth().await;
    // The order was cancelled by the time the engine processed the disconnect; poll the state
    // through requests (each is a round trip through the same engine queue, no sleeping).
    let mut open = 1;
    for _ in 0..100 {
        let v = watcher.call("private/get_open_orders", json!({})).await;
        open = v["result"].as_array().unwrap().len();
        if open == 0 {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(open, 0);
    let state = watcher.call("private/get_order_state", json!({"order_id": id})).await;
    assert_eq!(state["result"]["order_state"], "cancelled", "{state}");
    assert_eq!(state["result"]["cancel_reason"], "cancel_on_disconnect", "{state}");

    watcher.call("private/enable_cancel_on_disconnect", json!({})).await;
    watcher.call("private/sell", json!({"instrument_name": "BTC-PERPETUAL", "amount": 10, "price": 1_000_000})).await;
    watcher.request("private/logout", json!({"invalidate_token": false})).await;
    let close = watcher.wait_closed().await;
    assert_eq!(close.map(|c| c.1), Some("logout".to_owned()));
    let mut after = WsClient::connect(&sim.ws_url()).await;
    after.auth().await;
    let v = after.call("private/get_open_orders", json!({})).await;
    assert_eq!(v["result"].as_array().unwrap().len(), 1, "logout keeps orders: {v}");
    sim.shutdown().await;
}

#[tokio::test]
async fn trailing_stop_rests_untriggered_then_fires_when_the_market_falls() {
    let sim = sim().await;
    let mut c = WsClient::connect(&sim.ws_url()).await;
    c.auth().await;
    let offset = 20.0;
    let placed = c
        .call(
            "private/sell",
            json!({"instrument_name": "BTC-PERPETUAL", "amount": 10, "type": "trailing_stop",
                   "trigger": "last_price", "trigger_offset": offset, "label": "trail"}),
        )
        .await;
    let order = &placed["result"]["order"];
    assert_eq!(order["order_state"], "untriggered", "{placed}");
    assert_eq!(order["order_type"], "trailing_stop");
    assert_eq!(order["trigger"], "last_price");
    assert_eq!(order["trigger_offset"].as_f64(), Some(offset), "{placed}");
    assert_eq!(order["triggered"], false);
    let reference = order["trigger_reference_price"].as_f64().expect("trigger_reference_price");
    assert!(reference > 0.0, "{placed}");
    let level = order["trigger_price"].as_f64().unwrap();
    assert!(
        (reference - offset - level).abs() <= 0.5,
        "stop level {level} is the reference {reference} less the offset"
    );
    let id = order["order_id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("BTC-TS"), "{id}");

    // Move the market: an immediate-or-cancel sell sweeps the bids down to well below the stop
    // (twice the visible size, so liquidity added meanwhile cannot hold the price up).
    let book = c.call("public/get_order_book", json!({"instrument_name": "BTC-PERPETUAL", "depth": 1000})).await;
    let best_bid = book["result"]["best_bid_price"].as_f64().unwrap();
    let floor = (best_bid - 3.0 * offset).max(level - offset);
    let floor = (floor / 0.5).floor() * 0.5;
    let visible: f64 = book["result"]["bids"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l[0].as_f64().unwrap() >= floor)
        .map(|l| l[1].as_f64().unwrap())
        .sum();
    let amount = ((visible * 2.0 / 10.0).ceil() * 10.0).max(10.0);
    let swept = c
        .call(
            "private/sell",
            json!({"instrument_name": "BTC-PERPETUAL", "amount": amount, "price": floor,
                   "time_in_force": "immediate_or_cancel"}),
        )
        .await;
    assert!(!swept["result"]["trades"].as_array().expect("sweep result").is_empty(), "{swept}");

    let state = c.call("private/get_order_state", json!({"order_id": id})).await;
    assert_eq!(state["result"]["triggered"], true, "{state}");
    assert_ne!(state["result"]["order_state"], "untriggered", "{state}");
    sim.shutdown().await;
}
