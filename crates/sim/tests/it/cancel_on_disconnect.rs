//! Cancel-on-disconnect over loopback WebSockets: a closing connection cancels the orders it
//! placed and no others; `scope: "account"` is the default of connections opened later;
//! `private/get_cancel_on_disconnect` reports the scope it was asked about.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::time::Duration;

use common::{Auth, WsClient, sim};
use serde_json::{Value, json};

/// A resting sell far above the market: it stays open until someone cancels it.
async fn rest(c: &mut WsClient) -> String {
    let placed =
        c.call("private/sell", json!({"instrument_name": "BTC-PERPETUAL", "amount": 10, "price": 1_000_000})).await;
    placed["result"]["order"]["order_id"].as_str().unwrap_or_else(|| panic!("not placed: {placed}")).to_owned()
}

async fn state(c: &mut WsClient, id: &str) -> Value {
    let v = c.call("private/get_order_state", json!({"order_id": id})).await;
    v["result"].clone()
}

/// The order's state once it left `open`: the disconnect reaches the engine after the socket
/// closes, so a few round trips may still see it open.
async fn closed_state(c: &mut WsClient, id: &str) -> Value {
    for _ in 0..200 {
        let s = state(c, id).await;
        if s["order_state"] != "open" {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("order {id} is still open");
}

async fn cod(c: &mut WsClient, params: Value) -> Value {
    c.call("private/get_cancel_on_disconnect", params).await["result"].clone()
}

#[tokio::test]
async fn closing_a_connection_cancels_only_the_orders_it_placed() {
    let sim = sim().await;
    let mut closing = WsClient::connect(&sim.ws_url()).await;
    closing.auth().await;
    assert_eq!(closing.call("private/enable_cancel_on_disconnect", json!({})).await["result"], "ok");
    let own = rest(&mut closing).await;
    let edited_by_other = rest(&mut closing).await;

    let mut other = WsClient::connect(&sim.ws_url()).await;
    other.auth().await;
    let subscribed = other.call("private/subscribe", json!({"channels": ["user.orders.BTC-PERPETUAL.raw"]})).await;
    assert!(subscribed["result"].is_array(), "{subscribed}");
    let others = rest(&mut other).await;
    // An edit from another connection does not change who placed the order.
    let edit = other.call("private/edit", json!({"order_id": edited_by_other, "amount": 20, "price": 1_000_500})).await;
    assert_eq!(edit["result"]["order"]["order_state"], "open", "{edit}");

    closing.close().await;
    for id in [&own, &edited_by_other] {
        let s = closed_state(&mut other, id).await;
        assert_eq!((&s["order_state"], &s["cancel_reason"]), (&json!("cancelled"), &json!("cancel_on_disconnect")));
    }
    let note = other
        .next_where("the cancel notification", |v| {
            v["params"]["data"]["order_id"] == json!(own) && v["params"]["data"]["order_state"] == "cancelled"
        })
        .await;
    assert_eq!(note["params"]["data"]["cancel_reason"], "cancel_on_disconnect", "{note}");
    let s = state(&mut other, &others).await;
    assert_eq!(s["order_state"], "open", "the other connection's order survives: {s}");
    let open = other.call("private/get_open_orders", json!({})).await;
    let ids: Vec<&str> = open["result"].as_array().unwrap().iter().filter_map(|o| o["order_id"].as_str()).collect();
    assert_eq!(ids, vec![others.as_str()], "{open}");
    sim.shutdown().await;
}

#[tokio::test]
async fn the_account_scope_is_the_default_of_new_connections() {
    let sim = sim().await;
    let mut setter = WsClient::connect(&sim.ws_url()).await;
    setter.auth().await;
    let kept = rest(&mut setter).await;
    let ok = setter.call("private/enable_cancel_on_disconnect", json!({"scope": "account"})).await;
    assert_eq!(ok["result"], "ok", "{ok}");
    assert_eq!(cod(&mut setter, json!({"scope": "account"})).await, json!({"scope": "account", "enabled": true}));
    // Applied to the current connection too.
    assert_eq!(cod(&mut setter, json!({})).await, json!({"scope": "connection", "enabled": true}));

    // A connection opened afterwards starts with it on, without enabling anything itself.
    let mut later = WsClient::connect(&sim.ws_url()).await;
    later.auth().await;
    assert_eq!(cod(&mut later, json!({"scope": "connection"})).await, json!({"scope": "connection", "enabled": true}));
    let gone = rest(&mut later).await;
    later.close().await;
    let s = closed_state(&mut setter, &gone).await;
    assert_eq!(s["cancel_reason"], "cancel_on_disconnect", "{s}");
    assert_eq!(state(&mut setter, &kept).await["order_state"], "open", "the setter's own order stays");

    // Disabling for the account: the next connection starts with it off, and that
    // connection's own choice leaves the account's default alone.
    let off = setter.call("private/disable_cancel_on_disconnect", json!({"scope": "account"})).await;
    assert_eq!(off["result"], "ok", "{off}");
    let mut third = WsClient::connect(&sim.ws_url()).await;
    third.auth().await;
    assert_eq!(cod(&mut third, json!({})).await, json!({"scope": "connection", "enabled": false}));
    third.call("private/enable_cancel_on_disconnect", json!({"scope": "connection"})).await;
    assert_eq!(cod(&mut third, json!({})).await, json!({"scope": "connection", "enabled": true}));
    assert_eq!(cod(&mut third, json!({"scope": "account"})).await, json!({"scope": "account", "enabled": false}));
    sim.shutdown().await;
}

#[tokio::test]
async fn get_cancel_on_disconnect_reports_the_scope_it_was_asked_about() {
    let sim = sim().await;
    let mut c = WsClient::connect(&sim.ws_url()).await;
    let auth = c.auth().await;
    assert_eq!(cod(&mut c, json!({})).await, json!({"scope": "connection", "enabled": false}));
    assert_eq!(cod(&mut c, json!({"scope": "account"})).await, json!({"scope": "account", "enabled": false}));

    c.call("private/enable_cancel_on_disconnect", json!({})).await;
    assert_eq!(cod(&mut c, json!({"scope": "connection"})).await, json!({"scope": "connection", "enabled": true}));
    assert_eq!(
        cod(&mut c, json!({"scope": "account"})).await,
        json!({"scope": "account", "enabled": false}),
        "the connection's setting is not the account's"
    );

    // Re-authenticating the same connection keeps what it set.
    let refresh = auth["result"]["refresh_token"].as_str().unwrap();
    let again = c.call("public/auth", json!({"grant_type": "refresh_token", "refresh_token": refresh})).await;
    assert!(again["result"]["access_token"].is_string(), "{again}");
    assert_eq!(cod(&mut c, json!({})).await, json!({"scope": "connection", "enabled": true}));

    let bad = c.call("private/get_cancel_on_disconnect", json!({"scope": "everything"})).await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert_eq!(bad["error"]["data"]["param"], "scope", "{bad}");
    sim.shutdown().await;
}
