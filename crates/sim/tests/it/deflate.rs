//! permessage-deflate (RFC 7692): a client that offers it gets it, one that does not gets
//! plain frames; pings are answered either way.
//!
//! Checked twice: with yawc's own client offering compression (a whole JSON-RPC round trip and
//! a compressed book snapshot), and on a raw socket, where the `Sec-WebSocket-Extensions`
//! response header and the RSV1 bit of the server's frames are visible, and the compressed
//! payload is inflated here with flate2 to prove it is deflate and not something else.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use ticktrade_sim::SimConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const WAIT: Duration = Duration::from_secs(10);

async fn sim() -> ticktrade_sim::SimHandle {
    ticktrade_sim::spawn_loopback(SimConfig { rate_per_s: 200, ..SimConfig::default() }).await.unwrap()
}

/// Sends an upgrade request (with or without a deflate offer) and returns the response head.
async fn handshake(addr: std::net::SocketAddr, offer: bool) -> (TcpStream, String) {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let extensions =
        if offer { "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n" } else { "" };
    let request = format!(
        "GET /ws/api/v2 HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n{extensions}\r\n"
    );
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        tokio::time::timeout(WAIT, tcp.read_exact(&mut byte)).await.unwrap().unwrap();
        head.push(byte[0]);
    }
    (tcp, String::from_utf8(head).unwrap().to_ascii_lowercase())
}

/// A masked client frame (FIN set, RSV bits clear: an uncompressed message is always allowed).
fn client_frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mask = [1u8, 2, 3, 4];
    let mut out = vec![0x80 | opcode];
    match payload.len() {
        n if n < 126 => out.push(0x80 | n as u8),
        n => {
            out.push(0x80 | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
    }
    out.extend_from_slice(&mask);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    out
}

/// Reads one server frame: (first byte, payload).
async fn server_frame(tcp: &mut TcpStream) -> (u8, Vec<u8>) {
    let mut head = [0u8; 2];
    tokio::time::timeout(WAIT, tcp.read_exact(&mut head)).await.unwrap().unwrap();
    assert_eq!(head[1] & 0x80, 0, "server frames are not masked");
    let len = match head[1] & 0x7f {
        126 => {
            let mut b = [0u8; 2];
            tcp.read_exact(&mut b).await.unwrap();
            u64::from(u16::from_be_bytes(b))
        }
        127 => {
            let mut b = [0u8; 8];
            tcp.read_exact(&mut b).await.unwrap();
            u64::from_be_bytes(b)
        }
        n => u64::from(n),
    };
    let mut payload = vec![0u8; len as usize];
    tcp.read_exact(&mut payload).await.unwrap();
    (head[0], payload)
}

/// The JSON text of a server message, inflating it when RSV1 says it is compressed. The
/// server keeps its compression context between messages, so one inflater serves them all.
fn message_text(inflater: &mut flate2::Decompress, first: u8, payload: &[u8]) -> String {
    if first & 0x40 == 0 {
        return String::from_utf8(payload.to_vec()).unwrap();
    }
    let mut data = payload.to_vec();
    data.extend_from_slice(&[0x00, 0x00, 0xff, 0xff]);
    let mut out = Vec::with_capacity(16 << 20);
    let before = inflater.total_in();
    inflater.decompress_vec(&data, &mut out, flate2::FlushDecompress::Sync).unwrap();
    assert_eq!(inflater.total_in() - before, data.len() as u64, "output buffer too small");
    String::from_utf8(out).unwrap()
}

#[tokio::test]
async fn deflate_is_negotiated_only_when_offered() {
    let sim = sim().await;
    let (_, head) = handshake(sim.addr(), true).await;
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(head.contains("sec-websocket-extensions: permessage-deflate"), "deflate not accepted: {head}");

    let (_, head) = handshake(sim.addr(), false).await;
    assert!(head.starts_with("http/1.1 101"), "{head}");
    assert!(!head.contains("sec-websocket-extensions"), "extension without an offer: {head}");
    sim.shutdown().await;
}

#[tokio::test]
async fn compressed_frames_carry_rpc_and_book_snapshots_and_pings_are_answered() {
    let sim = sim().await;
    let (mut tcp, _) = handshake(sim.addr(), true).await;

    // A ping is answered with a pong carrying the same payload.
    tcp.write_all(&client_frame(0x9, b"p1")).await.unwrap();
    let (first, payload) = server_frame(&mut tcp).await;
    assert_eq!((first & 0x0f, payload.as_slice()), (0xA, b"p1".as_slice()));

    // A subscribe request: the reply and the book snapshot (tens of kB) come back; the big
    // snapshot is compressed (RSV1) and inflates to the JSON a plain client would get.
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "public/subscribe",
        "params": {"channels": ["book.BTC-PERPETUAL.100ms"]}});
    tcp.write_all(&client_frame(0x1, request.to_string().as_bytes())).await.unwrap();
    let mut inflater = flate2::Decompress::new(false);
    let mut saw_compressed_snapshot = false;
    let mut saw_reply = false;
    for _ in 0..20 {
        let (first, payload) = server_frame(&mut tcp).await;
        assert_eq!(first & 0x0f, 0x1, "text frames only");
        let v: Value = serde_json::from_str(&message_text(&mut inflater, first, &payload)).unwrap();
        if v["id"] == 1 {
            assert_eq!(v["result"], json!(["book.BTC-PERPETUAL.100ms"]), "{v}");
            saw_reply = true;
        }
        if v["params"]["data"]["type"] == "snapshot" {
            assert!(first & 0x40 != 0, "a {} byte snapshot went out uncompressed", payload.len());
            assert!(v["params"]["data"]["bids"].as_array().unwrap().len() >= 100, "{v}");
            saw_compressed_snapshot = true;
        }
        if saw_reply && saw_compressed_snapshot {
            break;
        }
    }
    assert!(saw_reply && saw_compressed_snapshot);
    sim.shutdown().await;
}

#[tokio::test]
async fn yawc_client_with_compression_round_trips() {
    let sim = sim().await;
    let url = sim.ws_url().parse().unwrap();
    let options = yawc::Options::default().with_low_latency_compression();
    let mut ws =
        tokio::time::timeout(WAIT, yawc::WebSocket::connect(url).with_options(options)).await.unwrap().unwrap();
    let mut call = async |id: u64, method: &str, params: Value| -> Value {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        ws.send(yawc::Frame::text(request.to_string())).await.unwrap();
        loop {
            let frame = tokio::time::timeout(WAIT, ws.next()).await.unwrap().unwrap();
            let v: Value = serde_json::from_str(frame.as_str()).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    };
    assert_eq!(call(1, "public/test", json!({})).await["result"]["version"], "1.2.26");
    let book = call(2, "public/get_order_book", json!({"instrument_name": "BTC-PERPETUAL", "depth": 500})).await;
    assert!(book["result"]["bids"].as_array().unwrap().len() >= 100, "{book}");
    sim.shutdown().await;
}
