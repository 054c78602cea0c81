//! The server's session features over the simulator: heartbeats (`test_request`, close 4000
//! when unanswered), REST on the same port (local book, relayed otherwise), upstream
//! subscriptions following demand, per-client fan-out delays in `/metrics`.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use serde_json::{Value, json};
use ticktrade_serve::{ServeConfig, ServeHandle};
use ticktrade_sim::{SimClock, SimConfig};
use ticktrade_testkit::WsClient;

use crate::common;
use common::Served;

fn config() -> ServeConfig {
    ServeConfig { min_heartbeat: Duration::from_secs(1), linger: Duration::from_millis(300), ..ServeConfig::default() }
}

/// The same, with the simulator on tokio's clock: for tests that pause tokio time, so that
/// heartbeats, the linger and "no more frames" take no wall time.
async fn paused() -> Served {
    let clock = SimClock::tokio(SimClock::system().utc());
    common::spawn(SimConfig { rate_per_s: 200, clock, ..SimConfig::default() }, config()).await
}

async fn live() -> Served {
    common::spawn(SimConfig { rate_per_s: 200, ..SimConfig::default() }, config()).await
}

async fn http_get(serve: &ServeHandle, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(serve.addr()).await.unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    tcp.write_all(req.as_bytes()).await.unwrap();
    let mut text = String::new();
    tcp.read_to_string(&mut text).await.unwrap();
    let status = text[9..12].parse().unwrap();
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

// Paused tokio time: the intervals below are virtual, so the bounds on them are exact checks
// of the schedule, not of the machine's speed.
#[tokio::test(start_paused = true)]
async fn heartbeat_test_requests_are_sent_and_an_unanswered_one_closes_with_4000() {
    let serve = paused().await;
    let mut ws = WsClient::connect(&serve.ws_url()).await;
    assert_eq!(ws.call("public/set_heartbeat", json!({"interval": 0.5})).await["error"]["code"], -32602);
    assert_eq!(ws.call("public/set_heartbeat", json!({"interval": 1})).await["result"], "ok");
    // Answer two test_requests: the connection stays open.
    for _ in 0..2 {
        let hb = ws.next_json().await;
        assert_eq!(hb, json!({"jsonrpc":"2.0","method":"heartbeat","params":{"type":"test_request"}}));
        assert!(ws.call("public/test", json!({})).await["result"]["version"].is_string());
    }
    // Then stay silent: the next test_request, then a close within about one interval.
    let t0 = tokio::time::Instant::now();
    assert_eq!(ws.next_json().await["params"]["type"], "test_request");
    assert_eq!(ws.next().await, None);
    assert_eq!(ws.close_frame(), Some((4000, "heartbeat close".to_owned())));
    assert!(t0.elapsed() < Duration::from_secs(4), "{:?}", t0.elapsed());
    assert_eq!(serve.totals().await.unwrap().heartbeat_closes, 1);
    serve.shutdown().await;
}

#[tokio::test]
async fn rest_on_the_same_port_answers_from_the_local_book_or_relays_upstream() {
    let serve = live().await;
    // Not kept here yet: relayed to the simulator.
    let (status, body) = http_get(&serve, "/api/v2/public/get_order_book?instrument_name=BTC-PERPETUAL&depth=3").await;
    assert_eq!(status, 200, "{body}");
    let relayed: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(relayed["result"]["instrument_name"], "BTC-PERPETUAL");
    // Kept here once a client follows the book: the same chain as the notifications.
    let mut ws = WsClient::connect(&serve.ws_url()).await;
    ws.request("public/subscribe", json!({"channels":["book.BTC-PERPETUAL.raw"]})).await;
    let snapshot = ws.notification_method("subscription").await;
    assert_eq!(snapshot["params"]["data"]["type"], "snapshot");
    let snap_id = snapshot["params"]["data"]["change_id"].as_u64().unwrap();
    let (status, body) = http_get(&serve, "/api/v2/public/get_order_book?instrument_name=BTC-PERPETUAL&depth=3").await;
    assert_eq!(status, 200, "{body}");
    let local: Value = serde_json::from_str(&body).unwrap();
    let local_id = local["result"]["change_id"].as_u64().unwrap();
    // The server's own chain starts at 1 (upstream's ids are far larger).
    assert!(local_id >= snap_id && local_id < snap_id + 1_000, "{local_id} vs {snap_id}");
    assert!(local["result"]["bids"].as_array().unwrap().len() <= 3);
    // Local methods and relayed ones.
    let (_, body) = http_get(&serve, "/api/v2/public/get_time").await;
    assert!(serde_json::from_str::<Value>(&body).unwrap()["result"].as_u64().unwrap() > 1_600_000_000_000);
    let (status, body) = http_get(&serve, "/api/v2/public/get_instruments?currency=BTC&kind=future").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("BTC-PERPETUAL"), "{body}");
    let (status, _) = http_get(&serve, "/api/v2/public/get_x%22y").await;
    assert_eq!(status, 400);
    serve.shutdown().await;
}

// Paused tokio time: the linger and the quiet period after it are virtual.
#[tokio::test(start_paused = true)]
async fn upstream_subscriptions_follow_demand_and_clients_have_their_own_delays() {
    let serve = paused().await;
    let upstream = "book.BTC-PERPETUAL.100ms".to_owned();
    assert!(serve.totals().await.unwrap().upstream_channels.is_empty());
    let mut ws = WsClient::connect(&serve.ws_url()).await;
    ws.call("public/subscribe", json!({"channels":["book.BTC-PERPETUAL.raw"]})).await;
    assert_eq!(serve.totals().await.unwrap().upstream_channels, vec![upstream.clone()]);
    // Wait for a few changes, so this client has fan-out delays of its own.
    let mut changes = 0;
    while changes < 3 {
        let v = ws.next_json().await;
        changes += usize::from(v["params"]["data"]["type"] == "change");
    }
    let (_, metrics) = http_get(&serve, "/metrics").await;
    let line = metrics
        .lines()
        .find(|l| l.starts_with("ticktrade_serve_client_fanout_delay_seconds_count{client="))
        .unwrap_or_else(|| panic!("{metrics}"));
    assert!(line.rsplit(' ').next().unwrap().parse::<u64>().unwrap() >= 3, "{line}");
    let totals = serve.totals().await.unwrap();
    assert!(totals.clients.values().all(|c| c.fanout.count >= 3 && c.fanout.p50_ns > 0), "{totals:?}");

    // The last client leaves: kept for the linger, then unsubscribed upstream.
    ws.call("public/unsubscribe_all", json!({})).await;
    // Frames sent before the unsubscription are of no further interest.
    ws.backlog.clear();
    let left = tokio::time::Instant::now();
    assert_eq!(serve.totals().await.unwrap().upstream_channels, vec![upstream.clone()], "dropped before the linger");
    while !serve.totals().await.unwrap().upstream_channels.is_empty() {
        // The hub sweeps every 500 ms: the linger (300 ms) plus one sweep at most.
        assert!(left.elapsed() <= Duration::from_millis(800), "upstream subscription never dropped");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(left.elapsed() >= Duration::from_millis(300), "dropped before the linger passed");
    // Upstream really stopped sending: no frames arrive any more (ten 100 ms intervals of
    // virtual time in which the simulator's engine keeps ticking).
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = serve.totals().await.unwrap().upstream_frames;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(serve.totals().await.unwrap().upstream_frames, before);
    // New interest subscribes again.
    let again = ws.call("public/subscribe", json!({"channels":["book.BTC-PERPETUAL.100ms"]})).await;
    assert_eq!(again["result"], json!(["book.BTC-PERPETUAL.100ms"]));
    assert_eq!(serve.totals().await.unwrap().upstream_channels, vec![upstream]);
    let v = ws.notification_method("subscription").await;
    assert_eq!(v["params"]["data"]["type"], "snapshot");
    serve.shutdown().await;
}
