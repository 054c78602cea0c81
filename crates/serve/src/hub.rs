//! The hub: one task that owns the local books, the clients and the subscriptions, applies
//! upstream frames and fans them out.
//!
//! Owns: each instrument's published book and its change-id chain (continued across
//! upstream resyncs), which client wants which channel and whether it holds a snapshot,
//! upstream subscriptions by demand (subscribed on first interest, dropped `linger` after the
//! last client left), what each slow-client outcome means for a client (re-snapshot after a
//! drop, close on disconnect; the queue and its policy are `ticktrade_net::outbound`), counters.
//! Must not: await on a client (every send is a non-blocking offer), or send a change to a client that
//! does not hold the book it applies to.
//!
//! Fan-out (`Hub::fan_out`): a frame is written to all its subscribers back to back, nothing
//! between two writes but the next client's lookup and lock; the delays, counters and the
//! slow-client policy are recorded after the loop, with one lock of the fan-out histogram per
//! frame.
//!
//! Time: schedules (heartbeat deadlines, the linger, batch flushes) read [`timer_now`], tokio's
//! clock, the one their timers wait on, so a test that pauses tokio time drives them without
//! waiting. Latencies (upstream arrival → written) read `Instant::now`, the real clock.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;
use ticktrade_book::l2::{L2Book, LevelUpdate};
use ticktrade_core::InstrumentSpec;
use ticktrade_deribit_proto::book::encode_book_units;
use ticktrade_deribit_proto::channel::Channel;
use ticktrade_deribit_proto::envelope::encode_notification;
use ticktrade_deribit_proto::{BookHeader, BookKind, decode_book_units};
use tokio::sync::{mpsc, oneshot, watch};

use ticktrade_deribit_proto::interval::{batched_interval, book_diff};

/// Now, on tokio's clock (the real clock unless a test paused it): for schedules only.
pub(crate) fn timer_now() -> Instant {
    tokio::time::Instant::now().into_std()
}

use crate::ServeConfig;
use crate::conn::{DelaySummary, Delays, Outbound, Stamped};
use crate::frames::encode_window;
pub(crate) use crate::frames::grouping;
use crate::trace::LoopStamps;
use crate::wire::text_frame;
use ticktrade_net::outbound::{Offer, fan_out};

mod clients;
mod upstream;

use clients::conflation_key;

pub(crate) type ClientId = u64;

pub(crate) enum UpEvent {
    Connected,
    Frame(String, Instant),
    Disconnected,
}

pub(crate) enum HubMsg {
    Join {
        id: ClientId,
        out: Arc<Outbound>,
        kill: oneshot::Sender<String>,
    },
    Request {
        id: ClientId,
        text: String,
        us_in: u64,
    },
    Leave {
        id: ClientId,
    },
    Upstream(UpEvent),
    Totals(oneshot::Sender<Totals>),
    /// A bus edge asks for `instrument`'s book (publisher only): the upstream-format snapshot
    /// at the upstream `change_id`, and the envelope of the last book message it includes;
    /// `None` while the book is not synced.
    BusSnapshot {
        instrument: String,
        reply: oneshot::Sender<crate::bus::SnapshotReply>,
    },
    /// `GET /api/v2/public/{method}`: `params` is a JSON object; the reply is the JSON-RPC
    /// response text (no id), answered here when the data is here, else by upstream.
    Rest {
        method: String,
        params: String,
        reply: oneshot::Sender<String>,
    },
}

/// Counters of one client.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientCounters {
    pub messages: u64,
    pub bytes: u64,
    pub drops: u64,
    pub conflations: u64,
    /// Upstream book resyncs that reached this client as a diff on its own chain.
    pub resyncs: u64,
    /// Fan-out delays of the frames written to this client (upstream frame received →
    /// frame handed to the client's socket).
    pub fanout: DelaySummary,
}

/// Totals and per-client counters.
#[derive(Clone, Debug, Default)]
pub struct Totals {
    pub clients: HashMap<u64, ClientCounters>,
    pub messages: u64,
    pub bytes: u64,
    pub drops: u64,
    pub conflations: u64,
    pub disconnects: u64,
    /// Upstream book resyncs (gap, bad frame, reconnect) sent on to clients as diffs.
    pub resyncs: u64,
    pub upstream_frames: u64,
    /// Upstream channels subscribed now (including those lingering after their last client).
    pub upstream_channels: Vec<String>,
    /// Clients closed because a heartbeat `test_request` went unanswered.
    pub heartbeat_closes: u64,
    /// The NATS bus's counters, when this server publishes to it or reads from it.
    pub bus: Option<crate::bus::BusCounters>,
}

pub(crate) struct Client {
    pub out: Arc<Outbound>,
    pub kill: Option<oneshot::Sender<String>>,
    /// Downstream channel → holds a consistent view (snapshot sent, chain followed).
    pub subs: HashMap<String, bool>,
    pub counters: ClientCounters,
    pub heartbeat: Option<Heartbeat>,
    /// Fan-out delays of the frames the hub wrote to this client at once (the hub's alone:
    /// no lock; those the client's task wrote are in `out`).
    pub delays: Delays,
}

/// A client's `public/set_heartbeat` state.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Heartbeat {
    pub every: Duration,
    /// When the next `test_request` is due.
    pub next: Instant,
    /// A `test_request` was sent and no `public/test` came back yet.
    pub awaiting: bool,
}

/// One instrument's book as clients see it.
pub(crate) struct BookState {
    pub spec: InstrumentSpec,
    /// The published book; its `last_change_id` is the downstream chain.
    pub book: L2Book,
    /// Synced at least once (clients may be sent snapshots).
    pub published: bool,
    pub upstream_last: Option<u64>,
    pub upstream_stale: bool,
    pub timestamp_ms: u64,
    /// Downstream book channels of this instrument with subscribers.
    pub channels: Vec<String>,
}

#[derive(Default)]
pub(crate) struct UpSub {
    pub refs: usize,
    pub idle_since: Option<Instant>,
}

pub(crate) enum Pending {
    Proxy { client: ClientId, id: OwnedId },
    Rest(oneshot::Sender<String>),
    Instruments,
    Ignore,
}

#[derive(Clone, Debug)]
pub(crate) enum OwnedId {
    Num(i64),
    Str(String),
}

pub(crate) struct Hub {
    pub cfg: ServeConfig,
    pub filter: Option<HashSet<String>>,
    pub specs: HashMap<String, InstrumentSpec>,
    pub books: HashMap<String, BookState>,
    pub clients: HashMap<ClientId, Client>,
    pub subscribers: HashMap<String, Vec<ClientId>>,
    pub upstream: HashMap<String, UpSub>,
    /// Upstream channel → downstream channels relayed from it (non-book channels, or all in `--raw`).
    pub relays: HashMap<String, Vec<String>>,
    pub up_tx: mpsc::Sender<String>,
    pub connected: bool,
    pub next_up_id: u64,
    pub pending: HashMap<u64, Pending>,
    pub totals: Totals,
    pub ready: watch::Sender<bool>,
    /// Interval channels' books as of their last flush, per (instrument, interval).
    pub batches: HashMap<(String, ticktrade_deribit_proto::channel::Interval), crate::batch::Batch>,
    /// The server's shared counters (the fan-out histogram in the web view's stats).
    pub shared: Option<Arc<crate::Shared>>,
    updates: Vec<LevelUpdate>,
    scratch: L2Book,
    /// While tracing: (upstream frame received, hub started on it) of the frame in hand.
    trace_at: Option<(Instant, Instant)>,
    /// The fan-out loop's buffers, kept between frames.
    fan: FanBuf,
    /// The NATS sink (`--publish`): one more sink of every upstream frame the bus carries.
    pub bus: Option<crate::bus::BusSink>,
}

/// One fan-out's clients and what each write did, reused from frame to frame.
#[derive(Default)]
struct FanBuf {
    ids: Vec<ClientId>,
    /// What the write did, and when the socket took the frame if it was written at once.
    results: Vec<(Offer, Option<Instant>)>,
}

impl FanBuf {
    fn clear(&mut self) {
        self.ids.clear();
        self.results.clear();
    }
}

#[derive(Deserialize)]
struct UpFrame<'a> {
    #[serde(default)]
    id: Option<u64>,
    #[serde(borrow, default)]
    method: Option<&'a str>,
    #[serde(borrow, default)]
    params: Option<UpParams<'a>>,
}

#[derive(Deserialize)]
struct UpParams<'a> {
    #[serde(borrow, default)]
    channel: Option<&'a str>,
    #[serde(borrow, default)]
    data: Option<&'a RawValue>,
}

/// The upstream channel that feeds downstream channel `name`, or `None` if not served.
pub(crate) fn upstream_channel(name: &str, raw_mode: bool) -> Option<String> {
    if ticktrade_deribit_proto::channel::is_private(name) {
        return None;
    }
    let channel = Channel::parse(name)?;
    match channel {
        Channel::Book { instrument, .. } | Channel::GroupedBook { instrument, .. } if !raw_mode => {
            Some(format!("book.{instrument}.100ms"))
        }
        // Public raw channels need an authorised upstream session: use the 100 ms feed.
        _ => Some(name.strip_suffix(".raw").map_or_else(|| name.to_owned(), |base| format!("{base}.100ms"))),
    }
}

impl Hub {
    pub(crate) fn new(cfg: &ServeConfig, up_tx: mpsc::Sender<String>, ready: watch::Sender<bool>) -> Hub {
        Hub {
            filter: cfg.instruments.as_ref().map(|list| list.iter().cloned().collect()),
            cfg: cfg.clone(),
            specs: HashMap::new(),
            books: HashMap::new(),
            clients: HashMap::new(),
            subscribers: HashMap::new(),
            upstream: HashMap::new(),
            relays: HashMap::new(),
            up_tx,
            connected: false,
            next_up_id: 1,
            pending: HashMap::new(),
            totals: Totals::default(),
            ready,
            batches: HashMap::new(),
            shared: None,
            updates: Vec::new(),
            scratch: L2Book::new(),
            trace_at: None,
            fan: FanBuf::default(),
            bus: None,
        }
    }

    pub(crate) async fn run(mut self, mut rx: mpsc::Receiver<HubMsg>) {
        let mut sweep = tokio::time::interval(Duration::from_millis(500));
        let mut flush = tokio::time::interval(Duration::from_millis(20));
        flush.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                msg = rx.recv() => match msg {
                    Some(msg) => self.on_msg(msg),
                    None => return,
                },
                _ = flush.tick() => self.flush_batches(timer_now()),
                _ = sweep.tick() => {
                    let now = timer_now();
                    self.sweep(now);
                    self.heartbeats(now);
                }
            }
        }
    }

    fn on_msg(&mut self, msg: HubMsg) {
        match msg {
            HubMsg::Join { id, out, kill } => {
                self.clients.insert(
                    id,
                    Client {
                        out,
                        kill: Some(kill),
                        subs: HashMap::new(),
                        counters: ClientCounters::default(),
                        heartbeat: None,
                        delays: Delays::default(),
                    },
                );
            }
            HubMsg::Request { id, text, us_in } => self.on_request(id, &text, us_in),
            HubMsg::Leave { id } => self.remove_client(id),
            HubMsg::Upstream(UpEvent::Connected) => self.on_connected(),
            HubMsg::Upstream(UpEvent::Disconnected) => {
                self.connected = false;
                for state in self.books.values_mut() {
                    state.upstream_stale = true;
                }
            }
            HubMsg::Upstream(UpEvent::Frame(text, at)) => {
                let bus_channel = self.on_upstream(&text, at);
                self.trace_at = None;
                // After the WebSocket fan-out: the bus never delays a client's frame.
                if let (Some(ch), Some(bus)) = (bus_channel, self.bus.as_mut()) {
                    bus.publish(&ch, Bytes::from(text), at);
                }
            }
            HubMsg::BusSnapshot { instrument, reply } => {
                let _ = reply.send(self.bus_snapshot(&instrument));
            }
            HubMsg::Totals(reply) => {
                let mut totals = self.totals.clone();
                totals.clients = self
                    .clients
                    .iter()
                    .map(|(id, c)| (*id, ClientCounters { fanout: c.out.delays(&c.delays), ..c.counters }))
                    .collect();
                totals.upstream_channels = self.upstream.keys().cloned().collect();
                totals.upstream_channels.sort();
                totals.bus = self.shared.as_ref().and_then(|s| s.bus.as_ref()).map(|b| b.counters());
                let _ = reply.send(totals);
            }
            HubMsg::Rest { method, params, reply } => self.on_rest(&method, &params, reply),
        }
    }

    fn on_book(&mut self, instrument: &str, frame: &[u8], at: Instant) {
        let Some(state) = self.books.get_mut(instrument) else { return };
        let header = match decode_book_units(frame, &state.spec, &mut self.updates) {
            Ok(h) => h,
            Err(e) => {
                tracing::warn!("upstream book {instrument}: {e}; resyncing");
                self.resync(instrument);
                return;
            }
        };
        state.timestamp_ms = header.timestamp_ms;
        let snapshot = matches!(header.kind, BookKind::Snapshot | BookKind::Window) || header.prev_change_id.is_none();
        if snapshot {
            state.upstream_last = Some(header.change_id);
            state.upstream_stale = false;
            if !state.published || state.book.is_stale() {
                let next = state.book.last_change_id().map_or(1, |c| c + 1);
                state.book.apply_snapshot(next, &self.updates);
                state.published = true;
                for ch in state.channels.clone() {
                    self.unsync_channel(&ch);
                }
                self.reset_batches(instrument);
            } else {
                self.scratch.apply_snapshot(0, &self.updates);
                let mut diff = Vec::new();
                book_diff(&state.book, &self.scratch, &mut diff);
                self.totals.resyncs += 1;
                self.count_client_resyncs(instrument);
                if !diff.is_empty() {
                    self.updates = diff;
                    self.publish_change(instrument, at);
                }
            }
        } else {
            if state.upstream_stale {
                return;
            }
            if Some(header.change_id) == state.upstream_last {
                return; // a duplicate of what was applied
            }
            if header.prev_change_id != state.upstream_last {
                tracing::info!("upstream book {instrument}: gap; resyncing");
                self.resync(instrument);
                return;
            }
            state.upstream_last = Some(header.change_id);
            self.publish_change(instrument, at);
        }
        self.catch_up(instrument);
    }

    /// Applies `self.updates` to the published book as the next change of its chain and
    /// sends it to every subscriber holding the book.
    fn publish_change(&mut self, instrument: &str, at: Instant) {
        let Some(state) = self.books.get_mut(instrument) else { return };
        let prev = state.book.last_change_id().unwrap_or(0);
        if state.book.apply_change(prev + 1, prev, &self.updates).is_err() {
            // A negative size upstream: the book is stale; the next snapshot re-publishes it.
            state.upstream_stale = true;
            self.resync(instrument);
            return;
        }
        let mut frames = Vec::new();
        for ch in &state.channels {
            let mut buf = Vec::with_capacity(256);
            match Channel::parse(ch) {
                Some(Channel::Book { .. }) if batched_interval(ch).is_none() => {
                    let header = BookHeader {
                        channel: ch,
                        instrument,
                        kind: BookKind::Change,
                        change_id: prev + 1,
                        prev_change_id: Some(prev),
                        timestamp_ms: state.timestamp_ms,
                    };
                    encode_book_units(&mut buf, &header, &state.spec, &self.updates);
                    frames.push((ch.clone(), buf, true));
                }
                Some(Channel::GroupedBook { .. }) if batched_interval(ch).is_none() => {
                    encode_window(&mut buf, ch, instrument, state);
                    frames.push((ch.clone(), buf, false));
                }
                _ => {}
            }
        }
        for (ch, buf, needs_sync) in frames {
            self.fan_out(&ch, &text_frame(&buf), at, needs_sync);
        }
        self.mark_dirty(instrument, at);
    }

    /// Sends `frame`, from an upstream frame received at `at`, to every subscriber of `ch`
    /// (only those holding its book when `needs_sync`): the writes in one loop from here,
    /// nothing between two of them but the next client's lookup and lock; the delays,
    /// counters and the slow-client policy after the loop. A client it was written or queued
    /// to holds `ch`.
    pub(crate) fn fan_out(&mut self, ch: &str, frame: &Bytes, at: Instant, needs_sync: bool) {
        let mut fan = std::mem::take(&mut self.fan);
        fan.clear();
        let start = Instant::now();
        let item = Stamped { bytes: frame.clone(), upstream_at: Some(at) };
        // A grouped window stands alone: a full queue keeps the latest per channel. A book
        // change does not (it is dropped and the client re-snapshotted).
        let key = (!needs_sync).then(|| conflation_key(ch));
        // Each client is looked up just before its write: collecting all of them first put
        // 60-80 µs of cold-cache lookups before the first write (docs/PERFORMANCE.md §4.3).
        if let Some(ids) = self.subscribers.get(ch) {
            let clients = &self.clients;
            let targets = ids.iter().filter_map(|&id| {
                let client = clients.get(&id)?;
                (!needs_sync || client.subs.get(ch) == Some(&true)).then(|| (id, client.out.queue()))
            });
            fan_out(&item, key, targets, |id, offer| {
                fan.results.push((offer, (offer == Offer::Written).then(Instant::now)));
                fan.ids.push(id);
            });
        }
        let mut stamps = self.trace_at.map(|(received, started)| LoopStamps::new(received, started));
        if let Some(s) = stamps.as_mut() {
            s.loop_start(start);
        }
        {
            let mut all = self.shared.as_ref().and_then(|s| s.fanout_ns.lock().ok());
            for (id, &(_, done)) in fan.ids.iter().zip(&fan.results) {
                let (Some(done), Some(client)) = (done, self.clients.get_mut(id)) else { continue };
                if let Some(s) = stamps.as_mut() {
                    s.written(done);
                }
                let ns = client.delays.record(at, done);
                if let Some(h) = all.as_mut().and_then(|g| g.as_mut()) {
                    h.saturating_record(ns);
                }
            }
        }
        if let (Some(s), Some(shared)) = (stamps, self.shared.as_ref()) {
            s.finish(&shared.traces);
        }
        let len = frame.len() as u64;
        for (&id, &(offer, _)) in fan.ids.iter().zip(&fan.results) {
            if self.account(id, offer, len)
                && let Some(flag) = self.clients.get_mut(&id).and_then(|c| c.subs.get_mut(ch))
            {
                *flag = true;
            }
        }
        self.fan = fan;
    }

    /// Counts one resync for every client holding one of `instrument`'s book channels.
    fn count_client_resyncs(&mut self, instrument: &str) {
        let Some(state) = self.books.get(instrument) else { return };
        let mut ids: Vec<ClientId> =
            state.channels.iter().filter_map(|ch| self.subscribers.get(ch)).flatten().copied().collect();
        ids.sort_unstable();
        ids.dedup();
        for id in ids {
            if let Some(c) = self.clients.get_mut(&id) {
                c.counters.resyncs += 1;
            }
        }
    }

    /// Sends a snapshot (or grouped window) to each subscriber of `instrument`'s book
    /// channels that does not hold the book, if its queue has room.
    pub(crate) fn catch_up(&mut self, instrument: &str) {
        let Some(state) = self.books.get(instrument) else { return };
        if !state.published || state.book.is_stale() {
            return;
        }
        let half = self.cfg.queue_capacity / 2;
        for ch in state.channels.clone() {
            let waiting: Vec<ClientId> = self
                .subscribers
                .get(&ch)
                .map(|ids| {
                    ids.iter()
                        .copied()
                        .filter(|id| {
                            self.clients
                                .get(id)
                                .is_some_and(|c| c.subs.get(&ch) == Some(&false) && c.out.queued() <= half)
                        })
                        .collect()
                })
                .unwrap_or_default();
            if waiting.is_empty() {
                continue;
            }
            let frame = text_frame(&self.snapshot_for(&ch, instrument));
            for id in waiting {
                if self.deliver_frame(id, &frame, None)
                    && let Some(flag) = self.clients.get_mut(&id).and_then(|c| c.subs.get_mut(&ch))
                {
                    *flag = true;
                }
            }
        }
    }

    fn unsync_channel(&mut self, ch: &str) {
        for id in self.subscribers.get(ch).cloned().unwrap_or_default() {
            if let Some(flag) = self.clients.get_mut(&id).and_then(|c| c.subs.get_mut(ch)) {
                *flag = false;
            }
        }
    }

    /// Asks upstream for a fresh snapshot of `instrument`'s book.
    fn resync(&mut self, instrument: &str) {
        if let Some(state) = self.books.get_mut(instrument) {
            state.upstream_stale = true;
            state.upstream_last = None;
        }
        let ch = vec![format!("book.{instrument}.100ms")];
        self.subscribe_upstream(&ch, false);
        self.subscribe_upstream(&ch, true);
    }
}

#[cfg(test)]
#[path = "hub_tests.rs"]
mod tests;
