//! The engine: one thread that reads the node's files, applies blocks, and publishes.
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

use std::collections::{BTreeMap, HashSet};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};

use ticktrade_core::{Side, Utc};
use ticktrade_hl_proto::info::InfoRequest;
use ticktrade_hl_proto::node::{
    Batch, BookDiff, NodeFill, OrderStatus, RestingStatus, TypedBatch, fast, scan_block_number, scan_coins,
    trades_from_fills,
};
use ticktrade_hl_proto::time::parse_node_time;
use ticktrade_hl_proto::ws::{self as proto, ClientMessage, L2Variant, L2View, UnitLevel};

mod requests;

use super::publish::{ClientId, L2Key, Subscribers};
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
}

impl Default for EngineConfig {
    fn default() -> EngineConfig {
        EngineConfig { coins: None, raw: false, poll: Duration::from_millis(100), stop_after: None }
    }
}

/// Messages into the engine thread.
pub enum EngineMsg {
    /// Something changed under the data directory.
    Files,
    Connect {
        id: ClientId,
        /// Text frames for the connection's writer.
        tx: mpsc::Sender<Bytes>,
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
    Stop,
}

/// Figures the engine exposes (for `ticktrade bench hl` and tests).
#[derive(Debug, Default)]
pub struct EngineStats {
    /// Nanoseconds from "both lines of a block are in memory" to "all frames queued".
    /// Coins are applied and published one at a time (see [`PHASES`]).
    pub block_ns: Vec<u64>,
    /// Per block: nanoseconds spent in each of [`PHASES`].
    pub phase_ns: Vec<[u64; 5]>,
    /// Per block: `l2Book` views aggregated (those the skip rule could not rule out).
    pub views_aggregated: Vec<u64>,
    /// Per block: coins whose book changed (their subscribed views are the ones checked).
    pub coins_changed: Vec<u64>,
    /// Per block: when it started (both lines in memory), its first `l2Book` frame was queued,
    /// and its last frame was queued, keyed by the block time (ms), for the end-to-end bench.
    pub marks: Vec<BlockMarks>,
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
/// overhead: the rest of the block). The block runs coin by coin (apply, l2, encode, queue of
/// one coin, then the next), so each stage is the sum of its per-coin parts.
pub const PHASES: [&str; 5] = ["decode", "apply", "l2", "encode", "queue"];

/// Least time between two points in a block where the engine yields its CPU to the connection
/// tasks its frames woke (`on_block`).
const YIELD_EVERY: Duration = Duration::from_micros(200);

/// Of a view that changed and has its full-precision twin's levels: the twin's position in the
/// coin's keys (its levels in `Engine::pool`) and in `views[coin]`.
type Twin = Option<(usize, usize)>;

/// One `l2Book` view of a coin: its key and its last frame.
struct ViewSlot {
    key: L2Key,
    view: L2View,
}

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
    bids: Vec<UnitLevel>,
    asks: Vec<UnitLevel>,
    /// Frames are encoded into this buffer and split off as shared `Bytes`.
    out: BytesMut,
    scratch: Vec<u8>,
    dead: Vec<ClientId>,
    /// The levels and frame last published per coin (indexed by `CoinId`) and subscription
    /// key: a coin's handful of views in a plain list, no hashing per view.
    views: Vec<Vec<ViewSlot>>,
    /// Both sides of the coin being published, gathered once for all its views.
    sides: [Vec<UnitLevel>; 2],
    /// Per coin being published: positions (in key order) of the views that changed, where
    /// they are in `views[coin]`, and the full-precision view whose levels they share, if
    /// any; and their new frames.
    changed: Vec<(usize, usize, Twin)>,
    /// Per coin being published: `(nLevels, position in views[coin])` of each full-precision
    /// view aggregated for this block.
    fulls: Vec<(usize, usize, usize)>,
    /// The levels of this block of the coin being published, per position of its views in the
    /// key order: reused for every coin, so they stay in cache (per-view lists were cold
    /// writes every block: the top of `aggregate_units` and of the encoder in perf).
    pool: Vec<[Vec<UnitLevel>; 2]>,
    frames: Vec<Bytes>,
    /// Views aggregated since the last block's stats (the skip rule's effect, for benchmarks).
    n_aggregated: u64,
    /// When the block's first `l2Book` frame was queued (timings only).
    first_frame: Option<Instant>,
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
            config,
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
            out: BytesMut::with_capacity(1 << 16),
            scratch: Vec::with_capacity(32),
            dead: Vec::new(),
            views: Vec::new(),
            sides: [Vec::with_capacity(256), Vec::with_capacity(256)],
            changed: Vec::with_capacity(16),
            fulls: Vec::with_capacity(4),
            pool: Vec::new(),
            frames: Vec::with_capacity(16),
            n_aggregated: 0,
            first_frame: None,
            woken: Instant::now(),
            read_at: [(0, Instant::now(), Instant::now()); 2],
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

    fn ingest(&mut self, line: Line) {
        if self.config.raw {
            self.relay(&line);
            return;
        }
        let Some(height) = scan_block_number(&line.text) else {
            self.report(format!("{}: malformed line skipped: no block_number", line.origin));
            for coin in scan_coins(&line.text) {
                let id = self.books.coin_id(coin);
                self.books.mark_stale(id);
            }
            return;
        };
        if self.config.stop_after.is_some_and(|stop| height > stop) {
            return;
        }
        if self.record_timings && line.stream != Stream::Fills {
            self.read_at[usize::from(line.stream == Stream::Diffs)] = (height, self.woken, Instant::now());
        }
        match line.stream {
            Stream::Fills => self.on_fills(height, &line),
            _ => {
                self.joiner.push(height, line);
                while let Some(joined) = self.joiner.pop() {
                    match joined {
                        Joined::Block { height, statuses, diffs } => self.on_block(height, &statuses, &diffs),
                        Joined::Gap { height } => {
                            self.report(format!(
                                "block {height} missing from a stream: every book is stale until the next snapshot"
                            ));
                            self.books.mark_all_stale();
                        }
                    }
                }
            }
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
        let (mut statuses, mut diffs) = (Vec::<OrderStatus<'_>>::new(), Vec::<BookDiff<'_>>::new());
        let (mut damaged, mut reports) = (Vec::new(), Vec::new());
        // Only `open`/`triggered` statuses can put an order on the book; the rest matter only
        // to l4Book subscribers, so without any they are skipped before decoding.
        let all_statuses = !self.subs.l4.is_empty();
        let may_rest =
            |raw: &str| all_statuses || raw.contains(r#""status":"open""#) || raw.contains(r#""status":"triggered""#);
        let (st, dm, rp) = (&mut statuses, &mut damaged, &mut reports);
        let fast_statuses = |text, out: &mut Vec<_>| fast::statuses(text, all_statuses, out);
        let t1 = if all_statuses {
            decode_events(statuses_line, fast_statuses, Some::<OrderStatus<'_>>, may_rest, st, dm, rp)
        } else {
            decode_events(statuses_line, fast_statuses, |r: RestingStatus<'_>| r.0, may_rest, st, dm, rp)
        };
        let (df, dm, rp) = (&mut diffs, &mut damaged, &mut reports);
        let t2 = decode_events(diffs_line, fast::diffs, Some::<BookDiff<'_>>, |_| true, df, dm, rp);
        let time = t1.or(t2).and_then(|t| parse_node_time(t).ok()).unwrap_or(self.books.time());
        if self.config.coins.is_some() {
            statuses.retain(|s| self.allowed(&s.order.coin));
            diffs.retain(|d| self.allowed(&d.coin));
        }
        for r in reports {
            self.report(r);
        }
        let mut newly_stale = Vec::new();
        for coin in damaged {
            if self.allowed(&coin) {
                let id = self.books.coin_id(&coin);
                if !self.books.book(id).is_some_and(|b| b.stale) {
                    newly_stale.push(id);
                }
                self.books.mark_stale(id);
            }
        }
        let decoded = Instant::now();
        // Coin by coin: apply its diffs, then publish its views at once, so its frames leave
        // while the other coins are still to be applied; a coin's frame is only built once
        // all its diffs of the block are applied (its book is then at the end of the block).
        let mut plan = std::mem::take(&mut self.plan);
        self.books.plan_block(height, time, &statuses, &diffs, &mut plan);
        let timings = self.record_timings;
        let mut apply_ns = if timings { decoded.elapsed().as_nanos() as u64 } else { 0 };
        for coin in newly_stale {
            self.announce_stale(coin);
        }
        let mut l2_ns = [0u64; 2];
        self.n_aggregated = 0;
        self.first_frame = None;
        let mut n_changed = 0u64;
        let mut last_yield: Option<Instant> = None;
        for g in 0..plan.len() {
            let coin = plan.coin(g);
            let t = timings.then(Instant::now);
            let applied = self.books.apply_coin(&plan, g, &statuses, &diffs);
            if let Some(t) = t {
                apply_ns += t.elapsed().as_nanos() as u64;
            }
            n_changed += u64::from(applied.changed);
            match applied.error {
                Some(err) => {
                    self.report(format!("{}: {err}; coin stale until the next snapshot", diffs_line.origin));
                    self.announce_stale(coin);
                }
                None if applied.changed => {
                    self.publish_l2(coin, &mut l2_ns);
                    // Let the connection tasks this block's frames woke run now if they wait
                    // for this CPU (the scheduler would let the rest of the block run first):
                    // frames queued should leave before the next coins are computed. At most
                    // once per `YIELD_EVERY`, from the first coin on, so that the block itself
                    // is not handed away coin after coin.
                    let now = Instant::now();
                    if last_yield.is_none_or(|at| now.duration_since(at) >= YIELD_EVERY) {
                        std::thread::yield_now();
                        last_yield = Some(now);
                    }
                }
                None => {}
            }
        }
        self.plan = plan;
        self.publish_l4(height, time, &statuses, &diffs);
        if let Ok(mut stats) = self.stats.lock() {
            stats.height = height;
            if timings {
                let done = Instant::now();
                let total = done.duration_since(started).as_nanos() as u64;
                let decode = decoded.duration_since(started).as_nanos() as u64;
                // L4 frames and the per-coin overhead outside the other stages count as queueing.
                let queue = total.saturating_sub(decode + apply_ns + l2_ns[0] + l2_ns[1]);
                stats.block_ns.push(total);
                stats.phase_ns.push([decode, apply_ns, l2_ns[0], l2_ns[1], queue]);
                stats.views_aggregated.push(self.n_aggregated);
                stats.coins_changed.push(n_changed);
                let time_ms = time.as_millis().max(0) as u64;
                let lines = self.read_at.map(|(h, w, r)| if h == height { (w, r) } else { (started, started) });
                stats.marks.push(BlockMarks { time_ms, lines, started, first_frame: self.first_frame, done });
            }
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
        let list = &mut views[ci];
        match list.iter().position(|s| s.key == key) {
            Some(at) => at,
            None => {
                list.push(ViewSlot { key, view: L2View::new(name) });
                list.len() - 1
            }
        }
    }

    /// Encodes the aggregated levels (`self.bids`/`self.asks`) of `coin` as the new frame of
    /// its view `key`.
    pub(super) fn encode_view(&mut self, coin: CoinId, key: L2Key) -> Bytes {
        let spec = self.books.coins.spec(coin);
        let time_ms = self.books.time().as_millis().max(0) as u64;
        let at = Self::view_at(&mut self.views, coin, key, &spec.name);
        self.views[coin.0 as usize][at].view.encode(
            &mut self.out,
            &mut self.scratch,
            time_ms,
            spec.units,
            &self.bids,
            &self.asks,
        )
    }

    /// Publishes every subscribed view of `coin` that changed; adds the time spent aggregating
    /// and encoding to `ns[0]` and `ns[1]` (only when timings are recorded).
    fn publish_l2(&mut self, coin: CoinId, ns: &mut [u64; 2]) {
        let Some(keys) = self.subs.l2.remove(&coin) else { return };
        self.publish_l2_views(coin, &keys, ns);
        self.subs.l2.insert(coin, keys);
    }

    fn publish_l2_views(&mut self, coin: CoinId, keys: &BTreeMap<L2Key, Vec<ClientId>>, ns: &mut [u64; 2]) {
        let started = self.record_timings.then(Instant::now);
        let Some(book) = self.books.book(coin) else { return };
        if book.stale {
            return;
        }
        // 1. L2: a view whose shown levels the block's touched prices cannot reach keeps its
        // last frame (`l2::side_may_change`); the others are aggregated from both sides,
        // gathered once, and compared with their last frame (a change outside the visible
        // levels sends nothing).
        let touched = self.books.touched(coin).range;
        let spec = self.books.coins.spec(coin);
        self.changed.clear();
        self.fulls.clear();
        if self.pool.len() < keys.len() {
            self.pool.resize_with(keys.len(), || [Vec::with_capacity(128), Vec::with_capacity(128)]);
        }
        let mut gathered = false;
        for (pos, key) in keys.keys().enumerate() {
            let at = Self::view_at(&mut self.views, coin, *key, &spec.name);
            let slot = &mut self.views[coin.0 as usize][at];
            let (variant, n) = (L2Variant::ALL[usize::from(key.variant_idx)], usize::from(key.n_levels));
            if !slot.view.is_fresh()
                && !crate::l2::side_may_change(slot.view.deepest(0), true, variant, n, touched[0])
                && !crate::l2::side_may_change(slot.view.deepest(1), false, variant, n, touched[1])
            {
                continue;
            }
            self.n_aggregated += 1;
            // A view whose full-precision twin (same nLevels, aggregated above: keys are in
            // variant order, `Full` first) keeps every level at its variant has the twin's
            // levels (`l2::keeps_levels`): it is not aggregated, and shares the twin's frame
            // when that is new too.
            let list = &mut self.views[coin.0 as usize];
            let pool = &self.pool;
            let twin = self.fulls.iter().find(|&&(m, _, _)| m == n).map(|&(_, p, t)| (p, t)).filter(|&(p, _)| {
                let [b, a] = &pool[p];
                crate::l2::keeps_levels(b, variant) && crate::l2::keeps_levels(a, variant)
            });
            if let Some((p, t)) = twin {
                let [b, a] = &pool[p];
                if !list[at].view.unchanged(b, a) {
                    self.changed.push((pos, at, Some((p, t))));
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
            if !list[at].view.unchanged(bids, asks) {
                self.changed.push((pos, at, None));
            }
        }
        let aggregated = self.record_timings.then(Instant::now);
        // 2. Encode the views that changed.
        let time_ms = self.books.time().as_millis().max(0) as u64;
        self.frames.clear();
        let list = &mut self.views[coin.0 as usize];
        for &(pos, at, twin) in &self.changed {
            let frame = match twin {
                // The twin's frame of this block (encoded above): the same bytes.
                Some((_, t)) if self.changed.iter().any(|&(_, a, _)| a == t) => {
                    let (src, dst) = pair_mut(list, t, at);
                    dst.view.share(&src.view)
                }
                // Its own levels, or its twin's when only this view changed.
                _ => {
                    let [bids, asks] = &self.pool[twin.map_or(pos, |(p, _)| p)];
                    list[at].view.encode(&mut self.out, &mut self.scratch, time_ms, spec.units, bids, asks)
                }
            };
            self.frames.push(frame);
        }
        let encoded = self.record_timings.then(Instant::now);
        // 3. Queue: one shared frame per view for all its subscribers.
        if self.record_timings && self.first_frame.is_none() && !self.frames.is_empty() {
            self.first_frame = Some(Instant::now());
        }
        let mut next = self.changed.iter().zip(self.frames.drain(..)).peekable();
        for (pos, ids) in keys.values().enumerate() {
            let Some((_, frame)) = next.next_if(|((p, _, _), _)| *p == pos) else { continue };
            for &id in ids {
                self.subs.send(id, frame.clone(), &mut self.dead);
            }
        }
        if let (Some(a), Some(b), Some(c)) = (started, aggregated, encoded) {
            ns[0] += b.duration_since(a).as_nanos() as u64;
            ns[1] += c.duration_since(b).as_nanos() as u64;
        }
    }

    fn reap(&mut self) {
        while let Some(id) = self.dead.pop() {
            self.drop_client(id);
        }
    }

    /// Clients connected now.
    pub fn n_clients(&self) -> usize {
        self.subs.n_clients()
    }
}

/// `list[src]` and `list[dst]` (`src != dst`) at once.
fn pair_mut<T>(list: &mut [T], src: usize, dst: usize) -> (&T, &mut T) {
    if src < dst {
        let (a, b) = list.split_at_mut(dst);
        (&a[src], &mut b[0])
    } else {
        let (a, b) = list.split_at_mut(src);
        (&b[0], &mut a[dst])
    }
}

#[cfg(test)]
mod tests;
