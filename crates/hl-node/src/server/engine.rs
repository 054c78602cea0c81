//! The engine: the thread that reads the node's files, applies blocks, and publishes (with
//! one helper thread for the per-block work when there are two CPUs).
//!
//! Owns: the followers, the joiner, the books, the subscribers, and the order of everything:
//! requests and blocks are handled one at a time on this thread, so a client's
//! `subscriptionResponse`, its first snapshot and every later update arrive strictly in block
//! order, with no task per message and no lock (the fix for OBS's out-of-order defect).
//! Must not: block on a client (queues are bounded, `try_send` only) or fetch a snapshot.
//!
//! Per block, work follows demand: L2 is computed only for coins that changed in the block and
//! only for the `(variant, nLevels)` pairs someone subscribed to, once per pair, and the encoded
//! frame is shared by all its subscribers.
//!
//! Two threads (`EngineConfig::threads`, default 2 on a machine with 2 CPUs or more). A
//! block's work is per coin apart from decoding the lines and grouping the diffs: a coin's
//! apply, L2, encode and queue touch only its book, touched range, views and frames (and the
//! per-client queues, which take frames from any thread). So:
//! - both lines are decoded at once (statuses here, diffs on the helper);
//! - then the block's coins go into one queue (each coin's state borrowed apart from the
//!   others', `Books::split_block`) and both threads take the next coin until none is left,
//!   each with its own scratch (`Lane`); the block ends when both are done, so a coin's
//!   frames of block h are queued before any of block h+1 (the `l4Book` and trades frames
//!   stay on this thread, after the coins, as before);
//! - what only this thread may do waits for the end of the block: reporting a coin that could
//!   not be applied (and announcing it stale), and disconnecting a client whose queue was
//!   full (`Subscribers::undelivered`).
//!
//! The helper is the second thread of a 2-thread rayon pool whose first thread is this one
//! (`use_current_thread`, built on the first block), and each stage is a `join`: its second
//! half is offered to the helper, which is woken by that very call (the wake-up, tens of µs
//! on this host, overlaps the statuses decode), and if the helper has not stolen it by the
//! time this thread finished its own half, this thread runs it itself; the coin half finds
//! the queue empty by then. So a late or descheduled helper (a shared 2-vCPU machine) never
//! delays a block: this thread never waits for it to start, only for the coin it is in the
//! middle of. Chosen over a pool this thread is not part of (a scope waits for the helper
//! job to *start*, however late) and over a parked thread of our own (it would need `unsafe`
//! to lend the block's borrowed state to it), at the price that the pool belongs to the
//! thread that built it: an engine driven from another thread runs on one. rayon leaks the
//! small registry of such a pool when it is dropped (one per engine; tests build several).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};

use ticktrade_core::{Side, Utc};
use ticktrade_hl_proto::asset_ctx::BookCtx;
use ticktrade_hl_proto::info::InfoRequest;
use ticktrade_hl_proto::node::{
    Batch, BookDiff, NodeFill, OrderStatus, RestingStatus, TypedBatch, fast, scan_block_number, scan_coins,
    trades_from_fills,
};
use ticktrade_hl_proto::time::parse_node_time;
use ticktrade_hl_proto::ws::{self as proto, ClientMessage, L2Variant, UnitLevel};

mod lane;
mod requests;

use lane::{BlockCtx, CoinJob, Lane, ViewSlot, slot_at};

use super::publish::{ClientId, L2Key, Outbound, Subscribers};
use crate::books::{BlockPlan, Books};
use crate::coins::CoinId;
use crate::follow::Follower;
use crate::join::{Joined, Joiner, Line, Stream};

/// How the engine runs.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Only these coins are kept and served (`--coins`); `None` = all.
    pub coins: Option<HashSet<String>>,
    /// Relay node lines to every client instead of keeping books (`--raw`).
    pub raw: bool,
    /// Polling fallback interval when no file notification arrives.
    pub poll: Duration,
    /// Apply no block above this height (`ticktrade hl verify` stops at the second snapshot).
    pub stop_after: Option<u64>,
    /// Threads that decode, apply and publish a block: 1 (the engine's own) or 2 (and one
    /// helper; more are not used). Default: 2 when the machine has at least 2 CPUs.
    pub threads: usize,
}

impl EngineConfig {
    /// 2 when `std::thread::available_parallelism` is at least 2, else 1.
    pub fn default_threads() -> usize {
        std::thread::available_parallelism().map_or(1, |n| n.get().min(2))
    }
}

impl Default for EngineConfig {
    fn default() -> EngineConfig {
        EngineConfig {
            coins: None,
            raw: false,
            poll: Duration::from_millis(100),
            stop_after: None,
            threads: EngineConfig::default_threads(),
        }
    }
}

/// Messages into the engine thread.
pub enum EngineMsg {
    /// Something changed under the data directory.
    Files,
    Connect {
        id: ClientId,
        /// Text frames for the connection's writer (items of one or more frames).
        tx: mpsc::Sender<Outbound>,
        kill: oneshot::Sender<String>,
    },
    Request {
        id: ClientId,
        message: ClientMessage,
        text: String,
    },
    Disconnect {
        id: ClientId,
    },
    Info {
        request: InfoRequest,
        reply: oneshot::Sender<String>,
    },
    /// The books' part of the asset contexts of `coins` (name, and whether impact prices are
    /// wanted), in order; a coin not kept gets an empty context.
    BookCtxs {
        coins: Vec<(String, bool)>,
        reply: oneshot::Sender<Vec<BookCtx>>,
    },
    Stop,
}

/// Figures the engine exposes (for `ticktrade bench hl` and tests).
#[derive(Debug, Default)]
pub struct EngineStats {
    /// Nanoseconds from "both lines of a block are in memory" to "all frames queued".
    /// Coins are applied and published one at a time per thread (see [`PHASES`]).
    pub block_ns: Vec<u64>,
    /// Per block: nanoseconds spent in each of [`PHASES`] (summed over the two threads).
    pub phase_ns: Vec<[u64; 5]>,
    /// Per block: `l2Book` views aggregated (those the skip rule could not rule out).
    pub views_aggregated: Vec<u64>,
    /// Per block: coins whose book changed (their subscribed views are the ones checked).
    pub coins_changed: Vec<u64>,
    /// Per block run on two threads: nanoseconds from offering the helper its half of the
    /// decode and of the coins (`join`) to it starting that half; `u64::MAX` when the engine
    /// thread ran the half itself (the helper had not started it by then).
    pub helper_start_ns: Vec<[u64; 2]>,
    /// Per block run on two threads: nanoseconds between the two threads running out of
    /// coins (the one that finished first waited that long for the other's last coin);
    /// `u64::MAX` when the helper ran none.
    pub coins_end_gap_ns: Vec<u64>,
    /// Per block: when it started (both lines in memory), its first `l2Book` frame was queued,
    /// and its last frame was queued, keyed by the block time (ms), for the end-to-end bench.
    pub marks: Vec<BlockMarks>,
    /// Blocks whose engine thread, and whose helper, ran under `SCHED_FIFO`
    /// ([`Engine::realtime_blocks`]).
    pub realtime_blocks: (u64, u64),
    /// Height of the last applied block.
    pub height: u64,
    /// Malformed input and apply errors, `file:line: what`.
    pub reports: Vec<String>,
}

/// Instants of one block's processing (`EngineStats::marks`).
#[derive(Clone, Copy, Debug)]
pub struct BlockMarks {
    pub time_ms: u64,
    /// Per line (statuses, diffs): when the engine woke for the pass that read it, and when
    /// it had read it.
    pub lines: [(Instant, Instant); 2],
    pub started: Instant,
    pub first_frame: Option<Instant>,
    pub done: Instant,
}

/// The stages of a block's processing time (`EngineStats::phase_ns`): decode the two lines;
/// apply them to the L4 books (grouping the diffs by coin, then each coin's diffs); aggregate
/// the subscribed L2 views of changed coins (and compare each with its last frame); encode the
/// views that changed; queue the frames (`try_send`, the `l4Book` path and the per-coin
/// overhead: the rest of the block). Each thread runs coin by coin (apply, l2, encode, queue
/// of one coin, then the next), so each stage is the sum of its per-coin parts; with two
/// threads, apply, l2, encode and queue are summed over both (they add up to more than the
/// block), and decode is the time until both lines are decoded.
pub const PHASES: [&str; 5] = ["decode", "apply", "l2", "encode", "queue"];

/// Least time between two points in a block where the engine yields its CPU to the connection
/// tasks its frames woke (`Lane::run_coin`), when it runs on one thread. On two it does not:
/// 3 alternating full `bench hl` runs (11:32-11:36 UTC, load 1.2-1.3) with and without it on
/// two threads: probe p50 1.22/1.19/1.33 vs 1.14/1.13/1.21 ms, load client p99 3.68/4.17/5.16
/// vs 3.66/3.44/3.32 ms, last frame queued p50 2.49/2.61/2.92 vs 2.25/2.30/2.37 ms (probe
/// p99 mixed: 2.65/2.24/3.76 vs 2.63/2.82/2.58 ms).
const YIELD_EVERY: Duration = Duration::from_micros(200);

/// The engine state.
pub struct Engine {
    config: EngineConfig,
    books: Books,
    followers: Vec<Follower>,
    joiner: Joiner,
    subs: Subscribers,
    lines: Vec<Line>,
    /// The block's diffs grouped by coin (reused).
    plan: BlockPlan,
    last_fill_height: u64,
    stats: Arc<Mutex<EngineStats>>,
    record_timings: bool,
    /// The levels of a request's view (`requests`).
    bids: Vec<UnitLevel>,
    asks: Vec<UnitLevel>,
    dead: Vec<ClientId>,
    /// The levels and frame last published per coin (indexed by `CoinId`) and subscription
    /// key: a coin's handful of views in a plain list, no hashing per view.
    views: Vec<Vec<ViewSlot>>,
    /// Per compute thread (the engine's own first), its working state for a block's coins.
    lanes: Vec<Lane>,
    /// The second compute thread (`EngineConfig::threads` 2), built on the first block with
    /// this thread as its other member; `None` before, and for good if that failed.
    pool: Option<rayon::ThreadPool>,
    pool_failed: bool,
    /// Switches the block's threads to real-time and back (`Engine::realtime_blocks`).
    block_class: Option<crate::sched::BlockClass>,
    /// Keeps the helper thread spinning from a file wake-up to the block's stages ([`Warm`]).
    warm: Arc<Warm>,
    /// The last block's decode buffers, empty, for the next block.
    spare: Spare,
    /// Blocks whose coins were offered to both threads, and coins the helper thread took.
    n_parallel: u64,
    n_helper_coins: u64,
    /// Test hook: the engine thread leaves every coin to the helper thread.
    #[cfg(test)]
    helper_only: bool,
    /// When the engine last woke (timings only).
    woken: Instant,
    /// Per stream (statuses, diffs): the height of the last line read, the wake before it and
    /// when it was read (timings only).
    read_at: [(u64, Instant, Instant); 2],
}

/// Decodes a line's events into `out`: first `fast` (hl-node's exact shape, see
/// [`ticktrade_hl_proto::node::fast`]), if it gives up one typed pass over the line as `F`
/// (each mapped by `take`), and only if that fails, the wrapper then event by event as `T`
/// (those `keep` accepts), so a damaged event is reported and spoils only its coins.
#[allow(clippy::too_many_arguments)]
fn decode_events<'a, F: Deserialize<'a>, T: Deserialize<'a>>(
    line: &'a Line,
    fast: impl FnOnce(&'a str, &mut Vec<T>) -> Option<fast::Header<'a>>,
    take: impl Fn(F) -> Option<T>,
    keep: impl Fn(&str) -> bool,
    out: &mut Vec<T>,
    damaged: &mut Vec<String>,
    reports: &mut Vec<String>,
) -> Option<&'a str> {
    if let Some(header) = fast(&line.text, out) {
        return Some(header.block_time);
    }
    if let Ok(batch) = TypedBatch::<'a, F>::parse(&line.text) {
        out.extend(batch.events.into_iter().filter_map(take));
        return Some(batch.block_time);
    }
    let batch = match Batch::parse(&line.text) {
        Ok(batch) => batch,
        Err(err) => {
            damaged.extend(scan_coins(&line.text).into_iter().map(str::to_owned));
            reports.push(format!("{}: malformed line skipped: {err}", line.origin));
            return None;
        }
    };
    for (i, raw) in batch.events.iter().enumerate() {
        if !keep(raw.get()) {
            continue;
        }
        match serde_json::from_str::<T>(raw.get()) {
            Ok(event) => out.push(event),
            Err(err) => {
                damaged.extend(scan_coins(raw.get()).into_iter().map(str::to_owned));
                reports.push(format!("{}: event {i} skipped: {err}", line.origin));
            }
        }
    }
    Some(batch.block_time)
}

impl Engine {
    /// An engine over `books` (already at the snapshot height) following `followers`.
    pub fn new(config: EngineConfig, books: Books, followers: Vec<Follower>) -> Engine {
        let height = books.height();
        Engine {
            books,
            followers,
            joiner: Joiner::new(height),
            subs: Subscribers::default(),
            lines: Vec::new(),
            plan: BlockPlan::default(),
            last_fill_height: height,
            stats: Arc::new(Mutex::new(EngineStats { height, ..EngineStats::default() })),
            record_timings: false,
            bids: Vec::with_capacity(128),
            asks: Vec::with_capacity(128),
            dead: Vec::new(),
            views: Vec::new(),
            lanes: (0..config.threads.clamp(1, 2)).map(|_| Lane::new()).collect(),
            pool: None,
            pool_failed: false,
            block_class: None,
            warm: Arc::new(Warm::new()),
            spare: Spare::default(),
            n_parallel: 0,
            n_helper_coins: 0,
            #[cfg(test)]
            helper_only: false,
            woken: Instant::now(),
            read_at: [(0, Instant::now(), Instant::now()); 2],
            config,
        }
    }

    /// Keep every block's processing time in the stats (benchmarks).
    pub fn record_timings(&mut self, on: bool) {
        self.record_timings = on;
    }

    pub fn stats(&self) -> Arc<Mutex<EngineStats>> {
        self.stats.clone()
    }

    pub fn books(&self) -> &Books {
        &self.books
    }

    fn allowed(&self, coin: &str) -> bool {
        self.config.coins.as_ref().is_none_or(|set| set.contains(coin))
    }

    /// Runs until `Stop` or until every sender is gone.
    pub fn run(mut self, rx: Receiver<EngineMsg>) {
        self.poll_files();
        loop {
            let first = match rx.recv_timeout(self.config.poll) {
                Ok(msg) => Some(msg),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return,
            };
            if self.record_timings {
                self.woken = Instant::now();
            }
            let mut files = first.is_none();
            for msg in first.into_iter().chain(rx.try_iter()) {
                match msg {
                    EngineMsg::Files => files = true,
                    EngineMsg::Stop => return,
                    other => self.handle(other),
                }
            }
            if files {
                self.poll_files();
            }
        }
    }

    /// Handles one non-file message.
    pub fn handle(&mut self, msg: EngineMsg) {
        match msg {
            EngineMsg::Connect { id, tx, kill } => self.subs.connect(id, tx, kill, self.config.raw),
            EngineMsg::Request { id, message, text } => self.on_request(id, message, &text),
            EngineMsg::Disconnect { id } => self.drop_client(id),
            EngineMsg::Info { request, reply } => {
                let _ = reply.send(self.info(request));
            }
            EngineMsg::BookCtxs { coins, reply } => {
                let _ = reply.send(self.book_ctxs(&coins));
            }
            EngineMsg::Files | EngineMsg::Stop => {}
        }
        self.reap();
    }

    /// Reads every new line and processes what became complete: first what was appended to
    /// the open hourly files (the block is published before anything else), then, with the
    /// directory listings that find the next hour's files, whatever the rollover brings. A
    /// follower that stopped at its read limit (catching up on history) is read again at once,
    /// after the lines it gave were processed, so no more than one step of a file is held.
    pub fn poll_files(&mut self) {
        loop {
            self.poll_files_once();
            if !self.followers.iter().any(Follower::pending) {
                break;
            }
        }
        self.reap();
    }

    fn poll_files_once(&mut self) {
        // A block is likely: have the helper awake by the time both lines are read.
        if let Some(pool) = self.pool.as_ref().filter(|p| p.current_thread_index() == Some(0)) {
            self.warm.spin(pool);
        }
        for rollover in [false, true] {
            let mut lines = std::mem::take(&mut self.lines);
            // Stream by stream (statuses, diffs, then fills): a block is processed as soon as
            // its second line is read, before the fills line is.
            for i in 0..self.followers.len() {
                let follower = &mut self.followers[i];
                // A read error of the first pass recurs in the second, which reports it once.
                let read = if rollover { follower.poll(&mut lines) } else { follower.poll_current(&mut lines) };
                if let (true, Err(err)) = (rollover, read) {
                    let stream = follower.stream();
                    self.report(format!("{stream:?} stream: read error: {err}"));
                }
                for line in lines.drain(..) {
                    self.ingest(line);
                }
            }
            self.lines = lines;
        }
    }

    fn report(&self, message: String) {
        tracing::warn!("{message}");
        if let Ok(mut stats) = self.stats.lock()
            && stats.reports.len() < 10_000
        {
            stats.reports.push(message);
        }
    }

    /// Every path hands the line (or the line the joiner drops) back to its follower
    /// ([`Engine::recycle`]).
    fn ingest(&mut self, line: Line) {
        if self.config.raw {
            self.relay(&line);
            self.recycle(line);
            return;
        }
        let Some(height) = scan_block_number(&line.text) else {
            self.report(format!("{}: malformed line skipped: no block_number", line.origin));
            for coin in scan_coins(&line.text) {
                let id = self.books.coin_id(coin);
                self.books.mark_stale(id);
            }
            self.recycle(line);
            return;
        };
        if self.config.stop_after.is_some_and(|stop| height > stop) {
            self.recycle(line);
            return;
        }
        if self.record_timings && line.stream != Stream::Fills {
            self.read_at[usize::from(line.stream == Stream::Diffs)] = (height, self.woken, Instant::now());
        }
        match line.stream {
            Stream::Fills => {
                self.on_fills(height, &line);
                self.recycle(line);
            }
            _ => {
                if let Some(dropped) = self.joiner.push(height, line) {
                    self.recycle(dropped);
                }
                while let Some(joined) = self.joiner.pop() {
                    match joined {
                        Joined::Block { height, statuses, diffs } => {
                            self.on_block(height, &statuses, &diffs);
                            self.recycle(statuses);
                            self.recycle(diffs);
                        }
                        Joined::Gap { height, line } => {
                            self.report(format!(
                                "block {height} missing from a stream: every book is stale until the next snapshot"
                            ));
                            self.books.mark_all_stale();
                            if let Some(line) = line {
                                self.recycle(line);
                            }
                        }
                    }
                }
            }
        }
    }

    /// Hands a line's buffer back to the follower of its stream: its next line is read into it.
    fn recycle(&mut self, line: Line) {
        if let Some(follower) = self.followers.iter_mut().find(|f| f.stream() == line.stream) {
            follower.recycle(line.text);
        }
    }

    fn relay(&mut self, line: &Line) {
        if serde_json::from_str::<&RawValue>(&line.text).is_err() {
            self.report(format!("{}: malformed line not relayed", line.origin));
            return;
        }
        let frame =
            format!(r#"{{"channel":"raw","data":{{"stream":"{}","block":{}}}}}"#, line.stream.dir_name(), line.text);
        let frame = Bytes::from(frame);
        for id in self.subs.raw.clone() {
            self.subs.send(id, frame.clone(), &mut self.dead);
        }
    }

    fn on_fills(&mut self, height: u64, line: &Line) {
        if height <= self.last_fill_height {
            return;
        }
        self.last_fill_height = height;
        if self.subs.trades.is_empty() {
            return;
        }
        let (mut fills, mut damaged, mut reports) = (Vec::<NodeFill<'_>>::new(), Vec::new(), Vec::new());
        decode_events(line, |_, _| None, Some::<NodeFill<'_>>, |_| true, &mut fills, &mut damaged, &mut reports);
        for r in reports {
            self.report(r);
        }
        let trades = trades_from_fills(&fills);
        let mut start = 0;
        while start < trades.len() {
            let coin = trades[start].coin;
            let end = start + trades[start..].iter().take_while(|t| t.coin == coin).count();
            if let Some(ids) = self.subs.trades.get(coin).cloned() {
                let same: Vec<_> = trades[start..end].to_vec();
                let frame = Bytes::from(proto::trades_frame(&same));
                for id in ids {
                    self.subs.send(id, frame.clone(), &mut self.dead);
                }
            }
            start = end;
        }
    }

    fn on_block(&mut self, height: u64, statuses_line: &Line, diffs_line: &Line) {
        let started = Instant::now();
        // Before the switch to real-time: a helper started now (the first block) inherits the
        // engine thread's class, and only a class switched by `raise` is switched back.
        let both = self.two_threads();
        self.switch_class(true);
        // The two lines are decoded at once when there are two threads (`decode_on_two`), into
        // the last block's buffers (`Spare`).
        let (status_bufs, diffs_buf) = self.spare.take();
        let all_statuses = !self.subs.l4.is_empty();
        let mut helper_start = [u64::MAX; 2];
        let (st, df, tail_buf) = match self.pool.as_ref().filter(|_| both) {
            Some(pool) => {
                self.warm.offer();
                let (st, df, tail, start) =
                    decode_on_two(pool, statuses_line, diffs_line, all_statuses, status_bufs, diffs_buf, 0);
                helper_start[0] = start;
                // Keep the helper awake through plan_block, up to the coins' `join`.
                self.warm.spin(pool);
                (st, df, tail)
            }
            None => {
                let [head, tail] = status_bufs;
                (decode_statuses(statuses_line, all_statuses, head), decode_diffs(diffs_line, diffs_buf), tail)
            }
        };
        let time = st.time.or(df.time).and_then(|t| parse_node_time(t).ok()).unwrap_or(self.books.time());
        let (mut statuses, mut diffs) = (st.events, df.events);
        if self.config.coins.is_some() {
            statuses.retain(|s| self.allowed(&s.order.coin));
            diffs.retain(|d| self.allowed(&d.coin));
        }
        for r in st.reports.into_iter().chain(df.reports) {
            self.report(r);
        }
        let mut newly_stale = Vec::new();
        for coin in st.damaged.into_iter().chain(df.damaged) {
            if self.allowed(&coin) {
                let id = self.books.coin_id(&coin);
                if !self.books.book(id).is_some_and(|b| b.stale) {
                    newly_stale.push(id);
                }
                self.books.mark_stale(id);
            }
        }
        let decoded = Instant::now();
        let mut plan = std::mem::take(&mut self.plan);
        self.books.plan_block(height, time, &statuses, &diffs, &mut plan);
        let timings = self.record_timings;
        let plan_ns = if timings { decoded.elapsed().as_nanos() as u64 } else { 0 };
        for coin in newly_stale {
            self.announce_stale(coin);
        }
        let coins_started = timings.then(Instant::now);
        let gap;
        (helper_start[1], gap) = self.run_coins(&plan, &statuses, &diffs, both);
        let coins_ns = coins_started.map_or(0, |t| t.elapsed().as_nanos() as u64);
        self.plan = plan;
        // What the lanes could not do off the engine thread: apply errors (reported, the coin
        // announced stale) and frames a client's queue refused (slow or gone: disconnected).
        for i in 0..self.lanes.len() {
            let mut errors = std::mem::take(&mut self.lanes[i].errors);
            for (coin, err) in errors.drain(..) {
                self.report(format!("{}: {err}; coin stale until the next snapshot", diffs_line.origin));
                self.announce_stale(coin);
            }
            self.lanes[i].errors = errors;
            let mut undelivered = std::mem::take(&mut self.lanes[i].undelivered);
            for (id, why) in undelivered.drain(..) {
                self.subs.undelivered(id, why, &mut self.dead);
            }
            self.lanes[i].undelivered = undelivered;
        }
        self.publish_l4(height, time, &statuses, &diffs);
        self.spare.put(statuses, tail_buf, diffs);
        self.switch_class(false);
        let realtime_blocks = self.block_class.as_ref().map_or((0, 0), crate::sched::BlockClass::raised_blocks);
        if let Ok(mut stats) = self.stats.lock() {
            stats.height = height;
            stats.realtime_blocks = realtime_blocks;
            if timings {
                let done = Instant::now();
                let total = done.duration_since(started).as_nanos() as u64;
                let decode = decoded.duration_since(started).as_nanos() as u64;
                // Each lane's stages, summed over the lanes; the lanes' time outside them, and
                // the engine's outside decode, plan and the coins, count as queueing.
                let mut sums = [plan_ns, 0, 0];
                let (mut queue, mut aggregated, mut changed) =
                    (total.saturating_sub(decode + plan_ns + coins_ns), 0, 0);
                let mut first_frame: Option<Instant> = None;
                for lane in &self.lanes {
                    for (s, ns) in sums.iter_mut().zip(lane.ns) {
                        *s += ns;
                    }
                    queue += lane.busy_ns.saturating_sub(lane.ns.iter().sum());
                    aggregated += lane.n_aggregated;
                    changed += lane.n_changed;
                    first_frame = match (first_frame, lane.first_frame) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                }
                stats.block_ns.push(total);
                stats.phase_ns.push([decode, sums[0], sums[1], sums[2], queue]);
                stats.views_aggregated.push(aggregated);
                stats.coins_changed.push(changed);
                if both {
                    stats.helper_start_ns.push(helper_start);
                    stats.coins_end_gap_ns.push(gap);
                }
                let time_ms = time.as_millis().max(0) as u64;
                let lines = self.read_at.map(|(h, w, r)| if h == height { (w, r) } else { (started, started) });
                stats.marks.push(BlockMarks { time_ms, lines, started, first_frame, done });
            }
        }
    }

    /// Switches the block's threads to real-time (`up`) or back ([`Engine::realtime_blocks`]);
    /// a refusal is logged once and the engine goes on in the normal class.
    fn switch_class(&mut self, up: bool) {
        if let Some(class) = self.block_class.as_mut() {
            let switched = if up { class.raise() } else { class.lower() };
            if let Err(err) = switched {
                tracing::warn!("blocks run in the normal class from now on: {err}");
            }
        }
    }

    /// Runs each block from now on with its threads switched to `SCHED_FIFO` by `class`, and
    /// back to the normal class after it (`--rt-priority`): called on the engine thread before
    /// its first block (the helper, started on the first block, records itself then). The
    /// caller checks the permission first (`BlockClass::probe`, as `server::start` does).
    pub fn realtime_blocks(&mut self, class: crate::sched::BlockClass) {
        self.block_class = Some(class);
    }

    /// True when this block runs on two threads: `EngineConfig::threads` is 2 and the pool
    /// with this thread as its first member exists (built here on the first block; an engine
    /// driven from another thread than the one that built it runs on one).
    fn two_threads(&mut self) -> bool {
        if self.lanes.len() < 2 || self.pool_failed {
            return false;
        }
        if self.pool.is_none() {
            // The helper records itself for the switches to real-time (`BlockClass`).
            let slot = self.block_class.as_ref().map(crate::sched::BlockClass::helper_slot);
            let built = rayon::ThreadPoolBuilder::new()
                .num_threads(2)
                .use_current_thread()
                .thread_name(|i| format!("hl-engine-{i}"))
                .start_handler(move |i| {
                    if let (1, Some(slot)) = (i, slot.as_ref()) {
                        let _ = slot.set(crate::sched::ThreadRef::current());
                    }
                })
                .build();
            match built {
                Ok(pool) => self.pool = Some(pool),
                Err(err) => {
                    tracing::warn!("the engine's second thread could not be started, running on one: {err}");
                    self.pool_failed = true;
                    return false;
                }
            }
        }
        self.pool.as_ref().is_some_and(|pool| pool.current_thread_index() == Some(0))
    }

    /// Applies and publishes every coin of the block (`plan`), on both threads when `both`:
    /// each takes the next coin from one shared queue until none is left, so a late or
    /// descheduled helper only means the engine thread does more of them (it never waits for
    /// the helper to start: a helper job nobody stole is run by the engine thread, and finds
    /// the queue empty). The block ends when both are done. Returns when the helper started
    /// (`helper_since`) and how far apart the two threads finished (nanoseconds; `u64::MAX`
    /// unless both ran coins and timings are on).
    fn run_coins(
        &mut self,
        plan: &BlockPlan,
        statuses: &[OrderStatus<'_>],
        diffs: &[BookDiff<'_>],
        both: bool,
    ) -> (u64, u64) {
        let last = (0..plan.len()).map(|g| plan.coin(g).0 as usize + 1).max().unwrap_or(0);
        if self.views.len() < last {
            self.views.resize_with(last, Vec::new);
        }
        #[cfg(test)]
        let helper_only = self.helper_only && both;
        #[cfg(not(test))]
        let helper_only = false;
        let time_ms = self.books.time().as_millis().max(0) as u64;
        let helper_done = self.block_class.as_ref().map(crate::sched::BlockClass::helper_done);
        let Engine { books, views, subs, lanes, pool, record_timings, warm, .. } = self;
        let (coins, parts) = books.split_block(plan);
        let mut lists = views.iter_mut().enumerate();
        let jobs: Vec<CoinJob<'_>> = parts
            .filter_map(|part| {
                let ci = part.coin.0 as usize;
                let (_, views) = lists.find(|(i, _)| *i == ci)?;
                Some(CoinJob { part, views })
            })
            .collect();
        let yield_every = (!both).then_some(YIELD_EVERY);
        let ctx = BlockCtx { coins, plan, statuses, diffs, subs, time_ms, timings: *record_timings, yield_every };
        let queue = Mutex::new(jobs.into_iter());
        for lane in lanes.iter_mut() {
            lane.start_block();
        }
        match (pool.as_ref().filter(|_| both), lanes.split_first_mut()) {
            (Some(pool), Some((first, [second, ..]))) => {
                let helper_started = AtomicBool::new(false);
                warm.offer();
                let offered = Instant::now();
                let timings = *record_timings;
                let (first_done, (start, second_done)) = pool.join(
                    || {
                        if helper_only {
                            while !helper_started.load(Ordering::Acquire) {
                                std::thread::yield_now();
                            }
                        } else {
                            first.drain(&ctx, &queue);
                        }
                        timings.then(Instant::now)
                    },
                    || {
                        let start = helper_since(offered);
                        helper_started.store(true, Ordering::Release);
                        second.drain(&ctx, &queue);
                        // The helper back to the normal class now (if the block raised it), not
                        // the engine thread when it ran this half itself.
                        if let (Some(done), true) = (helper_done.as_ref(), start != u64::MAX) {
                            done.run();
                        }
                        (start, timings.then(Instant::now))
                    },
                );
                self.n_parallel += 1;
                self.n_helper_coins += second.n_coins;
                // How far apart the two threads ran out of coins (the helper's half counts
                // only when the helper ran it).
                let gap = match (first_done, second_done) {
                    (Some(a), Some(b)) if start != u64::MAX => a.max(b).duration_since(a.min(b)).as_nanos() as u64,
                    _ => u64::MAX,
                };
                (start, gap)
            }
            (_, Some((first, _))) => {
                first.drain(&ctx, &queue);
                (u64::MAX, u64::MAX)
            }
            (_, None) => (u64::MAX, u64::MAX),
        }
    }

    /// Tells a stale coin's book subscribers that updates stop until the next snapshot (they
    /// would otherwise see a silently frozen book).
    fn announce_stale(&mut self, coin: CoinId) {
        let mut ids: Vec<ClientId> = self.subs.l4.get(&coin).cloned().unwrap_or_default();
        if let Some(keys) = self.subs.l2.get(&coin) {
            ids.extend(keys.values().flatten().copied());
        }
        ids.sort_unstable();
        ids.dedup();
        if ids.is_empty() {
            return;
        }
        let name = &self.books.coins.spec(coin).name;
        let text = format!(
            "Order book for {name} is stale (its data could not be applied); no updates until the next snapshot"
        );
        let frame = Bytes::from(proto::error_frame(&text));
        for id in ids {
            self.subs.send(id, frame.clone(), &mut self.dead);
        }
    }

    fn publish_l4(&mut self, height: u64, time: Utc, statuses: &[OrderStatus<'_>], diffs: &[BookDiff<'_>]) {
        if self.subs.l4.is_empty() {
            return;
        }
        let time_ms = time.as_millis().max(0) as u64;
        let wanted: Vec<(CoinId, Vec<ClientId>)> = self.subs.l4.iter().map(|(c, ids)| (*c, ids.clone())).collect();
        for (coin, ids) in wanted {
            let name = self.books.coins.spec(coin).name.as_str();
            let st: Vec<proto::L4Status<'_>> =
                statuses.iter().filter(|s| s.order.coin == name).map(proto::L4Status::from_node).collect();
            let df: Vec<proto::L4Diff<'_>> =
                diffs.iter().filter(|d| d.coin == name).map(proto::L4Diff::from_node).collect();
            if st.is_empty() && df.is_empty() {
                continue;
            }
            let frame = Bytes::from(proto::l4_updates_frame(time_ms, height, &st, &df));
            for id in ids {
                self.subs.send(id, frame.clone(), &mut self.dead);
            }
        }
    }

    /// Aggregates `coin` at `variant` into `self.bids`/`self.asks`; false for a stale book.
    fn aggregate_l2(&mut self, coin: CoinId, variant: L2Variant, n_levels: usize) -> bool {
        let Some(book) = self.books.book(coin) else { return false };
        if book.stale {
            return false;
        }
        crate::l2::aggregate(book.book.levels(Side::Buy), true, variant, n_levels, &mut self.bids);
        crate::l2::aggregate(book.book.levels(Side::Sell), false, variant, n_levels, &mut self.asks);
        true
    }

    /// Where the view `key` of `coin` is in `views[coin]`, created on first use.
    fn view_at(views: &mut Vec<Vec<ViewSlot>>, coin: CoinId, key: L2Key, name: &str) -> usize {
        let ci = coin.0 as usize;
        if views.len() <= ci {
            views.resize_with(ci + 1, Vec::new);
        }
        slot_at(&mut views[ci], key, name)
    }

    /// Encodes the aggregated levels (`self.bids`/`self.asks`) of `coin` as the new frame of
    /// its view `key`.
    pub(super) fn encode_view(&mut self, coin: CoinId, key: L2Key) -> Bytes {
        let spec = self.books.coins.spec(coin);
        let time_ms = self.books.time().as_millis().max(0) as u64;
        let at = Self::view_at(&mut self.views, coin, key, &spec.name);
        let lane = &mut self.lanes[0];
        self.views[coin.0 as usize][at].view.encode(
            &mut lane.out,
            &mut lane.scratch,
            time_ms,
            spec.units,
            &self.bids,
            &self.asks,
        )
    }

    fn reap(&mut self) {
        while let Some(id) = self.dead.pop() {
            self.drop_client(id);
        }
    }

    /// 2 once a block's coins were offered to two threads, else 1.
    pub fn threads_used(&self) -> usize {
        if self.n_parallel > 0 { 2 } else { 1 }
    }

    /// Clients connected now.
    pub fn n_clients(&self) -> usize {
        self.subs.n_clients()
    }
}

/// How long a spin job keeps the helper thread awake when no stage is offered to it
/// ([`Warm`]): longer than a wake-up on this host (75-166 µs) plus reading a block's two lines,
/// short enough that a wake-up without a block (the polling fallback every
/// `EngineConfig::poll`, a notification before the whole line is written) costs little.
const WARM_FOR: Duration = Duration::from_micros(400);

/// Keeps the helper thread awake between a file wake-up and the block's stages, and between
/// the stages, so that it takes its half of a stage at once instead of 75-166 µs later (a
/// thread wake-up on this host; rayon's idle thread spins only briefly, then sleeps).
///
/// The engine thread spawns a spin job into the pool ([`Warm::spin`]) when a block is likely:
/// at each pass over the files, and after the decode (for the coins). The job sits in this
/// thread's own deque until the helper steals it (spawning wakes a sleeping helper, so the
/// wake-up overlaps reading the lines), then spins (`spin_loop`) until a stage is offered
/// ([`Warm::offer`], an epoch bumped just before each `join`) or until [`WARM_FOR`] after the
/// last `spin` call, and returns; the helper then steals the offered half at once. Rayon's
/// order matters: thieves take the oldest job first, so the spin job is stolen before a
/// `join`'s half pushed after it, and must return at once when its stage was already offered;
/// and a thread waiting in `join` runs its own queued jobs, so on the engine thread the job
/// returns at once. One job at a time: while one is queued or spinning, `spin` only extends
/// its bound. Cost: the helper's CPU for at most [`WARM_FOR`] per wake-up that brings no
/// block, nothing on the engine thread but the spawn.
struct Warm {
    /// Bumped just before each stage is offered.
    epoch: AtomicU64,
    /// Nanoseconds after `base` until which a job spins.
    until: AtomicU64,
    /// The epoch of the job queued or spinning, `u64::MAX` for none.
    pending: AtomicU64,
    /// Jobs spawned (tests).
    spawned: AtomicU64,
    /// How long a job spins without a stage offered ([`WARM_FOR`]).
    bound_ns: u64,
    base: Instant,
}

/// Why a spin job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SpinEnd {
    /// Run by the engine thread (waiting in a `join`): returned at once.
    NotHelper,
    /// A stage was offered (at once if it was offered before the job started).
    Offered,
    /// No stage came within its bound.
    Bound,
}

impl Warm {
    fn new() -> Warm {
        Warm {
            epoch: AtomicU64::new(0),
            until: AtomicU64::new(0),
            pending: AtomicU64::new(u64::MAX),
            spawned: AtomicU64::new(0),
            bound_ns: WARM_FOR.as_nanos() as u64,
            base: Instant::now(),
        }
    }

    fn now_ns(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64
    }

    /// A stage is about to be offered: a spinning job returns, a queued one will at once.
    fn offer(&self) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// Has the helper spin until the next stage is offered or [`WARM_FOR`] from now (called on
    /// the pool's thread 0, the engine thread).
    fn spin(self: &Arc<Warm>, pool: &rayon::ThreadPool) {
        self.until.store(self.now_ns() + self.bound_ns, Ordering::Release);
        let epoch = self.epoch.load(Ordering::Acquire);
        if self.pending.swap(epoch, Ordering::AcqRel) == epoch {
            return;
        }
        self.spawned.fetch_add(1, Ordering::Relaxed);
        let warm = Arc::clone(self);
        pool.spawn(move || {
            warm.run(epoch, rayon::current_thread_index());
        });
    }

    /// The spin job of `epoch` on the pool thread `thread`.
    fn run(&self, epoch: u64, thread: Option<usize>) -> SpinEnd {
        loop {
            let end = if thread == Some(1) { self.spin_while(epoch) } else { SpinEnd::NotHelper };
            let _ = self.pending.compare_exchange(epoch, u64::MAX, Ordering::AcqRel, Ordering::Acquire);
            // A `spin` that extended the bound just as it passed counted on this job: take
            // it up again unless a new job was spawned meanwhile.
            let extended = end == SpinEnd::Bound
                && self.now_ns() < self.until.load(Ordering::Acquire)
                && self.pending.compare_exchange(u64::MAX, epoch, Ordering::AcqRel, Ordering::Acquire).is_ok();
            if !extended {
                return end;
            }
        }
    }

    fn spin_while(&self, epoch: u64) -> SpinEnd {
        loop {
            for _ in 0..64 {
                if self.epoch.load(Ordering::Acquire) != epoch {
                    return SpinEnd::Offered;
                }
                std::hint::spin_loop();
            }
            if self.now_ns() >= self.until.load(Ordering::Acquire) {
                return SpinEnd::Bound;
            }
        }
    }
}

/// Nanoseconds since `offered` when called on the helper thread (rayon's thread 1), else
/// `u64::MAX` (the engine thread runs a half the helper had not started).
fn helper_since(offered: Instant) -> u64 {
    if rayon::current_thread_index() == Some(1) { offered.elapsed().as_nanos() as u64 } else { u64::MAX }
}

/// Bytes of the statuses line per part when a block is decoded on two threads
/// ([`decode_on_two`]): about 10-15 µs of work, about the longest one thread waits for the
/// other at the end of the decode.
const PART_BYTES: usize = 32 * 1024;

/// At most this many parts per statuses line (a longer line gets longer parts).
const MAX_PARTS: usize = 16;

/// Decodes both lines of a block on the two threads of `pool` (called on its thread 0): the
/// statuses line in parts of about [`PART_BYTES`] cut at guessed event boundaries
/// (`fast::statuses_split`; `statuses_head`, `statuses_middle`, `statuses_tail`), and the
/// diffs line as one more part, after the statuses'. This thread takes parts from the front
/// (the head first), the helper from the back (the diffs first), one at a time from a shared
/// claim ([`Claims`]), until none is left. So a helper that wakes late only takes fewer parts
/// (this thread never waits for it to start), and at the end one thread waits at most for the
/// part the other is in (a fixed half, as before, left this thread waiting for the helper's
/// whole half, with the helper's wake-up on top: 2-46 µs at the median and 70-236 µs at p99
/// in `bench hl` runs of 2026-11-27).
/// This thread's parts are a prefix of the line decoded in order into `head`; the helper's a
/// suffix decoded back to front into `tail`, moved after them part by part. When a part gives
/// up (the line is not in hl-node's exact shape, or a guessed boundary is inside an event) the
/// statuses line is decoded whole on this thread, as on one thread. The events go into the
/// buffers given (empty, reused from block to block: head, tail, diffs); the tail's is handed
/// back, emptied into the head's. Returns the lines' events, that buffer, and when the helper
/// started (`helper_since`; `u64::MAX` when it took no part). `front_waits` is 0; tests give
/// more to have this thread start only once the helper took that many parts (any share of the
/// parts on either thread).
#[allow(clippy::type_complexity)]
fn decode_on_two<'a>(
    pool: &rayon::ThreadPool,
    statuses: &'a Line,
    diffs: &'a Line,
    all: bool,
    [head, tail]: [Vec<OrderStatus<'a>>; 2],
    diffs_buf: Vec<BookDiff<'a>>,
    front_waits: usize,
) -> (Decoded<'a, OrderStatus<'a>>, Decoded<'a, BookDiff<'a>>, Vec<OrderStatus<'a>>, u64) {
    let offered = Instant::now();
    let text = statuses.text.as_str();
    let mut bounds = [0usize; MAX_PARTS + 1];
    let n = part_bounds(text, &mut bounds);
    let parts = Parts { text, bounds: &bounds[..=n], all, claims: Claims::new(n + 1), failed: AtomicBool::new(false) };
    let diffs_buf = Mutex::new(Some(diffs_buf));
    // Part `n` is the diffs line, whichever thread claims it.
    let take_diffs = || {
        let buf = diffs_buf.lock().map(|mut b| b.take().unwrap_or_default()).unwrap_or_default();
        decode_diffs(diffs, buf)
    };
    let front = || {
        while parts.claims.back_taken(n + 1) < front_waits {
            std::thread::yield_now();
        }
        let (mut head, mut header, mut df) = (head, None, None);
        while let Some(i) = parts.claims.front() {
            if i == n {
                df = Some(take_diffs());
            } else {
                parts.decode(i, &mut head, &mut header);
            }
        }
        (head, header, df)
    };
    let back = || {
        let start = helper_since(offered);
        let (mut tail, mut header, mut df) = (tail, None, None);
        // Where each part the helper took ends in `tail` (taken last to first).
        let mut ends = [0usize; MAX_PARTS];
        let mut k = 0;
        while let Some(i) = parts.claims.back() {
            if i == n {
                df = Some(take_diffs());
            } else {
                parts.decode(i, &mut tail, &mut header);
                ends[k] = tail.len();
                k += 1;
            }
        }
        let start = if k > 0 || df.is_some() { start } else { u64::MAX };
        (tail, ends, k, header, df, start)
    };
    let ((mut head, front_header, front_df), (mut tail, ends, k, back_header, back_df, start)) = pool.join(front, back);
    let df = front_df.or(back_df).unwrap_or_else(take_diffs);
    let st = match front_header.or(back_header).filter(|_| !parts.failed.load(Ordering::Relaxed)) {
        Some(header) => {
            // The helper's parts in line order: the last it took (the lowest) first.
            for j in (0..k).rev() {
                let from = if j == 0 { 0 } else { ends[j - 1] };
                head.extend(tail.drain(from..));
            }
            Decoded { events: head, time: Some(header.block_time), damaged: Vec::new(), reports: Vec::new() }
        }
        None => {
            head.clear();
            tail.clear();
            decode_statuses(statuses, all, head)
        }
    };
    (st, df, tail, start)
}

/// Cuts a statuses line into parts of about [`PART_BYTES`] at guessed event boundaries:
/// `bounds[..=n]` with `bounds[0] = 0` and `bounds[n]` the line's length, strictly increasing;
/// returns `n` (1 for a short line, or when no boundary is found).
fn part_bounds(text: &str, bounds: &mut [usize; MAX_PARTS + 1]) -> usize {
    let want = (text.len() / PART_BYTES).clamp(1, MAX_PARTS);
    let mut n = 1;
    for i in 1..want {
        let target = (text.len() / want * i).max(bounds[n - 1] + 1);
        let Some(at) = fast::statuses_split(text, target) else { break };
        bounds[n] = at;
        n += 1;
    }
    bounds[n] = text.len();
    n
}

/// A block's statuses line cut into parts (`bounds`), and who takes which.
struct Parts<'a, 'b> {
    text: &'a str,
    bounds: &'b [usize],
    all: bool,
    claims: Claims,
    /// A part gave up: the line is decoded whole after the join, so the rest are skipped.
    failed: AtomicBool,
}

impl<'a> Parts<'a, '_> {
    /// Part `i` into `out` (the head's header into `header`); marks the line failed when the
    /// part gives up (`out` is then left as it was).
    fn decode(&self, i: usize, out: &mut Vec<OrderStatus<'a>>, header: &mut Option<fast::Header<'a>>) {
        if self.failed.load(Ordering::Relaxed) {
            return;
        }
        let (text, all, n) = (self.text, self.all, self.bounds.len() - 1);
        let done = match i {
            0 if n == 1 => fast::statuses(text, all, out).map(|h| *header = Some(h)),
            0 => fast::statuses_head(text, self.bounds[1], all, out).map(|h| *header = Some(h)),
            _ if i == n - 1 => fast::statuses_tail(text, self.bounds[i], all, out),
            _ => fast::statuses_middle(text, self.bounds[i], self.bounds[i + 1], all, out),
        };
        if done.is_none() {
            self.failed.store(true, Ordering::Relaxed);
        }
    }
}

/// The parts `0..n` of a block's decode, claimed one at a time from both ends: the engine
/// thread from the front, the helper from the back, until they meet. One atomic word holds
/// the next front part (low half) and one past the next back part (high half), so each part
/// is taken exactly once (the join that ends the decode orders every part's result before
/// its use).
struct Claims(AtomicU32);

impl Claims {
    fn new(n: usize) -> Claims {
        Claims(AtomicU32::new((n as u32) << 16))
    }

    fn front(&self) -> Option<usize> {
        let lo_hi = |s: u32| (s & 0xffff, s >> 16);
        let taken = self.0.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| {
            let (lo, hi) = lo_hi(s);
            (lo < hi).then_some(s + 1)
        });
        taken.ok().map(|s| lo_hi(s).0 as usize)
    }

    fn back(&self) -> Option<usize> {
        let lo_hi = |s: u32| (s & 0xffff, s >> 16);
        let taken = self.0.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| {
            let (lo, hi) = lo_hi(s);
            (lo < hi).then(|| s - (1 << 16))
        });
        taken.ok().map(|s| lo_hi(s).1 as usize - 1)
    }

    /// Parts taken from the back so far, of `n`.
    fn back_taken(&self, n: usize) -> usize {
        n - (self.0.load(Ordering::Relaxed) >> 16) as usize
    }
}

/// The diffs line, every event, into `events` (empty).
fn decode_diffs<'a>(line: &'a Line, events: Vec<BookDiff<'a>>) -> Decoded<'a, BookDiff<'a>> {
    decode_line(line, fast::diffs, Some::<BookDiff<'_>>, |_| true, events)
}

/// A line's decoded events, its block time, and what could not be decoded.
struct Decoded<'a, T> {
    events: Vec<T>,
    time: Option<&'a str>,
    damaged: Vec<String>,
    reports: Vec<String>,
}

/// [`decode_events`] into `events` (empty) and a fresh [`Decoded`] (so each line can be
/// decoded on its own thread).
fn decode_line<'a, F: Deserialize<'a>, T: Deserialize<'a>>(
    line: &'a Line,
    fast: impl FnOnce(&'a str, &mut Vec<T>) -> Option<fast::Header<'a>>,
    take: impl Fn(F) -> Option<T>,
    keep: impl Fn(&str) -> bool,
    mut events: Vec<T>,
) -> Decoded<'a, T> {
    let (mut damaged, mut reports) = (Vec::new(), Vec::new());
    let time = decode_events(line, fast, take, keep, &mut events, &mut damaged, &mut reports);
    Decoded { events, time, damaged, reports }
}

/// The statuses line into `events` (empty): every status when `all` (someone reads
/// `l4Book`), else only those that can put an order on the book (`open`/`triggered`; the
/// rest matter only to `l4Book` subscribers, so without any they are skipped before decoding).
fn decode_statuses<'a>(line: &'a Line, all: bool, events: Vec<OrderStatus<'a>>) -> Decoded<'a, OrderStatus<'a>> {
    let may_rest = |raw: &str| all || raw.contains(r#""status":"open""#) || raw.contains(r#""status":"triggered""#);
    let fast_statuses = |text, out: &mut Vec<_>| fast::statuses(text, all, out);
    if all {
        decode_line(line, fast_statuses, Some::<OrderStatus<'_>>, may_rest, events)
    } else {
        decode_line(line, fast_statuses, |r: RestingStatus<'_>| r.0, may_rest, events)
    }
}

/// The decode buffers of the last block, empty, kept for the next (`recycle`): a fresh `Vec`
/// grown to a block's ~300 kB of events every block cost a third of the decode
/// (`decode_two_cost`, one thread: 234 µs with fresh buffers, `decode_cost` 159 µs reused).
#[derive(Default)]
struct Spare {
    head: Vec<OrderStatus<'static>>,
    tail: Vec<OrderStatus<'static>>,
    diffs: Vec<BookDiff<'static>>,
}

impl Spare {
    /// The buffers (statuses head and tail, diffs) for a block whose lines live for `'a`.
    #[allow(clippy::type_complexity)]
    fn take<'a>(&mut self) -> ([Vec<OrderStatus<'a>>; 2], Vec<BookDiff<'a>>) {
        let head = recycle(std::mem::take(&mut self.head));
        let tail = recycle(std::mem::take(&mut self.tail));
        ([head, tail], recycle(std::mem::take(&mut self.diffs)))
    }

    /// Keeps a block's buffers (emptied) for the next.
    fn put(&mut self, head: Vec<OrderStatus<'_>>, tail: Vec<OrderStatus<'_>>, diffs: Vec<BookDiff<'_>>) {
        self.head = recycle(head);
        self.tail = recycle(tail);
        self.diffs = recycle(diffs);
    }
}

/// `v` emptied, as a `Vec` of another type of the same size and alignment (here: another
/// lifetime), keeping its allocation: the standard library collects a `vec::IntoIter` into a
/// `Vec` of such a type in place (`recycle_keeps_the_allocation` checks that it still does).
fn recycle<T, U>(mut v: Vec<T>) -> Vec<U> {
    v.clear();
    v.into_iter().filter_map(|_| None).collect()
}

#[cfg(test)]
mod tests;
