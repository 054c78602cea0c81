//! Malformed input never crashes the simulator and never disturbs another session: bad JSON,
//! wrong types, 16 MiB frames, unknown channels, request floods, half-open connections,
//! slow subscribers. Real sockets on loopback.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::{Auth, WsClient, sim};
use futures_util::SinkExt;
use serde_json::json;
use ticktrade_core::Utc;
use ticktrade_sim::{RateLimits, SimClock, SimConfig};
use ticktrade_testkit::ws::Message;
use tokio::io::AsyncWriteExt;

/// A bystander session with a live subscription must keep getting chained changes.
async fn bystander_still_fine(bystander: &mut WsClient, channel: &str, last: &mut i64) {
    for _ in 0..3 {
        let change = bystander.notification(channel).await;
        let data = &change["params"]["data"];
        assert_eq!(data["prev_change_id"].as_i64().unwrap(), *last, "bystander chain broken: {change}");
        *last = data["change_id"].as_i64().unwrap();
    }
    assert_eq!(bystander.call("public/test", json!({})).await["result"]["version"], "1.2.26");
}

#[tokio::test]
async fn malformed_input_is_contained() {
    let sim = sim().await;
    let channel = "book.BTC-PERPETUAL.100ms";
    let mut bystander = WsClient::connect(&sim.ws_url()).await;
    bystander.call("public/subscribe", json!({"channels": [channel]})).await;
    let snapshot = bystander.notification(channel).await;
    let mut last = snapshot["params"]["data"]["change_id"].as_i64().unwrap();

    let mut bad = WsClient::connect(&sim.ws_url()).await;
    // Not JSON: 11050 "invalid json" without an id, socket stays open.
    bad.send_text("this is not json {").await;
    let reply = bad.next().await.unwrap();
    assert_eq!(reply["error"]["code"], 11050, "{reply}");
    assert_eq!(reply["error"]["data"], "invalid json");
    assert!(reply.get("id").is_none());
    // JSON but not a request.
    bad.send_text("[1,2,3]").await;
    assert_eq!(bad.next().await.unwrap()["error"]["code"], 11050);
    bad.send_text("{\"id\":5}").await;
    assert_eq!(bad.next().await.unwrap()["error"]["code"], 11050);
    // Wrong types and positional params.
    let v = bad.call("public/get_order_book", json!({"instrument_name": 42})).await;
    assert_eq!(v["error"]["code"], -32602, "{v}");
    let v = bad.call("public/subscribe", json!({"channels": "book.BTC-PERPETUAL.100ms"})).await;
    assert_eq!(v["error"]["data"]["param"], "channels", "{v}");
    bad.send_text(r#"{"jsonrpc":"2.0","id":9,"method":"public/ticker","params":["BTC-PERPETUAL"]}"#).await;
    assert_eq!(bad.response(9).await["error"]["code"], -32602);
    // Unknown and malformed channels: silently dropped.
    let v = bad
        .call(
            "public/subscribe",
            json!({"channels": ["nope", "book..", "book.BTC-PERPETUAL.none.99.100ms", "ticker.X.raw"]}),
        )
        .await;
    assert_eq!(v["result"], json!([]), "{v}");
    // 40 kB request: -32600, session continues.
    let big =
        format!(r#"{{"jsonrpc":"2.0","id":77,"method":"public/test","params":{{"pad":"{}"}}}}"#, "x".repeat(40_000));
    bad.send_text(&big).await;
    let v = bad.next().await.unwrap();
    assert_eq!(v["error"]["code"], -32600, "{v}");
    assert_eq!(bad.call("public/test", json!({})).await["result"]["version"], "1.2.26");
    // Binary garbage.
    bad.ws.send(Message::Binary(vec![0xff, 0xfe, 0x00].into())).await.unwrap();
    assert_eq!(bad.next().await.unwrap()["error"]["code"], 11050);
    bystander_still_fine(&mut bystander, channel, &mut last).await;

    // A 16 MiB frame: that session is closed with 1009, nobody else notices.
    let mut huge = WsClient::connect(&sim.ws_url()).await;
    let payload = "y".repeat(16 << 20);
    let _ = huge.ws.send(Message::Text(payload.into())).await;
    let closed = huge.wait_closed().await;
    if let Some((code, _)) = closed {
        assert_eq!(code, 1009);
    }
    bystander_still_fine(&mut bystander, channel, &mut last).await;

    // Half-open connections: a TCP socket that never finishes the handshake, one that sends a
    // partial upgrade request, and one that upgrades and then goes silent.
    let mut silent = tokio::net::TcpStream::connect(sim.addr()).await.unwrap();
    let mut partial = tokio::net::TcpStream::connect(sim.addr()).await.unwrap();
    partial.write_all(b"GET /ws/api/v2 HTTP/1.1\r\nHost: x\r\nUpgrade: websock").await.unwrap();
    let quiet = WsClient::connect(&sim.ws_url()).await;
    bystander_still_fine(&mut bystander, channel, &mut last).await;
    silent.write_all(b"\x16\x03\x01garbage\r\n\r\n").await.unwrap();
    bystander_still_fine(&mut bystander, channel, &mut last).await;
    drop((silent, partial, quiet));
    sim.shutdown().await;
}

#[tokio::test]
async fn request_flood_gets_10028_then_disconnect() {
    let sim = sim().await;
    let mut bystander = WsClient::connect(&sim.ws_url()).await;
    let mut flooder = WsClient::connect(&sim.ws_url()).await;
    // Fire 300 requests without reading; the burst allows 100.
    for _ in 0..300 {
        flooder.request("public/get_time", json!({})).await;
    }
    let mut saw_10028 = false;
    while let Some(v) = flooder.next().await {
        if v["error"]["code"] == 10028 {
            saw_10028 = true;
        }
    }
    assert!(saw_10028);
    let (code, reason) = flooder.close_frame().expect("close frame with a reason");
    assert_eq!(code, 4029);
    assert!(reason.contains("too_many_requests"), "{reason}");
    assert_eq!(bystander.call("public/test", json!({})).await["result"]["version"], "1.2.26");
    sim.shutdown().await;
}

#[tokio::test]
async fn slow_subscriber_is_disconnected_with_a_reason() {
    // Unlimited credits: the bystander polls as fast as it can until the slow session is gone.
    let config =
        SimConfig { rate_per_s: 5_000, queue_capacity: 16, limits: RateLimits::unlimited(), ..SimConfig::default() };
    let sim = ticktrade_sim::spawn_loopback(config).await.unwrap();
    let mut slow = WsClient::connect_small_buffer(sim.addr(), &sim.ws_url()).await;
    slow.auth().await;
    let channels = json!([
        "book.BTC-PERPETUAL.raw",
        "book.ETH-PERPETUAL.raw",
        "book.BTC_USDC-PERPETUAL.raw",
        "trades.BTC-PERPETUAL.raw"
    ]);
    slow.request("public/subscribe", json!({"channels": channels})).await;
    // Never read: the queue (16 frames) fills and the server closes with 4003.
    let mut bystander = WsClient::connect(&sim.ws_url()).await;
    let mut closed = None;
    // Bounded so a regression fails instead of hanging; the bound is not a timing assertion.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        bystander.call("public/get_time", json!({})).await;
        if sim.stats().connections == 1 {
            closed = Some(());
            break;
        }
    }
    assert!(closed.is_some(), "slow session still registered");
    let reason = slow.wait_closed().await;
    if let Some((code, reason)) = reason {
        assert_eq!(code, 4003);
        assert!(reason.contains("slow consumer"), "{reason}");
    }
    sim.shutdown().await;
}

// Paused tokio time: the heartbeat interval and the client's deadlines are virtual, so the
// test takes no wall time waiting for heartbeats.
#[tokio::test(start_paused = true)]
async fn unanswered_heartbeat_closes_with_4000() {
    let config = SimConfig {
        min_heartbeat_s: 2,
        clock: SimClock::tokio(Utc::from_millis(1_700_000_000_000)),
        ..SimConfig::default()
    };
    let sim = ticktrade_sim::spawn_loopback(config).await.unwrap();
    let mut c = WsClient::connect(&sim.ws_url()).await;
    assert_eq!(c.call("public/set_heartbeat", json!({"interval": 1})).await["error"]["code"], -32602);
    assert_eq!(c.call("public/set_heartbeat", json!({"interval": 2})).await["result"], "ok");
    let set_at = tokio::time::Instant::now();
    let hb = c.notification_method("heartbeat").await;
    assert_eq!(hb["params"]["type"], "test_request");
    assert!(set_at.elapsed() >= std::time::Duration::from_secs(2), "a test_request before the interval");
    // Answered: the session stays up through the next test_request.
    c.call("public/test", json!({})).await;
    let hb = c.notification_method("heartbeat").await;
    assert_eq!(hb["params"]["type"], "test_request");
    // Unanswered: closed with 4000 "heartbeat close".
    let close = c.wait_closed().await;
    assert_eq!(close, Some((4000, "heartbeat close".to_owned())));
    sim.shutdown().await;
}
