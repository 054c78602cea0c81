//! Stop and take-profit orders trigger end to end over the real simulator: a client places
//! `stop_market`, `take_limit` and `stop_limit` orders on the last price, moves the market
//! with its own market orders until they cross, and checks that each trigger order became
//! `triggered`, that the order it placed carries its `trigger_order_id` and filled, and that
//! `private/get_trigger_order_history` reports the same, page by page.
//!
//! The synthetic market is idle (`rate_per_s: 0`), so only this client moves prices.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::{Auth, WsClient};
use serde_json::{Value, json};
use ticktrade_sim::SimConfig;

const PERP: &str = "BTC-PERPETUAL";

async fn book(c: &mut WsClient) -> (Vec<(f64, f64)>, Vec<(f64, f64)>) {
    let reply = c.call("public/get_order_book", json!({"instrument_name": PERP, "depth": 10})).await;
    let side = |key: &str| -> Vec<(f64, f64)> {
        reply["result"][key]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| (l[0].as_f64().unwrap(), l[1].as_f64().unwrap()))
            .collect()
    };
    (side("bids"), side("asks"))
}

async fn place(c: &mut WsClient, method: &str, params: Value) -> Value {
    let reply = c.call(method, params).await;
    assert!(reply["error"].is_null(), "{method}: {reply}");
    reply["result"]["order"].clone()
}

/// The trigger order is `triggered`, and the order it placed names it and filled.
async fn check_fired(c: &mut WsClient, trigger: &Value) -> String {
    let id = trigger["order_id"].as_str().unwrap();
    let state = c.call("private/get_order_state", json!({"order_id": id})).await;
    assert_eq!(state["result"]["order_state"], "triggered", "{state}");
    assert_eq!(state["result"]["triggered"], true, "{state}");
    let history =
        c.call("private/get_order_history_by_instrument", json!({"instrument_name": PERP, "count": 100})).await;
    let placed = history["result"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["trigger_order_id"] == id)
        .unwrap_or_else(|| panic!("no order placed by {id}: {history}"))
        .clone();
    assert_eq!(placed["order_state"], "filled", "{placed}");
    assert_eq!(placed["direction"], trigger["direction"]);
    assert_eq!(placed["filled_amount"], trigger["amount"], "{placed}");
    let trades = c.call("private/get_user_trades_by_order", json!({"order_id": placed["order_id"]})).await;
    assert!(!trades["result"].as_array().unwrap().is_empty(), "{trades}");
    placed["order_id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn stop_and_take_orders_trigger_and_fill() {
    let sim = ticktrade_sim::spawn_loopback(SimConfig { rate_per_s: 0, ..SimConfig::default() }).await.unwrap();
    let mut c = WsClient::connect(&sim.ws_url()).await;
    c.auth().await;
    // A first trade sets the last price.
    place(&mut c, "private/buy", json!({"instrument_name": PERP, "amount": 10, "type": "market"})).await;
    let (bids, asks) = book(&mut c).await;
    assert!(bids.len() >= 4 && asks.len() >= 4, "the idle book is too thin: {bids:?} {asks:?}");

    // Up: a buy stop and a sell take-profit at the second ask level fire when a sweep of
    // three levels moves the last price there.
    let up = asks[1].0;
    let stop_buy = place(
        &mut c,
        "private/buy",
        json!({"instrument_name": PERP, "amount": 10, "type": "stop_market", "trigger": "last_price", "trigger_price": up}),
    )
    .await;
    assert_eq!(stop_buy["order_state"], "untriggered", "{stop_buy}");
    let take_sell = place(
        &mut c,
        "private/sell",
        json!({"instrument_name": PERP, "amount": 10, "type": "take_limit", "trigger": "last_price",
               "trigger_price": up, "price": bids[3].0}),
    )
    .await;
    assert_eq!(take_sell["order_state"], "untriggered", "{take_sell}");
    let sweep: f64 = asks[..3].iter().map(|l| l.1).sum();
    place(&mut c, "private/buy", json!({"instrument_name": PERP, "amount": sweep, "type": "market"})).await;
    let placed_buy = check_fired(&mut c, &stop_buy).await;
    let placed_take = check_fired(&mut c, &take_sell).await;

    // Down: a sell stop-limit below the market stays untriggered until a sell sweep crosses it.
    let (bids, _) = book(&mut c).await;
    let down = bids[1].0;
    let stop_sell = place(
        &mut c,
        "private/sell",
        json!({"instrument_name": PERP, "amount": 10, "type": "stop_limit", "trigger": "last_price",
               "trigger_price": down, "price": bids.last().unwrap().0}),
    )
    .await;
    assert_eq!(stop_sell["order_state"], "untriggered", "{stop_sell}");
    let state = c.call("private/get_order_state", json!({"order_id": stop_sell["order_id"]})).await;
    assert_eq!(state["result"]["order_state"], "untriggered", "not fired before the market moved: {state}");
    let sweep: f64 = bids[..3].iter().map(|l| l.1).sum();
    place(&mut c, "private/sell", json!({"instrument_name": PERP, "amount": sweep, "type": "market"})).await;
    let placed_stop = check_fired(&mut c, &stop_sell).await;

    // The trigger history: a `new` and a `triggered` entry per trigger order, the latter
    // naming the order placed; paging with count 1 walks the same list.
    let full = c.call("private/get_trigger_order_history", json!({"currency": "BTC", "count": 100})).await;
    let entries = full["result"]["entries"].as_array().unwrap().clone();
    assert_eq!(entries.len(), 6, "{full}");
    assert!(full["result"]["continuation"].is_null(), "{full}");
    for (trigger, placed) in [(&stop_buy, &placed_buy), (&take_sell, &placed_take), (&stop_sell, &placed_stop)] {
        let id = &trigger["order_id"];
        let fired: Vec<&Value> =
            entries.iter().filter(|e| e["trigger_order_id"] == *id && e["order_state"] == "triggered").collect();
        assert_eq!(fired.len(), 1, "{id}: {full}");
        assert_eq!(fired[0]["order_id"], placed.as_str(), "{full}");
        assert_eq!(fired[0]["trigger"], "last");
        assert!(entries.iter().any(|e| e["trigger_order_id"] == *id && e["order_state"] == "new"));
    }
    let mut paged = Vec::new();
    let mut continuation = Value::Null;
    for _ in 0..10 {
        let mut params = json!({"currency": "BTC", "count": 1});
        if !continuation.is_null() {
            params["continuation"] = continuation.clone();
        }
        let page = c.call("private/get_trigger_order_history", params).await;
        paged.extend(page["result"]["entries"].as_array().unwrap().iter().cloned());
        continuation = page["result"]["continuation"].clone();
        if continuation.is_null() {
            break;
        }
    }
    assert_eq!(paged, entries);
    sim.shutdown().await;
}
