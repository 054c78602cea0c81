//! `ticktrade hl` as real processes: the generator writes files, the server (bound to
//! 127.0.0.1:0) follows them, and a client speaking Hyperliquid's format sees the blocks.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

const BIN: &str = env!("CARGO_BIN_EXE_ticktrade");

fn generate(dir: &std::path::Path, blocks: u32) {
    let status = Command::new(BIN)
        .args([
            "hl",
            "gen",
            "--coins",
            "10",
            "--block-ms",
            "1",
            "--seed",
            "3",
            "--blocks",
            &blocks.to_string(),
            "--out",
        ])
        .arg(dir)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `ticktrade hl` on `dir`, bound to a free loopback port: the process, its `ws://` URL and
/// the first line it printed.
fn start_server(dir: &std::path::Path) -> (Server, String, String) {
    let mut child = Command::new(BIN)
        .args(["hl", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let server = Server(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("ws://"))
        .unwrap_or_else(|| panic!("no url in {line:?}"))
        .to_owned();
    (server, url, line)
}

async fn next_json(
    ws: &mut tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
) -> Value {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(30), ws.next())
            .await
            .expect("a frame within 30 s")
            .unwrap()
            .unwrap();
        if let Message::Text(text) = msg {
            return serde_json::from_str(&text).unwrap();
        }
    }
}

#[tokio::test]
async fn server_process_follows_generator_process() {
    let tmp = tempfile::tempdir().unwrap();
    generate(tmp.path(), 1);
    let (_server, url, line) = start_server(tmp.path());
    assert!(line.contains("snapshot at block 1000000"), "{line}");

    let (mut ws, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
    ws.send(Message::Text(
        json!({"method": "subscribe", "subscription": {"type": "l4Book", "coin": "BTC"}}).to_string().into(),
    ))
    .await
    .unwrap();
    assert_eq!(next_json(&mut ws).await["channel"], "subscriptionResponse");
    // The engine reads the files already there before it answers anyone: block 1 is applied.
    assert_eq!(next_json(&mut ws).await["data"]["Snapshot"]["height"], 1_000_001);
    ws.send(Message::Text(
        json!({"method": "subscribe", "subscription": {"type": "l2Book", "coin": "BTC", "nSigFigs": 3}})
            .to_string()
            .into(),
    ))
    .await
    .unwrap();
    assert_eq!(next_json(&mut ws).await["channel"], "subscriptionResponse");
    let book = next_json(&mut ws).await;
    assert_eq!(book["channel"], "l2Book");
    assert!(!book["data"]["levels"][0].as_array().unwrap().is_empty());

    // The same seed regenerates the same market, so the second run continues the first.
    generate(tmp.path(), 4);
    let mut heights = Vec::new();
    while heights.last() != Some(&1_000_004) {
        let msg = next_json(&mut ws).await;
        if msg["channel"] == "l4Book" {
            heights.push(msg["data"]["Updates"]["height"].as_u64().unwrap());
        }
    }
    assert_eq!(heights, vec![1_000_002, 1_000_003, 1_000_004]);
}

/// `ticktrade hl stats` against a live server fed by a real-time generator: book and trade
/// latencies from the WebSocket, and the file-level floor from its own notified reader.
#[test]
fn stats_measures_a_live_server_and_the_file_floor() {
    let tmp = tempfile::tempdir().unwrap();
    generate(tmp.path(), 1);
    let (_server, url, _) = start_server(tmp.path());
    // The same seed continues the market of the bootstrap; blocks are stamped with the wall
    // clock, one every 20 ms, for longer than stats measures.
    let writer = Command::new(BIN)
        .args(["hl", "gen", "--coins", "10", "--block-ms", "20", "--seed", "3", "--blocks", "400", "--out"])
        .arg(tmp.path())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _writer = Server(writer);
    let out = Command::new(BIN)
        .args(["hl", "stats", "--url", &url, "--coins", "BTC,ETH", "--duration", "3", "--json", "--data-dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let names: Vec<&str> = lines.iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "hl book (block time → received)",
            "hl trade (block time → received)",
            "hl file floor (block time → line read)"
        ]
    );
    for l in &lines {
        assert_eq!(l["unit"], "ns");
        let count = l["count"].as_u64().unwrap();
        assert!(count > 0, "{l}");
        let (p50, max) = (l["p50"].as_u64().unwrap(), l["max"].as_u64().unwrap());
        assert!(p50 > 0 && p50 <= max, "{l}");
    }
    // Two coins' books over ~3 s of 20 ms blocks, and three streams' lines for the floor.
    assert!(lines[0]["count"].as_u64().unwrap() >= 20, "{}", lines[0]);
    assert!(lines[2]["count"].as_u64().unwrap() >= 30, "{}", lines[2]);
}
