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
//!
//! # Layout
//! - this file: the configuration, the engine's state and its loop (files, requests, lines
//!   to blocks, fills, the views a request reads);
//! - `block`: one block's stages, and the second thread's pool;
//! - `decode`: a block's lines into events, on one thread or both;
//! - `warm`: the spin job that keeps the helper awake for the next stage;
//! - `lane`: one compute thread's share of a block's coins (apply, l2, encode, queue);
//! - `requests`: subscriptions, `post` and `/info` requests;
//! - `feeds`: `bbo`, `allMids`, `orderUpdates` and `userFills` after a block;
//! - `candles`: every fills line's trades into each coin's candles, and the `candle` feed.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use ticktrade_core::{Side, Utc};
use ticktrade_hl_proto::asset_ctx::BookCtx;
use ticktrade_hl_proto::info::InfoRequest;
use ticktrade_hl_proto::node::{
    BookDiff, NodeFill, OrderStatus, fast, parse_events_into, scan_block_number, scan_coins, trades_from_fills_into,
};
use ticktrade_hl_proto::time::parse_node_time;
use ticktrade_hl_proto::ws::{self as proto, ClientMessage, L2Variant, UnitLevel};

mod block;
mod candles;
mod decode;
mod feeds;
mod lane;
mod requests;
mod warm;

pub use decode::DecodeStage;
use decode::{Spare, decode_events, recycle};
use lane::{BlockCtx, CoinJob, Lane, ViewSlot, slot_at};
use warm::Warm;
// The tests reach the decode and warm-up internals through `super::*`.
#[cfg(test)]
use {decode::*, warm::*};

use super::publish::{ClientId, ClientQueue, L2Key, Subscribers, Undelivered};
use crate::books::{BlockPlan, Books};
use crate::coins::CoinId;
use crate::follow::Follower;
use crate::join::{Joined, Joiner, Line, Stream};
use feeds::FeedState;

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
        /// The connection's queue (items of one or more text frames) for its writer.
        tx: std::sync::Arc<ClientQueue>,
        kill: oneshot::Sender<String>,
    },
    /// A sink that subscribes like a client and drops (counting in `drops`) what its queue
    /// has no room for (`server::bus`, the NATS publisher).
    ConnectSink {
        id: ClientId,
        tx: std::sync::Arc<ClientQueue>,
        drops: std::sync::Arc<std::sync::atomic::AtomicU64>,
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
    /// Frames a feed could not queue, for `Subscribers::undelivered` (reused).
    pending_undelivered: Vec<(ClientId, Undelivered)>,
    /// What `bbo`/`allMids` last sent and the per-user frame buffers (`feeds`).
    feeds: FeedState,
    /// Every coin's candles and the fills line's buffers (`candles`).
    trade_state: candles::TradeState,
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
            pending_undelivered: Vec::new(),
            feeds: FeedState::default(),
            trade_state: candles::TradeState::default(),
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

    /// The asset contexts' fields the books do not determine (perps, spot), for
    /// `activeAssetCtx` (`server::start` passes `MetaDocs`'s).
    pub fn set_base_ctxs(
        &mut self,
        perp: ticktrade_hl_proto::asset_ctx::BaseCtxs,
        spot: ticktrade_hl_proto::asset_ctx::BaseCtxs,
    ) {
        self.feeds.base = (perp, spot);
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
            EngineMsg::ConnectSink { id, tx, drops } => self.subs.connect_sink(id, tx, drops),
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

    /// A fills line: `userFills`, then its trades into the candles (every line, followed or
    /// not), then `trades`. The line is decoded in one pass into buffers kept from line to line
    /// (event by event only when that fails, as a block's lines).
    fn on_fills(&mut self, height: u64, line: &Line) {
        if height <= self.last_fill_height {
            return;
        }
        self.last_fill_height = height;
        if !self.subs.user_fills.is_empty() {
            self.publish_user_fills(&line.text);
        }
        let (mut damaged, mut reports) = (Vec::new(), Vec::new());
        let mut fills: Vec<NodeFill<'_>> = recycle(std::mem::take(&mut self.trade_state.fills));
        decode_events(line, fast_fills, Some::<NodeFill<'_>>, |_| true, &mut fills, &mut damaged, &mut reports);
        for r in reports {
            self.report(r);
        }
        let mut trades = recycle(std::mem::take(&mut self.trade_state.trades));
        let mut used = std::mem::take(&mut self.trade_state.used);
        trades_from_fills_into(&fills, &mut used, &mut trades);
        self.record_trades(&trades);
        if !self.subs.trades.is_empty() {
            self.publish_trades(&trades);
        }
        if !trades.is_empty() {
            self.publish_asset_ctxs();
        }
        self.trade_state.used = used;
        self.trade_state.trades = recycle(trades);
        self.trade_state.fills = recycle(fills);
    }

    /// Each coin's trades of a fills line as one `trades` frame to its subscribers.
    fn publish_trades(&mut self, trades: &[ticktrade_hl_proto::node::WsTrade<'_>]) {
        let mut start = 0;
        while start < trades.len() {
            let coin = trades[start].coin;
            let end = start + trades[start..].iter().take_while(|t| t.coin == coin).count();
            if let Some(ids) = self.subs.trades.get(coin).cloned() {
                let frame = Bytes::from(proto::trades_frame(&trades[start..end]));
                for id in ids {
                    self.subs.send(id, frame.clone(), &mut self.dead);
                }
            }
            start = end;
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

/// A fills line in one typed pass (there is no hand-written decoder for fills: a line is a
/// few kB).
fn fast_fills<'a>(text: &'a str, out: &mut Vec<NodeFill<'a>>) -> Option<fast::Header<'a>> {
    parse_events_into(text, out).ok()
}

#[cfg(test)]
mod tests;
