//! `CountingAlloc` installed as this test binary's global allocator.

use std::hint::black_box;

use ticktrade_testkit::{AllocCount, CountingAlloc};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::new();

#[test]
fn vec_push_allocates() {
    let n = ALLOC.count_in(|| {
        let mut v = black_box(Vec::new());
        v.push(black_box(1u64));
        black_box(&v);
    });
    assert!(n >= 1, "{n}");
}

#[test]
fn arithmetic_allocates_nothing() {
    let n = ALLOC.count_in(|| {
        let mut acc = 0u64;
        for i in 0..1_000u64 {
            acc = acc.wrapping_mul(31).wrapping_add(black_box(i));
        }
        black_box(acc);
    });
    assert_eq!(n, 0);
}

#[test]
fn bytes_and_result_are_reported() {
    let (len, count) = ALLOC.measure(|| {
        let v: Vec<u8> = black_box(Vec::with_capacity(1000));
        v.capacity()
    });
    assert_eq!(len, 1000);
    assert_eq!(count, AllocCount { n_allocs: 1, n_bytes: 1000 });
}

#[test]
fn growth_counts_each_reallocation() {
    let mut v: Vec<u64> = Vec::with_capacity(1);
    v.push(0);
    let n = ALLOC.count_in(|| {
        v.push(1); // 1 → 2 (or more): one realloc
    });
    assert_eq!(n, 1);
    let spare = v.capacity() - v.len();
    let n = ALLOC.count_in(|| v.extend(std::iter::repeat_n(7, spare)));
    assert_eq!(n, 0, "pushing into reserved capacity");
}

#[test]
fn other_threads_allocations_are_not_counted() {
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<usize>();
    let worker = std::thread::spawn(move || {
        ready_rx.recv().unwrap();
        let own = ALLOC.count_in(|| {
            let v: Vec<Vec<u8>> = (0..100).map(|i| vec![0u8; i + 1]).collect();
            black_box(v);
        });
        done_tx.send(own).unwrap();
    });
    // The spawn allocated on this thread; measure only the span in which the worker allocates
    // 100+ times.
    let mut worker_count = 0;
    let here = ALLOC.count_in(|| {
        ready_tx.send(()).unwrap_or(());
        worker_count = done_rx.recv().unwrap_or(0);
    });
    worker.join().unwrap();
    assert!(worker_count >= 100, "the worker counted its own: {worker_count}");
    assert!(here < 100, "this thread saw the worker's allocations: {here}");
}
