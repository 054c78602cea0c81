//! Private reads over loopback: user trades by time window and order state by label, against
//! what the same session just did.

#![allow(clippy::unwrap_used)]

use crate::common;

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

/// The currency-wide readers a session reconciles with: trades of one currency page oldest
/// first from a start time with `has_more`, `kind` narrows them, and open orders and positions
/// of the currency cover every instrument of it.
#[tokio::test]
async fn currency_wide_reads_page_and_filter_by_kind() {
    let sim = sim().await;
    let mut c = WsClient::connect(&sim.ws_url()).await;
    c.auth().await;
    let start = c.call("public/get_time", json!({})).await["result"].as_i64().unwrap();
    for amount in [10, 20, 30] {
        let bought = c
            .call("private/buy", json!({"instrument_name": "BTC-PERPETUAL", "amount": amount, "type": "market"}))
            .await;
        assert!(!bought["result"]["trades"].as_array().unwrap().is_empty(), "{bought}");
    }
    let page =
        |from: i64, count: u32| json!({"currency": "BTC", "start_timestamp": from, "count": count, "sorting": "asc"});
    let all = c.call("private/get_user_trades_by_currency", page(start, 1000)).await;
    let every = ids(&all);
    assert!(every.len() >= 3, "{all}");
    assert_eq!(all["result"]["has_more"], false);
    let first = c.call("private/get_user_trades_by_currency", page(start, 2)).await;
    assert_eq!((ids(&first), first["result"]["has_more"].as_bool()), (every[..2].to_vec(), Some(true)), "{first}");
    // The next page starts at the last one's time, included: nothing is skipped.
    let last_ms = first["result"]["trades"][1]["timestamp"].as_i64().unwrap();
    let next = c.call("private/get_user_trades_by_currency", page(last_ms, 1000)).await;
    let rest = ids(&next);
    assert!(rest.contains(&every[2]), "{next}");

    let kind = |kind: &str| json!({"currency": "BTC", "start_timestamp": start, "count": 1000, "kind": kind});
    let futures = c.call("private/get_user_trades_by_currency", kind("future")).await;
    assert_eq!(ids(&futures).len(), every.len(), "{futures}");
    let options = c.call("private/get_user_trades_by_currency", kind("option")).await;
    assert_eq!(ids(&options), Vec::<String>::new(), "{options}");
    let any = c.call("private/get_user_trades_by_currency", kind("any")).await;
    assert_eq!(ids(&any).len(), every.len(), "{any}");
    let bad = c.call("private/get_user_trades_by_currency", kind("swap")).await;
    assert_eq!(bad["error"]["data"]["param"], "kind", "{bad}");

    // By instrument, a catch-up starts after the last sequence number seen.
    let seqs: Vec<u64> =
        all["result"]["trades"].as_array().unwrap().iter().map(|t| t["trade_seq"].as_u64().unwrap()).collect();
    let after = c
        .call(
            "private/get_user_trades_by_instrument",
            json!({"instrument_name": "BTC-PERPETUAL", "start_seq": seqs[1] + 1, "count": 1000, "sorting": "asc"}),
        )
        .await;
    let later: Vec<u64> =
        after["result"]["trades"].as_array().unwrap().iter().map(|t| t["trade_seq"].as_u64().unwrap()).collect();
    assert_eq!(later, seqs[2..].to_vec(), "{after}");
    let upto = c
        .call(
            "private/get_user_trades_by_instrument",
            json!({"instrument_name": "BTC-PERPETUAL", "end_seq": seqs[0], "count": 1000}),
        )
        .await;
    assert_eq!(ids(&upto), every[..1].to_vec(), "{upto}");

    let positions = c.call("private/get_positions", json!({"currency": "BTC"})).await;
    let perp = positions["result"].as_array().unwrap().iter().find(|p| p["instrument_name"] == "BTC-PERPETUAL");
    assert_eq!(perp.map(|p| p["size"].as_f64()), Some(Some(60.0)), "{positions}");
    let none = c.call("private/get_positions", json!({"currency": "ETH"})).await;
    assert_eq!(none["result"], json!([]), "{none}");
    sim.shutdown().await;
}
