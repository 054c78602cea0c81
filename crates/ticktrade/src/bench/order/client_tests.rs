//! `OrderClient` on a real loopback WebSocket: every frame it sends, from the fixed-layout block
//! or (for an order the fixed encoder declines) the `Vec` framer, unmasks to exactly the bytes
//! of `OrderEncoder` with the id `send` returned; ids increase; `rewrite_last` repeats the last
//! frame; acks from the in-process acker match their orders.

use std::net::TcpListener;

use super::OrderClient;
use crate::bench::order::acker::Acker;
use ticktrade_core::{Price, Qty, Side};
use ticktrade_deribit_proto::order::{LimitOrder, OrderEncoder, OrderLabel};
use ticktrade_gateway::hot::feed::btc_perpetual;
use ticktrade_latency::TscClock;
use ticktrade_net::frame::{Opcode, WsReader};
use ticktrade_net::handshake;

fn order(side: Side, price: i64, qty: i64, post_only: bool, change_id: u64) -> LimitOrder {
    LimitOrder {
        side,
        price: Price::from_raw(price),
        qty: Qty::from_raw(qty),
        post_only,
        label: OrderLabel { recv_utc_ns: 1_764_120_000_123_456_789 + change_id as i64, change_id },
    }
}

fn next_text(reader: &mut WsReader, stream: &mut std::net::TcpStream) -> Vec<u8> {
    loop {
        if let Some(message) = reader.next_message().unwrap() {
            assert_eq!(message.opcode, Opcode::Text);
            return message.payload.to_vec();
        }
        reader.fill(stream).unwrap();
    }
}

#[test]
fn frames_are_the_vec_encoders_bytes() {
    let spec = btc_perpetual().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let orders = vec![
        order(Side::Buy, 240_001, 1, true, 1),
        order(Side::Sell, 240_100, 12_345, false, 2),
        // Beyond i64 once scaled to the tick's mantissa: the `Vec` path.
        order(Side::Buy, i64::MAX / 2, 1, true, 3),
        order(Side::Sell, 1, 1, true, u64::MAX),
        order(Side::Buy, 0, 0, false, 0),
    ];
    let expected = orders.clone();
    let server = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let (_, mut reader) = handshake::accept(&mut stream).unwrap();
        let mut frames = Vec::new();
        // Each order, then its repeat by `rewrite_last`.
        for _ in 0..expected.len() * 2 {
            frames.push(next_text(&mut reader, &mut stream));
        }
        frames
    });
    let (stream, reader) = handshake::connect(addr, "127.0.0.1", "/ws/api/v2").unwrap();
    let mut client = OrderClient::new(stream, reader, &spec, TscClock::new());
    let mut ids = Vec::new();
    for o in &orders {
        let sent = client.send(o).unwrap();
        assert!(sent.called <= sent.encoded && sent.encoded <= sent.written);
        ids.push(sent.id);
        client.rewrite_last().unwrap();
    }
    drop(client);
    let frames = server.join().unwrap();
    assert_eq!(ids, (1..=orders.len() as u64).collect::<Vec<_>>());
    let encoder = OrderEncoder::new(&spec);
    for (i, (o, id)) in orders.iter().zip(&ids).enumerate() {
        let mut want = Vec::new();
        encoder.encode(&mut want, *id, o);
        assert_eq!(String::from_utf8_lossy(&frames[2 * i]), String::from_utf8_lossy(&want), "order {i}");
        assert_eq!(frames[2 * i + 1], want, "repeat of order {i}");
    }
}

#[test]
fn acks_answer_their_orders() {
    let spec = btc_perpetual().unwrap();
    let acker = Acker::spawn().unwrap();
    let (stream, reader) = handshake::connect(acker.addr, "127.0.0.1", "/ws/api/v2").unwrap();
    let mut client = OrderClient::new(stream, reader, &spec, TscClock::new());
    for i in 0..200u64 {
        let side = if i % 2 == 0 { Side::Buy } else { Side::Sell };
        let sent = client.send(&order(side, 240_000 + i as i64, 1 + i as i64, i % 3 == 0, i)).unwrap();
        let ack = client.wait_ack().unwrap();
        assert_eq!(ack.id, Some(sent.id as i64));
        assert!(ack.ok);
        assert!(ack.us_in.is_some() && ack.us_out.is_some());
    }
    drop(client);
    assert_eq!(acker.join().unwrap(), 200);
}
