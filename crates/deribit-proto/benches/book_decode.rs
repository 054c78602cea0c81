//! Book notification decoding and encoding: the hand codec beside serde_json decoders that
//! produce the same exact output, in the same run (on the calibration host a tuned hand scanner
//! took ~69 ns for a 316 B change, docs/PERFORMANCE.md §2, and serde typed decoding ~430 ns).
//!
//! `cargo bench -p ticktrade-deribit-proto --bench book_decode`

#![allow(clippy::unwrap_used)] // Benchmark set-up on fixed inputs, like tests.

use std::borrow::Cow;
use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde::Deserialize;
use serde_json::value::RawValue;
use ticktrade_core::{Decimal, InstrumentSpec, Side};
use ticktrade_deribit_proto::book::{
    Action, DecimalLevel, LevelUpdate, decode_book, decode_book_units, encode_book_units,
};

/// A real-shaped `book.BTC-PERPETUAL.raw` change (336 bytes).
const CHANGE: &str = r#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":"book.BTC-PERPETUAL.raw","data":{"type":"change","timestamp":1626993724318,"prev_change_id":33195894164,"instrument_name":"BTC-PERPETUAL","change_id":33195894355,"bids":[["new",64250.5,1200.0],["delete",64250.0,0.0]],"asks":[["change",64251.0,30.0],["new",64262.5,2540.0]]}}}"#;

#[derive(Deserialize)]
struct Frame<'a> {
    #[serde(borrow)]
    params: Params<'a>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(borrow)]
    channel: Cow<'a, str>,
    #[serde(borrow)]
    data: Data<'a>,
}

#[derive(Deserialize)]
struct Data<'a> {
    #[serde(rename = "type", borrow)]
    kind: &'a str,
    timestamp: u64,
    #[serde(default)]
    prev_change_id: Option<u64>,
    #[serde(borrow)]
    instrument_name: &'a str,
    change_id: u64,
    #[serde(borrow)]
    bids: Vec<(&'a str, &'a RawValue, &'a RawValue)>,
    #[serde(borrow)]
    asks: Vec<(&'a str, &'a RawValue, &'a RawValue)>,
}

/// serde_json typed and borrowing, numbers kept exact through `&RawValue` → `Decimal`.
fn serde_exact(frame: &str, out: &mut Vec<DecimalLevel>) -> u64 {
    let frame: Frame<'_> = serde_json::from_str(frame).unwrap();
    out.clear();
    for (side, entries) in [(Side::Buy, &frame.params.data.bids), (Side::Sell, &frame.params.data.asks)] {
        for (action, price, amount) in entries {
            let action = match *action {
                "new" => Action::New,
                "change" => Action::Change,
                _ => Action::Delete,
            };
            out.push(DecimalLevel {
                side,
                action,
                price: Decimal::parse(price.get()).unwrap(),
                amount: Decimal::parse(amount.get()).unwrap(),
            });
        }
    }
    let d = &frame.params.data;
    black_box((&frame.params.channel, d.kind, d.timestamp, d.prev_change_id, d.instrument_name));
    d.change_id
}

fn decode(c: &mut Criterion) {
    let spec =
        InstrumentSpec::simple("BTC-PERPETUAL", Decimal::parse("0.5").unwrap(), Decimal::parse("10").unwrap()).unwrap();
    let mut decimals = Vec::new();
    let mut units: Vec<LevelUpdate> = Vec::new();
    let mut check = Vec::new();
    serde_exact(CHANGE, &mut check);
    decode_book(CHANGE.as_bytes(), &mut decimals).unwrap();
    assert_eq!(check, decimals, "both decoders give the same levels");

    let mut group = c.benchmark_group("book_change_decode_336B");
    group.throughput(Throughput::Elements(1));
    group.bench_function("ticktrade_decimal", |b| {
        b.iter(|| decode_book(black_box(CHANGE.as_bytes()), &mut decimals).map(|h| h.change_id))
    });
    group.bench_function("ticktrade_units", |b| {
        b.iter(|| decode_book_units(black_box(CHANGE.as_bytes()), &spec, &mut units).map(|h| h.change_id))
    });
    group.bench_function("serde_json_typed_exact", |b| b.iter(|| serde_exact(black_box(CHANGE), &mut check)));
    group.finish();

    let header = decode_book_units(CHANGE.as_bytes(), &spec, &mut units).unwrap();
    let mut out = Vec::with_capacity(512);
    let mut group = c.benchmark_group("book_change_encode");
    group.throughput(Throughput::Elements(1));
    group.bench_function("ticktrade_units", |b| {
        b.iter(|| {
            out.clear();
            encode_book_units(&mut out, black_box(&header), &spec, black_box(&units));
            out.len()
        })
    });
    group.finish();
}

criterion_group!(benches, decode);
criterion_main!(benches);
