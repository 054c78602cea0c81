//! The hot path's compute, each part beside its plain baseline on the same frames:
//! - `decode`: `FastBookDecoder` vs the general `decode_book_units` vs `serde_json::Value`;
//! - `encode_order`: `OrderEncoder` vs `format!`.
//!
//! The whole session's compute per tick is `ticktrade bench tick-to-trade --in-memory`.
//!
//! Run: `cargo bench -p ticktrade-gateway --bench hot_compute`.

#![allow(clippy::unwrap_used)] // benches may unwrap, like tests

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ticktrade_core::{Price, Qty, Side};
use ticktrade_deribit_proto::book_fast::FastBookDecoder;
use ticktrade_deribit_proto::decode_book_units;
use ticktrade_deribit_proto::order::{LimitOrder, OrderEncoder, OrderLabel};
use ticktrade_gateway::hot::feed::{SyntheticFeed, btc_perpetual};

const FRAMES: usize = 10_000;

fn decode(c: &mut Criterion) {
    let spec = btc_perpetual().unwrap();
    let feed = SyntheticFeed::generate(&spec, FRAMES, 3);
    let fast = FastBookDecoder::new(&spec);
    let mut out = Vec::with_capacity(4096);
    let mut group = c.benchmark_group("decode");
    group.throughput(criterion::Throughput::Elements(FRAMES as u64));
    group.bench_function("fast", |b| {
        b.iter(|| {
            for frame in &feed.changes {
                black_box(fast.decode(black_box(frame), &mut out).unwrap());
            }
        })
    });
    group.bench_function("general", |b| {
        b.iter(|| {
            for frame in &feed.changes {
                black_box(decode_book_units(black_box(frame), &spec, &mut out).unwrap());
            }
        })
    });
    group.bench_function("serde_json_value_baseline", |b| {
        b.iter(|| {
            for frame in &feed.changes {
                black_box(serde_json::from_slice::<serde_json::Value>(black_box(frame)).unwrap());
            }
        })
    });
    group.finish();
}

fn encode_order(c: &mut Criterion) {
    let spec = btc_perpetual().unwrap();
    let encoder = OrderEncoder::new(&spec);
    let order = LimitOrder {
        side: Side::Buy,
        price: Price::from_raw(128_501),
        qty: Qty::from_raw(1),
        post_only: true,
        label: OrderLabel { recv_utc_ns: 1_767_225_600_123_456_789, change_id: 33_195_894_355 },
    };
    let mut out = Vec::with_capacity(256);
    let mut group = c.benchmark_group("encode_order");
    group.throughput(Throughput::Elements(1));
    group.bench_function("order_encoder", |b| {
        b.iter(|| {
            out.clear();
            encoder.encode(&mut out, black_box(42), black_box(&order));
            black_box(&out);
        })
    });
    group.bench_function("format_baseline", |b| {
        b.iter(|| {
            let o = black_box(&order);
            black_box(format!(
                r#"{{"jsonrpc":"2.0","id":{},"method":"private/buy","params":{{"instrument_name":"{}","amount":{},"type":"limit","price":{},"label":"tt.{}.{}","post_only":true}}}}"#,
                black_box(42),
                spec.name,
                spec.format_qty(o.qty),
                spec.format_price(o.price),
                o.label.recv_utc_ns,
                o.label.change_id
            ))
        })
    });
    group.finish();
}

criterion_group!(benches, decode, encode_order);
criterion_main!(benches);
