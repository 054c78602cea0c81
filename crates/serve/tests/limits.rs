//! `--raw` relays upstream frames untouched; connection and subscription limits answer with
//! clear errors.
#![allow(clippy::unwrap_used)]

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use ticktrade_serve::{ServeConfig, UpstreamSource};
use ticktrade_sim::SimConfig;
use tokio_tungstenite::tungstenite::Message;

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

fn config() -> ServeConfig {
    ServeConfig {
        upstream: UpstreamSource::Sim(Box::new(SimConfig { rate_per_s: 200, ..SimConfig::default() })),
        ..ServeConfig::default()
    }
}

async fn next_json(ws: &mut Ws) -> Value {
    loop {
        if let Message::Text(t) = ws.next().await.unwrap().unwrap() {
            return serde_json::from_str(&t).unwrap();
        }
    }
}

async fn subscribe(ws: &mut Ws, channels: &[&str]) -> Value {
    let req = json!({"jsonrpc":"2.0","id":9,"method":"public/subscribe","params":{"channels":channels}});
    ws.send(Message::text(req.to_string())).await.unwrap();
    next_json(ws).await
}

#[tokio::test]
async fn raw_mode_relays_upstream_book_frames_with_upstream_change_ids() {
    let serve = ticktrade_serve::spawn(ServeConfig { raw: true, ..config() }).await.unwrap();
    let (mut ws, _) = tokio_tungstenite::connect_async(serve.ws_url()).await.unwrap();
    let reply = subscribe(&mut ws, &["book.BTC-PERPETUAL.100ms"]).await;
    assert_eq!(reply["result"], json!(["book.BTC-PERPETUAL.100ms"]));
    let snapshot = next_json(&mut ws).await;
    assert_eq!(snapshot["params"]["data"]["type"], "snapshot");
    // Upstream's own ids (the book server's chain starts at 1), and no book kept here.
    let id = snapshot["params"]["data"]["change_id"].as_u64().unwrap();
    let sim_id = u64::try_from(serve.sim().unwrap().book_top("BTC-PERPETUAL", 1).await.unwrap().change_id).unwrap();
    assert!(id > 1 && id <= sim_id, "{id} vs {sim_id}");
    serve.shutdown().await;
}

#[tokio::test]
async fn subscription_and_connection_limits_give_clear_errors() {
    let serve =
        ticktrade_serve::spawn(ServeConfig { max_subscriptions: 2, max_connections: 1, ..config() }).await.unwrap();
    let (mut ws, _) = tokio_tungstenite::connect_async(serve.ws_url()).await.unwrap();
    let reply =
        subscribe(&mut ws, &["ticker.BTC-PERPETUAL.100ms", "trades.BTC-PERPETUAL.100ms", "book.BTC-PERPETUAL.raw"])
            .await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    assert!(reply["error"]["data"]["reason"].as_str().unwrap().contains("too many subscriptions (limit 2"));
    let err = tokio_tungstenite::connect_async(serve.ws_url()).await.unwrap_err().to_string();
    assert!(err.contains("503"), "{err}");
    serve.shutdown().await;
}
