//! Hyperliquid's price bucketing (`ticktrade_book::aggregate`) on the server's books, through
//! its three doors: `hl_each_variant` = `ticktrade_hl_node::l2::aggregate_units` (what the
//! server's lanes call: one variant per call, from a gathered slice, into `UnitLevel`s),
//! `book_each_variant` = `ticktrade_book::aggregate::aggregate` on the same levels, and
//! `book_all_seven` = `AggregateBuf::aggregate_side` (the seven walked one after another).
//! All three are the one walk, so they time alike; a gap is the cost of an adapter.
//!
//! The levels are the synthetic generator's books (229 coins) over a sequence of blocks, both
//! sides of every coin a block changed, as the server's lanes gather them. One iteration is one
//! block: every changed coin, both sides, all seven variants at 20 levels.

mod market;

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use ticktrade_book::aggregate::{AggLevel, AggregateBuf, HlPrecision, aggregate};
use ticktrade_core::{Decimal, Price, Qty, Side};
use ticktrade_hl_node::l2;
use ticktrade_hl_proto::ws::{L2Variant, UnitLevel};

const N_LEVELS: usize = 20;
const N_BLOCKS: usize = 120;

fn agg(l: &UnitLevel) -> AggLevel {
    AggLevel { price: Price::from_raw(l.px), qty: Qty::from_raw(l.sz), n: l.n }
}

fn side_of(bid: bool) -> Side {
    if bid { Side::Buy } else { Side::Sell }
}

fn hl_block(block: &[market::Changed], out: &mut Vec<UnitLevel>) -> usize {
    let mut total = 0;
    for market::Changed { sides, .. } in block {
        for (s, levels) in sides.iter().enumerate() {
            for variant in L2Variant::ALL {
                l2::aggregate_units(levels, s == 0, variant, N_LEVELS, out);
                total += out.len();
            }
        }
    }
    total
}

fn book_block(block: &[market::Changed], out: &mut Vec<AggLevel>) -> usize {
    let mut total = 0;
    for market::Changed { sides, .. } in block {
        for (s, levels) in sides.iter().enumerate() {
            for precision in HlPrecision::ALL {
                aggregate(levels.iter().map(agg), side_of(s == 0), precision.grouping(), N_LEVELS, out);
                total += out.len();
            }
        }
    }
    total
}

fn book_all_block(block: &[market::Changed], buf: &mut AggregateBuf) -> usize {
    let mut total = 0;
    for market::Changed { sides, .. } in block {
        for (s, levels) in sides.iter().enumerate() {
            let side = side_of(s == 0);
            buf.aggregate_side(side, levels.iter().map(agg));
            total += HlPrecision::ALL.iter().map(|&p| buf.get(side, p).len()).sum::<usize>();
        }
    }
    total
}

fn bench(c: &mut Criterion) {
    let blocks = market::market(N_BLOCKS).blocks;
    let mut buf = AggregateBuf::new(Decimal::ONE, N_LEVELS).expect("1 is a power of ten");
    let (mut hl_out, mut book_out) = (Vec::with_capacity(N_LEVELS), Vec::with_capacity(N_LEVELS));
    // All three give the same buckets (the walk's property tests check it against a naive
    // model; this checks the adapters on these books).
    for block in &blocks {
        for market::Changed { sides, .. } in block {
            for (s, levels) in sides.iter().enumerate() {
                buf.aggregate_side(side_of(s == 0), levels.iter().map(agg));
                for (variant, precision) in L2Variant::ALL.into_iter().zip(HlPrecision::ALL) {
                    l2::aggregate_units(levels, s == 0, variant, N_LEVELS, &mut hl_out);
                    aggregate(levels.iter().map(agg), side_of(s == 0), precision.grouping(), N_LEVELS, &mut book_out);
                    let hl: Vec<AggLevel> = hl_out.iter().map(agg).collect();
                    assert_eq!(hl, book_out, "{variant:?}");
                    assert_eq!(hl, buf.get(side_of(s == 0), precision), "{variant:?}");
                }
            }
        }
    }
    let mut i = 0;
    let mut next = || {
        i += 1;
        i % blocks.len()
    };
    let mut group = c.benchmark_group("l2_bucket_block");
    group.bench_function("hl_each_variant", |b| b.iter(|| hl_block(black_box(&blocks[next()]), &mut hl_out)));
    group.bench_function("book_each_variant", |b| b.iter(|| book_block(black_box(&blocks[next()]), &mut book_out)));
    group.bench_function("book_all_seven", |b| b.iter(|| book_all_block(black_box(&blocks[next()]), &mut buf)));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
