//! The hot path's compute, each part beside its plain baseline on the same frames:
//! - `decode`: `FastBookDecoder` vs the general `decode_book_units` vs `serde_json::Value`;
//! - `encode_order`: `OrderEncoder` vs `format!`;
//! - `pipeline`: decode → book → decide → encode + frame for one ~300-byte change frame.
//!
//! Run: `cargo bench -p ticktrade-gateway --bench hot_pipeline`.

#![allow(clippy::unwrap_used)] // benches may unwrap, like tests

use std::hint::black_box;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use ticktrade_core::{Price, Qty, Side};
use ticktrade_deribit_proto::book_fast::FastBookDecoder;
use ticktrade_deribit_proto::decode_book_units;
use ticktrade_deribit_proto::order::{LimitOrder, OrderEncoder, OrderLabel};
use ticktrade_gateway::hot::feed::{SyntheticFeed, btc_perpetual, warm_up};
use ticktrade_gateway::hot::{Pipeline, QuoteOnTick, RawStamps};
use ticktrade_latency::TscClock;
use ticktrade_net::frame::{Role, WsWriter};

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

fn pipeline(c: &mut Criterion) {
    let spec = btc_perpetual().unwrap();
    let feed = SyntheticFeed::generate(&spec, FRAMES, 3);
    let clock = TscClock::new();
    let mut group = c.benchmark_group("pipeline");
    group.throughput(Throughput::Elements(FRAMES as u64));
    group.bench_function("frame_to_order_frame", |b| {
        b.iter_batched_ref(
            || {
                let mut pipeline = Pipeline::new(&spec, QuoteOnTick::new(Qty::from_raw(1), 1), feed.snapshot_levels);
                warm_up(&mut pipeline, &feed, &clock);
                let mut writer = WsWriter::new(Role::Client, 1024, 1);
                let mut stamps = RawStamps::default();
                pipeline.on_frame(&feed.snapshot, &clock, &mut stamps, &mut writer);
                (pipeline, writer)
            },
            |(pipeline, writer)| {
                for frame in &feed.changes {
                    let mut stamps = RawStamps::received(clock.raw(), 0);
                    black_box(pipeline.on_frame(frame, &clock, &mut stamps, writer));
                }
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, decode, encode_order, pipeline);
criterion_main!(benches);
