//! Hyperliquid books across machines on a real NATS server (`nats-server`, the project's
//! pinned build, started per test): a server following generated node files publishes
//! (`server::bus`), two edges (`server::edge`) serve their own clients from the bus, and
//! clients written against Hyperliquid's documented formats compare what an edge sends with
//! what the direct server sends at the same block (`time`). Through a NATS server restart and
//! a publisher restart the edges resync and carry on; a deliberately slow edge whose NATS
//! client drops messages for it resyncs and carries on too; malformed messages are counted
//! and skipped; a bad address or login is an error at start.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::{Value, json};
use ticktrade_bus::async_nats;
use ticktrade_bus::{BusConfig, Envelope, HlSubjects};
use ticktrade_hl_node::server::bus::{BusCounters, BusStats, Sink, SinkConfig, connect, start_sink};
use ticktrade_hl_node::server::edge::{BusEvent, Edge, EdgeConfig, classify, start_edge};
use ticktrade_hl_node::server::{MetaDocs, Running, ServeConfig, start};
use ticktrade_hl_node::synth::Generator;
use ticktrade_hl_node::synth::writer::GenWriter;
use ticktrade_testkit::{Freezable, NatsServer, WsClient};

use common::*;

fn bus(url: &str) -> BusConfig {
    BusConfig::parse(url, None, |_| None).unwrap()
}

async fn sink_on(server: &Running, nats: &str, generator: &Generator) -> Sink {
    let stats = Arc::new(BusStats::default());
    let (client, _) = connect(&bus(nats), Arc::clone(&stats)).await.unwrap();
    let coins = generator.coins().iter().map(|c| c.name.clone()).collect();
    start_sink(client, &server.engine(), SinkConfig { subjects: HlSubjects::default(), queue: 4096, coins }, stats)
}

async fn edge(nats: &str) -> Edge {
    let stats = Arc::new(BusStats::default());
    let (client, events) = connect(&bus(nats), Arc::clone(&stats)).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    start_edge(listener, client, events, EdgeConfig { subjects: HlSubjects::default(), queue: 4096 }, stats)
        .await
        .unwrap()
}

/// A server following `dir` from the generator's current height (a restarted publisher).
async fn serve_from(dir: &std::path::Path, generator: &Generator) -> Running {
    let (meta, spot_meta) = generator.meta_json();
    let docs = MetaDocs { meta, spot_meta, ..MetaDocs::default() };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    start(listener, engine(dir, generator), dir, docs, ServeConfig::default()).unwrap()
}

/// A connection subscribed to one feed; `l2Book` and `bbo` come with the current frame.
struct Feed {
    ws: WsClient,
    /// `time` → `data` of every frame of the feed received.
    frames: BTreeMap<u64, Value>,
}

impl Feed {
    async fn open(addr: std::net::SocketAddr, subscription: Value) -> Feed {
        let mut ws = WsClient::connect(&format!("ws://{addr}/ws")).await;
        ws.set_wait(Duration::from_secs(20));
        ws.send_json(&json!({"method": "subscribe", "subscription": subscription})).await;
        let ack = ws.next_json().await;
        assert_eq!(ack["channel"], "subscriptionResponse", "{ack}");
        assert_eq!(ack["data"]["subscription"]["type"], subscription["type"]);
        Feed { ws, frames: BTreeMap::new() }
    }

    async fn l2(addr: std::net::SocketAddr, (sig, m): Variant) -> Feed {
        let mut sub = json!({"type": "l2Book", "coin": "BTC"});
        if let Some(sig) = sig {
            sub["nSigFigs"] = json!(sig);
        }
        if let Some(m) = m {
            sub["mantissa"] = json!(m);
        }
        Feed::open(addr, sub).await
    }

    fn keep(&mut self, frame: &Value) {
        assert_eq!(frame["channel"], "l2Book", "{frame}");
        assert_eq!(frame["data"]["coin"], "BTC");
        let time = frame["data"]["time"].as_u64().unwrap();
        self.frames.insert(time, frame["data"].clone());
    }

    /// Reads until nothing came for `quiet`.
    async fn drain(&mut self, quiet: Duration) {
        while let Some(frame) = self.ws.try_next(quiet).await {
            self.keep(&frame);
        }
    }

    /// Reads until a frame of `time` came (20 s at most).
    async fn until(&mut self, time: u64) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.frames.last_key_value().is_none_or(|(t, _)| *t < time) {
            assert!(Instant::now() < deadline, "no l2Book frame of time {time}; last {:?}", self.frames.keys().last());
            if let Some(frame) = self.ws.try_next(Duration::from_millis(200)).await {
                self.keep(&frame);
            }
        }
    }

    fn last_time(&self) -> u64 {
        *self.frames.keys().last().unwrap()
    }
}

/// Every frame `edge` got equals the direct server's of the same block (`time`), and both
/// end at the same block.
fn assert_same(direct: &Feed, edge: &Feed, since: u64, what: &str) {
    let mut n = 0;
    for (time, data) in edge.frames.range(since..) {
        let want = direct
            .frames
            .get(time)
            .unwrap_or_else(|| panic!("{what}: edge frame at {time} the direct server never sent"));
        assert_eq!(data, want, "{what}: book at {time}");
        n += 1;
    }
    assert!(n > 0, "{what}: no frames since {since}");
    assert_eq!(edge.last_time(), direct.last_time(), "{what}: last block");
}

/// Reads the direct clients until they are quiet, then each edge client up to the direct
/// client's last block of its variant, and compares them (`assert_same`).
async fn check(direct: &mut [Feed], at_edges: &mut [(Variant, Feed)], since: u64, what: &str) {
    futures_util::future::join_all(direct.iter_mut().map(|d| d.drain(Duration::from_millis(700)))).await;
    for (v, e) in at_edges.iter_mut() {
        let i = VARIANTS.iter().position(|x| x == v).unwrap();
        e.until(direct[i].last_time()).await;
        assert_same(&direct[i], e, since, what);
    }
}

/// Waits until `ok` holds for the counters (10 s at most).
async fn wait_for(counters: impl Fn() -> BusCounters, what: &str, ok: impl Fn(&BusCounters) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ok(&counters()) {
        assert!(Instant::now() < deadline, "{what}: {}", counters());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Writes `n` blocks a little apart (the engine follows the files as a node writes them).
async fn blocks(generator: &mut Generator, writer: &mut GenWriter, n: u64) {
    for _ in 0..n {
        write_blocks(generator, writer, 1);
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
}

/// Direct and edge clients of every variant, through blocks, a NATS restart, malformed
/// messages and a publisher restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edges_serve_the_direct_servers_books_through_restarts() {
    let mut nats = NatsServer::start();
    let url = nats.url();
    let tmp = tempfile::tempdir().unwrap();
    let (mut generator, mut writer, server) = served(tmp.path(), 6, 120).await;
    let sink = sink_on(&server, &url, &generator).await;
    let edges = [edge(&url).await, edge(&url).await];

    let mut direct = Vec::new();
    let mut at_edges = Vec::new();
    for v in VARIANTS {
        direct.push(Feed::l2(server.addr, v).await);
        for e in &edges {
            at_edges.push((v, Feed::l2(e.addr, v).await));
        }
    }
    // Other feeds on one edge: trades, bbo and allMids frames arrive in their formats.
    let mut others = Feed::open(edges[1].addr, json!({"type": "bbo", "coin": "BTC"})).await;
    assert_eq!(others.ws.next_json().await["channel"], "bbo");
    for sub in [json!({"type": "trades", "coin": "BTC"}), json!({"type": "allMids"})] {
        others.ws.send_json(&json!({"method": "subscribe", "subscription": sub})).await;
        others.ws.next_where("ack", |v| v["channel"] == "subscriptionResponse").await;
    }
    // Not carried: a clear error; carried but invalid: Hyperliquid's own error.
    others.ws.send_json(&json!({"method": "subscribe", "subscription": {"type": "l4Book", "coin": "BTC"}})).await;
    let err = others.ws.next_where("error", |v| v["channel"] == "error").await;
    assert!(err["data"].as_str().unwrap().contains("is not carried on the bus"), "{err}");

    // 1. Steady state: every edge client's book is the direct one at every block.
    blocks(&mut generator, &mut writer, 12).await;
    check(&mut direct, &mut at_edges, 0, "steady").await;
    let trades = others.ws.next_where("trades", |v| v["channel"] == "trades").await;
    assert_eq!(trades["data"][0]["coin"], "BTC");
    others.ws.next_where("allMids", |v| v["channel"] == "allMids" && v["data"]["mids"]["BTC"].is_string()).await;
    for e in &edges {
        let c = e.counters();
        assert!(c.connected && c.received > 0 && c.malformed == 0 && c.gaps == 0, "{c}");
    }
    assert_eq!(sink.counters().dropped, 0);

    // 2. The NATS server restarts: edges see the loss, resync, and go on.
    let resyncs: Vec<u64> = edges.iter().map(|e| e.counters().resyncs).collect();
    nats.restart();
    for e in &edges {
        wait_for(|| e.counters(), "edge back on NATS", |c| c.disconnects >= 1 && c.connected).await;
    }
    wait_for(|| sink.counters(), "publisher back on NATS", |c| c.disconnects >= 1 && c.connected).await;
    let since = direct.iter().map(Feed::last_time).max().unwrap() + 1;
    blocks(&mut generator, &mut writer, 10).await;
    check(&mut direct, &mut at_edges, since, "after a NATS restart").await;
    for (e, before) in edges.iter().zip(&resyncs) {
        assert!(e.counters().resyncs > *before, "{}", e.counters());
    }

    // 3. Malformed messages: counted and skipped, and the books stay right.
    let raw = async_nats::connect(url.as_str()).await.unwrap();
    let subject = "ticktrade.hl.l2Book.BTC.full-20";
    raw.publish(subject, Bytes::from_static(b"no headers")).await.unwrap();
    let mut headers = async_nats::HeaderMap::new();
    for (name, value) in (Envelope { publisher: 7, seq: 1 }).headers() {
        headers.insert(name, value.as_str());
    }
    raw.publish_with_headers(subject, headers, Bytes::from_static(b"{\"channel\":\"l2Book\"")).await.unwrap();
    raw.publish("ticktrade.hl.l2Book.BTC", Bytes::from_static(b"{}")).await.unwrap();
    raw.flush().await.unwrap();
    for e in &edges {
        wait_for(|| e.counters(), "malformed counted", |c| c.malformed >= 3).await;
    }
    let since = direct.iter().map(Feed::last_time).max().unwrap() + 1;
    blocks(&mut generator, &mut writer, 8).await;
    check(&mut direct, &mut at_edges, since, "after malformed messages").await;

    // 4. The publisher restarts (a new run): edges see it, resync, and serve its books.
    sink.stop();
    server.stop();
    let server = serve_from(tmp.path(), &generator).await;
    let sink = sink_on(&server, &url, &generator).await;
    let gaps: Vec<u64> = edges.iter().map(|e| e.counters().gaps).collect();
    let mut direct = Vec::new();
    for v in VARIANTS {
        direct.push(Feed::l2(server.addr, v).await);
    }
    let since = at_edges.iter().map(|(_, f)| f.last_time()).max().unwrap() + 1;
    blocks(&mut generator, &mut writer, 10).await;
    check(&mut direct, &mut at_edges, since, "after a publisher restart").await;
    for (e, before) in edges.iter().zip(&gaps) {
        assert!(e.counters().gaps > *before, "a publisher restart is seen: {}", e.counters());
    }
    sink.stop();
    server.stop();
    for e in edges {
        e.stop();
    }
}

/// A deliberately slow edge: its NATS client runs on the test's runtime, the edge itself on a
/// runtime the test freezes, so the client keeps reading while the edge takes nothing and its
/// subscription queues (512 messages, some eight blocks) overflow: real slow-consumer events. Thawed, the edge
/// resyncs and its clients' books equal the direct server's at every block again; trades go
/// on. Then, on a quiet bus, a slow-consumer event alone (no gap to see) resyncs the books.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_edge_resyncs_after_its_client_drops_messages() {
    let nats = NatsServer::start();
    let url = nats.url();
    let tmp = tempfile::tempdir().unwrap();
    let (mut generator, mut writer, server) = served(tmp.path(), 6, 120).await;
    let sink = sink_on(&server, &url, &generator).await;
    let stats = Arc::new(BusStats::default());
    let (events_tx, events) = tokio::sync::mpsc::unbounded_channel();
    let (counted, tx) = (Arc::clone(&stats), events_tx.clone());
    let client = async_nats::ConnectOptions::new()
        .subscription_capacity(512)
        .event_callback(move |event| {
            let (counted, tx) = (Arc::clone(&counted), tx.clone());
            async move {
                if let Some(event) = classify(&counted, &event) {
                    let _ = tx.send(event);
                }
            }
        })
        .connect(url.as_str())
        .await
        .unwrap();
    let slow_runtime = Freezable::start("slow-hl-edge");
    let edge_stats = Arc::clone(&stats);
    let edge = slow_runtime
        .run(move || async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let config = EdgeConfig { subjects: HlSubjects::default(), queue: 4096 };
            start_edge(listener, client, events, config, edge_stats).await.unwrap()
        })
        .await;
    let mut direct = Vec::new();
    let mut at_edge = Vec::new();
    for v in VARIANTS {
        direct.push(Feed::l2(server.addr, v).await);
        at_edge.push((v, Feed::l2(edge.addr, v).await));
    }
    let mut trades = Feed::open(edge.addr, json!({"type": "trades", "coin": "BTC"})).await;
    blocks(&mut generator, &mut writer, 6).await;
    check(&mut direct, &mut at_edge, 0, "before").await;

    let frozen = slow_runtime.freeze().await;
    let deadline = Instant::now() + Duration::from_secs(20);
    let slow_before = edge.counters().slow_consumers;
    while edge.counters().slow_consumers == slow_before {
        assert!(Instant::now() < deadline, "the client never dropped a message: {}", edge.counters());
        blocks(&mut generator, &mut writer, 1).await;
    }
    frozen.thaw();
    let since = direct.iter().map(Feed::last_time).max().unwrap() + 1;
    blocks(&mut generator, &mut writer, 8).await;
    check(&mut direct, &mut at_edge, since, "after slow-consumer events").await;
    let c = edge.counters();
    assert!(c.resyncs > 0 && c.disconnects == 0, "resynced without losing the connection: {c}");
    // Trades go on: a trade of a block written from now on reaches the edge's client.
    let now = direct.iter().map(Feed::last_time).max().unwrap();
    blocks(&mut generator, &mut writer, 6).await;
    trades
        .ws
        .next_where("a trade after the resync", |v| {
            v["channel"] == "trades" && v["data"].as_array().unwrap().iter().any(|t| t["time"].as_u64() > Some(now))
        })
        .await;

    // A quiet bus: a slow-consumer event alone resyncs the books (no gap shows the loss).
    for d in &mut direct {
        d.drain(Duration::from_millis(300)).await;
    }
    let before = edge.counters();
    events_tx.send(BusEvent::SlowConsumer).unwrap();
    wait_for(|| edge.counters(), "a resync after the event", |c| c.resyncs > before.resyncs).await;
    assert_eq!(edge.counters().gaps, before.gaps, "{}", edge.counters());
    let since = direct.iter().map(Feed::last_time).max().unwrap() + 1;
    blocks(&mut generator, &mut writer, 4).await;
    check(&mut direct, &mut at_edge, since, "after a slow-consumer event").await;
    assert_eq!(sink.counters().dropped, 0);
    sink.stop();
    server.stop();
    edge.stop();
}

/// The same subscription sent to a direct server and to an edge gets the same reply: for a
/// coin the publisher does not serve, Hyperliquid's `Invalid subscription` error (the edge
/// knows the coins from its publisher); for a served coin, the same acknowledgement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edge_answers_an_unknown_coin_as_the_direct_server_does() {
    let nats = NatsServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let (generator, _writer, server) = served(tmp.path(), 4, 80).await;
    let sink = sink_on(&server, &nats.url(), &generator).await;
    let edge = edge(&nats.url()).await;
    let mut direct = WsClient::connect(&format!("ws://{}/ws", server.addr)).await;
    let mut at_edge = WsClient::connect(&format!("ws://{}/ws", edge.addr)).await;
    let reply = |v: &Value| v["channel"] == "error" || v["channel"] == "subscriptionResponse";
    for (method, sub) in [
        ("subscribe", json!({"type": "l2Book", "coin": "NOPE"})),
        ("subscribe", json!({"type": "l2Book", "coin": "NOPE", "nSigFigs": 5})),
        ("subscribe", json!({"type": "trades", "coin": "NOPE"})),
        ("subscribe", json!({"type": "bbo", "coin": "NOPE"})),
        ("subscribe", json!({"type": "l4Book", "coin": "NOPE"})),
        ("unsubscribe", json!({"type": "trades", "coin": "NOPE"})),
        ("subscribe", json!({"type": "trades", "coin": "BTC"})),
        ("subscribe", json!({"type": "l2Book", "coin": "ETH", "nSigFigs": 3})),
    ] {
        let message = json!({"method": method, "subscription": sub});
        direct.send_json(&message).await;
        let want = direct.next_where("the direct server's reply", reply).await;
        at_edge.send_json(&message).await;
        let got = at_edge.next_where("the edge's reply", reply).await;
        assert_eq!(got, want, "{message}");
        if sub["coin"] == "NOPE" && method == "subscribe" {
            assert!(want["data"].as_str().unwrap().starts_with("Invalid subscription"), "{want}");
        }
    }
    sink.stop();
    server.stop();
    edge.stop();
}

/// `/info` `l2Book` and `allMids` on an edge: the publisher's latest frames.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edge_answers_info_from_the_latest_frames() {
    let nats = NatsServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let (mut generator, mut writer, server) = served(tmp.path(), 4, 80).await;
    let sink = sink_on(&server, &nats.url(), &generator).await;
    let edge = edge(&nats.url()).await;
    blocks(&mut generator, &mut writer, 4).await;
    for body in [r#"{"type":"l2Book","coin":"BTC"}"#, r#"{"type":"l2Book","coin":"ETH","nSigFigs":3}"#] {
        let (status, direct) = http_post(server.addr, body).await;
        assert_eq!(status, 200);
        let direct: Value = serde_json::from_str(&direct).unwrap();
        // The edge holds the last block's frames once the bus has carried them there.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let (status, at_edge) = http_post(edge.addr, body).await;
            assert_eq!(status, 200, "{at_edge}");
            let at_edge: Value = serde_json::from_str(&at_edge).unwrap();
            if at_edge["levels"] == direct["levels"] {
                assert_eq!(at_edge["coin"], direct["coin"]);
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "{body}: edge {at_edge}, direct {direct}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let (_, mids) = http_post(edge.addr, r#"{"type":"allMids"}"#).await;
    let mids: Value = serde_json::from_str(&mids).unwrap();
    assert!(mids["BTC"].is_string(), "{mids}");
    let (status, text) = http_post(edge.addr, r#"{"type":"meta"}"#).await;
    assert_eq!(status, 400);
    assert!(text.contains("Not available on this edge server"), "{text}");
    sink.stop();
    server.stop();
    edge.stop();
}

/// An address nobody answers on, or a refused login, is an error at start that names the
/// server and not the password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_address_or_login_fails_at_start() {
    let stats = Arc::new(BusStats::default());
    let nobody = format!("nats://127.0.0.1:{}", ticktrade_testkit::nats::free_port());
    let mut config = bus(&nobody);
    config.connect_timeout = Duration::from_secs(1);
    let err = connect(&config, Arc::clone(&stats)).await.err().unwrap().to_string();
    assert!(err.contains("connecting to NATS at nats://127.0.0.1:"), "{err}");

    let nats = NatsServer::start_with(&["--user", "hl", "--pass", "right-one"]);
    let wrong = format!("nats://hl:wrong-one@127.0.0.1:{}", nats.port());
    let err = connect(&bus(&wrong), Arc::clone(&stats)).await.err().unwrap().to_string();
    assert!(err.contains("connecting to NATS") && !err.contains("wrong-one"), "{err}");
    let right = format!("nats://hl:right-one@127.0.0.1:{}", nats.port());
    assert!(connect(&bus(&right), stats).await.is_ok());
}
