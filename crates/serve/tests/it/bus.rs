//! Books across machines on a real NATS server (`nats-server`, the project's pinned build,
//! started per test): a publisher (`publish`) over the simulator and edges
//! (`UpstreamSource::Nats`) serving their own clients from the bus. Every client follows its
//! chain (a gap fails the test) and its book comes to equal the simulator's; through a NATS
//! server restart, a publisher restart and the loss of the node an edge is connected to in a
//! three-node cluster the edges resync and carry on; a deliberately slow edge is cut off by
//! the NATS server and recovers while the other edge loses nothing; bad input is a
//! clear error at start, and malformed or out-of-sequence messages are counted and resynced.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::future;
use serde_json::{Value, json};
use ticktrade_book::l2::L2Book;
use ticktrade_bus::async_nats;
use ticktrade_core::{InstrumentSpec, Side};
use ticktrade_deribit_proto::{BookKind, decode_book_units};
use ticktrade_serve::{BusConfig, BusCounters, ServeConfig, ServeError, ServeHandle, UpstreamSource};
use ticktrade_sim::{SimConfig, SimHandle};
use ticktrade_testkit::{Freezable, NatsCluster, NatsServer, WsClient};

/// Clients per edge, each following its own chain: 50 cost this file's two tests that use
/// them ~0.1 s each over 12 (4.3 s → 4.4 s on the shared 2-core VM), so every edge serves 50.
const CLIENTS: usize = 50;
const INSTRUMENT: &str = "BTC-PERPETUAL";

fn bus(url: &str) -> BusConfig {
    BusConfig::parse(url, None, |_| None).unwrap()
}

/// `bus(urls)` with the connection name NATS monitoring shows.
fn named_bus(urls: &str, name: &str) -> BusConfig {
    BusConfig { name: name.to_owned(), ..bus(urls) }
}

async fn publisher(sim: &SimHandle, nats: &str) -> ServeHandle {
    publisher_on(sim, bus(nats)).await
}

async fn publisher_on(sim: &SimHandle, bus: BusConfig) -> ServeHandle {
    let config =
        ServeConfig { upstream: UpstreamSource::Url(sim.ws_url()), publish: Some(bus), ..ServeConfig::default() };
    ticktrade_serve::spawn(config).await.unwrap()
}

async fn edge(nats: &str) -> ServeHandle {
    edge_on(bus(nats)).await
}

async fn edge_on(bus: BusConfig) -> ServeHandle {
    let config = ServeConfig { upstream: UpstreamSource::Nats(bus), ..ServeConfig::default() };
    ticktrade_serve::spawn(config).await.unwrap()
}

async fn sim() -> SimHandle {
    sim_at(400).await
}

async fn sim_at(rate_per_s: u32) -> SimHandle {
    ticktrade_sim::spawn_loopback(SimConfig { rate_per_s, ..SimConfig::default() }).await.unwrap()
}

async fn spec(sim: &SimHandle) -> InstrumentSpec {
    let mut ws = WsClient::connect(&sim.ws_url()).await;
    let reply = ws.call_text("public/get_instruments", json!({"currency":"any"})).await;
    ticktrade_deribit_proto::instrument::parse_instruments_response(&reply, 0)
        .unwrap()
        .into_iter()
        .find(|s| s.name == INSTRUMENT)
        .unwrap()
}

fn top(book: &L2Book, spec: &InstrumentSpec, side: Side) -> Vec<(String, String)> {
    book.top(side, 10)
        .map(|l| (spec.price_to_decimal(l.price).to_string(), spec.qty_to_decimal(l.qty).to_string()))
        .collect()
}

/// A client of an edge on `book.BTC-PERPETUAL.raw`: follows its chain (panics on a gap).
struct Follower {
    ws: WsClient,
    book: L2Book,
    changes: u64,
    snapshots: u64,
    updates: Vec<ticktrade_book::l2::LevelUpdate>,
}

impl Follower {
    async fn connect(serve: &ServeHandle) -> Follower {
        let mut ws = WsClient::connect(&serve.ws_url()).await;
        let reply = ws.call("public/subscribe", json!({"channels": [format!("book.{INSTRUMENT}.raw")]})).await;
        assert_eq!(reply["result"].as_array().unwrap().len(), 1, "{reply}");
        Follower { ws, book: L2Book::new(), changes: 0, snapshots: 0, updates: Vec::new() }
    }

    /// Follows `more` changes, then until the book equals the simulator's.
    async fn converge(&mut self, sim: &SimHandle, spec: &InstrumentSpec, more: u64) {
        let target = self.changes + more;
        loop {
            let text = self.ws.next_text().await.expect("socket closed");
            let v: Value = serde_json::from_str(&text).unwrap();
            if v["params"]["channel"].as_str() != Some(&format!("book.{INSTRUMENT}.raw")) {
                continue;
            }
            let header = decode_book_units(text.as_bytes(), spec, &mut self.updates).unwrap();
            match header.kind {
                BookKind::Snapshot => {
                    self.snapshots += 1;
                    self.book.apply_snapshot(header.change_id, &self.updates);
                }
                _ => {
                    let prev = header.prev_change_id.unwrap();
                    assert_eq!(self.book.last_change_id(), Some(prev), "broken chain");
                    self.book.apply_change(header.change_id, prev, &self.updates).unwrap();
                    self.changes += 1;
                }
            }
            if self.changes >= target {
                let want = sim.book_top(INSTRUMENT, 10).await.unwrap();
                let dec = |l: &Vec<(ticktrade_core::Decimal, ticktrade_core::Decimal)>| {
                    l.iter().map(|(p, q)| (p.to_string(), q.to_string())).collect::<Vec<_>>()
                };
                if top(&self.book, spec, Side::Buy) == dec(&want.bids)
                    && top(&self.book, spec, Side::Sell) == dec(&want.asks)
                {
                    return;
                }
            }
        }
    }
}

async fn converge_all(followers: &mut [Follower], sim: &SimHandle, spec: &InstrumentSpec, more: u64) {
    tokio::time::timeout(
        Duration::from_secs(60),
        future::join_all(followers.iter_mut().map(|f| f.converge(sim, spec, more))),
    )
    .await
    .expect("clients did not converge on the simulator's book");
}

async fn bus_counters(serve: &ServeHandle) -> BusCounters {
    serve.totals().await.unwrap().bus.unwrap()
}

/// Waits (polling) until `pred` holds for `serve`'s bus counters.
async fn wait_bus(serve: &ServeHandle, what: &str, pred: impl Fn(&BusCounters) -> bool) -> BusCounters {
    for _ in 0..300 {
        let c = bus_counters(serve).await;
        if pred(&c) {
            return c;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what}: {:?}", bus_counters(serve).await);
}

async fn metrics(serve: &ServeHandle) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(serve.addr()).await.unwrap();
    tcp.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await.unwrap();
    let mut text = String::new();
    tcp.read_to_string(&mut text).await.unwrap();
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_edges_serve_the_simulators_books_through_restarts() {
    let mut nats = NatsServer::start();
    let sim = sim().await;
    let spec = spec(&sim).await;
    let mut publisher = publisher(&sim, &nats.url()).await;
    let edges = [edge(&nats.url()).await, edge(&nats.url()).await];
    let mut followers = Vec::new();
    for e in &edges {
        for _ in 0..CLIENTS {
            followers.push(Follower::connect(e).await);
        }
    }
    converge_all(&mut followers, &sim, &spec, 20).await;
    assert!(followers.iter().all(|f| f.snapshots == 1), "one snapshot each, then changes only");
    let published = bus_counters(&publisher).await;
    assert!(published.publisher && published.connected && published.published > 0, "{published:?}");
    assert_eq!(published.dropped, 0);
    for e in &edges {
        let c = bus_counters(e).await;
        assert!(!c.publisher && c.connected && c.received > 0 && c.malformed == 0, "{c:?}");
        assert!(metrics(e).await.contains("ticktrade_serve_bus_connected 1\n"));
    }

    // The NATS server restarts: the edges see the bus go, then resync and carry on.
    nats.kill();
    for e in &edges {
        wait_bus(e, "edge never saw the bus go", |c| !c.connected).await;
        assert!(metrics(e).await.contains("ticktrade_serve_bus_connected 0\n"), "/metrics shows the bus gone");
    }
    nats.restart();
    for e in &edges {
        wait_bus(e, "edge did not reconnect", |c| c.connected && c.disconnects >= 1).await;
    }
    converge_all(&mut followers, &sim, &spec, 10).await;

    // The publisher restarts (a new run id): the edges resync from its snapshots.
    let before: Vec<u64> = future::join_all(edges.iter().map(bus_counters)).await.iter().map(|c| c.gaps).collect();
    publisher.shutdown().await;
    publisher = self::publisher(&sim, &nats.url()).await;
    for (e, gaps) in edges.iter().zip(before) {
        wait_bus(e, "edge did not see the publisher restart", |c| c.gaps > gaps && c.resyncs >= 1).await;
    }
    converge_all(&mut followers, &sim, &spec, 10).await;
    for e in edges {
        e.shutdown().await;
    }
    publisher.shutdown().await;
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edge_fails_over_when_its_cluster_node_dies() {
    let mut cluster = NatsCluster::start(3);
    let urls = cluster.urls();
    assert_eq!(urls.split(',').count(), 3);
    let sim = sim().await;
    let spec = spec(&sim).await;
    let publisher = publisher_on(&sim, named_bus(&urls, "publisher")).await;
    let edge = edge_on(named_bus(&urls, "edge")).await;
    let mut followers = Vec::new();
    for _ in 0..CLIENTS {
        followers.push(Follower::connect(&edge).await);
    }
    converge_all(&mut followers, &sim, &spec, 20).await;

    // Kill the node the edge is connected to, mid-stream (SIGKILL: no goodbye).
    let nodes = cluster.nodes_of("edge");
    assert_eq!(nodes.len(), 1, "the edge holds one connection: {nodes:?}");
    let killed = nodes[0];
    let publisher_nodes = cluster.nodes_of("publisher");
    cluster.node(killed).kill();
    wait_bus(&edge, "the edge did not fail over", |c| c.disconnects >= 1 && c.connected).await;
    let now = cluster.nodes_of("edge");
    assert!(now.len() == 1 && now[0] != killed, "the edge is on another node now: {now:?} (killed {killed})");
    // Its clients saw at most a resync, never a broken chain (`Follower` panics on one), and
    // their books come to equal the simulator's again.
    converge_all(&mut followers, &sim, &spec, 20).await;
    let e = bus_counters(&edge).await;
    assert_eq!(e.malformed, 0, "{e:?}");
    let p = bus_counters(&publisher).await;
    assert!(p.connected, "the publisher is connected (it was on {publisher_nodes:?}): {p:?}");
    edge.shutdown().await;
    publisher.shutdown().await;
    sim.shutdown().await;
}

/// The node the *publisher* is connected to dies (the edges are on the other two): the
/// publisher fails over to another node and goes on publishing; the edges never lose their
/// own connection, and their clients' books come to equal the simulator's again without a
/// broken chain. (The client holds what the publisher writes while it reconnects, so the
/// edges usually see no gap at all; a message lost with the node would be a gap and a resync.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_publisher_fails_over_when_its_cluster_node_dies() {
    let mut cluster = NatsCluster::start(3);
    let sim = sim().await;
    let spec = spec(&sim).await;
    let publisher = publisher_on(&sim, named_bus(&cluster.urls(), "publisher")).await;
    let nodes = cluster.nodes_of("publisher");
    assert_eq!(nodes.len(), 1, "the publisher holds one connection: {nodes:?}");
    let killed = nodes[0];
    // Each edge is given one of the other nodes (it learns the rest from the cluster).
    let others: Vec<String> =
        cluster.urls().split(',').enumerate().filter(|(i, _)| *i != killed).map(|(_, u)| u.to_owned()).collect();
    let edges = [edge_on(named_bus(&others[0], "edge-a")).await, edge_on(named_bus(&others[1], "edge-b")).await];
    for (name, url) in [("edge-a", &others[0]), ("edge-b", &others[1])] {
        let on = cluster.nodes_of(name);
        assert!(on.len() == 1 && !on.contains(&killed), "{name} ({url}) is on {on:?}, the publisher on {killed}");
    }
    let mut followers = Vec::new();
    for e in &edges {
        for _ in 0..CLIENTS {
            followers.push(Follower::connect(e).await);
        }
    }
    converge_all(&mut followers, &sim, &spec, 20).await;

    cluster.node(killed).kill();
    let p = wait_bus(&publisher, "the publisher did not fail over", |c| c.disconnects >= 1 && c.connected).await;
    let now = cluster.nodes_of("publisher");
    assert!(now.len() == 1 && now[0] != killed, "the publisher is on another node now: {now:?} (killed {killed})");
    assert_eq!(p.publish_errors, 0, "{p:?}");
    let published = p.published;
    converge_all(&mut followers, &sim, &spec, 20).await;
    assert!(bus_counters(&publisher).await.published > published, "publishing after the failover");
    for e in &edges {
        let c = bus_counters(e).await;
        assert!(c.connected && c.disconnects == 0 && c.malformed == 0, "{c:?}");
    }
    for e in edges {
        e.shutdown().await;
    }
    publisher.shutdown().await;
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_messages_are_skipped_and_sequence_gaps_resync() {
    let nats = NatsServer::start();
    let sim = sim().await;
    let spec = spec(&sim).await;
    let publisher = publisher(&sim, &nats.url()).await;
    let edge = edge(&nats.url()).await;
    let mut followers = vec![Follower::connect(&edge).await, Follower::connect(&edge).await];
    converge_all(&mut followers, &sim, &spec, 10).await;

    // Someone else on the subject: a message without headers, one whose payload is not a
    // notification of that channel, then a real frame with a jump in the sequence.
    let rogue = async_nats::connect(nats.url()).await.unwrap();
    let subject = format!("ticktrade.deribit.book.{INSTRUMENT}");
    let mut spy = rogue.subscribe(subject.clone()).await.unwrap();
    rogue.flush().await.unwrap();
    let real = futures_util::StreamExt::next(&mut spy).await.unwrap();
    let headers = real.headers.clone().unwrap();
    let publisher_id = headers.get("Ticktrade-Publisher").unwrap().to_string();
    let seq: u64 = headers.get("Ticktrade-Seq").unwrap().to_string().parse().unwrap();
    rogue.publish(subject.clone(), Bytes::from_static(b"{}")).await.unwrap();
    let mut forged = async_nats::HeaderMap::new();
    forged.insert("Ticktrade-Publisher", publisher_id.as_str());
    forged.insert("Ticktrade-Seq", (seq + 1_000).to_string().as_str());
    rogue.publish_with_headers(subject.clone(), forged.clone(), Bytes::from_static(b"not json")).await.unwrap();
    forged.insert("Ticktrade-Seq", (seq + 2_000).to_string().as_str());
    rogue.publish_with_headers(subject, forged, real.payload.clone()).await.unwrap();
    rogue.flush().await.unwrap();
    let c =
        wait_bus(&edge, "malformed messages not counted, or no resync", |c| c.malformed >= 2 && c.resyncs >= 1).await;
    assert!(c.gaps >= 1, "{c:?}");
    // The clients never saw a broken chain and still follow the simulator.
    converge_all(&mut followers, &sim, &spec, 10).await;
    edge.shutdown().await;
    publisher.shutdown().await;
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_subscriber_does_not_slow_an_edge_or_the_publisher() {
    let nats = NatsServer::start();
    let sim = sim().await;
    let spec = spec(&sim).await;
    let publisher = publisher(&sim, &nats.url()).await;
    let edge = edge(&nats.url()).await;
    // A deliberately slow edge: subscribed to everything with room for 4 messages, never read.
    let slow_events = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = std::sync::Arc::clone(&slow_events);
    let slow = async_nats::ConnectOptions::new()
        .subscription_capacity(4)
        .event_callback(move |e| {
            let counted = std::sync::Arc::clone(&counted);
            async move {
                if matches!(e, async_nats::Event::SlowConsumer(_)) {
                    counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
        })
        .connect(nats.url())
        .await
        .unwrap();
    let _stalled = slow.subscribe("ticktrade.deribit.>").await.unwrap();
    let mut followers = vec![Follower::connect(&edge).await, Follower::connect(&edge).await];
    converge_all(&mut followers, &sim, &spec, 30).await;
    assert!(slow_events.load(std::sync::atomic::Ordering::Relaxed) > 0, "the stalled subscriber fell behind");
    let p = bus_counters(&publisher).await;
    assert_eq!((p.dropped, p.publish_errors), (0, 0), "the publisher was not slowed: {p:?}");
    let e = bus_counters(&edge).await;
    assert_eq!((e.gaps, e.slow_consumers, e.malformed), (0, 0, 0), "the other edge lost nothing: {e:?}");
    edge.shutdown().await;
    publisher.shutdown().await;
    sim.shutdown().await;
}

/// Every instrument the simulator lists.
async fn instruments(sim: &SimHandle) -> Vec<String> {
    let mut ws = WsClient::connect(&sim.ws_url()).await;
    let reply = ws.call("public/get_instruments", json!({"currency":"any"})).await;
    reply["result"].as_array().unwrap().iter().map(|i| i["instrument_name"].as_str().unwrap().to_owned()).collect()
}

/// Clients of `serve` subscribed to every instrument's book, trades and ticker, their frames
/// read and dropped by a task of their own (abort it at the end): the edge's NATS connection
/// then carries everything the publisher sends. Several clients, since serve takes up to
/// `max_subscriptions` channels a connection.
async fn firehose(serve: &ServeHandle, instruments: &[String]) -> tokio::task::JoinHandle<()> {
    let channels: Vec<String> = instruments
        .iter()
        .flat_map(|i| [format!("book.{i}.100ms"), format!("trades.{i}.100ms"), format!("ticker.{i}.100ms")])
        .collect();
    let per_client = ServeConfig::default().max_subscriptions;
    let mut clients = Vec::new();
    for share in channels.chunks(per_client) {
        let mut ws = WsClient::connect(&serve.ws_url()).await;
        // In runs that fit the venue's request limit, as a client of Deribit must.
        for run in ticktrade_deribit_proto::requests::channel_batches(share) {
            let reply = ws.call("public/subscribe", json!({ "channels": run })).await;
            assert_eq!(reply["result"].as_array().map(Vec::len), Some(run.len()), "{reply}");
        }
        // A frozen edge sends nothing for a while: no deadline on these readers.
        ws.set_wait(Duration::from_secs(3600));
        clients.push(ws);
    }
    let frames = futures_util::stream::select_all(clients.into_iter().map(|ws| {
        Box::pin(futures_util::stream::unfold(ws, |mut ws| async move { ws.next_text().await.map(|t| (t, ws)) }))
    }));
    tokio::spawn(async move {
        use futures_util::StreamExt as _;
        frames.for_each(|_| async {}).await;
    })
}

/// Whether the NATS server closed the connection named `name` as a slow consumer.
fn cut_off_as_slow(nats: &NatsServer, name: &str) -> bool {
    nats.monitor("/connz?state=closed").is_some_and(|v| {
        v["connections"].as_array().is_some_and(|c| {
            c.iter().any(|c| c["name"] == name && c["reason"].as_str().is_some_and(|r| r.starts_with("Slow Consumer")))
        })
    })
}

/// A deliberately slow edge: the runtime it runs on is frozen (as a paused process or a
/// starved host), so it reads nothing; the NATS server, unable to write to it within its
/// `write_deadline`, closes its connection as a slow consumer. Thawed, the edge sees the
/// loss, reconnects and resyncs every book, and its clients' books come to equal the
/// simulator's without a broken chain. Meanwhile the other edge loses nothing (no gap, no
/// resync, its clients on their first snapshot) and the publisher drops nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_edge_is_cut_off_and_recovers_while_the_other_loses_nothing() {
    // As docs/SCALING.md runs it: a slow subscriber loses messages rather than stalling the
    // publishers that feed it (nats-server's default stalls them).
    let nats = NatsServer::start_configured("write_deadline: \"200ms\"\nno_fast_producer_stall: true\n");
    // The server gives up only once the kernel's socket buffers (megabytes on loopback) are
    // full: a busier market, and clients on both edges asking for everything (`firehose`),
    // fill them sooner.
    let sim = sim_at(1200).await;
    let spec = spec(&sim).await;
    let publisher = publisher(&sim, &nats.url()).await;
    let steady = edge(&nats.url()).await;
    let slow_runtime = Freezable::start("slow-edge");
    let slow_bus = named_bus(&nats.url(), "slow-edge");
    let slow = slow_runtime.run(move || edge_on(slow_bus)).await;
    let names = instruments(&sim).await;
    let firehoses = [firehose(&steady, &names).await, firehose(&slow, &names).await];
    let mut at_steady = Vec::new();
    let mut at_slow = Vec::new();
    for _ in 0..CLIENTS {
        at_steady.push(Follower::connect(&steady).await);
        at_slow.push(Follower::connect(&slow).await);
    }
    converge_all(&mut at_steady, &sim, &spec, 10).await;
    converge_all(&mut at_slow, &sim, &spec, 10).await;

    let frozen = slow_runtime.freeze().await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cut_off_as_slow(&nats, "slow-edge") {
        assert!(
            Instant::now() < deadline,
            "the NATS server never cut the frozen edge off: {:?}",
            nats.monitor("/varz")
        );
        // The other edge's clients go on reading meanwhile.
        converge_all(&mut at_steady, &sim, &spec, 5).await;
    }
    frozen.thaw();
    wait_bus(&slow, "the slow edge did not reconnect and resync", |c| {
        c.connected && c.disconnects >= 1 && c.resyncs >= 1
    })
    .await;
    converge_all(&mut at_slow, &sim, &spec, 20).await;
    converge_all(&mut at_steady, &sim, &spec, 10).await;
    let s = bus_counters(&steady).await;
    assert!(s.connected && s.received > 0, "{s:?}");
    assert_eq!((s.gaps, s.resyncs, s.slow_consumers, s.disconnects, s.malformed), (0, 0, 0, 0, 0), "{s:?}");
    assert!(at_steady.iter().all(|f| f.snapshots == 1), "the other edge's clients needed no resync");
    let p = bus_counters(&publisher).await;
    assert_eq!((p.dropped, p.publish_errors, p.disconnects), (0, 0, 0), "the publisher was not slowed: {p:?}");
    let varz = nats.monitor("/varz").unwrap();
    assert_eq!(varz["stalled_clients"], 0, "the server never held the publisher back");
    for f in firehoses {
        f.abort();
    }
    slow.shutdown().await;
    steady.shutdown().await;
    publisher.shutdown().await;
    sim.shutdown().await;
}

#[tokio::test]
async fn unreachable_bus_and_bad_credentials_fail_at_start() {
    let port = ticktrade_testkit::nats::free_port();
    let config = ServeConfig {
        upstream: UpstreamSource::Nats(bus(&format!("nats://127.0.0.1:{port}"))),
        ..ServeConfig::default()
    };
    let err = ticktrade_serve::spawn(config).await.err().expect("no NATS server there");
    let text = err.to_string();
    assert!(matches!(err, ServeError::Bus(_)) && text.contains(&format!("127.0.0.1:{port}")), "{text}");

    let nats = NatsServer::start_with(&["--user", "edge", "--pass", "right-one"]);
    let wrong = format!("nats://edge:wrong-one@127.0.0.1:{}", nats.port());
    let config = ServeConfig { upstream: UpstreamSource::Nats(bus(&wrong)), ..ServeConfig::default() };
    let err = ticktrade_serve::spawn(config).await.err().expect("the login must be refused");
    let text = format!("{err} {err:?}");
    assert!(matches!(err, ServeError::Bus(_)), "{text}");
    assert!(!text.contains("wrong-one"), "the password leaked: {text}");
    // The right password gets in (and stays out of messages too).
    let sim = sim().await;
    let right = format!("nats://edge:right-one@127.0.0.1:{}", nats.port());
    let config = ServeConfig {
        upstream: UpstreamSource::Url(sim.ws_url()),
        publish: Some(bus(&right)),
        ..ServeConfig::default()
    };
    let serve = ticktrade_serve::spawn(config).await.unwrap();
    assert!(bus_counters(&serve).await.connected);
    serve.shutdown().await;
    sim.shutdown().await;
}
