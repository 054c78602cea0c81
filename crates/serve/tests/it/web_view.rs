//! The web view's HTTP side and its stats method: `GET /` and every embedded asset answer 200
//! with their content type (unknown paths 404), and `public/ticktrade_get_stats` over the
//! page's WebSocket lists the caller and other clients and the fan-out histogram.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use serde_json::json;
use ticktrade_serve::{ServeConfig, ServeHandle};
use ticktrade_sim::SimConfig;
use ticktrade_testkit::WsClient;

use crate::common;
use common::Served;

async fn served() -> Served {
    common::spawn(SimConfig { rate_per_s: 200, ..SimConfig::default() }, ServeConfig::default()).await
}

/// Status, `Content-Type` and body of `GET path`.
async fn get(serve: &ServeHandle, path: &str) -> (u16, String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(serve.addr()).await.unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    tcp.write_all(req.as_bytes()).await.unwrap();
    let mut text = String::new();
    tokio::time::timeout(Duration::from_secs(10), tcp.read_to_string(&mut text)).await.unwrap().unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head[9..12].parse().unwrap();
    let content_type = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        .map(|(_, v)| v.trim().to_owned())
        .unwrap_or_default();
    (status, content_type, body.to_owned())
}

#[tokio::test]
async fn page_and_assets_are_served_with_their_content_types() {
    let serve = served().await;
    let (status, ct, page) = get(&serve, "/").await;
    assert_eq!((status, ct.as_str()), (200, "text/html; charset=utf-8"));
    assert!(page.contains("<title>ticktrade serve</title>"), "{page}");
    // Everything the page loads is served by this binary: no other origin is referenced.
    for asset in ["/assets/app.js", "/assets/app.css", "/favicon.svg"] {
        assert!(page.contains(&format!("\"{asset}\"")), "the page does not load {asset}");
    }
    assert!(!page.contains("http://") && !page.contains("https://"), "the page loads something from elsewhere");
    for (path, want, marker) in [
        ("/assets/app.js", "text/javascript; charset=utf-8", "public/ticktrade_get_stats"),
        ("/assets/app.css", "text/css; charset=utf-8", ".ladder"),
        ("/favicon.svg", "image/svg+xml", "<svg"),
        ("/favicon.ico", "image/svg+xml", "<svg"),
    ] {
        let (status, ct, body) = get(&serve, path).await;
        assert_eq!((status, ct.as_str()), (200, want), "{path}");
        assert!(body.contains(marker), "{path}: {body}");
    }
    assert_eq!(get(&serve, "/assets/nope.js").await.0, 404);
    // The WebSocket path and the metrics are still what they were.
    assert_eq!(get(&serve, "/metrics").await.0, 200);
    serve.shutdown().await;
}

#[tokio::test]
async fn stats_over_the_websocket_list_clients_and_the_fanout_histogram() {
    let serve = served().await;
    let mut page = WsClient::connect(&serve.ws_url()).await;
    let mut other = WsClient::connect(&serve.ws_url()).await;
    let sub = other.call("public/subscribe", json!({"channels": ["book.BTC-PERPETUAL.100ms"]})).await;
    assert_eq!(sub["result"], json!(["book.BTC-PERPETUAL.100ms"]));
    // Read the other client's frames so fan-out delays get recorded.
    let reader = tokio::spawn(async move {
        let mut n = 0u64;
        while other.try_next(ticktrade_testkit::ws::WAIT).await.is_some() {
            n += 1;
        }
        n
    });
    let deadline = Instant::now() + Duration::from_secs(15);
    let stats = loop {
        let v = page.call("public/ticktrade_get_stats", json!({})).await;
        let r = v["result"].clone();
        assert!(r.is_object(), "{v}");
        let others_messages =
            r["clients"].as_array().unwrap().iter().skip(1).map(|c| c["messages"].as_u64().unwrap()).sum::<u64>();
        if r["fanout"]["count"].as_u64().unwrap() > 0 && others_messages > 2 {
            break r;
        }
        assert!(Instant::now() < deadline, "no fan-out recorded: {r}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let clients = stats["clients"].as_array().unwrap();
    assert_eq!(clients.len(), 2, "{stats}");
    assert_eq!(stats["clients_total"], 2);
    assert_eq!(clients[0]["id"], stats["client"], "the caller is listed first: {stats}");
    assert_eq!(clients[1]["subscriptions"], 1);
    assert!(clients[1]["delay_count"].as_u64().unwrap() > 0 && clients[1]["delay_p99_ns"].as_u64().unwrap() > 0);
    for key in [
        "messages",
        "bytes",
        "drops",
        "conflations",
        "resyncs",
        "queued",
        "delay_p50_ns",
        "delay_p999_ns",
        "delay_max_ns",
    ] {
        assert!(clients[1][key].is_u64(), "{key}: {stats}");
    }
    assert!(stats["totals"]["messages"].as_u64().unwrap() >= clients[1]["messages"].as_u64().unwrap());
    assert!(stats["totals"]["upstream_channels"].as_u64().unwrap() >= 1);
    let fanout = &stats["fanout"];
    let (p50, p99, max) =
        (fanout["p50_ns"].as_u64().unwrap(), fanout["p99_ns"].as_u64().unwrap(), fanout["max_ns"].as_u64().unwrap());
    assert!(0 < p50 && p50 <= p99 && p99 <= max, "{fanout}");
    let buckets: Vec<(u64, u64, u64)> = serde_json::from_value(fanout["buckets"].clone()).unwrap();
    assert_eq!(buckets.iter().map(|b| b.2).sum::<u64>(), fanout["count"].as_u64().unwrap(), "{fanout}");
    assert!(buckets.windows(2).all(|w| w[0].1 == w[1].0), "buckets are contiguous: {fanout}");
    assert!(buckets[0].0 <= p50 && p50 < buckets[buckets.len() - 1].1, "{fanout}");
    drop(page);
    serve.shutdown().await;
    let _ = reader.await;
}
