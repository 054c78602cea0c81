//! L2 delta apply, `L2Book` beside a `BTreeMap<i64, i64>` per side on the same Deribit-shaped
//! stream (`workload`), and the seven Hyperliquid aggregations of the finished book.
//!
//! `cargo bench -p ticktrade-book --bench l2_apply`; throughput is per delta.
//! Set `L2_BENCH_DELTAS` to change the stream length (default 200 000, to keep runs short on
//! a 2-core machine; `ticktrade bench book` runs the 1 000 000-delta stream).

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use ticktrade_book::aggregate::{AggregateBuf, Grouping, aggregate_book};
use ticktrade_book::l2::{Action, L2Book};
use ticktrade_book::workload::{Workload, WorkloadParams};
use ticktrade_core::{Decimal, Side};

fn n_deltas() -> usize {
    std::env::var("L2_BENCH_DELTAS").ok().and_then(|s| s.parse().ok()).unwrap_or(200_000)
}

fn fresh_book(w: &Workload) -> L2Book {
    let mut book = L2Book::new();
    book.apply_snapshot(w.snapshot_change_id, &w.snapshot);
    book
}

fn apply_all(book: &mut L2Book, w: &Workload) {
    for (i, u) in w.deltas.iter().enumerate() {
        let (cid, prev) = w.change_ids(i);
        let applied = book.apply_change(cid, prev, std::slice::from_ref(u));
        black_box(applied.is_ok());
    }
}

type Btree = [BTreeMap<i64, i64>; 2];

fn fresh_btree(w: &Workload) -> Btree {
    let mut b: Btree = Default::default();
    for u in &w.snapshot {
        btree_apply(&mut b, u);
    }
    b
}

#[inline]
fn btree_apply(b: &mut Btree, u: &ticktrade_book::l2::LevelUpdate) {
    let side = &mut b[usize::from(u.side == Side::Sell)];
    if u.action == Action::Delete || u.qty.raw() <= 0 {
        side.remove(&u.price.raw());
    } else {
        side.insert(u.price.raw(), u.qty.raw());
    }
}

fn apply_all_btree(b: &mut Btree, w: &Workload) {
    for u in &w.deltas {
        btree_apply(b, u);
    }
}

fn l2_apply(c: &mut Criterion) {
    let w = Workload::generate(WorkloadParams::btc_perpetual(n_deltas()));
    let mut group = c.benchmark_group("l2_apply");
    group.sample_size(10);
    group.throughput(Throughput::Elements(w.deltas.len() as u64));
    group.bench_function("ticktrade", |b| {
        b.iter_batched_ref(|| fresh_book(&w), |book| apply_all(book, &w), BatchSize::LargeInput)
    });
    group.bench_function("btreemap_baseline", |b| {
        b.iter_batched_ref(|| fresh_btree(&w), |book| apply_all_btree(book, &w), BatchSize::LargeInput)
    });
    group.finish();

    let deep = Workload::generate(WorkloadParams::deep(n_deltas()));
    let mut group = c.benchmark_group("l2_apply_deep_100k");
    group.sample_size(10);
    group.throughput(Throughput::Elements(deep.deltas.len() as u64));
    group.bench_function("ticktrade", |b| {
        b.iter_batched_ref(|| fresh_book(&deep), |book| apply_all(book, &deep), BatchSize::LargeInput)
    });
    group.finish();
}

fn aggregation(c: &mut Criterion) {
    let w = Workload::generate(WorkloadParams::btc_perpetual(n_deltas()));
    let mut book = fresh_book(&w);
    apply_all(&mut book, &w);
    let mut group = c.benchmark_group("aggregate");
    let mut buf = AggregateBuf::new(Decimal::ONE, 20).expect("1 is a power of ten");
    group.bench_function("hl_all_7_variants_top20", |b| {
        b.iter(|| {
            buf.aggregate_book(black_box(&book));
            black_box(&buf);
        })
    });
    // The floor under any full-depth aggregation: visiting every level once.
    group.bench_function("walk_all_levels_both_sides", |b| {
        b.iter(|| {
            let mut sum = 0i64;
            for side in [Side::Buy, Side::Sell] {
                black_box(&book).walk_levels(side, |l| {
                    sum += l.qty.raw();
                    std::ops::ControlFlow::Continue(())
                });
            }
            black_box(sum)
        })
    });
    let mut out = Vec::with_capacity(20);
    group.bench_function("deribit_group_10_ticks_top20_bids", |b| {
        b.iter(|| {
            aggregate_book(black_box(&book), Side::Buy, Grouping::Ticks(10), 20, &mut out);
            black_box(&out);
        })
    });
    group.finish();
}

criterion_group!(benches, l2_apply, aggregation);
criterion_main!(benches);
