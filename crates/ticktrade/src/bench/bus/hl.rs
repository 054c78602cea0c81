//! `bench bus --venue hl`: the Hyperliquid bus path on loopback, on the product's own parts.
//! A writer thread (the synthetic hl-node of `bench hl`: `Generator`, `GenWriter`) appends a
//! block to hl-node's hourly files every `1/rate` s; `ticktrade hl --publish` (the server of
//! `hl_node::server::start` following those files, with the NATS sink `server::bus`) publishes
//! what it computes; an `ticktrade hl --upstream nats://…` edge (`server::edge`) follows every
//! subject; in the delay run a direct `ticktrade hl` server follows the same files.
//!
//! - **Delay**: `--clients` clients on the edge and as many on the direct server, each on
//!   one coin's `l2Book` (the default aggregation). Timed by the clients, one sample per frame
//!   per client: the start of the block's write → the frame received, matched by the block
//!   time the frame carries (the files are the upstream; the hl server keeps no per-frame
//!   stamp). Both sides pay the same client and file costs, so their difference is the bus.
//!   The publisher publishes that coin only, so its engine does the direct server's work
//!   plus the coin's other six aggregations, trades and `bbo`, and `allMids`.
//! - **Load** (and the slow-edge run): every coin published (each coin's seven `l2Book`
//!   aggregations, `trades`, `bbo`, and `allMids`), the edge's clients subscribed to all of
//!   it, each `l2Book` frame they receive timed as in the delay run.
//!
//! Owns: the data directory, the writer thread, the hl servers and their clients.
//! Must not: compare different inputs (both servers read the same files).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use futures_util::{SinkExt as _, StreamExt as _};
use ticktrade_bus::{BusConfig, BusCounters, HlSubjects};
use ticktrade_core::Utc;
use ticktrade_hl_node::follow::Follower;
use ticktrade_hl_node::join::Stream;
use ticktrade_hl_node::server::bus::{BusStats, Sink, SinkConfig, connect, start_sink};
use ticktrade_hl_node::server::edge::{Edge, EdgeConfig, start_edge};
use ticktrade_hl_node::server::engine::{Engine, EngineConfig};
use ticktrade_hl_node::server::{MetaDocs, Running, ServeConfig, start};
use ticktrade_hl_node::synth::writer::GenWriter;
use ticktrade_hl_node::synth::{GenConfig, Generator};
use ticktrade_latency::Histogram;
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;

use super::super::hl::{T0_NS, all_subscriptions, books_of, e2e::frame_time};
use super::host::NatsProcess;
use super::{Args, CLIENTS_PER_WAVE, DIRECT, EDGE, PUBLISHER, Stack, UPSTREAM, client_config, runtime, wait_ready};

/// Subscriptions one load client makes (the engine and the edge take any number; 200 spreads
/// a block's frames over several connections as separate clients would).
const SUBSCRIPTIONS_PER_CLIENT: usize = 200;
/// `ticktrade hl`'s `--bus-queue` and `--queue` defaults.
const SINK_QUEUE: usize = 8192;
const CLIENT_QUEUE: usize = 4096;

/// When each recent block's write started, by block time (ms); the newest last.
type Written = Arc<Mutex<VecDeque<(u64, Instant)>>>;
/// Blocks kept in `Written`: minutes of blocks at 10 a second, far more than a frame lags.
const WRITTEN_KEPT: usize = 4096;

/// The delays a group of clients records; replaced on reset.
type Delays = Arc<Mutex<Histogram>>;

/// An hl server (direct or publishing) and the runtime its connections run on.
struct Server {
    rt: Runtime,
    running: Running,
    sink: Option<Sink>,
}

impl Server {
    fn stop(self) {
        if let Some(sink) = self.sink {
            sink.stop();
        }
        self.running.stop();
        self.rt.shutdown_timeout(Duration::from_secs(1));
    }
}

/// The Hyperliquid bus path on loopback.
pub(super) struct Hl {
    dir: PathBuf,
    stop: Arc<AtomicBool>,
    writer: Option<std::thread::JoinHandle<anyhow::Result<()>>>,
    blocks: Arc<AtomicU64>,
    written: Written,
    publisher: Server,
    edge_rt: Runtime,
    edge: Edge,
    direct: Option<Server>,
    coin: String,
    subscriptions: Vec<String>,
    clients: Vec<JoinHandle<()>>,
    delays: [Delays; 2],
}

/// `n_coins` coins of `orders_per_block` order actions a block, as `bench hl` generates them.
fn generator(args: &Args) -> Generator {
    Generator::new(&GenConfig {
        seed: args.seed,
        n_coins: args.coins,
        orders_per_block: args.orders_per_block,
        ..GenConfig::default()
    })
}

/// A `ticktrade hl` server following `dir` from the generator's snapshot, on its own runtime.
fn server(
    name: &str,
    threads: u64,
    generator: &Generator,
    dir: &std::path::Path,
) -> anyhow::Result<(Runtime, Running)> {
    let books = books_of(generator)?;
    let mut followers = Vec::new();
    for stream in Stream::ALL {
        let mut follower = Follower::new(dir, stream);
        follower.seek_height(books.height()).context("positioning a follower")?;
        followers.push(follower);
    }
    let engine = Engine::new(EngineConfig::default(), books, followers);
    let (meta, spot_meta) = generator.meta_json();
    let docs = MetaDocs { meta, spot_meta, ..MetaDocs::default() };
    let rt = runtime(name, usize::try_from(threads).unwrap_or(2))?;
    let running = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        start(listener, engine, dir, docs, ServeConfig { queue: CLIENT_QUEUE, rt_priority: None })
    });
    Ok((rt, running.with_context(|| format!("starting {name}"))?))
}

impl Hl {
    /// `rate`: blocks a second; `delay`: the delay run (one coin published, a direct server),
    /// else the load run (every coin).
    pub(super) fn start(args: &Args, nats: &NatsProcess, rate: u32, delay: bool) -> anyhow::Result<Hl> {
        static RUNS: AtomicUsize = AtomicUsize::new(0);
        let run = RUNS.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("ticktrade-bench-bus-{}-{run}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let generator = generator(args);
        GenWriter::new(&dir).write_bootstrap(&generator).with_context(|| format!("writing {}", dir.display()))?;
        let coin = args.instrument.clone().unwrap_or_else(|| "BTC".to_owned());
        anyhow::ensure!(generator.coin(&coin).is_some(), "--instrument {coin}: not a coin of the generated market");
        let mut subscriptions = all_subscriptions(&generator);
        for c in generator.coins() {
            for kind in ["trades", "bbo"] {
                subscriptions.push(format!(
                    r#"{{"method":"subscribe","subscription":{{"type":"{kind}","coin":{}}}}}"#,
                    serde_json::Value::from(c.name.as_str())
                ));
            }
        }
        subscriptions.push(r#"{"method":"subscribe","subscription":{"type":"allMids"}}"#.to_owned());
        let coins = if delay { vec![coin.clone()] } else { generator.coins().iter().map(|c| c.name.clone()).collect() };

        let bus = BusConfig::parse(&nats.url(), None, |_| None).context("the NATS URL")?;
        let subjects = HlSubjects::default();
        let direct = delay
            .then(|| server(DIRECT, args.server_threads, &generator, &dir))
            .transpose()?
            .map(|(rt, running)| Server { rt, running, sink: None });
        let (rt, running) = server(PUBLISHER, args.server_threads, &generator, &dir)?;
        let sink = rt.block_on(async {
            let stats = Arc::new(BusStats::default());
            let (client, _events) = connect(&bus, Arc::clone(&stats)).await?;
            let config = SinkConfig { subjects: subjects.clone(), queue: SINK_QUEUE, coins };
            anyhow::Ok(start_sink(client, &running.engine(), config, stats))
        });
        let publisher = Server { rt, running, sink: Some(sink.context("the publisher's bus")?) };
        let edge_rt = runtime(EDGE, usize::try_from(args.server_threads).unwrap_or(2))?;
        let edge = edge_rt.block_on(async {
            let stats = Arc::new(BusStats::default());
            let (client, events) = connect(&bus, Arc::clone(&stats)).await?;
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            let config = EdgeConfig { subjects, queue: CLIENT_QUEUE };
            anyhow::Ok(start_edge(listener, client, events, config, stats).await?)
        });
        let edge = edge.context("starting the edge")?;

        let stop = Arc::new(AtomicBool::new(false));
        let blocks = Arc::new(AtomicU64::new(0));
        let written: Written = Arc::new(Mutex::new(VecDeque::with_capacity(WRITTEN_KEPT)));
        let period = Duration::from_secs(1) / rate.max(1);
        let writer = {
            let (dir, stop, blocks, written) = (dir.clone(), stop.clone(), blocks.clone(), written.clone());
            std::thread::Builder::new()
                .name(UPSTREAM.into())
                .spawn(move || write_blocks(generator, GenWriter::new(&dir), period, &written, &blocks, &stop))
                .context("starting the block writer")?
        };
        Ok(Hl {
            dir,
            stop,
            writer: Some(writer),
            blocks,
            written,
            publisher,
            edge_rt,
            edge,
            direct,
            coin,
            subscriptions,
            clients: Vec::new(),
            delays: Default::default(),
        })
    }

    fn start_clients(
        &mut self,
        rt: &Runtime,
        url: &str,
        lists: Vec<Vec<String>>,
        delays: Option<&Delays>,
    ) -> Arc<AtomicUsize> {
        let ready = Arc::new(AtomicUsize::new(0));
        for (i, subscriptions) in lists.into_iter().enumerate() {
            if i % CLIENTS_PER_WAVE == CLIENTS_PER_WAVE - 1 {
                std::thread::sleep(Duration::from_millis(5));
            }
            let timed = delays.map(|d| (Arc::clone(&self.written), Arc::clone(d)));
            self.clients.push(rt.spawn(client(url.to_owned(), subscriptions, Arc::clone(&ready), timed)));
        }
        ready
    }

    /// Blocks the writer has written so far.
    pub(super) fn blocks_written(&self) -> u64 {
        self.blocks.load(Ordering::Relaxed)
    }
}

/// Appends a block every `period` until `stop`, noting when each block's write started.
fn write_blocks(
    mut generator: Generator,
    mut writer: GenWriter,
    period: Duration,
    written: &Written,
    blocks: &AtomicU64,
    stop: &AtomicBool,
) -> anyhow::Result<()> {
    let mut next = Instant::now();
    let mut i = 0i64;
    while !stop.load(Ordering::Relaxed) {
        let time = Utc::from_nanos(T0_NS + i * period.as_nanos() as i64);
        let block = generator.next_block(time);
        if let Ok(mut w) = written.lock() {
            if w.len() == WRITTEN_KEPT {
                w.pop_front();
            }
            w.push_back((time.as_millis() as u64, Instant::now()));
        }
        writer.write_block(&block, [Stream::Statuses, Stream::Diffs, Stream::Fills])?;
        blocks.fetch_add(1, Ordering::Relaxed);
        i += 1;
        next += period;
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    Ok(())
}

impl Stack for Hl {
    fn delay_clients(&mut self, rt: &Runtime, n: usize) -> anyhow::Result<()> {
        let sub = format!(
            r#"{{"method":"subscribe","subscription":{{"type":"l2Book","coin":{}}}}}"#,
            serde_json::Value::from(self.coin.as_str())
        );
        let Some(direct) = &self.direct else { bail!("the delay run has a direct server") };
        let direct_url = format!("ws://{}/ws", direct.running.addr);
        let edge_url = format!("ws://{}/ws", self.edge.addr);
        let [direct_delays, edge_delays] = self.delays.clone();
        let direct_ready = self.start_clients(rt, &direct_url, vec![vec![sub.clone()]; n], Some(&direct_delays));
        let edge_ready = self.start_clients(rt, &edge_url, vec![vec![sub]; n], Some(&edge_delays));
        wait_ready("direct server", &direct_ready, n, Duration::from_secs(60))?;
        wait_ready("edge", &edge_ready, n, Duration::from_secs(60))
    }

    fn load_clients(&mut self, rt: &Runtime, _timed: bool) -> anyhow::Result<usize> {
        let lists: Vec<Vec<String>> =
            self.subscriptions.chunks(SUBSCRIPTIONS_PER_CLIENT).map(<[String]>::to_vec).collect();
        let n = lists.len();
        let url = format!("ws://{}/ws", self.edge.addr);
        // Timed too, for the slow-edge run (every l2Book frame of every coin).
        let edge_delays = Arc::clone(&self.delays[1]);
        let ready = self.start_clients(rt, &url, lists, Some(&edge_delays));
        wait_ready("load clients", &ready, n, Duration::from_secs(60))?;
        Ok(self.subscriptions.len())
    }

    fn reset_delays(&mut self) {
        for d in &self.delays {
            if let Ok(mut h) = d.lock() {
                *h = Histogram::new();
            }
        }
    }

    fn delays(&mut self) -> (Histogram, Histogram) {
        let take = |d: &Delays| d.lock().map(|mut h| std::mem::take(&mut *h)).unwrap_or_default();
        (take(&self.delays[0]), take(&self.delays[1]))
    }

    fn publisher(&self) -> BusCounters {
        self.publisher.sink.as_ref().map(Sink::counters).unwrap_or_default()
    }

    fn edge(&self) -> BusCounters {
        self.edge.counters()
    }

    fn upstream_units(&self) -> Option<u64> {
        Some(self.blocks_written())
    }

    fn stop(mut self: Box<Self>) -> anyhow::Result<()> {
        self.stop.store(true, Ordering::Relaxed);
        let written = self.writer.take().map(std::thread::JoinHandle::join);
        for task in &self.clients {
            task.abort();
        }
        if let Some(direct) = self.direct {
            direct.stop();
        }
        self.edge.stop();
        self.edge_rt.shutdown_timeout(Duration::from_secs(1));
        self.publisher.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
        match written {
            Some(Ok(result)) => result.context("the block writer"),
            Some(Err(_)) => bail!("the block writer panicked"),
            None => Ok(()),
        }
    }
}

/// A client of `url` that makes `subscriptions` and reads; counts itself in `ready` at its
/// first data frame. With `timed`, records each `l2Book` frame's delay from the start of its
/// block's write.
async fn client(url: String, subscriptions: Vec<String>, ready: Arc<AtomicUsize>, timed: Option<(Written, Delays)>) {
    let connect = tokio_tungstenite::connect_async_with_config(url.as_str(), Some(client_config()), true);
    let Ok((mut ws, _)) = connect.await else {
        eprintln!("bench bus: a client could not connect to {url}");
        return;
    };
    for s in subscriptions {
        if ws.send(Message::text(s)).await.is_err() {
            return;
        }
    }
    let mut first = true;
    while let Some(Ok(msg)) = ws.next().await {
        let received = Instant::now();
        let Message::Text(text) = msg else { continue };
        if text.starts_with(r#"{"channel":"subscriptionResponse""#) {
            continue;
        }
        if text.starts_with(r#"{"channel":"error""#) {
            eprintln!("bench bus: {url} refused a subscription: {text}");
            continue;
        }
        if first {
            first = false;
            ready.fetch_add(1, Ordering::Relaxed);
        }
        let Some((written, delays)) = &timed else { continue };
        if !text.starts_with(r#"{"channel":"l2Book""#) {
            continue;
        }
        let Some(ms) = frame_time(&text) else { continue };
        let start = written.lock().ok().and_then(|w| w.iter().rev().find(|(t, _)| *t == ms).map(|&(_, at)| at));
        if let (Some(start), Ok(mut h)) = (start, delays.lock()) {
            h.record(received.saturating_duration_since(start).as_nanos() as u64);
        }
    }
}
