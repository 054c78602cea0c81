//! `Session`: the live loop. One thread reads the connection, decodes, applies books, runs the
//! strategy, encodes its actions and writes them, and does the session's housekeeping (timers,
//! staleness, heartbeats, reconnection) between frames.
//!
//! Owns: the connection and its buffers, the books, decoders and encoders, the strategy's
//! `Runner`, the request table and credits, the stage stamps of each book frame.
//! Must not: allocate, log or format on the path from a frame's read (t0) to its order's write
//! (t5); the journal entries of that path are pushed after t5.
//!
//! The functions a book frame runs out of line (`turn`, `on_text`, `on_book`, `send_actions`,
//! `send_action`, `encode_action`) go to the `ticktrade_hot` linker section on Linux, next to
//! the framer, decoder, book and encoder code they call (see `hot`'s module doc).
//!
//! Layout: `config` (how to run a session, what it reports), `incoming` (answers, order
//! reports and trades from the venue), `outgoing` (actions to requests: pacing, deferral,
//! encoding), `housekeeping` (between frames: stop, timers, staleness, status), `warm` (what a
//! busy-polling loop runs after an empty read).
//!
//! Stamps: t0 read returned, t1 decoded, t2 book applied, t3 strategy and
//! risk checks done, t4 every action encoded and framed, t5 the write returned.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ticktrade_book::L2Book;
use ticktrade_book::l2::{ApplyError, LevelUpdate};
use ticktrade_core::{Clock, Decimal, InstrumentId, InstrumentSpec, Mono};
use ticktrade_deribit_proto::book_fast::FastBookDecoder;
use ticktrade_deribit_proto::frame::{ChannelKind, Frame, result_in_usual_layout, scan_frame};
use ticktrade_deribit_proto::order::{
    Label as WireLabel, OrderEncoder, OrderKind, OrderRequest as WireOrder, OrderTag,
};
use ticktrade_deribit_proto::ratelimit::{Class, Credits, RateLimits};
use ticktrade_deribit_proto::{BookKind, requests};
use ticktrade_latency::{RawTicks, RingProducer, Stage, Stamps, TscClock};
use ticktrade_net::frame::{Opcode, Role, WsError, WsReader, WsWriter};
use ticktrade_net::hot::{ConnectError, HotOptions, HotStream};
use ticktrade_strategy::order::Request;
use ticktrade_strategy::{Action, Blocked, Label, Outbox, Reason, Runner, RunnerParts, Strategy, TimeInForce};

use super::journal::{Entry, Journaled, Link, Status};
use super::wire::{InFlight, Instruments, Pending, Query, fill_report, order_report};
use crate::hot::{RawStamps, to_stamps};
use crate::venue::Credentials;

mod config;
mod housekeeping;
mod incoming;
mod outgoing;
mod warm;

use outgoing::{floor_write, write_wire};
use warm::Warm;

pub use config::{Exit, LiveConfig, LiveError, LiveReport, LiveStats, StopHandle};
pub(super) use incoming::book_fill;

/// Where the session stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// Connected; authenticating, subscribing, resyncing and reconciling. Trading paused.
    Syncing,
    Live,
    Stopping(StopStep),
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum StopStep {
    /// Cancel-all sent; waiting for its answers.
    Cancel,
    /// Asking the venue for open orders.
    Verify,
    /// Catching up with trades reported late.
    Trades,
    /// Asking for positions and closing them.
    Flatten,
}

/// What must hold before trading (re)starts.
#[derive(Clone, Debug)]
pub(super) struct SyncState {
    pub phase: Phase,
    pub connected: bool,
    pub authenticated: bool,
    pub books_ok: Vec<bool>,
    /// A re-subscription is in flight (do not send another on every change frame).
    pub resyncing: Vec<bool>,
    pub subscribed: bool,
    pub reconciled: bool,
    /// The session has been live once (a later sync is a reconnect).
    pub ever_live: bool,
}

/// Buffers of reconciliation and shutdown, sized at start.
#[derive(Clone, Debug)]
pub(super) struct Recon {
    pub open: Vec<ticktrade_strategy::OrderReport>,
    pub positions: Vec<(InstrumentId, i64, Decimal)>,
    /// Open orders the venue listed in the last shutdown check (any label).
    pub venue_open: usize,
    pub stage: u8,
    pub deadline: Option<Mono>,
    pub stop_why: Option<Blocked>,
    /// Queries waiting for request credits: a session on hundreds of instruments may ask
    /// more than the venue's burst.
    pub queries: VecDeque<Query>,
    /// Instruments the stop's next cancel round covers.
    pub cancel: Vec<bool>,
    /// Where the currency groups' trades catch-up starts.
    pub trades: super::reconcile::CatchUp,
}

/// The session minus its connection, so a frame borrowed from the reader can be handled.
pub(super) struct Core<S: Strategy> {
    pub config: LiveConfig,
    pub instruments: Instruments,
    pub runner: Runner<Journaled<S>>,
    pub books: Vec<L2Book>,
    decoders: Vec<FastBookDecoder>,
    pub encoders: Vec<OrderEncoder>,
    updates: Vec<LevelUpdate>,
    pub outbox: Outbox,
    pub inflight: InFlight,
    pub credits: Credits,
    writer: WsWriter,
    /// Frames to write at the end of this turn of the loop.
    pub wire: Vec<u8>,
    pub clock: TscClock,
    pub sync: SyncState,
    /// Cancels that wait for credits or for the connection.
    pub deferred: VecDeque<Action>,
    deferred_cap: usize,
    pub last_book: Vec<Mono>,
    pub last_recv: Mono,
    pub stats: LiveStats,
    stamps: Option<RingProducer<Stamps>>,
    /// Journal entries of the timed path, pushed after t5.
    pending_journal: Vec<Entry>,
    pub stop: StopHandle,
    pub recon: Recon,
    pub last_trade_seq: Vec<Option<u64>>,
    next_timer: Mono,
    next_status: Mono,
    /// A (TSC, Unix ns) pair for the wall-clock time of t0.
    anchor: (Mono, i64),
    pub fatal: Option<LiveError>,
    /// Set when housekeeping finds the connection dead (silent too long).
    pub lost: Option<&'static str>,
    warm: Warm,
}

struct Conn {
    stream: HotStream,
    reader: WsReader,
    t0: RawTicks,
    /// Busy polling: reads that found nothing since the last yield.
    idle_polls: u32,
}

/// Busy polling yields the vCPU after this many empty reads (a few hundred microseconds), so
/// a thread that shares it (the embedded venue, a recorder) is never starved; with nothing
/// else runnable the yield returns at once.
const IDLE_POLLS_PER_YIELD: u32 = 1024;

/// `bench tick-to-trade`'s floor probe: on [`FLOOR_PROBE`](crate::hot::FLOOR_PROBE) the session
/// writes its last order's bytes again and times only that write (`write_floor`).
struct Floor {
    ring: RingProducer<Stamps>,
    /// The last batch of order frames written, and how long its compute took (t0 → t4).
    last: Vec<u8>,
    last_compute: u64,
}

/// A live session for one strategy.
pub struct Session<S: Strategy> {
    core: Core<S>,
    conn: Option<Conn>,
    backoff: ticktrade_net::Backoff,
    floor: Option<Floor>,
}

/// A notification in Deribit's usual key order on a book channel starts with this.
const BOOK_PREFIX: &[u8] = br#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":"book."#;

impl<S: Strategy> Session<S> {
    /// A session trading `parts.specs` (ids `0..n`) with `strategy`. `journal` receives every
    /// order event; `stamps` the stage times of every book frame.
    pub fn new(
        config: LiveConfig,
        strategy: S,
        parts: RunnerParts,
        outbox_capacity: usize,
        journal: Option<RingProducer<Entry>>,
        stamps: Option<RingProducer<Stamps>>,
        stop: StopHandle,
    ) -> Session<S> {
        let specs: Vec<InstrumentSpec> = parts.specs.clone();
        let n = specs.len();
        let slots = parts.orders.capacity();
        let instruments = Instruments::new(specs, config.credentials.is_some());
        let clock = TscClock::new();
        let now = clock.to_mono(clock.raw());
        let anchor = (clock.mono(), clock.utc().0);
        let credits = Credits::client(config.rate_limits, now.0);
        let core = Core {
            decoders: instruments.specs.iter().map(FastBookDecoder::new).collect(),
            encoders: instruments.specs.iter().map(OrderEncoder::new).collect(),
            books: (0..n).map(|_| L2Book::new()).collect(),
            updates: Vec::with_capacity(4096),
            runner: Runner::new(Journaled::new(strategy, journal), parts),
            outbox: Outbox::with_capacity(outbox_capacity),
            inflight: InFlight::new(4096),
            credits,
            writer: WsWriter::new(Role::Client, 4096, 0x9E37_79B9),
            wire: Vec::with_capacity(16 * 1024),
            clock,
            sync: SyncState {
                phase: Phase::Syncing,
                connected: false,
                authenticated: false,
                books_ok: vec![false; n],
                resyncing: vec![false; n],
                subscribed: false,
                reconciled: false,
                ever_live: false,
            },
            deferred: VecDeque::with_capacity(slots + 16 + n),
            deferred_cap: slots + 16,
            last_book: vec![now; n],
            last_recv: now,
            stats: LiveStats::default(),
            stamps,
            pending_journal: Vec::with_capacity(outbox_capacity.max(1) * 4),
            stop,
            recon: Recon {
                open: Vec::with_capacity(slots),
                positions: Vec::with_capacity(n),
                venue_open: 0,
                stage: 0,
                deadline: None,
                stop_why: None,
                queries: VecDeque::with_capacity(3 * n),
                cancel: vec![false; n],
                trades: super::reconcile::CatchUp::default(),
            },
            last_trade_seq: vec![None; n],
            next_timer: now,
            next_status: now,
            anchor,
            fatal: None,
            lost: None,
            warm: Warm::new(config.busy_poll),
            instruments,
            config,
        };
        let backoff = ticktrade_net::Backoff::new(core.config.reconnect_base, core.config.reconnect_max);
        Session { core, conn: None, backoff, floor: None }
    }

    /// Answers the benchmarks' floor probe, pushing one `Stamps` (t0, t5) per bare write.
    pub fn set_floor_probe(&mut self, ring: RingProducer<Stamps>) {
        self.floor = Some(Floor { ring, last: Vec::with_capacity(4096), last_compute: 0 });
    }

    pub fn runner(&self) -> &Runner<Journaled<S>> {
        &self.core.runner
    }

    pub fn stats(&self) -> LiveStats {
        self.core.stats
    }

    pub fn books(&self) -> &[L2Book] {
        &self.core.books
    }

    /// Runs until stopped (and the shutdown is done) or a fatal error. The first connection
    /// must succeed within `config.connect.deadline`; later ones are retried with backoff.
    pub fn run(&mut self) -> Result<LiveReport, LiveError> {
        self.start()?;
        while !self.poll()? {}
        Ok(self.finish())
    }

    /// Connects for the first time (within the connect deadline, or the error says why).
    pub fn start(&mut self) -> Result<(), LiveError> {
        self.connect()
    }

    /// One turn of the loop (or one reconnect attempt); `Ok(true)` once the session is done.
    #[inline]
    pub fn poll(&mut self) -> Result<bool, LiveError> {
        if let Some(error) = self.core.fatal.take() {
            return Err(error);
        }
        if self.core.sync.phase == Phase::Done {
            return Ok(true);
        }
        if self.conn.is_none() {
            self.core.housekeeping(true);
            if self.core.sync.phase == Phase::Done {
                return Ok(true);
            }
            std::thread::sleep(self.backoff.next_delay());
            if let Err(error) = self.connect() {
                tracing::warn!("reconnect to {} failed: {error}", self.core.config.url);
            }
            return Ok(false);
        }
        self.turn();
        if self.core.sync.phase == Phase::Live {
            self.backoff.reset();
        }
        Ok(false)
    }

    /// Starts a connection that has no socket: the session begins its sync as on a fresh
    /// connection, and what it would write is appended to `written` (client frames, masked, as
    /// on the wire). With [`Session::offline_frame`] this drives the session from memory, for
    /// `bench tick-to-trade --in-memory`, which times the compute without the kernel's read and
    /// write (the same code as a connection, minus the WebSocket framing of the venue's frames).
    pub fn offline_connect(&mut self, written: &mut Vec<u8>) {
        self.conn = None;
        self.core.stats.connects += 1;
        self.core.on_connect();
        written.extend_from_slice(&self.core.wire);
        self.core.wire.clear();
    }

    /// One text payload from the venue, read at `t0`: handled exactly as one the connection
    /// delivered (book, result, notification), then the turn's housekeeping. What the session
    /// writes is appended to `written`; the stage stamps (t0…t4) go to the stamps ring.
    #[inline]
    pub fn offline_frame(&mut self, payload: &[u8], t0: RawTicks, written: &mut Vec<u8>) {
        let core = &mut self.core;
        core.last_recv = core.clock.to_mono(t0);
        let stamps = core.on_text(payload, t0);
        written.extend_from_slice(&core.wire);
        core.wire.clear();
        if let Some(raw) = stamps {
            core.after_write(&raw);
        }
        core.housekeeping(false);
        written.extend_from_slice(&core.wire);
        core.wire.clear();
    }

    /// What a busy-polling loop does when a read finds nothing (the in-memory benchmark calls
    /// it between an answer and the next tick, where the socket loop would poll); nothing
    /// unless the session busy-polls.
    pub fn offline_idle(&mut self) {
        self.core.warm();
    }

    /// True while trading (synced, not stopping).
    pub fn is_live(&self) -> bool {
        self.core.sync.phase == Phase::Live
    }

    /// Closes the connection and reports.
    pub fn finish(&mut self) -> LiveReport {
        if let Some(mut conn) = self.conn.take() {
            let mut close = WsWriter::new(Role::Client, 64, 7);
            close.frame_of(Opcode::Close, &[0x03, 0xE8]);
            // The peer may already be gone; nothing is lost if this close does not arrive.
            let _ = close.write_to(&mut conn.stream);
        }
        self.core.report()
    }

    /// One turn of the loop: read or handle one message, write what it caused, housekeeping.
    #[inline]
    #[cfg_attr(target_os = "linux", allow(unsafe_code), unsafe(link_section = "ticktrade_hot"))]
    fn turn(&mut self) {
        let Some(conn) = self.conn.as_mut() else { return };
        let core = &mut self.core;
        let mut order_stamps = None;
        let mut lost: Option<&'static str> = None;
        // A read that brings bytes is followed at once by the message it completed: nothing
        // (housekeeping included) runs between t0 and the decode.
        let mut filled = false;
        loop {
            match conn.reader.next_message() {
                Ok(Some(message)) => {
                    match message.opcode {
                        Opcode::Text if self.floor.is_some() && message.payload == crate::hot::FLOOR_PROBE => {
                            if let Some(floor) = self.floor.as_mut() {
                                floor_write(floor, conn, &core.clock);
                            }
                        }
                        Opcode::Text | Opcode::Binary => order_stamps = core.on_text(message.payload, conn.t0),
                        Opcode::Ping => {
                            core.writer.frame_of(Opcode::Pong, message.payload);
                            core.wire.extend_from_slice(core.writer.frame());
                        }
                        Opcode::Close => lost = Some("the venue closed the connection"),
                        Opcode::Pong | Opcode::Continuation => {}
                    }
                    break;
                }
                Ok(None) if filled => break,
                Ok(None) => match conn.reader.fill(&mut conn.stream) {
                    Ok(_) => {
                        conn.t0 = core.clock.raw();
                        core.last_recv = core.clock.to_mono(conn.t0);
                        conn.idle_polls = 0;
                        filled = true;
                    }
                    Err(WsError::Io(std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)) => {
                        if conn.stream.is_busy_poll() {
                            core.warm();
                            conn.idle_polls += 1;
                            if conn.idle_polls >= IDLE_POLLS_PER_YIELD {
                                conn.idle_polls = 0;
                                std::thread::yield_now();
                            }
                        }
                        break;
                    }
                    Err(WsError::Eof) => {
                        lost = Some("the venue closed the TCP connection");
                        break;
                    }
                    Err(_) => {
                        lost = Some("read error");
                        break;
                    }
                },
                Err(_) => {
                    lost = Some("WebSocket protocol error");
                    break;
                }
            }
        }
        if lost.is_none() && !core.wire.is_empty() {
            let written = std::io::Write::write_all(&mut conn.stream, &core.wire);
            // t5 (an order batch was encoded at t4): the write returned.
            if let Some(raw) = order_stamps.as_mut().filter(|raw| raw.t[4] != 0) {
                raw.t[5] = core.clock.raw().0;
                if let Some(floor) = self.floor.as_mut() {
                    floor.last.clear();
                    floor.last.extend_from_slice(&core.wire);
                    floor.last_compute = raw.t[4].saturating_sub(raw.t[0]);
                }
            }
            core.wire.clear();
            if written.is_err() {
                lost = Some("write error");
            }
        }
        if let Some(raw) = order_stamps {
            core.after_write(&raw);
        }
        if lost.is_none() {
            core.housekeeping(false);
            lost = core.lost.take();
            if write_wire(&mut conn.stream, &mut core.wire).is_err() {
                lost = Some("write error");
            }
        }
        if let Some(why) = lost {
            tracing::warn!("connection lost: {why}");
            self.conn = None;
            self.core.on_disconnect();
        }
    }

    /// Connects, sets the read timeout, and starts the handshake.
    fn connect(&mut self) -> Result<(), LiveError> {
        let url = self.core.config.url.clone();
        let (mut stream, reader) = ticktrade_net::hot::connect(&url, &self.core.config.connect)
            .map_err(|source| LiveError::Connect { url: url.clone(), source })?;
        match self.core.config.busy_poll {
            true => stream.set_busy_poll(true).map_err(|e| LiveError::Setup(format!("setting busy polling: {e}")))?,
            false => stream
                .tcp()
                .set_read_timeout(Some(self.core.config.poll.max(Duration::from_millis(1))))
                .map_err(|e| LiveError::Setup(format!("setting the read timeout: {e}")))?,
        }
        let t0 = self.core.clock.raw();
        self.conn = Some(Conn { stream, reader, t0, idle_polls: 0 });
        self.core.stats.connects += 1;
        self.core.on_connect();
        if let Some(conn) = self.conn.as_mut()
            && write_wire(&mut conn.stream, &mut self.core.wire).is_err()
        {
            self.conn = None;
            self.core.on_disconnect();
        }
        Ok(())
    }
}

impl<S: Strategy> Core<S> {
    #[inline]
    pub fn now(&self) -> Mono {
        self.clock.to_mono(self.clock.raw())
    }

    /// One text frame. Returns the stamps of a book frame.
    #[inline]
    #[cfg_attr(target_os = "linux", allow(unsafe_code), unsafe(link_section = "ticktrade_hot"))]
    fn on_text(&mut self, payload: &[u8], t0: RawTicks) -> Option<RawStamps> {
        self.stats.frames += 1;
        if let Some(instrument) = self.book_instrument(payload) {
            return self.on_book(instrument, payload, t0);
        }
        self.on_other(payload, t0)
    }

    /// The instrument of a book notification in the usual key order, from its channel name
    /// (compared as bytes with the names subscribed to, which are UTF-8).
    #[inline]
    fn book_instrument(&self, payload: &[u8]) -> Option<InstrumentId> {
        let rest = payload.strip_prefix(BOOK_PREFIX)?;
        let start = BOOK_PREFIX.len() - b"book.".len();
        let len = rest.iter().position(|&b| b == b'"')? + b"book.".len();
        self.instruments.of_book_channel(&payload[start..start + len])
    }

    /// Decode → apply → strategy → encode for one book frame.
    #[inline]
    #[cfg_attr(target_os = "linux", allow(unsafe_code), unsafe(link_section = "ticktrade_hot"))]
    fn on_book(&mut self, instrument: InstrumentId, payload: &[u8], t0: RawTicks) -> Option<RawStamps> {
        let i = instrument.0 as usize;
        self.stats.book_frames += 1;
        let mut raw = RawStamps::received(t0, 0);
        let header = match self.decoders[i].decode(payload, &mut self.updates) {
            Ok(header) => header,
            Err(_) => {
                self.malformed("book notification that does not decode");
                return None;
            }
        };
        raw.t[1] = self.clock.raw().0;
        raw.exch_ms = header.timestamp_ms;
        if header.kind == BookKind::Change {
            self.warm.keep_first(instrument, payload);
        }
        let applied = match (header.kind, header.prev_change_id) {
            (BookKind::Change, Some(prev)) => self.books[i].apply_change(header.change_id, prev, &self.updates),
            (BookKind::Change, None) => Err(ApplyError::Gap { expected_prev: 0, got_prev: 0 }),
            (BookKind::Snapshot | BookKind::Window, _) => {
                self.books[i].apply_snapshot(header.change_id, &self.updates);
                Ok(())
            }
        };
        raw.t[2] = self.clock.raw().0;
        let now = self.clock.to_mono(RawTicks(raw.t[2]));
        if applied.is_err() {
            self.book_stale(instrument, now, false);
            return None;
        }
        self.last_book[i] = now;
        if !self.sync.books_ok[i] {
            self.sync.books_ok[i] = true;
            self.sync.resyncing[i] = false;
            self.maybe_live(now);
        }
        if self.sync.phase != Phase::Live {
            return Some(raw);
        }
        self.runner.on_book(instrument, &self.books, now, &mut self.outbox);
        raw.t[3] = self.clock.raw().0;
        if self.outbox.is_empty() {
            return Some(raw);
        }
        self.send_actions(now);
        if !self.wire.is_empty() {
            raw.t[4] = self.clock.raw().0;
        }
        Some(raw)
    }

    /// After t5: stamps to the recorder, journal entries of the timed path.
    fn after_write(&mut self, raw: &RawStamps) {
        if let Some(ring) = self.stamps.as_mut() {
            let t0 = self.clock.to_mono(RawTicks(raw.t[0]));
            let raw =
                RawStamps { recv_utc_ns: self.anchor.1.saturating_add(t0.0 as i64 - self.anchor.0.0 as i64), ..*raw };
            ring.push(to_stamps(&self.clock, &raw));
        }
        self.flush_journal();
    }

    pub fn flush_journal(&mut self) {
        for entry in self.pending_journal.drain(..) {
            self.runner.strategy_mut().record(entry);
        }
    }

    #[cold]
    pub fn malformed(&mut self, what: &'static str) {
        self.stats.malformed += 1;
        let at = self.now();
        self.pending_journal_push(Entry::Dropped { at, what });
    }

    fn pending_journal_push(&mut self, entry: Entry) {
        if self.pending_journal.len() == self.pending_journal.capacity() {
            self.flush_journal();
        }
        self.pending_journal.push(entry);
    }

    /// A book went stale (gap) or silent: pause and re-subscribe it.
    #[cold]
    pub fn book_stale(&mut self, instrument: InstrumentId, now: Mono, silent: bool) {
        let i = instrument.0 as usize;
        if silent {
            self.stats.stale_books += 1;
        } else {
            self.stats.gaps += 1;
        }
        self.sync.books_ok[i] = false;
        if self.sync.phase == Phase::Live {
            self.sync.phase = Phase::Syncing;
            self.runner.set_paused(true);
            self.pending_journal_push(Entry::Link { at: now, link: Link::Paused });
        }
        if self.sync.resyncing[i] || !self.sync.connected {
            return;
        }
        self.sync.resyncing[i] = true;
        self.last_book[i] = now;
        let scope = self.scope();
        let unsubscribe_id = self.inflight.issue(Pending::Unsubscribe);
        let subscribe_id = self.inflight.issue(Pending::Resubscribe(instrument));
        let channel = self.instruments.book_channels[i].clone();
        let method = match scope {
            requests::Scope::Public => "public/unsubscribe",
            requests::Scope::Private => "private/unsubscribe",
        };
        self.request(Class::Subscribe, |out| {
            ticktrade_deribit_proto::envelope::encode_request(out, unsubscribe_id, method, |p| {
                p.strs("channels", [channel.as_str()]);
            });
        });
        self.request(Class::Subscribe, |out| requests::subscribe(out, subscribe_id, scope, [channel.as_str()]));
    }

    pub fn scope(&self) -> requests::Scope {
        if self.sync.authenticated { requests::Scope::Private } else { requests::Scope::Public }
    }
}
