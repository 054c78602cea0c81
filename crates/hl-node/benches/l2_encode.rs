//! The l2 and encode stages of `ticktrade hl` on realistic books: every view of every coin a
//! block changed, at all seven variants and 20 levels, as the engine's `publish_l2_views` does
//! them (the `nSigFigs: 5` view shares the full view's frame when it keeps every level), over
//! a sequence of blocks from the synthetic generator (229 coins), so the views' last frames
//! and levels are as cold as in the server (1,600 views: several MB).
//!
//! `old`: `L2View::unchanged` + `L2View::encode` (two passes over a view's levels); `new`:
//! `L2View::encode_changed` (one pass), what the engine calls. Both aggregate with
//! `l2::aggregate_units`; `benches/l2_bucket.rs` times the aggregation alone. One iteration is
//! one block.

mod market;

use bytes::{Bytes, BytesMut};
use criterion::{Criterion, criterion_group, criterion_main};
use market::{Market, market};
use ticktrade_hl_node::l2;
use ticktrade_hl_proto::ws::{L2Variant, L2View, UnitLevel};

const N_LEVELS: usize = 20;
const N_BLOCKS: usize = 120;

/// The per-thread state of the engine's l2 and encode stages.
struct State {
    views: Vec<[L2View; 7]>,
    out: BytesMut,
    scratch: Vec<u8>,
    pool: [[Vec<UnitLevel>; 2]; 7],
    frames: Vec<Bytes>,
    block: usize,
    time_ms: u64,
}

impl State {
    fn new(m: &Market) -> State {
        State {
            views: m.names.iter().map(|n| std::array::from_fn(|_| L2View::new(n))).collect(),
            out: BytesMut::new(),
            scratch: Vec::new(),
            pool: Default::default(),
            frames: Vec::new(),
            block: 0,
            time_ms: 1_700_000_000_000,
        }
    }

    /// Aggregates and encodes every view of the next block's changed coins; the frames live
    /// until the next block (the server's queues hold them about as long).
    fn old_block(&mut self, m: &Market) -> usize {
        self.frames.clear();
        self.time_ms += 100;
        let block = &m.blocks[self.block % m.blocks.len()];
        self.block += 1;
        for changed in block {
            let views = &mut self.views[changed.coin];
            let units = m.units[changed.coin];
            let mut full_changed = false;
            for (v, variant) in L2Variant::ALL.into_iter().enumerate() {
                if v == 1 {
                    let [b, a] = &self.pool[0];
                    if l2::keeps_levels(b, variant) && l2::keeps_levels(a, variant) {
                        if !views[1].unchanged(b, a) {
                            let (full, rest) = views.split_at_mut(1);
                            let frame = if full_changed {
                                rest[0].share(&full[0])
                            } else {
                                rest[0].encode(&mut self.out, &mut self.scratch, self.time_ms, units, b, a)
                            };
                            self.frames.push(frame);
                        }
                        continue;
                    }
                }
                let [bids, asks] = &mut self.pool[v];
                l2::aggregate_units(&changed.sides[0], true, variant, N_LEVELS, bids);
                l2::aggregate_units(&changed.sides[1], false, variant, N_LEVELS, asks);
                if !views[v].unchanged(bids, asks) {
                    let frame = views[v].encode(&mut self.out, &mut self.scratch, self.time_ms, units, bids, asks);
                    self.frames.push(frame);
                    full_changed |= v == 0;
                }
            }
        }
        self.frames.len()
    }

    /// The same block with `encode_changed` in place of `unchanged` + `encode`.
    fn new_block(&mut self, m: &Market) -> usize {
        self.frames.clear();
        self.time_ms += 100;
        let block = &m.blocks[self.block % m.blocks.len()];
        self.block += 1;
        for changed in block {
            let views = &mut self.views[changed.coin];
            let units = m.units[changed.coin];
            let mut full_changed = false;
            for (v, variant) in L2Variant::ALL.into_iter().enumerate() {
                if v == 1 {
                    let [b, a] = &self.pool[0];
                    if l2::keeps_levels(b, variant) && l2::keeps_levels(a, variant) {
                        let (full, rest) = views.split_at_mut(1);
                        let frame = if rest[0].unchanged(b, a) {
                            None
                        } else if full_changed {
                            Some(rest[0].share(&full[0]))
                        } else {
                            rest[0].encode_changed(&mut self.out, &mut self.scratch, self.time_ms, units, b, a)
                        };
                        self.frames.extend(frame);
                        continue;
                    }
                }
                let [bids, asks] = &mut self.pool[v];
                l2::aggregate_units(&changed.sides[0], true, variant, N_LEVELS, bids);
                l2::aggregate_units(&changed.sides[1], false, variant, N_LEVELS, asks);
                if let Some(frame) =
                    views[v].encode_changed(&mut self.out, &mut self.scratch, self.time_ms, units, bids, asks)
                {
                    self.frames.push(frame);
                    full_changed |= v == 0;
                }
            }
        }
        self.frames.len()
    }
}

fn bench(c: &mut Criterion) {
    let m = market(N_BLOCKS);
    let views: usize = m.blocks.iter().map(Vec::len).sum::<usize>() * 7;
    eprintln!(
        "{} blocks, {:.1} coins changed per block, {:.0} views per block",
        m.blocks.len(),
        views as f64 / 7.0 / m.blocks.len() as f64,
        views as f64 / m.blocks.len() as f64
    );
    // Both paths give the same frames.
    let (mut a, mut b) = (State::new(&m), State::new(&m));
    for _ in 0..m.blocks.len() {
        a.old_block(&m);
        b.new_block(&m);
        assert_eq!(a.frames, b.frames);
    }
    let mut group = c.benchmark_group("l2_encode_block");
    group.bench_function("old", |bench| bench.iter(|| a.old_block(&m)));
    group.bench_function("new", |bench| bench.iter(|| b.new_block(&m)));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
