//! Many loopback clients on `ticktrade serve` over the simulator with book changes dropped
//! upstream: every client's chain is unbroken, books equal the simulator's, the server
//! resynced from upstream at least once.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::time::Duration;

use futures_util::future;
use serde_json::{Value, json};
use ticktrade_book::l2::L2Book;
use ticktrade_core::{InstrumentSpec, Side};
use ticktrade_deribit_proto::{BookKind, decode_book_units};
use ticktrade_serve::ServeConfig;
use ticktrade_sim::{Fault, SimConfig};
use ticktrade_testkit::WsClient;

use crate::common;
use common::Served;

const CLIENTS: usize = 200;
const CHANGES: u64 = 25;

async fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    tcp.write_all(req.as_bytes()).await.unwrap();
    let mut text = String::new();
    tcp.read_to_string(&mut text).await.unwrap();
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    text
}

async fn specs(url: &str) -> HashMap<String, InstrumentSpec> {
    let mut ws = WsClient::connect(url).await;
    let reply = ws.call_text("public/get_instruments", json!({"currency":"any"})).await;
    ticktrade_deribit_proto::instrument::parse_instruments_response(&reply, 0)
        .unwrap()
        .into_iter()
        .map(|s| (s.name.clone(), s))
        .collect()
}

fn top(book: &L2Book, spec: &InstrumentSpec, side: Side) -> Vec<(String, String)> {
    book.top(side, 10)
        .map(|l| (spec.price_to_decimal(l.price).to_string(), spec.qty_to_decimal(l.qty).to_string()))
        .collect()
}

#[derive(Default, Debug)]
struct Seen {
    changes: u64,
    snapshots: u64,
    windows: u64,
    others: u64,
}

/// One client: subscribes, follows every book chain (panics on a gap), and after `CHANGES`
/// changes of BTC-PERPETUAL waits until its book equals the simulator's.
async fn client(serve: &Served, specs: &HashMap<String, InstrumentSpec>, i: usize) -> Seen {
    let mut ws = WsClient::connect(&serve.ws_url()).await;
    let interval = if i.is_multiple_of(2) { "raw" } else { "100ms" };
    let mut channels = vec![format!("book.BTC-PERPETUAL.{interval}")];
    match i % 3 {
        0 => channels.extend(["book.ETH-PERPETUAL.100ms".into(), "trades.ETH-PERPETUAL.raw".into()]),
        1 => channels.extend(["book.BTC-PERPETUAL.5.10.100ms".into(), "ticker.BTC-PERPETUAL.100ms".into()]),
        _ => channels.extend(["trades.BTC-PERPETUAL.100ms".into(), "book.ETH-PERPETUAL.raw".into()]),
    }
    let reply = ws.call("public/subscribe", json!({"channels": channels})).await;
    assert_eq!(reply["result"].as_array().unwrap().len(), channels.len(), "{reply}");
    let sim = serve.sim();
    let mut books: HashMap<String, L2Book> = HashMap::new();
    let mut seen = Seen::default();
    let mut updates = Vec::new();
    loop {
        let text = ws.next_text().await.expect("socket closed");
        let v: Value = serde_json::from_str(&text).unwrap();
        let channel = v["params"]["channel"].as_str().unwrap_or_default().to_owned();
        let parts: Vec<&str> = channel.split('.').collect();
        if parts.len() == 5 {
            seen.windows += 1;
            continue;
        }
        if parts.first() != Some(&"book") {
            seen.others += 1;
            continue;
        }
        let spec = &specs[parts[1]];
        let header = decode_book_units(text.as_bytes(), spec, &mut updates).unwrap();
        let book = books.entry(channel.clone()).or_default();
        match header.kind {
            BookKind::Snapshot => {
                seen.snapshots += 1;
                book.apply_snapshot(header.change_id, &updates);
            }
            _ => {
                let prev = header.prev_change_id.unwrap();
                assert_eq!(book.last_change_id(), Some(prev), "client {i}: gap on {channel}");
                book.apply_change(header.change_id, prev, &updates).unwrap();
                if parts[1] == "BTC-PERPETUAL" {
                    seen.changes += 1;
                }
            }
        }
        if parts[1] == "BTC-PERPETUAL" && seen.changes >= CHANGES {
            let want = sim.book_top("BTC-PERPETUAL", 10).await.unwrap();
            let dec = |l: &Vec<(ticktrade_core::Decimal, ticktrade_core::Decimal)>| {
                l.iter().map(|(p, q)| (p.to_string(), q.to_string())).collect::<Vec<_>>()
            };
            if top(book, spec, Side::Buy) == dec(&want.bids) && top(book, spec, Side::Sell) == dec(&want.asks) {
                return seen;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_clients_follow_unbroken_chains_through_upstream_gaps() {
    let sim = SimConfig { rate_per_s: 400, ..SimConfig::default() };
    let serve = common::spawn(sim, ServeConfig::default()).await;
    let specs = specs(&serve.ws_url()).await;
    let clients = future::join_all((0..CLIENTS).map(|i| client(&serve, &specs, i)));
    let faults = async {
        let mut tick = tokio::time::interval(Duration::from_millis(150));
        for n in 0u32.. {
            tick.tick().await;
            let instrument = Some(if n.is_multiple_of(2) { "BTC-PERPETUAL" } else { "ETH-PERPETUAL" }.to_owned());
            let fault = match n % 3 {
                0 => Fault::DropChange { instrument },
                1 => Fault::DuplicateChange { instrument },
                _ => Fault::RestartBook { instrument, levels: 2 },
            };
            serve.sim().inject(fault);
        }
    };
    let seen = tokio::time::timeout(Duration::from_secs(120), async {
        tokio::select! {
            seen = clients => seen,
            () = faults => unreachable!(),
        }
    })
    .await
    .expect("clients did not converge on the simulator's book");
    assert_eq!(seen.len(), CLIENTS);
    assert!(seen.iter().all(|s| s.snapshots >= 1 && s.changes >= CHANGES), "{:?}", &seen[..3]);
    assert!(seen.iter().filter(|s| s.windows > 0).count() >= CLIENTS / 3 - 1);
    assert!(seen.iter().filter(|s| s.others > 0).count() > CLIENTS / 2);
    // The clients have gone (their sockets dropped), but the server counts a frame until it
    // notices a socket is closed, so `/metrics` is compared with the totals once they settle:
    // the same count from both within a few seconds.
    let mut settled = None;
    for _ in 0..50 {
        let totals = serve.totals().await.unwrap();
        let metrics = http_get(serve.addr(), "/metrics").await;
        let agree = metrics.contains(&format!("ticktrade_serve_messages_total {}\n", totals.messages));
        settled = Some((totals, metrics));
        if agree {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (totals, metrics) = settled.unwrap();
    assert!(totals.resyncs >= 1, "no upstream resync happened: {totals:?}");
    assert_eq!(totals.drops, 0);
    assert!(metrics.contains(&format!("ticktrade_serve_messages_total {}\n", totals.messages)), "{metrics}");
    let count = metrics.lines().find_map(|l| l.strip_prefix("ticktrade_serve_fanout_delay_seconds_count ")).unwrap();
    assert!(count.parse::<u64>().unwrap() > CLIENTS as u64 * CHANGES, "{metrics}");
    serve.shutdown().await;
}
