//! Order-path codecs: the order and trade report decoders (fixed layout, general path) beside
//! the serde `api` objects the control plane uses, in one group per message; the order encoders
//! beside the generic `encode_request` writing the same bytes.
//!
//! `cargo bench -p ticktrade-deribit-proto --bench reports`

#![allow(clippy::unwrap_used)] // Benchmark set-up on fixed inputs, like tests.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use ticktrade_core::{Decimal, InstrumentSpec, Price, Qty, Side};
use ticktrade_deribit_proto::api;
use ticktrade_deribit_proto::envelope::encode_request;
use ticktrade_deribit_proto::frame::{Frame, scan_frame};
use ticktrade_deribit_proto::order::{OrderEncoder, OrderKind, OrderLabel, OrderRequest, OrderTag, TimeInForce};
use ticktrade_deribit_proto::report::{self, decode_order, decode_order_general, decode_trade, decode_trade_general};

/// A `user.orders.BTC-PERPETUAL.raw` notification as the simulator writes it.
const SIM_ORDER: &str = r#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":"user.orders.BTC-PERPETUAL.raw","data":{"order_id":"BTC-17","instrument_name":"BTC-PERPETUAL","direction":"buy","amount":30,"contracts":3,"filled_amount":10,"price":64250.5,"average_price":64250.5,"order_state":"open","order_type":"limit","time_in_force":"good_til_cancelled","post_only":true,"reduce_only":false,"replaced":false,"label":"tt.1700000000123456789.42","max_show":30,"api":true,"web":false,"is_liquidation":false,"is_rebalance":false,"creation_timestamp":1700000000123,"last_update_timestamp":1700000000456,"reject_post_only":false}}}"#;

/// A live Deribit `user.trades` notification (one trade).
const DERIBIT_TRADES: &str = r#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":"user.trades.any.any.raw","data":[{"trade_seq":149546319,"trade_id":"219381310","timestamp":1655421193564,"tick_direction":0,"state":"filled","self_trade":false,"reduce_only":false,"profit_loss":0,"price":20236.5,"post_only":false,"order_type":"market","order_id":"46108941243","matching_id":null,"mark_price":20233.96,"liquidity":"T","instrument_name":"BTC-PERPETUAL","index_price":20253.31,"fee_currency":"BTC","fee":2.5e-7,"direction":"buy","amount":10}]}}"#;

fn data(frame: &str) -> &[u8] {
    match scan_frame(frame.as_bytes()).unwrap() {
        Frame::Notification { data, .. } => data,
        other => panic!("{other:?}"),
    }
}

fn decoders(c: &mut Criterion) {
    let order = data(SIM_ORDER);
    let order_text = std::str::from_utf8(order).unwrap();
    let mut g = c.benchmark_group("order_report");
    g.bench_function("fixed", |b| b.iter(|| decode_order(black_box(order)).unwrap()));
    g.bench_function("general", |b| b.iter(|| decode_order_general(black_box(order)).unwrap()));
    g.bench_function("serde_api_order", |b| {
        b.iter(|| serde_json::from_str::<api::Order>(black_box(order_text)).unwrap())
    });
    g.bench_function("frame_then_fixed", |b| {
        b.iter(|| match scan_frame(black_box(SIM_ORDER.as_bytes())).unwrap() {
            Frame::Notification { data, .. } => decode_order(data).unwrap().0.amount,
            _ => Decimal::ZERO,
        })
    });
    g.finish();

    let trades = data(DERIBIT_TRADES);
    let trade = &trades[1..trades.len() - 1];
    let trade_text = std::str::from_utf8(trade).unwrap();
    let mut g = c.benchmark_group("trade_report");
    g.bench_function("fixed", |b| b.iter(|| decode_trade(black_box(trade)).unwrap()));
    g.bench_function("general", |b| b.iter(|| decode_trade_general(black_box(trade)).unwrap()));
    g.bench_function("serde_api_user_trade", |b| {
        b.iter(|| serde_json::from_str::<api::UserTrade>(black_box(trade_text)).unwrap())
    });
    g.bench_function("array_visitor", |b| {
        b.iter(|| {
            report::for_each_trade(black_box(trades), |t, _| {
                black_box(t);
            })
            .unwrap()
        })
    });
    g.finish();
}

fn encoders(c: &mut Criterion) {
    let spec =
        InstrumentSpec::simple("BTC-PERPETUAL", Decimal::parse("0.5").unwrap(), Decimal::parse("10").unwrap()).unwrap();
    let encoder = OrderEncoder::new(&spec);
    let label = OrderLabel { recv_utc_ns: 1_700_000_000_123_456_789, change_id: 42 };
    let order = OrderRequest {
        side: Side::Buy,
        kind: OrderKind::Limit(Price::from_raw(128_501)),
        qty: Qty::from_raw(3),
        label: OrderTag::Origin(label),
        time_in_force: TimeInForce::ImmediateOrCancel,
        post_only: true,
        reject_post_only: false,
        reduce_only: false,
    };
    let mut out = Vec::with_capacity(512);
    let mut g = c.benchmark_group("order_encode");
    g.bench_function("encode_order", |b| {
        b.iter(|| {
            out.clear();
            encoder.encode_order(&mut out, black_box(7), black_box(&order));
            out.len()
        })
    });
    let mut label_text = Vec::new();
    label.write(&mut label_text);
    let label_text = String::from_utf8(label_text).unwrap();
    g.bench_function("encode_request", |b| {
        b.iter(|| {
            out.clear();
            encode_request(&mut out, black_box(7), "private/buy", |p| {
                p.str("instrument_name", &spec.name).qty("amount", &spec, order.qty).str("type", "limit");
                p.price("price", &spec, Price::from_raw(128_501)).str("label", &label_text);
                p.str("time_in_force", "immediate_or_cancel").bool("post_only", true);
            });
            out.len()
        })
    });
    g.bench_function("encode_edit_by_label", |b| {
        b.iter(|| {
            out.clear();
            encoder.encode_edit_by_label(
                &mut out,
                8,
                OrderTag::Origin(label),
                Qty::from_raw(2),
                Price::from_raw(128_400),
                true,
            );
            out.len()
        })
    });
    g.bench_function("encode_request_edit_by_label", |b| {
        b.iter(|| {
            out.clear();
            encode_request(&mut out, 8, "private/edit_by_label", |p| {
                p.str("instrument_name", &spec.name).str("label", &label_text).qty("amount", &spec, Qty::from_raw(2));
                p.price("price", &spec, Price::from_raw(128_400)).bool("post_only", true);
            });
            out.len()
        })
    });
    g.finish();
}

criterion_group!(benches, decoders, encoders);
criterion_main!(benches);
