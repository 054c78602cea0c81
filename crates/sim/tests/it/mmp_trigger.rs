//! `user.mmp_trigger.{index_name}` over the real simulator: a client subscribes, configures
//! market maker protection with a quantity limit of one contract, crosses it with its own
//! mass quote, and receives the freeze with the keys and types of Deribit's vector and the
//! values of `private/get_mmp_status`. A session subscribed to another index hears nothing.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::{Auth, WsClient, sim};
use serde_json::{Value, json};

fn vector_data() -> Value {
    let path = format!(
        "{}/../../testdata/deribit/examples/user.mmp_trigger.index_name.notification.docs_v2_1_1.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let value: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    value["params"]["data"].clone()
}

#[tokio::test]
async fn crossing_the_limits_publishes_the_freeze() {
    let sim = sim().await;
    let mut c = WsClient::connect(&sim.ws_url()).await;
    c.auth().await;
    let reply = c
        .call("private/subscribe", json!({"channels": ["user.mmp_trigger.btc_usd", "user.mmp_trigger.eth_usd"]}))
        .await;
    assert_eq!(reply["result"].as_array().map(Vec::len), Some(2), "{reply}");
    let config =
        json!({"index_name": "btc_usd", "mmp_group": "trig", "interval": 60, "frozen_time": 0, "quantity_limit": 1});
    assert!(c.call("private/set_mmp_config", config).await["error"].is_null());
    let ticker = c.call("public/ticker", json!({"instrument_name": "BTC-PERPETUAL"})).await;
    let through = ((ticker["result"]["best_ask_price"].as_f64().unwrap() + 2_000.0) / 0.5).round() * 0.5;
    let crossing = json!({"quote_id": "1", "mmp_group": "trig", "quotes": [
        {"instrument_name": "BTC-PERPETUAL", "quote_set_id": "s", "bid": {"price": through, "amount": 10}}]});
    let reply = c.call("private/mass_quote", crossing).await;
    assert!(!reply["result"]["trades"].as_array().unwrap().is_empty(), "{reply}");

    let frame = c.notification("user.mmp_trigger.btc_usd").await;
    let data = &frame["params"]["data"];
    let expected = vector_data();
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(data), keys(&expected), "{frame}");
    for key in keys(&expected) {
        assert_eq!(data[&key].is_number(), expected[&key].is_number(), "{key}: {frame}");
    }
    let status = c.call("private/get_mmp_status", json!({"index_name": "btc_usd", "mmp_group": "trig"})).await;
    assert_eq!(data, &status["result"][0], "{status}");
    assert_eq!(data["mmp_group"], "trig");
    assert_eq!(data["frozen_until"], 0, "frozen_time 0: until reset");

    // Only the index that froze: the eth_usd subscription stays silent. A reset and a second
    // crossing freeze the group again and publish again.
    c.call("private/reset_mmp", json!({"index_name": "btc_usd", "mmp_group": "trig"})).await;
    let again = json!({"quote_id": "2", "mmp_group": "trig", "quotes": [
        {"instrument_name": "BTC-PERPETUAL", "quote_set_id": "s", "bid": {"price": through, "amount": 10}}]});
    c.call("private/mass_quote", again).await;
    let second = c.notification("user.mmp_trigger.btc_usd").await;
    assert_eq!(second["params"]["data"], *data);
    // Every frame the socket has left (the backlog, then 150 ms of quiet) names btc_usd only.
    while let Some(frame) = c.try_next(std::time::Duration::from_millis(150)).await {
        assert_ne!(frame["params"]["channel"], "user.mmp_trigger.eth_usd", "eth_usd did not freeze: {frame}");
    }
    sim.shutdown().await;
}
