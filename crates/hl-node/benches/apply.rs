//! The apply stage of `ticktrade hl` (`Books::plan_block`, then `Books::apply_coin` for every
//! coin of the block) on the default generated market (229 coins, 600 orders per block),
//! decoded as the server decodes without `l4Book` subscribers.
//!
//! Each timed block is prepared as the engine finds it: the cache is flushed first (the real
//! engine's l2 work evicts the books), then the block's lines are decoded on this thread (the
//! engine's decode stage, untimed). When the recorded blocks run out, the books are loaded
//! again from the snapshot (untimed); before timing, one pass is checked against the
//! generator's own books. `plan_and_apply` times both, `plan` the plan alone, and
//! `gather_after_apply` the walk of both sides of each changed coin right after its apply
//! (what a lane's gather reads).

#[path = "../tests/common.rs"]
mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use ticktrade_core::{Side, Utc};
use ticktrade_hl_node::books::{BlockPlan, Books};
use ticktrade_hl_node::synth::{GenConfig, Generator};
use ticktrade_hl_proto::info::{Meta, SpotMeta, coins_from_meta};
use ticktrade_hl_proto::node::{BookDiff, OrderStatus, fast};
use ticktrade_hl_proto::snapshot::Snapshot;

const N_BLOCKS: i64 = 150;

/// What one timed iteration measures.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    PlanAndApply,
    Plan,
    Gather,
}

struct Replay {
    /// The snapshot and meta documents the books are loaded from.
    docs: (String, String, String),
    lines: Vec<(u64, String, String)>,
    books: Books,
    next: usize,
    plan: BlockPlan,
    flush: Vec<u64>,
    gathered: [Vec<(i64, i64, u32)>; 2],
}

impl Replay {
    fn new() -> Replay {
        let mut generator = Generator::new(&GenConfig { seed: 7, ..GenConfig::default() });
        let (meta, spot) = generator.meta_json();
        let docs = (generator.snapshot_json(), meta, spot);
        let lines = (0..N_BLOCKS)
            .map(|i| {
                let b = generator.next_block(Utc::from_millis(common::T0_MS + i * 100));
                (b.height, b.statuses, b.diffs)
            })
            .collect();
        let mut replay = Replay {
            books: load(&docs),
            docs,
            lines,
            next: 0,
            plan: BlockPlan::default(),
            flush: vec![0u64; 1 << 20],
            gathered: [Vec::with_capacity(4096), Vec::with_capacity(4096)],
        };
        // One pass, checked against the generator.
        for _ in 0..N_BLOCKS {
            replay.block(Part::PlanAndApply);
        }
        common::assert_books_equal(&generator, &replay.books, &[]);
        replay
    }

    /// Applies the next block; returns the time of `part`.
    fn block(&mut self, part: Part) -> Duration {
        if self.next == self.lines.len() {
            self.books = load(&self.docs);
            self.next = 0;
        }
        for (i, x) in self.flush.iter_mut().enumerate() {
            *x = x.wrapping_add(i as u64);
        }
        black_box(&self.flush);
        let (height, status_line, diff_line) = &self.lines[self.next];
        self.next += 1;
        let (mut statuses, mut diffs): (Vec<OrderStatus<'_>>, Vec<BookDiff<'_>>) = (Vec::new(), Vec::new());
        fast::statuses(status_line, false, &mut statuses).expect("the generator's shape");
        fast::diffs(diff_line, &mut diffs).expect("the generator's shape");
        let t = Instant::now();
        self.books.plan_block(*height, Utc::from_millis(0), &statuses, &diffs, &mut self.plan);
        let planned = t.elapsed();
        let applying = Instant::now();
        let mut walked = Duration::ZERO;
        for g in 0..self.plan.len() {
            let outcome = self.books.apply_coin(&self.plan, g, &statuses, &diffs);
            assert!(outcome.error.is_none());
            if part == Part::Gather {
                let w = Instant::now();
                if let Some(book) = self.books.book(self.plan.coin(g)) {
                    for (side, buf) in [Side::Buy, Side::Sell].into_iter().zip(&mut self.gathered) {
                        buf.clear();
                        buf.extend(book.book.levels(side).map(|l| (l.price.raw(), l.qty.raw(), l.n_orders)));
                    }
                }
                walked += w.elapsed();
            }
        }
        let applied = applying.elapsed();
        black_box(&self.gathered);
        match part {
            Part::PlanAndApply => planned + applied,
            Part::Plan => planned,
            Part::Gather => walked,
        }
    }
}

/// Books at the snapshot, loaded as `ticktrade hl` loads them.
fn load((snapshot, meta, spot): &(String, String, String)) -> Books {
    let meta: Meta = serde_json::from_str(meta).expect("the generator's meta");
    let spot: SpotMeta = serde_json::from_str(spot).expect("the generator's spot meta");
    let mut books = Books::new(&coins_from_meta(&meta, Some(&spot)));
    let parsed = Snapshot::parse(snapshot.as_bytes()).expect("the generator's snapshot");
    books.load_snapshot(&parsed, Utc::from_millis(0)).expect("the generator's snapshot");
    books
}

fn bench(c: &mut Criterion) {
    let mut replay = Replay::new();
    let mut group = c.benchmark_group("apply_block");
    for (name, part) in
        [("plan_and_apply", Part::PlanAndApply), ("plan", Part::Plan), ("gather_after_apply", Part::Gather)]
    {
        group.bench_function(name, |b| b.iter_custom(|iters| (0..iters).map(|_| replay.block(part)).sum()));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
