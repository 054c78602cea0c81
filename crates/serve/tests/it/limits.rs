//! `--raw` relays upstream frames untouched; connection and subscription limits answer with
//! clear errors.
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use ticktrade_serve::ServeConfig;
use ticktrade_sim::SimConfig;
use ticktrade_testkit::WsClient;

use crate::common;

fn sim() -> SimConfig {
    SimConfig { rate_per_s: 200, ..SimConfig::default() }
}

/// Subscribes; the reply must be the next frame.
async fn subscribe(ws: &mut WsClient, channels: &[&str]) -> Value {
    let id = ws.request("public/subscribe", json!({"channels": channels})).await;
    let reply = ws.next_json().await;
    assert_eq!(reply["id"], id, "{reply}");
    reply
}

#[tokio::test]
async fn raw_mode_relays_upstream_book_frames_with_upstream_change_ids() {
    let serve = common::spawn(sim(), ServeConfig { raw: true, ..ServeConfig::default() }).await;
    let mut ws = WsClient::connect(&serve.ws_url()).await;
    let reply = subscribe(&mut ws, &["book.BTC-PERPETUAL.100ms"]).await;
    assert_eq!(reply["result"], json!(["book.BTC-PERPETUAL.100ms"]));
    let snapshot = ws.next_json().await;
    assert_eq!(snapshot["params"]["data"]["type"], "snapshot");
    // Upstream's own ids (the book server's chain starts at 1), and no book kept here.
    let id = snapshot["params"]["data"]["change_id"].as_u64().unwrap();
    let sim_id = u64::try_from(serve.sim().book_top("BTC-PERPETUAL", 1).await.unwrap().change_id).unwrap();
    assert!(id > 1 && id <= sim_id, "{id} vs {sim_id}");
    serve.shutdown().await;
}

#[tokio::test]
async fn subscription_and_connection_limits_give_clear_errors() {
    let serve =
        common::spawn(sim(), ServeConfig { max_subscriptions: 2, max_connections: 1, ..ServeConfig::default() }).await;
    let mut ws = WsClient::connect(&serve.ws_url()).await;
    let reply =
        subscribe(&mut ws, &["ticker.BTC-PERPETUAL.100ms", "trades.BTC-PERPETUAL.100ms", "book.BTC-PERPETUAL.raw"])
            .await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    assert!(reply["error"]["data"]["reason"].as_str().unwrap().contains("too many subscriptions (limit 2"));
    let err = tokio_tungstenite::connect_async(serve.ws_url()).await.unwrap_err().to_string();
    assert!(err.contains("503"), "{err}");
    serve.shutdown().await;
}
