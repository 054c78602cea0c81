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
    let mut child = Command::new(BIN)
        .args(["hl", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _server = Server(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("ws://"))
        .unwrap_or_else(|| panic!("no url in {line:?}"))
        .to_owned();
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
