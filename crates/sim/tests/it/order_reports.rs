//! The simulator's order frames take deribit-proto's fixed-layout report path: a raw WebSocket
//! client sends requests written by deribit-proto's encoders (auth, subscribe, buy, sell,
//! edit_by_label, cancel_by_label, cancel_all) and runs every response and every
//! `user.orders` / `user.trades` / `user.changes` frame through `scan_frame` and the report
//! decoders, asserting that each order and trade object was read by the fixed layout.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::BTreeSet;

use common::WsClient;
use ticktrade_core::{Decimal, InstrumentSpec, Price, Qty, Side};
use ticktrade_deribit_proto::frame::{ChannelKind, Frame, scan_frame};
use ticktrade_deribit_proto::order::{Label, OrderEncoder, OrderKind, OrderRequest, OrderTag, TimeInForce};
use ticktrade_deribit_proto::report::{self, DecodePath, OrderState};
use ticktrade_deribit_proto::requests::{self, Scope};
use ticktrade_deribit_proto::signature::Secret;

/// Writes one request into the buffer.
type Step<'s> = &'s dyn Fn(&mut Vec<u8>);

#[derive(Default)]
struct Seen {
    responses: BTreeSet<u64>,
    order_notes: usize,
    order_arrays: usize,
    trade_notes: usize,
    change_notes: usize,
    fills: usize,
}

/// Checks one frame; every object must have come through the fixed layout.
fn check(frame: &str, seen: &mut Seen) {
    let fixed = |path: DecodePath| assert_eq!(path, DecodePath::Fixed, "general path took {frame}");
    match scan_frame(frame.as_bytes()).unwrap() {
        Frame::Result { id: Some(id), result } => {
            seen.responses.insert(id);
            match id {
                // buy, sell, edit_by_label: an order with its trades.
                3..=5 => {
                    let (order, path) = report::decode_order_result(result, |_, p| {
                        fixed(p);
                        seen.fills += 1;
                    })
                    .unwrap();
                    fixed(path);
                    assert_eq!(order.instrument_name, "BTC-PERPETUAL");
                }
                // cancel_by_label, cancel_all: counts.
                6 | 7 => assert_eq!(report::decode_count(result), Ok(1), "{frame}"),
                _ => {}
            }
        }
        Frame::Error { error, .. } => panic!("error response {error:?}"),
        Frame::Notification { kind: ChannelKind::UserOrders, channel, data, .. } => {
            let n = report::for_each_order(data, |_, p| fixed(p)).unwrap();
            assert!(n > 0);
            if channel.ends_with(".100ms") {
                seen.order_arrays += 1;
            } else {
                seen.order_notes += 1;
            }
        }
        Frame::Notification { kind: ChannelKind::UserTrades, data, .. } => {
            report::for_each_trade(data, |t, p| {
                fixed(p);
                assert_eq!(t.state, OrderState::Filled);
            })
            .unwrap();
            seen.trade_notes += 1;
        }
        Frame::Notification { kind: ChannelKind::UserChanges, data, .. } => {
            report::decode_user_changes(data, |_, p| fixed(p), |_, p| fixed(p)).unwrap();
            seen.change_notes += 1;
        }
        _ => {}
    }
}

#[tokio::test]
async fn the_simulators_order_frames_take_the_fixed_path() {
    let sim = common::sim().await;
    let mut ws = WsClient::connect(&sim.ws_url()).await;
    let spec =
        InstrumentSpec::simple("BTC-PERPETUAL", Decimal::parse("0.5").unwrap(), Decimal::parse("10").unwrap()).unwrap();
    let encoder = OrderEncoder::new(&spec);
    let label = Label::new(b"resting-1").unwrap();
    let mut out = Vec::new();
    let mut seen = Seen::default();

    // Each step is sent once the previous response is in, so ids arrive in order.
    let steps: [Step<'_>; 7] = [
        &|out| requests::auth_client_credentials(out, 1, "ticktrade-sim", &Secret::new("ticktrade-sim-secret")),
        &|out| {
            requests::subscribe(
                out,
                2,
                Scope::Private,
                [
                    "user.orders.BTC-PERPETUAL.raw",
                    "user.orders.any.any.100ms",
                    "user.trades.BTC-PERPETUAL.raw",
                    "user.changes.BTC-PERPETUAL.raw",
                ],
            )
        },
        &|out| {
            let market = OrderRequest {
                side: Side::Buy,
                kind: OrderKind::Market,
                qty: Qty::from_raw(2),
                label: OrderTag::Text(Label::new(b"taker").unwrap()),
                time_in_force: TimeInForce::ImmediateOrCancel,
                post_only: false,
                reject_post_only: false,
                reduce_only: false,
            };
            encoder.encode_order(out, 3, &market);
        },
        &|out| {
            let resting = OrderRequest {
                side: Side::Sell,
                kind: OrderKind::Limit(Price::from_raw(2_000_000)),
                qty: Qty::from_raw(1),
                label: OrderTag::Text(label),
                time_in_force: TimeInForce::GoodTilCancelled,
                post_only: true,
                reject_post_only: true,
                reduce_only: false,
            };
            encoder.encode_order(out, 4, &resting);
        },
        &|out| {
            encoder.encode_edit_by_label(
                out,
                5,
                OrderTag::Text(label),
                Qty::from_raw(2),
                Price::from_raw(2_000_002),
                true,
            )
        },
        &|out| requests::cancel_by_label(out, 6, OrderTag::Text(label), None),
        &|out| {
            // A fresh resting order for cancel_all to count.
            out.clear();
            let order = OrderRequest {
                side: Side::Sell,
                kind: OrderKind::Limit(Price::from_raw(2_000_000)),
                qty: Qty::from_raw(1),
                label: OrderTag::None,
                time_in_force: TimeInForce::GoodTilCancelled,
                post_only: false,
                reject_post_only: false,
                reduce_only: false,
            };
            encoder.encode_order(out, 70, &order);
        },
    ];
    for (i, step) in steps.iter().enumerate() {
        out.clear();
        step(&mut out);
        ws.send_text(std::str::from_utf8(&out).unwrap()).await;
        let want = if i == 6 { 70 } else { i as u64 + 1 };
        read_until(&mut ws, &mut seen, |s| s.responses.contains(&want)).await;
    }
    out.clear();
    requests::cancel_all(&mut out, 7);
    ws.send_text(std::str::from_utf8(&out).unwrap()).await;
    read_until(&mut ws, &mut seen, |s| {
        s.responses.contains(&7) && s.trade_notes > 0 && s.order_notes >= 4 && s.order_arrays > 0 && s.change_notes > 0
    })
    .await;
    assert!(seen.fills > 0, "the market order filled");
    sim.shutdown().await;
}

async fn read_until(ws: &mut WsClient, seen: &mut Seen, done: impl Fn(&Seen) -> bool) {
    while !done(seen) {
        let text = ws.next_text().await.expect("socket closed");
        check(&text, seen);
    }
}
