//! Hyperliquid's price bucketing, the two implementations side by side on the same levels:
//! `hl` = `ticktrade_hl_node::l2::aggregate_units` (one variant per call, from a gathered
//! slice), `book` = `ticktrade_book::aggregate` (`aggregate`: one variant per call;
//! `AggregateBuf::aggregate_side`: all seven in one pass).
//!
//! The levels are the synthetic generator's books (229 coins) over a sequence of blocks, both
//! sides of every coin a block changed, as the server's lanes gather them. One iteration is one
//! block: every changed coin, both sides, all seven variants at 20 levels.

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use ticktrade_book::aggregate::{AggLevel, AggregateBuf, HlPrecision, aggregate};
use ticktrade_core::{Decimal, Price, Qty, Side, Utc};
use ticktrade_hl_node::l2;
use ticktrade_hl_node::synth::{GenConfig, Generator};
use ticktrade_hl_proto::ws::{L2Variant, UnitLevel};

const N_LEVELS: usize = 20;
const N_BLOCKS: usize = 120;

/// Per block, both sides (best first) of every coin it changed.
fn blocks() -> Vec<Vec<[Vec<UnitLevel>; 2]>> {
    let mut generator = Generator::new(&GenConfig::default());
    let side = |g: &Generator, c: usize, bid: bool| -> Vec<UnitLevel> {
        g.coins()[c].levels(bid).into_iter().map(|(px, sz, n)| UnitLevel { px, sz, n }).collect()
    };
    let n_coins = generator.coins().len();
    let mut last: Vec<[Vec<UnitLevel>; 2]> =
        (0..n_coins).map(|c| [side(&generator, c, true), side(&generator, c, false)]).collect();
    let mut blocks = Vec::new();
    for b in 0..N_BLOCKS {
        generator.next_block(Utc::from_millis(1_700_000_000_000 + 100 * b as i64));
        let mut changed = Vec::new();
        for (c, before) in last.iter_mut().enumerate() {
            let now = [side(&generator, c, true), side(&generator, c, false)];
            if now != *before {
                changed.push(now.clone());
                *before = now;
            }
        }
        blocks.push(changed);
    }
    blocks
}

fn agg(l: &UnitLevel) -> AggLevel {
    AggLevel { price: Price::from_raw(l.px), qty: Qty::from_raw(l.sz), n: l.n }
}

fn side_of(bid: bool) -> Side {
    if bid { Side::Buy } else { Side::Sell }
}

fn hl_block(block: &[[Vec<UnitLevel>; 2]], out: &mut Vec<UnitLevel>) -> usize {
    let mut total = 0;
    for sides in block {
        for (s, levels) in sides.iter().enumerate() {
            for variant in L2Variant::ALL {
                l2::aggregate_units(levels, s == 0, variant, N_LEVELS, out);
                total += out.len();
            }
        }
    }
    total
}

fn book_block(block: &[[Vec<UnitLevel>; 2]], out: &mut Vec<AggLevel>) -> usize {
    let mut total = 0;
    for sides in block {
        for (s, levels) in sides.iter().enumerate() {
            for precision in HlPrecision::ALL {
                aggregate(levels.iter().map(agg), side_of(s == 0), precision.grouping(), N_LEVELS, out);
                total += out.len();
            }
        }
    }
    total
}

fn book_all_block(block: &[[Vec<UnitLevel>; 2]], buf: &mut AggregateBuf) -> usize {
    let mut total = 0;
    for sides in block {
        for (s, levels) in sides.iter().enumerate() {
            let side = side_of(s == 0);
            buf.aggregate_side(side, levels.iter().map(agg));
            total += HlPrecision::ALL.iter().map(|&p| buf.get(side, p).len()).sum::<usize>();
        }
    }
    total
}

fn bench(c: &mut Criterion) {
    let blocks = blocks();
    let mut buf = AggregateBuf::new(Decimal::ONE, N_LEVELS).expect("1 is a power of ten");
    let (mut hl_out, mut book_out) = (Vec::with_capacity(N_LEVELS), Vec::with_capacity(N_LEVELS));
    // All three give the same buckets.
    for block in &blocks {
        for sides in block {
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
