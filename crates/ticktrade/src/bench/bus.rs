//! `ticktrade bench bus`: books across machines on NATS, on the product's own paths: a real
//! `nats-server` (the project's pinned build, started here), the in-process simulator as
//! upstream, a publisher (`serve --publish`) and an edge (`serve --upstream nats://…`), each
//! server on its own runtime and named threads.
//!
//! - **Delay** (`fanout_via_nats`, beside `fanout_direct`): `--clients` clients on the edge and
//!   as many on a direct server (`serve` on the same simulator, no bus), all on
//!   `book.<instrument>.raw`, in the same run. Both are the servers' own fan-out stamps, one
//!   sample per frame per client: direct, upstream frame received → client frame written; via
//!   NATS, the publisher's upstream frame received → the edge's client frame written (the
//!   edge takes the publisher's receive instant through `ticktrade_serve::BusOrigins`, a hook
//!   only a same-process benchmark can use).
//! - **Load** (one run per `--load-rates` value): the simulator's whole catalogue at that many
//!   events a second, every instrument's book, trades and ticker published, and one edge
//!   following every one of them (its clients subscribe to all of them). What one publisher
//!   sustains is measured at that fixed offered load (not by raising it until it drops):
//!   messages published a second and messages dropped (the sink's queue full). CPU per
//!   10,000 messages a second, for the publisher (per message published), the edge (per
//!   message received) and `nats-server` (per message published): CPU time from the
//!   scheduler's per-thread account (`host`) over the measured seconds.
//!
//! A venue is a way to start a publisher, an edge and a direct server and the channels its
//! clients subscribe to (`Venue`); `--venue hl` is to come with `hl --publish/--upstream`.
//!
//! Owns: the run's wiring, the series names, the load figures and the summary object.
//! Must not: time the fan-out itself (the servers record it).

use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use futures_util::{SinkExt as _, StreamExt as _};
use ticktrade_latency::{Histogram, Series};
use ticktrade_serve::{BusConfig, BusCounters, BusOrigins, ServeConfig, ServeHandle, UpstreamSource};
use ticktrade_sim::{SimConfig, SimHandle};
use tokio::runtime::Runtime;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use super::report::{Outcome, Output, emit_outcome};

mod host;

use host::{NatsProcess, process_cpu_ns, threads_cpu_ns};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    output: Output,
    /// Whose publisher and edge run: `deribit` (`serve --publish` / `serve --upstream`).
    #[arg(long, value_enum, default_value_t = Venue::Deribit)]
    venue: Venue,
    /// Clients on the edge, and as many on the direct server (the delay run).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=2_000))]
    clients: u64,
    /// Seconds the delay run measures (after every client holds its book and 1 s more).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=600))]
    seconds: u64,
    /// Simulator events a second in the delay run (over all its instruments).
    #[arg(long, default_value_t = 400)]
    sim_rate: u32,
    /// The instrument of the delay run (served by all three servers; clients on its raw book).
    #[arg(long, default_value = "BTC-PERPETUAL")]
    instrument: String,
    /// Simulator events a second of each load run (every instrument published), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "2000,20000")]
    load_rates: Vec<u32>,
    /// Seconds each load run measures (after its edge follows everything and 2 s more).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=600))]
    load_seconds: u64,
    /// Worker threads of each server's runtime (`ticktrade serve` uses 2).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=64))]
    server_threads: u64,
    /// The `nats-server` binary (default: `$NATS_SERVER_BIN`, then `.tools/bin/nats-server`
    /// here or in a directory above, then `$PATH`).
    #[arg(long, value_name = "PATH")]
    nats_server: Option<std::path::PathBuf>,
}

/// The venue whose bus path runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Venue {
    /// `ticktrade serve --publish` over the simulator, `serve --upstream nats://…` edges.
    Deribit,
}

/// Thread names: CPU is charged by them (`host::threads_cpu_ns`), at most 15 bytes.
const PUBLISHER: &str = "bus-publisher";
const EDGE: &str = "bus-edge";
const DIRECT: &str = "bus-direct";
const SIM: &str = "bus-sim";
const CLIENTS: &str = "bus-clients";

/// Channels one load client subscribes to (a server takes up to 1,000 per connection).
const CHANNELS_PER_CLIENT: usize = 200;

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let bin = host::nats_server_bin(args.nats_server.as_deref())?;
    let nats = NatsProcess::start(&bin)?;
    let clients_rt = runtime(CLIENTS, 1)?;
    let n = usize::try_from(args.clients).context("--clients")?;

    let delay = delay_run(&args, &nats, &clients_rt, n)?;
    let mut loads = Vec::new();
    for &rate in &args.load_rates {
        loads.push(load_run(&args, &nats, &clients_rt, rate)?);
    }

    let (d, b) = (delay.direct.percentiles(), delay.via_nats.percentiles());
    let p50_factor = b.p50 as f64 / d.p50.max(1) as f64;
    let p99_factor = b.p99 as f64 / d.p99.max(1) as f64;
    let mut notes = format!(
        "ticktrade bench bus ({:?}): nats-server {} on loopback; the in-process simulator upstream; each server on \
         its own runtime ({} threads)\n",
        args.venue,
        bin.display(),
        args.server_threads
    );
    let _ = writeln!(
        notes,
        "delay run: {} events/s, {n} clients on book.{}.raw on the edge and {n} on a direct server, {} s measured; \
         {} upstream frames published; edge gaps {}, resyncs {}, publisher drops {}",
        args.sim_rate,
        args.instrument,
        args.seconds,
        delay.publisher.published,
        delay.edge.gaps,
        delay.edge.resyncs,
        delay.publisher.dropped
    );
    let _ = writeln!(
        notes,
        "fanout_via_nats = publisher's upstream frame received → edge's client frame written; fanout_direct = \
         direct server's upstream frame received → client frame written"
    );
    let _ = writeln!(
        notes,
        "through NATS / direct: median {p50_factor:.2}x (goal ≤ 2x), p99 {p99_factor:.2}x (goal ≤ 3x); the table's \
         ratio is direct p50 / through-NATS p50"
    );
    for l in &loads {
        let _ = writeln!(
            notes,
            "load {} events/s, every instrument ({} channels followed by the edge, {} s): offered {:.0} msg/s, \
             published {:.0} msg/s, dropped {}; edge received {:.0} msg/s (gaps {}); nats-server: {:.0} B/msg in, {:.0} msg/s and {:.0} kB/s out; \
             CPU per 10,000 msg/s (% of one core): publisher {:.1}, edge {:.1}, nats-server {:.1} (simulator {:.0} % \
             of a core in all)",
            l.rate,
            l.channels,
            args.load_seconds,
            l.offered_per_s,
            l.published_per_s,
            l.dropped,
            l.edge_received_per_s,
            l.edge_gaps,
            l.bytes_per_msg,
            l.nats_out_per_s,
            l.nats_out_bytes_per_s / 1e3,
            l.publisher_cpu_per_10k,
            l.edge_cpu_per_10k,
            l.nats_cpu_per_10k,
            l.sim_cpu_pct
        );
    }
    let summary = serde_json::json!({
        "venue": format!("{:?}", args.venue).to_lowercase(),
        "clients": n,
        "via_nats_over_direct_p50": p50_factor,
        "via_nats_over_direct_p99": p99_factor,
        "load": loads.iter().map(LoadRun::json).collect::<Vec<_>>(),
    });
    let series = vec![
        Series::from_histogram("fanout_direct", &delay.direct),
        Series::from_histogram("fanout_via_nats", &delay.via_nats).with_baseline_p50(d.p50),
    ];
    let outcome = Outcome { title: "ticktrade bench bus (loopback)".into(), notes, series, summary: Some(summary) };
    emit_outcome(outcome, &args.output)?;
    Ok(ExitCode::SUCCESS)
}

fn runtime(name: &str, threads: usize) -> anyhow::Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name(name)
        .enable_all()
        .build()
        .with_context(|| format!("starting the {name} runtime"))
}

/// A server and the runtime it runs on.
struct Server {
    rt: Runtime,
    handle: ServeHandle,
}

impl Server {
    fn start(name: &str, threads: u64, config: ServeConfig) -> anyhow::Result<Server> {
        let rt = runtime(name, usize::try_from(threads).unwrap_or(2))?;
        let handle = rt.block_on(ticktrade_serve::spawn(config)).with_context(|| format!("starting {name}"))?;
        Ok(Server { rt, handle })
    }

    fn bus(&self) -> BusCounters {
        self.rt.block_on(self.handle.totals()).and_then(|t| t.bus).unwrap_or_default()
    }

    fn stop(self) {
        self.rt.block_on(self.handle.shutdown());
        self.rt.shutdown_timeout(Duration::from_secs(1));
    }
}

/// One venue's bus path on loopback: its upstream, a publisher, an edge, and for the delay
/// run a direct server on the same upstream.
struct Stack {
    sim_rt: Runtime,
    sim: SimHandle,
    publisher: Server,
    edge: Server,
    direct: Option<Server>,
}

impl Stack {
    /// `instruments`: served by the publisher (and the direct server); `None` = all.
    fn start(
        args: &Args,
        nats: &NatsProcess,
        rate: u32,
        instruments: Option<Vec<String>>,
        direct: bool,
        clients: usize,
    ) -> anyhow::Result<Stack> {
        match args.venue {
            Venue::Deribit => {
                let sim_rt = runtime(SIM, 1)?;
                let sim_config = SimConfig { rate_per_s: rate, ..SimConfig::default() };
                let sim =
                    sim_rt.block_on(ticktrade_sim::spawn_loopback(sim_config)).context("starting the simulator")?;
                let bus = BusConfig::parse(&nats.url(), None, |_| None).context("the NATS URL")?;
                let origins = Arc::new(BusOrigins::default());
                let base = ServeConfig {
                    instruments: instruments.clone(),
                    max_connections: clients + 64,
                    bus_origins: Some(Arc::clone(&origins)),
                    ..ServeConfig::default()
                };
                let direct = direct
                    .then(|| {
                        let config = ServeConfig {
                            upstream: UpstreamSource::Url(sim.ws_url()),
                            bus_origins: None,
                            ..base.clone()
                        };
                        Server::start(DIRECT, args.server_threads, config)
                    })
                    .transpose()?;
                let config = ServeConfig {
                    upstream: UpstreamSource::Url(sim.ws_url()),
                    publish: Some(bus.clone()),
                    ..base.clone()
                };
                let publisher = Server::start(PUBLISHER, args.server_threads, config)?;
                let edge = Server::start(
                    EDGE,
                    args.server_threads,
                    ServeConfig { upstream: UpstreamSource::Nats(bus), ..base },
                )?;
                Ok(Stack { sim_rt, sim, publisher, edge, direct })
            }
        }
    }

    /// The channel a delay-run client follows (every change, as fanned out).
    fn delay_channel(args: &Args) -> String {
        match args.venue {
            Venue::Deribit => format!("book.{}.raw", args.instrument),
        }
    }

    /// Every channel the publisher carries, as a client of the edge names it.
    fn all_channels(&self, clients_rt: &Runtime, args: &Args) -> anyhow::Result<Vec<String>> {
        match args.venue {
            Venue::Deribit => {
                let names = clients_rt.block_on(instrument_names(self.sim.ws_url()))?;
                Ok(names
                    .iter()
                    .flat_map(|n| [format!("book.{n}.100ms"), format!("trades.{n}.100ms"), format!("ticker.{n}.100ms")])
                    .collect())
            }
        }
    }

    fn stop(self) {
        if let Some(direct) = self.direct {
            direct.stop();
        }
        self.edge.stop();
        self.publisher.stop();
        self.sim_rt.block_on(self.sim.shutdown());
        self.sim_rt.shutdown_timeout(Duration::from_secs(1));
    }
}

/// The simulator's instrument names (`public/get_instruments`, every currency).
async fn instrument_names(url: String) -> anyhow::Result<Vec<String>> {
    let (mut ws, _) = tokio_tungstenite::connect_async(url.as_str()).await.context("connecting to the simulator")?;
    let request = r#"{"jsonrpc":"2.0","id":1,"method":"public/get_instruments","params":{"currency":"any"}}"#;
    ws.send(Message::text(request)).await.context("asking for instruments")?;
    while let Some(msg) = ws.next().await {
        let Message::Text(text) = msg.context("reading instruments")? else { continue };
        if text.contains(r#""id":1"#) {
            let specs = ticktrade_deribit_proto::instrument::parse_instruments_response(&text, 0)
                .map_err(|e| anyhow::anyhow!("the simulator's instrument list: {e}"))?;
            return Ok(specs.into_iter().map(|s| s.name).collect());
        }
    }
    bail!("the simulator closed before listing its instruments")
}

/// Load clients' WebSocket settings: a 4 KiB read buffer (tungstenite's 128 KiB default is
/// zeroed on every read, which with many clients in one process costs more than they read).
fn client_config() -> WebSocketConfig {
    WebSocketConfig::default().read_buffer_size(4 << 10)
}

/// A client of `url` on `channels` that reads and discards; counts itself in `ready` at its
/// first notification.
async fn client(url: String, channels: Vec<String>, ready: Arc<AtomicUsize>) {
    let connect = tokio_tungstenite::connect_async_with_config(url.as_str(), Some(client_config()), true);
    let Ok((mut ws, _)) = connect.await else {
        eprintln!("bench bus: a client could not connect to {url}");
        return;
    };
    let sub = serde_json::json!({"jsonrpc":"2.0","id":1,"method":"public/subscribe","params":{"channels":channels}});
    if ws.send(Message::text(sub.to_string())).await.is_err() {
        return;
    }
    let mut first = true;
    while let Some(Ok(msg)) = ws.next().await {
        if first && matches!(&msg, Message::Text(t) if t.contains(r#""method":"subscription""#)) {
            first = false;
            ready.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Starts one client per channel list on `url`; returns their ready counter.
fn start_clients(
    rt: &Runtime,
    url: &str,
    lists: Vec<Vec<String>>,
) -> (Arc<AtomicUsize>, Vec<tokio::task::JoinHandle<()>>) {
    let ready = Arc::new(AtomicUsize::new(0));
    let tasks = lists
        .into_iter()
        .enumerate()
        .map(|(i, channels)| {
            if i % 64 == 63 {
                // Let the accept queue keep up.
                std::thread::sleep(Duration::from_millis(5));
            }
            rt.spawn(client(url.to_owned(), channels, Arc::clone(&ready)))
        })
        .collect();
    (ready, tasks)
}

fn wait_ready(what: &str, ready: &AtomicUsize, n: usize, within: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + within;
    while ready.load(Ordering::Relaxed) < n {
        if Instant::now() > deadline {
            bail!("{what}: {} of {n} clients got data within {} s", ready.load(Ordering::Relaxed), within.as_secs());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// The fan-out delays a server recorded, as a histogram.
fn recorded(server: &Server) -> Histogram {
    let mut h = Histogram::new();
    for (ns, count) in server.handle.fanout_recorded() {
        h.record_n(ns, count);
    }
    h
}

/// What the delay run measured.
struct DelayRun {
    direct: Histogram,
    via_nats: Histogram,
    /// Counters over the measured seconds.
    publisher: BusCounters,
    edge: BusCounters,
}

fn delay_run(args: &Args, nats: &NatsProcess, clients_rt: &Runtime, n: usize) -> anyhow::Result<DelayRun> {
    let stack = Stack::start(args, nats, args.sim_rate, Some(vec![args.instrument.clone()]), true, n)?;
    let channel = Stack::delay_channel(args);
    let Some(direct) = &stack.direct else { bail!("the delay run has a direct server") };
    let (direct_ready, direct_clients) =
        start_clients(clients_rt, &direct.handle.ws_url(), vec![vec![channel.clone()]; n]);
    let (edge_ready, edge_clients) = start_clients(clients_rt, &stack.edge.handle.ws_url(), vec![vec![channel]; n]);
    wait_ready("direct server", &direct_ready, n, Duration::from_secs(60))?;
    wait_ready("edge", &edge_ready, n, Duration::from_secs(60))?;
    std::thread::sleep(Duration::from_secs(1));
    let (pub0, edge0) = (stack.publisher.bus(), stack.edge.bus());
    direct.handle.reset_fanout();
    stack.edge.handle.reset_fanout();
    std::thread::sleep(Duration::from_secs(args.seconds));
    let run = DelayRun {
        direct: recorded(direct),
        via_nats: recorded(&stack.edge),
        publisher: delta(stack.publisher.bus(), pub0),
        edge: delta(stack.edge.bus(), edge0),
    };
    for task in direct_clients.into_iter().chain(edge_clients) {
        task.abort();
    }
    stack.stop();
    if run.direct.is_empty() || run.via_nats.is_empty() {
        bail!("the delay run recorded no fan-out (direct {}, via NATS {})", run.direct.count(), run.via_nats.count());
    }
    Ok(run)
}

/// `b − a` of the counters that count.
fn delta(b: BusCounters, a: BusCounters) -> BusCounters {
    BusCounters {
        published: b.published.saturating_sub(a.published),
        dropped: b.dropped.saturating_sub(a.dropped),
        publish_errors: b.publish_errors.saturating_sub(a.publish_errors),
        requests: b.requests.saturating_sub(a.requests),
        received: b.received.saturating_sub(a.received),
        malformed: b.malformed.saturating_sub(a.malformed),
        gaps: b.gaps.saturating_sub(a.gaps),
        resyncs: b.resyncs.saturating_sub(a.resyncs),
        slow_consumers: b.slow_consumers.saturating_sub(a.slow_consumers),
        disconnects: b.disconnects.saturating_sub(a.disconnects),
        ..b
    }
}

/// What one load run measured.
struct LoadRun {
    rate: u32,
    channels: usize,
    offered_per_s: f64,
    published_per_s: f64,
    dropped: u64,
    edge_received_per_s: f64,
    edge_gaps: u64,
    bytes_per_msg: f64,
    nats_out_per_s: f64,
    nats_out_bytes_per_s: f64,
    publisher_cpu_per_10k: f64,
    edge_cpu_per_10k: f64,
    nats_cpu_per_10k: f64,
    sim_cpu_pct: f64,
}

impl LoadRun {
    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "sim_events_per_s": self.rate,
            "channels": self.channels,
            "offered_msgs_per_s": self.offered_per_s.round(),
            "published_msgs_per_s": self.published_per_s.round(),
            "dropped": self.dropped,
            "edge_received_msgs_per_s": self.edge_received_per_s.round(),
            "bytes_per_msg": self.bytes_per_msg.round(),
            "nats_out_msgs_per_s": self.nats_out_per_s.round(),
            "nats_out_bytes_per_s": self.nats_out_bytes_per_s.round(),
            "publisher_cpu_pct_per_10k_msgs_per_s": round1(self.publisher_cpu_per_10k),
            "edge_cpu_pct_per_10k_msgs_per_s": round1(self.edge_cpu_per_10k),
            "nats_server_cpu_pct_per_10k_msgs_per_s": round1(self.nats_cpu_per_10k),
        })
    }
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// CPU time and counters at one instant of a load run.
struct Sample {
    at: Instant,
    publisher: BusCounters,
    edge: BusCounters,
    varz: host::Varz,
    cpu: [u64; 4],
}

fn sample(stack: &Stack, nats: &NatsProcess) -> anyhow::Result<Sample> {
    Ok(Sample {
        at: Instant::now(),
        publisher: stack.publisher.bus(),
        edge: stack.edge.bus(),
        varz: nats.varz()?,
        cpu: [threads_cpu_ns(PUBLISHER), threads_cpu_ns(EDGE), process_cpu_ns(nats.pid()), threads_cpu_ns(SIM)],
    })
}

fn load_run(args: &Args, nats: &NatsProcess, clients_rt: &Runtime, rate: u32) -> anyhow::Result<LoadRun> {
    let stack = Stack::start(args, nats, rate, None, false, 64)?;
    let channels = stack.all_channels(clients_rt, args)?;
    let lists: Vec<Vec<String>> = channels.chunks(CHANNELS_PER_CLIENT).map(<[String]>::to_vec).collect();
    let n = lists.len();
    let (ready, tasks) = start_clients(clients_rt, &stack.edge.handle.ws_url(), lists);
    wait_ready("load clients", &ready, n, Duration::from_secs(60))?;
    std::thread::sleep(Duration::from_secs(2));
    let a = sample(&stack, nats)?;
    std::thread::sleep(Duration::from_secs(args.load_seconds));
    let b = sample(&stack, nats)?;
    for task in tasks {
        task.abort();
    }
    stack.stop();

    let secs = b.at.duration_since(a.at).as_secs_f64();
    let (publisher, edge) = (delta(b.publisher, a.publisher), delta(b.edge, a.edge));
    let published_per_s = publisher.published as f64 / secs;
    let edge_received_per_s = edge.received as f64 / secs;
    // % of one core per 10,000 messages a second.
    let per_10k = |cpu_ns: u64, per_s: f64| {
        if per_s > 0.0 { cpu_ns as f64 / (secs * 1e9) * 100.0 / (per_s / 10_000.0) } else { 0.0 }
    };
    let cpu = |i: usize| b.cpu[i].saturating_sub(a.cpu[i]);
    let in_msgs = b.varz.in_msgs.saturating_sub(a.varz.in_msgs);
    Ok(LoadRun {
        rate,
        channels: channels.len(),
        offered_per_s: (publisher.published + publisher.dropped) as f64 / secs,
        published_per_s,
        dropped: publisher.dropped,
        edge_received_per_s,
        edge_gaps: edge.gaps,
        bytes_per_msg: b.varz.in_bytes.saturating_sub(a.varz.in_bytes) as f64 / in_msgs.max(1) as f64,
        nats_out_per_s: b.varz.out_msgs.saturating_sub(a.varz.out_msgs) as f64 / secs,
        nats_out_bytes_per_s: b.varz.out_bytes.saturating_sub(a.varz.out_bytes) as f64 / secs,
        publisher_cpu_per_10k: per_10k(cpu(0), published_per_s),
        edge_cpu_per_10k: per_10k(cpu(1), edge_received_per_s),
        nats_cpu_per_10k: per_10k(cpu(2), published_per_s),
        sim_cpu_pct: cpu(3) as f64 / (secs * 1e9) * 100.0,
    })
}
