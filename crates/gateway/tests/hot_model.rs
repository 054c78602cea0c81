//! The hot path against slow, obviously right models:
//! - every order the pipeline emits, unmasked and parsed with serde_json, is the order a
//!   `BTreeMap` book + the same rule would send, for the same tick;
//! - the `HotLoop` over a real loopback socket answers a ping with a pong carrying the same
//!   payload, turns a book frame into an order whose label names the tick, and answers a close.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap

use std::collections::BTreeMap;
use std::net::TcpListener;

use serde_json::Value;
use ticktrade_core::Qty;
use ticktrade_deribit_proto::order::OrderLabel;
use ticktrade_deribit_proto::{BookKind, decode_book_units};
use ticktrade_gateway::hot::feed::{SyntheticFeed, btc_perpetual};
use ticktrade_gateway::hot::{Exit, HotConfig, HotLoop, Outcome, Pipeline, QuoteOnTick, RawStamps};
use ticktrade_latency::{TscClock, spsc_ring};
use ticktrade_net::frame::{Opcode, Role, WsReader, WsWriter};
use ticktrade_net::handshake;

/// Unmasks a client frame and parses its payload.
fn parse_order(frame: &[u8]) -> Value {
    let mut reader = WsReader::new(Role::Server, 1024);
    reader.feed(frame);
    let message = reader.next_message().unwrap().unwrap();
    assert_eq!(message.opcode, Opcode::Text);
    serde_json::from_slice(message.payload).unwrap()
}

#[test]
fn orders_match_a_btreemap_model_tick_by_tick() {
    let spec = btc_perpetual().unwrap();
    let feed = SyntheticFeed::generate(&spec, 5_000, 3);
    let clock = TscClock::new();
    let mut pipeline = Pipeline::new(&spec, QuoteOnTick::new(Qty::from_raw(1), 1), feed.snapshot_levels);
    let mut writer = WsWriter::new(Role::Client, 1024, 5);
    let (mut bids, mut asks) = (BTreeMap::<i64, i64>::new(), BTreeMap::<i64, i64>::new());
    let mut updates = Vec::new();
    let mut n_orders = 0;
    for (i, frame) in std::iter::once(&feed.snapshot).chain(&feed.changes).enumerate() {
        // Model: the general decoder and two BTreeMaps.
        let header = decode_book_units(frame, &spec, &mut updates).unwrap();
        if header.kind == BookKind::Snapshot {
            bids.clear();
            asks.clear();
        }
        for u in &updates {
            let side = if u.side == ticktrade_core::Side::Buy { &mut bids } else { &mut asks };
            if u.action == ticktrade_book::l2::Action::Delete || u.qty.raw() <= 0 {
                side.remove(&u.price.raw());
            } else {
                side.insert(u.price.raw(), u.qty.raw());
            }
        }
        let want = match (bids.last_key_value(), asks.first_key_value()) {
            (Some((&bid, _)), Some((&ask, _))) if bid < ask => Some(if bid + 1 < ask { bid + 1 } else { bid }),
            _ => None,
        };

        let mut stamps = RawStamps::received(clock.raw(), 1_000 + i as i64);
        let outcome = pipeline.on_frame(frame, &clock, &mut stamps, &mut writer);
        match want {
            None => assert_eq!(outcome, Outcome::NoOrder, "frame {i}"),
            Some(price_ticks) => {
                assert_eq!(outcome, Outcome::Order, "frame {i}");
                n_orders += 1;
                let order = parse_order(pipeline.order_frame(&writer));
                assert_eq!(order["method"], "private/buy");
                assert_eq!(order["id"], n_orders);
                let params = &order["params"];
                assert_eq!(params["instrument_name"], "BTC-PERPETUAL");
                assert_eq!(params["type"], "limit");
                assert_eq!(params["post_only"], true);
                assert_eq!(params["amount"], 10);
                let price = spec.parse_price(&params["price"].to_string()).unwrap();
                assert_eq!(price.raw(), price_ticks, "frame {i}");
                let label = OrderLabel::parse(params["label"].as_str().unwrap()).unwrap();
                assert_eq!(label, OrderLabel { recv_utc_ns: 1_000 + i as i64, change_id: header.change_id });
                assert!(stamps.t[1..5].iter().all(|&t| t != 0), "t1..t4 stamped: {stamps:?}");
            }
        }
        assert_eq!(pipeline.book().best_bid().map(|l| l.price.raw()), bids.last_key_value().map(|(p, _)| *p));
    }
    assert!(n_orders > 4_000, "{n_orders}");
}

#[test]
fn hot_loop_answers_ping_trades_and_closes_on_loopback() {
    let spec = btc_perpetual().unwrap();
    let feed = SyntheticFeed::generate(&spec, 3, 3);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let frames = (feed.snapshot.clone(), feed.changes[0].clone(), feed.change_ids[0]);
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let (path, mut reader) = handshake::accept(&mut stream).unwrap();
        assert_eq!(path, "/ws/api/v2");
        let mut writer = WsWriter::new(Role::Server, 4096, 1);
        let next = |stream: &mut std::net::TcpStream, reader: &mut WsReader| loop {
            if let Some(m) = reader.next_message().unwrap() {
                break (m.opcode, m.payload.to_vec());
            }
            reader.fill(stream).unwrap();
        };
        writer.frame_of(Opcode::Ping, b"are you there");
        writer.write_to(&mut stream).unwrap();
        assert_eq!(next(&mut stream, &mut reader), (Opcode::Pong, b"are you there".to_vec()));
        for payload in [&frames.0, &frames.1] {
            writer.frame_of(Opcode::Text, payload);
            writer.write_to(&mut stream).unwrap();
            let (opcode, order) = next(&mut stream, &mut reader);
            assert_eq!(opcode, Opcode::Text);
            let order: Value = serde_json::from_slice(&order).unwrap();
            assert_eq!(order["method"], "private/buy");
            if payload == &frames.1 {
                let label = OrderLabel::parse(order["params"]["label"].as_str().unwrap()).unwrap();
                assert_eq!(label.change_id, frames.2);
                assert!(label.recv_utc_ns > 1_577_836_800_000_000_000, "a 2020+ wall-clock time");
            }
        }
        writer.frame_of(Opcode::Close, &[0x03, 0xE8]);
        writer.write_to(&mut stream).unwrap();
        assert_eq!(next(&mut stream, &mut reader).0, Opcode::Close);
    });

    let (stream, reader) = handshake::connect(addr, "127.0.0.1", "/ws/api/v2").unwrap();
    let pipeline = Pipeline::new(&spec, QuoteOnTick::new(Qty::from_raw(1), 1), feed.snapshot_levels);
    let (tx, mut rx) = spsc_ring(64);
    let mut hot = HotLoop::new(stream, reader, pipeline, TscClock::new(), tx, None, HotConfig::default());
    let (report, exit) = hot.run().unwrap();
    server.join().unwrap();
    assert_eq!(exit, Exit::Closed);
    assert_eq!(report.pings, 1);
    assert_eq!(report.pipeline.orders, 2);
    let mut stamped = Vec::new();
    rx.drain(|s| stamped.push(s));
    assert_eq!(stamped.len(), 2);
    assert!(stamped.iter().all(|s| s.tick_to_trade_ns().is_some()));
}
