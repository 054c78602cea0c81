//! `ticktrade serve`: one upstream Deribit market-data feed (Deribit, the simulator the
//! binary starts, or any URL), books kept locally, fanned out to many local clients over Deribit's own
//! public WebSocket API so existing SDKs connect by URL only.
//!
//! Owns: the listener (`/ws/api/v2`), the hub task (upstream subscriptions by demand, local
//! books, each client's `change_id` chain, per-client bounded queues and the slow-client
//! policy), the upstream connection, counters.
//! Must not: let a slow client slow the upstream path or another client (every downstream
//! send is a non-blocking offer to that client's bounded queue), forward a book gap to a client
//! (an upstream resync is sent on as the diff of the old and new book on the client's own
//! chain), or pass a price through `f64`.
//!
//! # Layout
//! - `bus`: the NATS sink (`--publish`): the publisher's queue, sequences, writer and the
//!   snapshot/JSON-RPC responder; the bus counters.
//! - `edge`: the bus as upstream (`--upstream nats://…`): follows subjects, resyncs books
//!   from the publisher's snapshots.
//! - `batch`: interval channels (`100ms`, `agg2`, the rule in `deribit_proto::interval`): when
//!   each is due and what upstream frame it carries.
//! - `frames`: snapshot and grouped-window frames of a book.
//! - `hub`: the task that owns books, clients and subscriptions; fan-out and backpressure.
//! - `metrics`: Prometheus text of the counters and the fan-out delay histogram.
//! - `requests`: the JSON-RPC methods the hub answers (subscribe, unsubscribe, proxying).
//! - `trace`: per fanned-out frame stamps (hand-off, prepare, the write loop), off unless a
//!   benchmark turns them on.
//! - `upstream`: the upstream WebSocket connection with reconnect.
//! - `client`: the HTTP routes (axum) for requests that are not WebSocket upgrades.
//! - `conn`: the listener, the `/ws/api/v2` upgrade and each client's socket: the hub writes
//!   frames straight to it (one `write` per frame per client), a bounded queue takes the rest.
//! - `wire`: RFC 6455 frames and handshake, server side.
//! - `web`: the live web view at `GET /` (assets embedded in the binary) and the
//!   `public/ticktrade_get_stats` method it polls over its WebSocket.

mod batch;
mod bus;
mod client;
mod conn;
mod edge;
mod frames;
mod hub;
pub mod metrics;
mod requests;
mod trace;
mod upstream;
mod web;
mod wire;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{mpsc, watch};

pub use bus::{BusCounters, BusOrigins};
pub use conn::DelaySummary;
pub use hub::{ClientCounters, Totals};
pub use ticktrade_bus::{BusConfig, Subjects};
pub use ticktrade_net::outbound::SlowPolicy;
pub use trace::FanoutTrace;

/// Where the market data comes from. The embedded simulator is not one of them: whoever
/// wants it (the binary, tests) starts it and passes its URL, and stops it.
#[derive(Clone, Debug)]
pub enum UpstreamSource {
    /// A Deribit WebSocket URL (`wss://test.deribit.com/ws/api/v2`, `ws://127.0.0.1:PORT/ws/api/v2`).
    Url(String),
    /// The NATS bus a publishing server (`publish`) feeds: this server is an edge and opens
    /// no venue connection.
    Nats(BusConfig),
}

/// Deribit's production WebSocket API, the default upstream.
pub const DERIBIT_URL: &str = "wss://www.deribit.com/ws/api/v2";

/// How to run a server.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    pub listen: SocketAddr,
    pub upstream: UpstreamSource,
    /// Instruments served; `None` = every instrument upstream lists.
    pub instruments: Option<Vec<String>>,
    /// Thin relay: upstream frames go out untouched, no books kept.
    pub raw: bool,
    /// Frames a client may have queued.
    pub queue_capacity: usize,
    pub slow_policy: SlowPolicy,
    pub max_subscriptions: usize,
    pub max_message_bytes: usize,
    pub max_connections: usize,
    /// How long an upstream subscription is kept after its last client left.
    pub linger: Duration,
    /// Smallest `public/set_heartbeat` interval accepted (Deribit: 10 s).
    pub min_heartbeat: Duration,
    /// Also publish every served instrument's books, trades and tickers to this NATS bus.
    pub publish: Option<BusConfig>,
    /// The bus's subject root (publisher and edges must agree).
    pub subjects: Subjects,
    /// Messages the bus sink may have queued before it drops (a slow NATS).
    pub bus_queue_capacity: usize,
    /// Benchmark hook: publisher and edges in one process share it so an edge times its
    /// clients' frames from the publisher's upstream receive ([`BusOrigins`]). `None` to run.
    pub bus_origins: Option<Arc<BusOrigins>>,
}

impl Default for ServeConfig {
    fn default() -> ServeConfig {
        ServeConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            upstream: UpstreamSource::Url(DERIBIT_URL.to_owned()),
            instruments: None,
            raw: false,
            queue_capacity: 1_024,
            slow_policy: SlowPolicy::Conflate,
            max_subscriptions: 1_000,
            max_message_bytes: 64 << 10,
            max_connections: 10_000,
            linger: Duration::from_secs(10),
            min_heartbeat: Duration::from_secs(10),
            publish: None,
            subjects: Subjects::default(),
            bus_queue_capacity: 65_536,
            bus_origins: None,
        }
    }
}

/// Why a server did not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("binding {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    #[error("upstream {url} gave no instrument list within {secs} s")]
    NoInstruments { url: String, secs: u64 },
    #[error("NATS bus: {0}")]
    Bus(#[from] ticktrade_bus::BusError),
    #[error("publishing to the bus needs the books kept here: not with --raw")]
    RawPublish,
}

/// Counters shared with the front end and the status line.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    pub connections: AtomicUsize,
    pub next_client: AtomicU64,
    /// Fan-out delays (ns) of every frame written that came from an upstream frame.
    pub fanout_ns: std::sync::Mutex<Option<hdrhistogram::Histogram<u64>>>,
    /// Per fanned-out frame traces, while a benchmark has them on.
    pub traces: trace::TraceBuf,
    /// The bus counters, when this server publishes to or reads from NATS.
    pub bus: Option<Arc<bus::BusStats>>,
}

/// A running server. Call [`ServeHandle::shutdown`] to stop it.
pub struct ServeHandle {
    addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    hub: mpsc::Sender<hub::HubMsg>,
    shared: Arc<Shared>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl ServeHandle {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `ws://127.0.0.1:PORT/ws/api/v2`.
    pub fn ws_url(&self) -> String {
        format!("ws://{}/ws/api/v2", self.addr)
    }

    /// Totals and per-client counters, as the hub has them now.
    pub async fn totals(&self) -> Option<Totals> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.hub.send(hub::HubMsg::Totals(tx)).await.ok()?;
        rx.await.ok()
    }

    /// The fan-out delays (ns) recorded since the start or the last
    /// [`ServeHandle::reset_fanout`], as `(value, count)` pairs in increasing value order.
    pub fn fanout_recorded(&self) -> Vec<(u64, u64)> {
        match self.shared.fanout_ns.lock() {
            Ok(guard) => guard
                .as_ref()
                .map(|h| h.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect())
                .unwrap_or_default(),
            Err(_) => Vec::new(),
        }
    }

    /// Quantiles of every fan-out delay recorded so far (all clients).
    pub fn fanout_summary(&self) -> DelaySummary {
        match self.shared.fanout_ns.lock() {
            Ok(guard) => DelaySummary::of(guard.as_ref()),
            Err(_) => DelaySummary::default(),
        }
    }

    /// Forgets the fan-out delays recorded so far (a benchmark's warm-up).
    pub fn reset_fanout(&self) {
        if let Ok(mut guard) = self.shared.fanout_ns.lock()
            && let Some(h) = guard.as_mut()
        {
            h.reset();
        }
    }

    /// Starts recording a [`FanoutTrace`] per frame the hub fans out (at most `capacity`),
    /// forgetting earlier ones. Costs one clock read per write while on.
    pub fn trace_start(&self, capacity: usize) {
        self.shared.traces.start(capacity);
    }

    /// Stops recording traces and returns them, oldest first.
    pub fn trace_stop(&self) -> Vec<FanoutTrace> {
        self.shared.traces.stop()
    }

    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        for task in self.tasks {
            task.abort();
        }
    }
}

/// Starts a server; returns once the upstream's instrument list is known.
pub async fn spawn(config: ServeConfig) -> Result<ServeHandle, ServeError> {
    if config.raw && config.publish.is_some() {
        return Err(ServeError::RawPublish);
    }
    let uses_bus = config.publish.is_some() || matches!(config.upstream, UpstreamSource::Nats(_));
    let bus_stats = uses_bus.then(|| Arc::new(bus::BusStats::default()));
    // The bus first: an unreachable server or refused login fails the start, clearly.
    let publisher = match (&config.publish, &bus_stats) {
        (Some(bus_config), Some(stats)) => {
            stats.publisher.store(true, Ordering::Relaxed);
            let events = Arc::clone(stats);
            let client = ticktrade_bus::connect(bus_config, move |e| {
                events.on_event(&e);
            })
            .await?;
            stats.connected.store(true, Ordering::Relaxed);
            Some(client)
        }
        _ => None,
    };
    let edge = match (&config.upstream, &bus_stats) {
        (UpstreamSource::Nats(bus_config), Some(stats)) => {
            let (events_tx, events_rx) = mpsc::unbounded_channel();
            let events = Arc::clone(stats);
            let client = ticktrade_bus::connect(bus_config, move |e| {
                if let Some(event) = edge::classify(&events, &e) {
                    let _ = events_tx.send(event);
                }
            })
            .await?;
            stats.connected.store(true, Ordering::Relaxed);
            Some((client, events_rx))
        }
        _ => None,
    };
    let url = match &config.upstream {
        UpstreamSource::Url(url) => url.clone(),
        UpstreamSource::Nats(bus_config) => bus_config.servers_text(),
    };
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|source| ServeError::Bind { addr: config.listen, source })?;
    let addr = listener.local_addr().map_err(|source| ServeError::Bind { addr: config.listen, source })?;

    let (hub_tx, hub_rx) = mpsc::channel(65_536);
    let (up_tx, up_rx) = mpsc::channel(4_096);
    let (ready_tx, mut ready_rx) = watch::channel(false);
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let shared = Arc::new(Shared { bus: bus_stats.clone(), ..Shared::default() });
    if let Ok(mut h) = shared.fanout_ns.lock() {
        *h = metrics::new_histogram();
    }

    let mut hub = hub::Hub::new(&config, up_tx, ready_tx).with_shared(Arc::clone(&shared));
    let mut tasks = Vec::new();
    if let (Some(client), Some(stats)) = (publisher, &bus_stats) {
        let publisher_id = publisher_id();
        let mut sink =
            bus::BusSink::new(config.subjects.clone(), config.bus_queue_capacity, publisher_id, Arc::clone(stats));
        sink.origins = config.bus_origins.clone();
        tasks.push(tokio::spawn(bus::write(client.clone(), sink.queue(), Arc::clone(stats))));
        tasks.push(tokio::spawn(bus::respond(client, config.subjects.clone(), hub_tx.clone(), Arc::clone(stats))));
        hub.bus = Some(sink);
    }
    match (edge, &bus_stats) {
        (Some((client, events)), Some(stats)) => tasks.push(tokio::spawn(edge::run(
            client,
            config.subjects.clone(),
            up_rx,
            hub_tx.clone(),
            Arc::clone(stats),
            events,
            config.bus_origins.clone(),
        ))),
        _ => tasks.push(tokio::spawn(upstream::run(url.clone(), up_rx, hub_tx.clone()))),
    }
    tasks.push(tokio::spawn(hub.run(hub_rx)));
    tasks.push(tokio::spawn(client::serve(listener, config.clone(), hub_tx.clone(), Arc::clone(&shared), shutdown_rx)));

    let secs = 20;
    let ready = tokio::time::timeout(Duration::from_secs(secs), ready_rx.wait_for(|r| *r)).await;
    if !matches!(ready, Ok(Ok(_))) {
        for task in tasks {
            task.abort();
        }
        return Err(ServeError::NoInstruments { url, secs });
    }
    Ok(ServeHandle { addr, shutdown: shutdown_tx, hub: hub_tx, shared, tasks })
}

/// A publisher run id: differs from one start to the next (time and process id), so edges
/// tell a restarted publisher from the one they followed.
fn publisher_id() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    nanos ^ (u64::from(std::process::id()) << 40)
}

pub(crate) fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

pub(crate) fn bump(counter: &AtomicUsize, by: isize) -> usize {
    if by >= 0 {
        counter.fetch_add(by.unsigned_abs(), Ordering::Relaxed) + by.unsigned_abs()
    } else {
        counter.fetch_sub(by.unsigned_abs(), Ordering::Relaxed) - by.unsigned_abs()
    }
}
