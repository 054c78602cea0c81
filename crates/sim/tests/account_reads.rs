//! Private reads over loopback: user trades by time window and order state by label, against
//! what the same session just did.

#![allow(clippy::unwrap_used)]

mod common;

use common::{Auth, WsClient, sim};
use serde_json::{Value, json};

fn ids(reply: &Value) -> Vec<String> {
    reply["result"]["trades"].as_array().unwrap().iter().map(|t| t["trade_id"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn user_trades_by_time_and_orders_by_label() {
    let sim = sim().await;
    let mut c = WsClient::connect(&sim.ws_url()).await;
    c.auth().await;
    let perp = json!({"instrument_name": "BTC-PERPETUAL"});
    for amount in [10, 20] {
        let bought = c
            .call("private/buy", json!({"instrument_name": "BTC-PERPETUAL", "amount": amount, "type": "market"}))
            .await;
        assert!(!bought["result"]["trades"].as_array().unwrap().is_empty(), "{bought}");
    }
    let now = c.call("public/get_time", json!({})).await["result"].as_i64().unwrap();

    let window = |start: i64, end: i64, sorting: &str| json!({"instrument_name": "BTC-PERPETUAL", "start_timestamp": start, "end_timestamp": end, "sorting": sorting, "count": 100});
    let desc = c.call("private/get_user_trades_by_instrument_and_time", window(now - 60_000, now, "desc")).await;
    let asc = c.call("private/get_user_trades_by_instrument_and_time", window(now - 60_000, now, "asc")).await;
    let mut reversed = ids(&asc);
    reversed.reverse();
    assert!(ids(&desc).len() >= 2, "{desc}");
    assert_eq!(ids(&desc), reversed);
    let all = c
        .call("private/get_user_trades_by_instrument", json!({"instrument_name": "BTC-PERPETUAL", "count": 100}))
        .await;
    assert_eq!(ids(&all), ids(&desc), "the window holds every trade of this session");
    let before =
        c.call("private/get_user_trades_by_instrument_and_time", window(now - 120_000, now - 60_000, "desc")).await;
    assert_eq!((ids(&before).len(), before["result"]["has_more"].as_bool()), (0, Some(false)), "{before}");
    let one = c
        .call(
            "private/get_user_trades_by_currency_and_time",
            json!({"currency": "BTC", "start_timestamp": now - 60_000, "end_timestamp": now, "count": 1}),
        )
        .await;
    assert_eq!((ids(&one), one["result"]["has_more"].as_bool()), (ids(&desc)[..1].to_vec(), Some(true)), "{one}");
    let missing =
        c.call("private/get_user_trades_by_currency_and_time", json!({"currency": "BTC", "end_timestamp": now})).await;
    assert_eq!(missing["error"]["data"]["param"], "start_timestamp", "{missing}");

    // Order state by label: the live order, then the same order once cancelled.
    let ask = c.call("public/ticker", perp.clone()).await["result"]["best_ask_price"].as_f64().unwrap();
    let far = ((ask + 5_000.0) / 0.5).round() * 0.5;
    let sold = c
        .call(
            "private/sell",
            json!({"instrument_name": "BTC-PERPETUAL", "amount": 10, "price": far, "label": "by-label"}),
        )
        .await;
    let order_id = sold["result"]["order"]["order_id"].as_str().unwrap().to_owned();
    let by_label = json!({"currency": "BTC", "label": "by-label"});
    let live = c.call("private/get_order_state_by_label", by_label.clone()).await;
    assert_eq!(live["result"][0]["order_id"], order_id.as_str(), "{live}");
    assert_eq!(live["result"][0]["order_state"], "open");
    c.call("private/cancel", json!({"order_id": order_id})).await;
    let closed = c.call("private/get_order_state_by_label", by_label).await;
    assert_eq!(closed["result"].as_array().unwrap().len(), 1, "{closed}");
    assert_eq!(closed["result"][0]["order_state"], "cancelled");
    let other = c.call("private/get_order_state_by_label", json!({"currency": "ETH", "label": "by-label"})).await;
    assert_eq!(other["result"], json!([]), "{other}");
    let no_label = c.call("private/get_order_state_by_label", json!({"currency": "BTC"})).await;
    assert_eq!(no_label["error"]["data"]["param"], "label", "{no_label}");
    sim.shutdown().await;
}
