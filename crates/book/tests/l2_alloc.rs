//! Steady state allocates nothing: once the ladders have grown to the stream's price span,
//! re-snapshotting, applying deltas and aggregating reuse their memory.

use ticktrade_book::aggregate::{AggregateBuf, Grouping, aggregate_book};
use ticktrade_book::l2::L2Book;
use ticktrade_book::workload::{Workload, WorkloadParams};
use ticktrade_core::{Decimal, Side};

#[global_allocator]
static ALLOC: ticktrade_testkit::CountingAlloc = ticktrade_testkit::CountingAlloc::new();

fn apply_all(book: &mut L2Book, w: &Workload) {
    for (i, u) in w.deltas.iter().enumerate() {
        let (cid, prev) = w.change_ids(i);
        assert_eq!(book.apply_change(cid, prev, std::slice::from_ref(u)), Ok(()));
    }
}

#[test]
fn warmed_book_allocates_nothing() {
    let w = Workload::generate(WorkloadParams::btc_perpetual(200_000));
    let mut book = L2Book::new();
    book.apply_snapshot(w.snapshot_change_id, &w.snapshot);
    apply_all(&mut book, &w); // grows the ladders once
    let mut buf = AggregateBuf::new(Decimal::ONE, 20).unwrap();
    let mut out = Vec::with_capacity(20);
    buf.aggregate_book(&book);

    let n_allocs = ALLOC.count_in(|| {
        book.apply_snapshot(w.snapshot_change_id, &w.snapshot);
        apply_all(&mut book, &w);
        buf.aggregate_book(&book);
        aggregate_book(&book, Side::Sell, Grouping::Ticks(10), 20, &mut out);
    });
    assert_eq!(n_allocs, 0);
    assert_eq!(buf.get(Side::Buy, ticktrade_book::aggregate::HlPrecision::Full).len(), 20);
    // The counter works: a fresh book does allocate.
    assert!(
        ALLOC.count_in(|| {
            let mut b = L2Book::new();
            b.apply_snapshot(w.snapshot_change_id, &w.snapshot);
            std::hint::black_box(&b);
        }) > 0
    );
}
