//! The hot loop against the real simulator on loopback: authenticate and subscribe on the hot
//! path's own WebSocket, let `HotLoop` answer the simulator's `book.BTC-PERPETUAL.raw` changes
//! with post-only orders until 20 are written, then read the last acknowledgement: accepted,
//! with the label (our t0 and the book's change_id) echoed, and the simulator counted them all.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap

use std::net::TcpStream;
use std::time::Duration;

use serde_json::Value;
use ticktrade_core::Qty;
use ticktrade_deribit_proto::order::OrderLabel;
use ticktrade_gateway::hot::feed::btc_perpetual;
use ticktrade_gateway::hot::{Exit, HotConfig, HotLoop, Pipeline, QuoteOnTick};
use ticktrade_latency::{TscClock, spsc_ring};
use ticktrade_net::frame::{Opcode, Role, WsReader, WsWriter};
use ticktrade_net::handshake;
use ticktrade_sim::{ApiKey, SimConfig};

const ORDERS: u64 = 20;

/// Reads until the response with `id`, skipping anything else; returns it parsed.
fn response(stream: &mut TcpStream, reader: &mut WsReader, id: u64) -> Value {
    loop {
        while let Some(message) = reader.next_message().unwrap() {
            if message.opcode != Opcode::Text {
                continue;
            }
            let value: Value = serde_json::from_slice(message.payload).unwrap();
            if value["id"] == id {
                return value;
            }
        }
        reader.fill(stream).unwrap();
    }
}

fn request(stream: &mut TcpStream, writer: &mut WsWriter, text: &str) {
    writer.frame_of(Opcode::Text, text.as_bytes());
    writer.write_to(stream).unwrap();
}

#[test]
fn hot_loop_trades_against_the_simulator() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let sim = runtime
        .block_on(ticktrade_sim::spawn_loopback(SimConfig { rate_per_s: 2_000, ..SimConfig::default() }))
        .unwrap();
    let key = ApiKey::default_key();

    let (mut stream, mut reader) = handshake::connect(sim.addr(), "127.0.0.1", "/ws/api/v2").unwrap();
    let mut writer = WsWriter::new(Role::Client, 1024, 11);
    let auth = format!(
        r#"{{"jsonrpc":"2.0","id":1001,"method":"public/auth","params":{{"grant_type":"client_credentials","client_id":"{}","client_secret":"{}"}}}}"#,
        key.client_id,
        key.client_secret.expose()
    );
    request(&mut stream, &mut writer, &auth);
    let authed = response(&mut stream, &mut reader, 1001);
    assert!(authed["result"]["access_token"].is_string(), "{authed}");
    request(
        &mut stream,
        &mut writer,
        r#"{"jsonrpc":"2.0","id":1002,"method":"private/subscribe","params":{"channels":["book.BTC-PERPETUAL.raw"]}}"#,
    );
    // The snapshot may arrive before the subscribe response, so the hot loop takes everything
    // from here (responses are not book frames and are skipped). A read timeout turns a silent
    // simulator into a failure instead of a hung test.
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();

    let spec = btc_perpetual().unwrap();
    let pipeline = Pipeline::new(&spec, QuoteOnTick::new(Qty::from_raw(1), 1), 4096);
    let (tx, _rx) = spsc_ring(1024);
    let config = HotConfig { stop_after_orders: Some(ORDERS), ..HotConfig::default() };
    let mut hot = HotLoop::new(stream, reader, pipeline, TscClock::new(), tx, None, config);
    let (report, exit) = hot.run().unwrap();
    assert_eq!(exit, Exit::Stopped);
    assert_eq!(report.pipeline.orders, ORDERS);
    assert_eq!(report.pipeline.malformed, 0, "every simulator book frame decodes: {report:?}");
    let (mut stream, mut reader, pipeline) = hot.into_parts();
    assert!(pipeline.book().best_bid().is_some());

    // The pipeline numbers its orders 1..=ORDERS and the loop skipped the acks that arrived
    // while it ran; the simulator answers in order, so the last ack means all were handled.
    let ack = response(&mut stream, &mut reader, ORDERS);
    let order = &ack["result"]["order"];
    assert!(order.is_object(), "order {ORDERS} rejected: {ack}");
    assert_eq!(order["instrument_name"], "BTC-PERPETUAL");
    assert_eq!(order["direction"], "buy");
    let label = OrderLabel::parse(order["label"].as_str().unwrap()).unwrap();
    assert!(label.change_id > 0 && label.recv_utc_ns > 1_577_836_800_000_000_000, "{label:?}");
    assert!(sim.stats().orders >= ORDERS);
    drop(stream);
}
