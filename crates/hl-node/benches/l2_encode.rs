//! The l2 and encode stages of `ticktrade hl` on realistic books: every view of every coin a
//! block changed, at all seven variants and 20 levels, as the engine's `publish_l2_views` does
//! them (the `nSigFigs: 5` view shares the full view's frame when it keeps every level), over
//! a sequence of blocks from the synthetic generator (229 coins), so the views' last frames
//! and levels are as cold as in the server (1,600 views: several MB).
//!
//! `old`: `aggregate_units` as it was + `L2View::unchanged` + `L2View::encode` (the engine's
//! calls before session 8); `new`: today's `aggregate_units` + `L2View::encode_changed`. One
//! iteration is one block. `l2_aggregate_block` times the aggregation alone, old and new.

use bytes::{Bytes, BytesMut};
use criterion::{Criterion, criterion_group, criterion_main};
use ticktrade_core::{Decimal, Utc};
use ticktrade_hl_node::l2;
use ticktrade_hl_node::synth::{GenConfig, Generator};
use ticktrade_hl_proto::ws::{L2Variant, L2View, UnitLevel, Units};

const N_LEVELS: usize = 20;
const N_BLOCKS: usize = 120;

/// `l2::aggregate_units` as it was before session 8 (a variable division and a digit loop
/// per bucket), for the A/B.
mod before {
    use ticktrade_hl_proto::ws::{L2Variant, UnitLevel};

    const POW10: [i64; 19] = {
        let mut t = [1i64; 19];
        let mut i = 1;
        while i < 19 {
            t[i] = t[i - 1] * 10;
            i += 1;
        }
        t
    };

    fn digits(value: i64) -> i32 {
        let mut n = 1;
        while n < 19 && value >= POW10[n as usize] {
            n += 1;
        }
        n
    }

    #[inline]
    fn bucket_range(px: i64, n_sig_figs: u32, mantissa: u32, is_bid: bool) -> (i64, i64, i64) {
        let d = digits(px);
        let exp = d - n_sig_figs as i32;
        let width = if exp < 0 { 1 } else { i64::from(mantissa).saturating_mul(POW10[exp as usize]) };
        if width <= 1 {
            return (px, px, px);
        }
        let down = px - px % width;
        let (b, lo, hi) = if is_bid {
            (down, down, down.saturating_add(width - 1))
        } else if down == px {
            (px, px.saturating_sub(width - 1), px)
        } else {
            let up = down.saturating_add(width);
            (up, up.saturating_sub(width - 1), up)
        };
        let same_digits_lo = POW10[(d - 1) as usize];
        let same_digits_hi = if (d as usize) < POW10.len() { POW10[d as usize] - 1 } else { i64::MAX };
        (b, lo.max(same_digits_lo), hi.min(same_digits_hi))
    }

    pub fn aggregate_units(
        levels: &[UnitLevel],
        is_bid: bool,
        variant: L2Variant,
        n_levels: usize,
        out: &mut Vec<UnitLevel>,
    ) {
        out.clear();
        let Some(sig) = variant.n_sig_figs() else {
            out.extend_from_slice(&levels[..levels.len().min(n_levels)]);
            return;
        };
        if n_levels == 0 {
            return;
        }
        let mantissa = variant.mantissa();
        let Some((first, rest)) = levels.split_first() else { return };
        let (mut px, mut lo, mut hi) = bucket_range(first.px, sig, mantissa, is_bid);
        let (mut sz, mut n) = (first.sz, first.n);
        for level in rest {
            if level.px >= lo && level.px <= hi {
                sz += level.sz;
                n += level.n;
                continue;
            }
            let (b, a, c) = bucket_range(level.px, sig, mantissa, is_bid);
            (lo, hi) = (a, c);
            if b == px {
                sz += level.sz;
                n += level.n;
                continue;
            }
            out.push(UnitLevel { px, sz, n });
            if out.len() >= n_levels {
                return;
            }
            (px, sz, n) = (b, level.sz, level.n);
        }
        out.push(UnitLevel { px, sz, n });
    }
}

/// One coin a block changed: its index and both sides, best first.
struct Changed {
    coin: usize,
    sides: [Vec<UnitLevel>; 2],
}

struct Market {
    units: Vec<Units>,
    names: Vec<String>,
    blocks: Vec<Vec<Changed>>,
}

fn market() -> Market {
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
                changed.push(Changed { coin: c, sides: now.clone() });
                *before = now;
            }
        }
        blocks.push(changed);
    }
    let coins = generator.coins();
    let unit = |scale: u32| Decimal::new(1, scale as u8).unwrap_or(Decimal::from_int(1));
    Market {
        units: coins.iter().map(|c| Units { px: unit(c.px_scale), sz: unit(c.sz_decimals) }).collect(),
        names: coins.iter().map(|c| c.name.clone()).collect(),
        blocks,
    }
}

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
                before::aggregate_units(&changed.sides[0], true, variant, N_LEVELS, bids);
                before::aggregate_units(&changed.sides[1], false, variant, N_LEVELS, asks);
                if !views[v].unchanged(bids, asks) {
                    let frame = views[v].encode(&mut self.out, &mut self.scratch, self.time_ms, units, bids, asks);
                    self.frames.push(frame);
                    full_changed |= v == 0;
                }
            }
        }
        self.frames.len()
    }

    /// The same block with this session's calls: the faster `aggregate_units`, and
    /// `encode_changed` in place of `unchanged` + `encode`.
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

    /// Only the aggregation of a block's views (`new`: this session's, else the old one).
    fn aggregate_block(&mut self, m: &Market, new: bool) -> usize {
        let block = &m.blocks[self.block % m.blocks.len()];
        self.block += 1;
        let mut total = 0;
        for changed in block {
            for (v, variant) in L2Variant::ALL.into_iter().enumerate() {
                let [bids, asks] = &mut self.pool[v];
                if new {
                    l2::aggregate_units(&changed.sides[0], true, variant, N_LEVELS, bids);
                    l2::aggregate_units(&changed.sides[1], false, variant, N_LEVELS, asks);
                } else {
                    before::aggregate_units(&changed.sides[0], true, variant, N_LEVELS, bids);
                    before::aggregate_units(&changed.sides[1], false, variant, N_LEVELS, asks);
                }
                total += bids.len() + asks.len();
            }
        }
        total
    }
}

fn bench(c: &mut Criterion) {
    let m = market();
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
    let mut group = c.benchmark_group("l2_aggregate_block");
    group.bench_function("old", |bench| bench.iter(|| a.aggregate_block(&m, false)));
    group.bench_function("new", |bench| bench.iter(|| b.aggregate_block(&m, true)));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
