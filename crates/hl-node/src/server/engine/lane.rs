//! One compute thread's share of a block (a lane): it takes the block's coins one at a time
//! from a queue shared with the other lane, and for each applies its diffs, then publishes
//! its subscribed `l2Book` views that changed (aggregate, encode, queue).
//!
//! Owns: the lane's scratch, reused from block to block, and what it leaves for the engine
//! thread (apply errors, frames a client's queue refused) and for the stats.
//! Must not: report, announce or disconnect (only the engine thread does, after the block),
//! or touch another coin's state than the job it took.
//!
//! Per coin: a coin's frames leave before the coins after it are applied. Work follows what can
//! have changed: a view whose shown levels the block's touched range cannot reach keeps its
//! last frame untouched (`l2::side_may_change`); the others aggregate from the coin's book
//! sides, gathered once, into the lane's reused level lists; and a view whose full-precision
//! twin keeps every level at its precision (`l2::keeps_levels`, e.g. `nSigFigs: 5` on
//! Hyperliquid's 5-significant-figure prices) shares the twin's frame, and while it holds that
//! frame it changes exactly when the twin does, so its own levels are not read.
//!
//! Cold caches: the lane prefetches (`ticktrade_core::hint`) the coin's view slots before its
//! apply and each kept view's last levels and frame before aggregating, reads the coin's book
//! levels in one pass first (`l2::warm_levels`), and the apply first reads the coin's orders
//! (`L4Book::warm`, `warm_texts` in `books.rs`), so that cold misses overlap instead of
//! stalling one by one. On one thread the lane yields its CPU after a coin's frames, at most
//! once per `YIELD_EVERY` (200 µs), so the connection tasks they woke run before the rest of
//! the block.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};

use ticktrade_core::Side;
use ticktrade_core::hint::prefetch_lines;
use ticktrade_hl_proto::node::{BookDiff, OrderStatus};
use ticktrade_hl_proto::ws::{L2Variant, L2View, UnitLevel};

mod emit;

use super::super::publish::{ClientId, CoinL2, L2Key, Subscribers, Undelivered};
use crate::books::{ApplyError, BlockPlan, CoinPart};
use crate::coins::{CoinId, CoinTable};

/// At most this many cache lines of a coin's view slots are prefetched before its apply
/// (seven views of 136 bytes: 15-16 lines).
const VIEW_LINES: usize = 24;

/// At most this many levels per side are read before a coin's apply (`l2::warm_levels`).
const WARM_LEVELS: usize = 64;

/// Of a view that has its full-precision twin's levels: the twin's position in the coin's keys
/// (its levels in `Lane::pool`) and in `views[coin]`, and whether the view's last frame is the
/// twin's (`L2View::shares_frame_with`): then it changed exactly when the twin did (decided
/// once the twin is encoded), else it is listed only when it changed.
type Twin = Option<(usize, usize, bool)>;

/// One `l2Book` view of a coin: its key and its last frame.
pub(super) struct ViewSlot {
    pub(super) key: L2Key,
    pub(super) view: L2View,
}

/// One coin's share of a block: its book and touched range, and its views, borrowed apart
/// from every other coin's, so two threads can each take coins.
pub(super) struct CoinJob<'a> {
    pub(super) part: CoinPart<'a>,
    pub(super) views: &'a mut Vec<ViewSlot>,
}

/// What every coin of a block reads (shared by the two threads).
pub(super) struct BlockCtx<'a, 'e> {
    pub(super) coins: &'a CoinTable,
    pub(super) plan: &'a BlockPlan,
    pub(super) statuses: &'a [OrderStatus<'e>],
    pub(super) diffs: &'a [BookDiff<'e>],
    pub(super) subs: &'a Subscribers,
    pub(super) time_ms: u64,
    pub(super) timings: bool,
    /// Yield the CPU at most this often (`YIELD_EVERY`, on one thread only).
    pub(super) yield_every: Option<Duration>,
}

/// One compute thread's working state for a block's coins, reused from block to block, and
/// what it leaves for the engine thread (apply errors, undelivered frames) and the stats.
pub(super) struct Lane {
    /// Frames are encoded into this buffer and split off as shared `Bytes`.
    pub(super) out: BytesMut,
    pub(super) scratch: Vec<u8>,
    /// Both sides of the coin being published, gathered once for all its views.
    pub(super) sides: [Vec<UnitLevel>; 2],
    /// Per coin being published: positions (in key order) of the views that changed, where
    /// they are in the coin's views, and the full-precision view whose levels they share, if
    /// any; and their new frames.
    pub(super) changed: Vec<(usize, usize, Twin)>,
    /// Per coin being published: `(nLevels, position in its views)` of each full-precision
    /// view aggregated for this block.
    pub(super) fulls: Vec<(usize, usize, usize)>,
    /// The levels of this block of the coin being published, per position of its views in the
    /// key order: reused for every coin, so they stay in cache (per-view lists were cold
    /// writes every block: the top of `aggregate_units` and of the encoder in perf).
    pub(super) pool: Vec<[Vec<UnitLevel>; 2]>,
    pub(super) frames: Vec<Bytes>,
    /// Per coin being published: each frame with the client and key position it goes to, to
    /// be queued as one item per client (`Lane::queue`).
    pub(super) batch: Vec<(ClientId, u32, Bytes)>,
    /// Coins whose diffs could not be applied (now stale), for the engine thread to report.
    pub(super) errors: Vec<(CoinId, ApplyError)>,
    /// Frames a client's queue refused, for the engine thread to disconnect it.
    pub(super) undelivered: Vec<(ClientId, Undelivered)>,
    /// This block: coins taken, coins changed, views aggregated.
    pub(super) n_coins: u64,
    pub(super) n_changed: u64,
    pub(super) n_aggregated: u64,
    /// This block (timings only): nanoseconds applying, aggregating and encoding, and in all.
    pub(super) ns: [u64; 3],
    pub(super) busy_ns: u64,
    /// This block: when this lane queued its first `l2Book` frame (timings only).
    pub(super) first_frame: Option<Instant>,
    pub(super) last_yield: Option<Instant>,
}

impl Lane {
    pub(super) fn new() -> Lane {
        Lane {
            out: BytesMut::with_capacity(1 << 16),
            scratch: Vec::with_capacity(32),
            sides: [Vec::with_capacity(256), Vec::with_capacity(256)],
            changed: Vec::with_capacity(16),
            fulls: Vec::with_capacity(4),
            pool: Vec::new(),
            frames: Vec::with_capacity(16),
            batch: Vec::with_capacity(16),
            errors: Vec::new(),
            undelivered: Vec::new(),
            n_coins: 0,
            n_changed: 0,
            n_aggregated: 0,
            ns: [0; 3],
            busy_ns: 0,
            first_frame: None,
            last_yield: None,
        }
    }

    pub(super) fn start_block(&mut self) {
        (self.n_coins, self.n_changed, self.n_aggregated) = (0, 0, 0);
        (self.ns, self.busy_ns) = ([0; 3], 0);
        (self.first_frame, self.last_yield) = (None, None);
    }

    /// Takes coins from `queue` until it is empty.
    pub(super) fn drain(&mut self, ctx: &BlockCtx<'_, '_>, queue: &Mutex<std::vec::IntoIter<CoinJob<'_>>>) {
        let started = ctx.timings.then(Instant::now);
        loop {
            // A poisoned queue means the other thread panicked; the join re-raises it.
            let job = match queue.lock() {
                Ok(mut queue) => queue.next(),
                Err(_) => None,
            };
            let Some(mut job) = job else { break };
            self.run_coin(ctx, &mut job);
        }
        if let Some(t) = started {
            self.busy_ns += t.elapsed().as_nanos() as u64;
        }
    }

    /// One coin: apply its diffs, then publish its views at once, so its frames leave while
    /// the other coins are still to be applied; a coin's frame is only built once all its
    /// diffs of the block are applied (its book is then at the end of the block).
    fn run_coin(&mut self, ctx: &BlockCtx<'_, '_>, job: &mut CoinJob<'_>) {
        self.n_coins += 1;
        let coin = job.part.coin;
        // The coin's view slots (cold: every block touches several MB) start loading now, so
        // that their misses overlap each other and the apply, and the skip check finds them.
        prefetch_lines(job.views.as_slice(), VIEW_LINES);
        // Its book's levels (cold too; `publish_l2` gathers them all, and the apply reads some)
        // are read now, in one pass whose misses overlap, instead of one by one by the apply and
        // the gather. A parity build (the same reads on even blocks, none on odd, same run, 2
        // threads, 4 runs, 20:39-20:54 UTC) measured gather 142 -> 58 us per block, apply -20%,
        // block p50 -3%. Its time counts in the l2 stage.
        let subscribed = ctx.subs.l2.get(&coin).is_some();
        let warm = (ctx.timings && subscribed).then(Instant::now);
        if subscribed {
            let book = &job.part.book.book;
            crate::l2::warm_levels(book.levels(Side::Buy), WARM_LEVELS);
            crate::l2::warm_levels(book.levels(Side::Sell), WARM_LEVELS);
        }
        let t = ctx.timings.then(Instant::now);
        if let (Some(w), Some(t)) = (warm, t) {
            self.ns[1] += t.duration_since(w).as_nanos() as u64;
        }
        let applied = job.part.apply(ctx.coins.spec(coin), ctx.plan, ctx.statuses, ctx.diffs);
        if let Some(t) = t {
            self.ns[0] += t.elapsed().as_nanos() as u64;
        }
        self.n_changed += u64::from(applied.changed);
        match applied.error {
            Some(err) => self.errors.push((coin, err)),
            None if applied.changed => {
                if let Some(keys) = ctx.subs.l2.get(&coin) {
                    self.publish_l2(ctx, job, keys);
                }
                // Let the connection tasks this block's frames woke run now if they wait
                // for this CPU (the scheduler would let the rest of the block run first):
                // frames queued should leave before the next coins are computed. At most
                // once per `YIELD_EVERY`, from the first coin on, so that the block itself
                // is not handed away coin after coin. On one thread only (see `YIELD_EVERY`).
                if let Some(every) = ctx.yield_every {
                    let now = Instant::now();
                    if self.last_yield.is_none_or(|at| now.duration_since(at) >= every) {
                        std::thread::yield_now();
                        self.last_yield = Some(now);
                    }
                }
            }
            None => {}
        }
    }

    /// Publishes every subscribed view (`keys`) of the job's coin that changed; adds the time
    /// spent aggregating and encoding to `ns` (only when timings are recorded).
    fn publish_l2(&mut self, ctx: &BlockCtx<'_, '_>, job: &mut CoinJob<'_>, keys: &CoinL2) {
        let started = ctx.timings.then(Instant::now);
        let CoinJob { part, views: list } = job;
        let coin = part.coin;
        let book = &*part.book;
        if book.stale {
            return;
        }
        // 1. L2: a view whose shown levels the block's touched prices cannot reach keeps its
        // last frame (`l2::side_may_change`); the others are aggregated from both sides,
        // gathered once, and compared with their last frame (a change outside the visible
        // levels sends nothing).
        let touched = part.touched().range;
        let spec = ctx.coins.spec(coin);
        self.changed.clear();
        self.fulls.clear();
        if self.pool.len() < keys.len() {
            self.pool.resize_with(keys.len(), || [Vec::with_capacity(128), Vec::with_capacity(128)]);
        }
        let mut gathered = false;
        for (pos, key) in keys.keys().enumerate() {
            let at = slot_near(list, pos, key, &spec.name);
            let slot = &mut list[at];
            let (variant, n) = (L2Variant::ALL[usize::from(key.variant_idx)], usize::from(key.n_levels));
            if !slot.view.is_fresh()
                && !crate::l2::side_may_change(slot.view.deepest(0), true, variant, n, touched[0])
                && !crate::l2::side_may_change(slot.view.deepest(1), false, variant, n, touched[1])
            {
                continue;
            }
            self.n_aggregated += 1;
            // Its last levels and frame start loading now, while the other views of the coin
            // are checked and aggregated: the compare and the encoder below read them cold
            // otherwise, one view after another.
            list[at].view.prefetch();
            // A view whose full-precision twin (same nLevels, aggregated above: keys are in
            // variant order, `Full` first) keeps every level at its variant has the twin's
            // levels (`l2::keeps_levels`): it is not aggregated, and shares the twin's frame
            // when that is new too.
            let pool = &self.pool;
            let twin = self.fulls.iter().find(|&&(m, _, _)| m == n).map(|&(_, p, t)| (p, t)).filter(|&(p, _)| {
                let [b, a] = &pool[p];
                crate::l2::keeps_levels(b, variant) && crate::l2::keeps_levels(a, variant)
            });
            if let Some((p, t)) = twin {
                // In step with its twin (it showed the twin's last levels, and has the twin's
                // levels now), it changed exactly when the twin does: its own cold levels need
                // not be read. Otherwise it is compared with what it last showed.
                if list[at].view.shares_frame_with(&list[t].view) {
                    self.changed.push((pos, at, Some((p, t, true))));
                } else if !list[at].view.unchanged(&pool[p][0], &pool[p][1]) {
                    self.changed.push((pos, at, Some((p, t, false))));
                }
                continue;
            }
            if !gathered {
                crate::l2::gather(book.book.levels(Side::Buy), &mut self.sides[0]);
                crate::l2::gather(book.book.levels(Side::Sell), &mut self.sides[1]);
                gathered = true;
            }
            let [bids, asks] = &mut self.pool[pos];
            crate::l2::aggregate_units(&self.sides[0], true, variant, n, bids);
            crate::l2::aggregate_units(&self.sides[1], false, variant, n, asks);
            if variant == L2Variant::Full {
                self.fulls.push((n, pos, at));
            }
            // Compared with its last frame by `encode_changed` (one pass).
            self.changed.push((pos, at, None));
        }
        let aggregated = ctx.timings.then(Instant::now);
        self.encode_views(ctx, list, spec.units);
        let encoded = ctx.timings.then(Instant::now);
        self.queue(ctx, keys);
        if let (Some(a), Some(b), Some(c)) = (started, aggregated, encoded) {
            self.ns[1] += b.duration_since(a).as_nanos() as u64;
            self.ns[2] += c.duration_since(b).as_nanos() as u64;
        }
    }
}

/// [`slot_at`], looking first at `list[pos]` (`pos`: the key's position among the coin's
/// subscribed keys), where it is when the views were created in key order (a client
/// subscribing to a coin's variants in order): no scan over the other views, whose keys are
/// cold lines.
fn slot_near(list: &mut Vec<ViewSlot>, pos: usize, key: L2Key, name: &str) -> usize {
    if list.get(pos).is_some_and(|s| s.key == key) { pos } else { slot_at(list, key, name) }
}

/// Where the view `key` is in a coin's views `list`, created on first use.
pub(super) fn slot_at(list: &mut Vec<ViewSlot>, key: L2Key, name: &str) -> usize {
    match list.iter().position(|s| s.key == key) {
        Some(at) => at,
        None => {
            list.push(ViewSlot { key, view: L2View::new(name) });
            list.len() - 1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_near_finds_the_key_wherever_it_is_and_creates_it_once() {
        let key = |variant_idx: u8| L2Key { variant_idx, n_levels: 20 };
        let mut list = Vec::new();
        // Created out of key order: the position hint is then wrong for some.
        for v in [2, 0, 1] {
            slot_at(&mut list, key(v), "BTC");
        }
        for (pos, v) in [(0, 0), (1, 1), (2, 2), (0, 2), (2, 0)] {
            let at = slot_near(&mut list, pos, key(v), "BTC");
            assert_eq!(list[at].key, key(v), "key {v} looked up at {pos}");
        }
        assert_eq!(list.len(), 3);
        // A key without a view gets one, at the end (the others keep their places).
        let at = slot_near(&mut list, 1, key(6), "BTC");
        assert_eq!((at, list.len()), (3, 4));
        assert_eq!(list.iter().map(|s| s.key.variant_idx).collect::<Vec<_>>(), vec![2, 0, 1, 6]);
    }
}
