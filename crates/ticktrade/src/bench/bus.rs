//! `ticktrade bench bus`: books across machines on NATS, on the product's own paths: a real
//! `nats-server` (the project's pinned build, started here), an upstream, a publisher and an
//! edge (`serve --publish` / `serve --upstream nats://…` for Deribit, `deribit`;
//! `hl --publish` / `hl --upstream nats://…` for Hyperliquid, `hl`), each server on its own
//! runtime and named threads.
//!
//! - **Delay** (`<venue>_via_nats` beside `<venue>_direct`): `--clients` clients on the edge
//!   and as many on a direct server (no bus) on the same upstream, all on one instrument's
//!   book, in the same run. Deribit times the servers' own fan-out stamps (upstream frame
//!   received → client frame written); Hyperliquid times the clients (block write started →
//!   frame received): each venue's module says how.
//! - **Load** (one run per `--load-rates` value): the whole upstream at that rate (Deribit:
//!   simulator events a second; Hyperliquid: blocks a second of 229 coins), every instrument's
//!   feeds published, and one edge following every one of them (its clients subscribe to all
//!   of them). What one publisher sustains is measured at that fixed offered load (not by
//!   raising it until it drops): messages offered, published and dropped (the sink's queue
//!   full) a second. CPU per 10,000 messages a second, for the publisher (per message
//!   published), the edge (per message received) and `nats-server` (per message published):
//!   CPU time from the scheduler's per-thread account (`host`) over the measured seconds.
//!
//! - **Slow edge** (`slow`): at the target load, the good edge's delays without and with a
//!   stalled subscriber of every subject, in alternating phases of the same run.
//!
//! A venue is a [`Stack`]: a way to start its upstream, publisher, edge and direct server, and
//! its clients; this file is the venue-neutral driver.
//!
//! Owns: the run's order, the series names, the load figures and the summary object.
//! Must not: know a venue's servers or protocol (`deribit`, `hl`).

use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use ticktrade_bus::BusCounters;
use ticktrade_latency::{Histogram, Series};
use tokio::runtime::Runtime;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

use super::report::{Outcome, Output, emit_outcome};

mod deribit;
mod hl;
mod host;
mod slow;

use host::{NatsProcess, process_cpu_ns, threads_cpu_ns};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    output: Output,
    /// Whose publisher and edge run: `deribit` (`serve --publish` / `serve --upstream`) or `hl`
    /// (`hl --publish` / `hl --upstream`).
    #[arg(long, value_enum, default_value_t = Venue::Deribit)]
    venue: Venue,
    /// Clients on the edge, and as many on the direct server (the delay run).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=2_000))]
    clients: u64,
    /// Seconds the delay run measures (after every client holds its book and 1 s more).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=600))]
    seconds: u64,
    /// Deribit: simulator events a second in the delay run (over all its instruments).
    #[arg(long, default_value_t = 400)]
    sim_rate: u32,
    /// Hyperliquid: blocks a second in the delay run.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    block_rate: u32,
    /// The instrument of the delay run (default BTC-PERPETUAL for Deribit, BTC for
    /// Hyperliquid; clients on its raw book, or its `l2Book`).
    #[arg(long)]
    instrument: Option<String>,
    /// The upstream rate of each load run (every instrument published), comma-separated:
    /// Deribit simulator events a second (default 2000,20000), Hyperliquid blocks a second
    /// (default 10,40).
    #[arg(long, value_delimiter = ',')]
    load_rates: Option<Vec<u32>>,
    /// Seconds each load run measures (after its edge follows everything and 2 s more).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=600))]
    load_seconds: u64,
    /// The upstream rate of the slow-edge run (default: Deribit 20000 events/s, Hyperliquid 10
    /// blocks/s).
    #[arg(long)]
    slow_rate: Option<u32>,
    /// Seconds of each of the slow-edge run's five phases (without, with a stalled edge,
    /// without, with, without); 0 skips the run. Long enough for the stalled edge's backlog to reach
    /// `nats-server`'s limits at the default rates.
    #[arg(long, default_value_t = 12, value_parser = clap::value_parser!(u64).range(0..=600))]
    slow_seconds: u64,
    /// Worker threads of each server's runtime (`ticktrade serve` and `ticktrade hl` use 2).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=64))]
    server_threads: u64,
    /// Hyperliquid: coins in the generated market.
    #[arg(long, default_value_t = 229)]
    coins: usize,
    /// Hyperliquid: order actions per block (see `ticktrade hl gen`).
    #[arg(long, default_value_t = 600)]
    orders_per_block: usize,
    /// Hyperliquid: the generator's seed.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Run `nats-server` with its default of stalling a publisher while one of its subscribers
    /// is far behind, instead of `no_fast_producer_stall: true` (`docs/SCALING.md`): the
    /// slow-edge run then shows what a stopped edge does to the others under the defaults.
    #[arg(long)]
    nats_producer_stall: bool,
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
    /// `ticktrade hl --publish` over generated hl-node files, `hl --upstream nats://…` edges.
    Hl,
}

impl Venue {
    fn name(self) -> &'static str {
        match self {
            Venue::Deribit => "deribit",
            Venue::Hl => "hl",
        }
    }

    /// The delay series' names: direct, through NATS.
    fn series(self) -> (&'static str, &'static str) {
        match self {
            // The names `bench all` and earlier reports use.
            Venue::Deribit => ("fanout_direct", "fanout_via_nats"),
            Venue::Hl => ("hl_direct", "hl_via_nats"),
        }
    }

    /// The slow-edge run's series: the good edge without, and with, a stalled edge beside it.
    fn slow_series(self) -> (&'static str, &'static str) {
        match self {
            Venue::Deribit => ("fanout_via_nats_no_slow_edge", "fanout_via_nats_slow_edge"),
            Venue::Hl => ("hl_via_nats_no_slow_edge", "hl_via_nats_slow_edge"),
        }
    }

    /// What the delay series time.
    fn delay_text(self) -> &'static str {
        match self {
            Venue::Deribit => {
                "fanout_via_nats = publisher's upstream frame received → edge's client frame written; fanout_direct = \
                 direct server's upstream frame received → client frame written (the servers' stamps)"
            }
            Venue::Hl => {
                "hl_via_nats = block write started → l2Book frame received by a client of the edge; hl_direct = the \
                 same for a client of the direct server on the same files (the clients' stamps, matched by block time)"
            }
        }
    }

    /// The unit of an upstream rate.
    fn unit(self) -> &'static str {
        match self {
            Venue::Deribit => "events/s",
            Venue::Hl => "blocks/s",
        }
    }

    fn default_slow_rate(self) -> u32 {
        match self {
            Venue::Deribit => 20_000,
            Venue::Hl => 10,
        }
    }

    fn default_load_rates(self) -> Vec<u32> {
        match self {
            Venue::Deribit => vec![2_000, 20_000],
            Venue::Hl => vec![10, 40],
        }
    }

    /// Threads charged to the publisher: its runtime, and for Hyperliquid the engine thread,
    /// its helper and the file watcher (the load run has no other hl server).
    fn publisher_threads(self) -> &'static [&'static str] {
        match self {
            Venue::Deribit => &[PUBLISHER],
            Venue::Hl => &[PUBLISHER, "hl-engine", "hl-engine-1", "notify-rs inoti"],
        }
    }

    /// The upstream, as the notes name it.
    fn upstream(self) -> &'static str {
        match self {
            Venue::Deribit => "the in-process simulator",
            Venue::Hl => "generated hl-node files (the `bench hl` generator, a writer thread)",
        }
    }
}

/// Thread names: CPU is charged by them (`host::threads_cpu_ns`), at most 15 bytes.
const PUBLISHER: &str = "bus-publisher";
const EDGE: &str = "bus-edge";
const DIRECT: &str = "bus-direct";
/// The simulator's runtime, or the hl block writer.
const UPSTREAM: &str = "bus-upstream";
const CLIENTS: &str = "bus-clients";

/// Clients started before a short pause, so the accept queue keeps up.
const CLIENTS_PER_WAVE: usize = 64;

/// One venue's bus path on loopback, running: its upstream, a publisher, an edge and, in the
/// delay run, a direct server on the same upstream.
trait Stack {
    /// Starts `n` clients on the edge and `n` on the direct server, all on the delay run's
    /// book; returns once every one has data.
    fn delay_clients(&mut self, rt: &Runtime, n: usize) -> anyhow::Result<()>;
    /// Starts clients on the edge that follow everything the publisher carries; returns once
    /// each has data, with the number of channels followed. `timed`: channels whose frames
    /// the edge writes as they come (no conflation interval in their delay), for the slow-edge
    /// run.
    fn load_clients(&mut self, rt: &Runtime, timed: bool) -> anyhow::Result<usize>;
    /// Forgets the delays recorded so far.
    fn reset_delays(&mut self);
    /// The delays since the last reset: direct, through NATS.
    fn delays(&mut self) -> (Histogram, Histogram);
    fn publisher(&self) -> BusCounters;
    fn edge(&self) -> BusCounters;
    /// Upstream units (Hyperliquid: blocks written) so far, where the venue counts them.
    fn upstream_units(&self) -> Option<u64> {
        None
    }
    fn stop(self: Box<Self>) -> anyhow::Result<()>;
}

/// Starts `args.venue`'s stack at `rate` (the venue's unit): for the delay run (one
/// instrument, a direct server beside) or a load run (everything).
fn start_stack(
    args: &Args,
    nats: &NatsProcess,
    rate: u32,
    delay: bool,
    clients: usize,
) -> anyhow::Result<Box<dyn Stack>> {
    Ok(match args.venue {
        Venue::Deribit => Box::new(deribit::Deribit::start(args, nats, rate, delay, clients)?),
        Venue::Hl => Box::new(hl::Hl::start(args, nats, rate, delay)?),
    })
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let bin = host::nats_server_bin(args.nats_server.as_deref())?;
    let nats_config = if args.nats_producer_stall { "" } else { host::NO_PRODUCER_STALL };
    let nats = NatsProcess::start(&bin, nats_config)?;
    let clients_rt = runtime(CLIENTS, 1)?;
    let n = usize::try_from(args.clients).context("--clients")?;
    let venue = args.venue;

    let delay = delay_run(&args, &nats, &clients_rt, n)?;
    let mut loads = Vec::new();
    for rate in args.load_rates.clone().unwrap_or_else(|| venue.default_load_rates()) {
        loads.push(load_run(&args, &nats, &clients_rt, rate)?);
    }
    let slow_rate = args.slow_rate.unwrap_or_else(|| venue.default_slow_rate());
    let slow = (args.slow_seconds > 0).then(|| slow::slow_run(&args, &nats, &clients_rt, slow_rate)).transpose()?;

    let (d, b) = (delay.direct.percentiles(), delay.via_nats.percentiles());
    let p50_factor = b.p50 as f64 / d.p50.max(1) as f64;
    let p99_factor = b.p99 as f64 / d.p99.max(1) as f64;
    let unit = venue.unit();
    let mut notes = format!(
        "ticktrade bench bus ({}): nats-server {} on loopback ({}); {} upstream; each server on its own runtime \
         ({} threads)\n",
        venue.name(),
        bin.display(),
        if args.nats_producer_stall { "its defaults" } else { "no_fast_producer_stall: true" },
        venue.upstream(),
        args.server_threads
    );
    let rate = match venue {
        Venue::Deribit => args.sim_rate,
        Venue::Hl => args.block_rate,
    };
    let _ = writeln!(
        notes,
        "delay run: {rate} {unit}, {n} clients on {}'s book on the edge and {n} on a direct server, {} s measured; \
         {} messages published; edge gaps {}, resyncs {}, publisher drops {}",
        delay.instrument,
        args.seconds,
        delay.publisher.published,
        delay.edge.gaps,
        delay.edge.resyncs,
        delay.publisher.dropped
    );
    let _ = writeln!(notes, "{}", venue.delay_text());
    let _ = writeln!(
        notes,
        "through NATS / direct: median {p50_factor:.2}x (goal ≤ 2x), p99 {p99_factor:.2}x (goal ≤ 3x); the table's \
         ratio is direct p50 / through-NATS p50"
    );
    for l in &loads {
        let sustained = if l.dropped == 0 {
            "sustained (0 dropped)".to_owned()
        } else {
            format!("NOT sustained: {} dropped ({:.2} % of offered)", l.dropped, l.drop_pct())
        };
        let blocks = l.upstream_per_s.map_or(String::new(), |b| format!(" ({b:.1} blocks/s written)"));
        let _ = writeln!(
            notes,
            "load {} {unit}{blocks}, every instrument ({} channels followed by the edge, {} s): offered {:.0} msg/s, \
             published {:.0} msg/s, {sustained}; edge received {:.0} msg/s (gaps {}); nats-server: {:.0} B/msg in, \
             {:.0} msg/s and {:.0} kB/s out; CPU per 10,000 msg/s (% of one core): publisher {:.1}, edge {:.1}, \
             nats-server {:.1} (upstream {:.0} % of a core in all)",
            l.rate,
            l.channels,
            args.load_seconds,
            l.offered_per_s,
            l.published_per_s,
            l.edge_received_per_s,
            l.edge_gaps,
            l.bytes_per_msg,
            l.nats_out_per_s,
            l.nats_out_bytes_per_s / 1e3,
            l.publisher_cpu_per_10k,
            l.edge_cpu_per_10k,
            l.nats_cpu_per_10k,
            l.upstream_cpu_pct
        );
    }
    let mut summary = serde_json::json!({
        "venue": venue.name(),
        "clients": n,
        "via_nats_over_direct_p50": p50_factor,
        "via_nats_over_direct_p99": p99_factor,
        "load_unit": unit,
        "load": loads.iter().map(LoadRun::json).collect::<Vec<_>>(),
    });
    let (direct_name, via_name) = venue.series();
    let mut series = vec![
        Series::from_histogram(direct_name, &delay.direct),
        Series::from_histogram(via_name, &delay.via_nats).with_baseline_p50(d.p50),
    ];
    if let Some(slow) = &slow {
        slow.report(venue, args.slow_seconds, &mut notes, &mut summary, &mut series);
    }
    let title = format!("ticktrade bench bus --venue {} (loopback)", venue.name());
    let outcome = Outcome { title, notes, series, summary: Some(summary) };
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

/// Load clients' WebSocket settings: a 4 KiB read buffer (tungstenite's 128 KiB default is
/// zeroed on every read, which with many clients in one process costs more than they read).
fn client_config() -> WebSocketConfig {
    WebSocketConfig::default().read_buffer_size(4 << 10)
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

/// What the delay run measured.
struct DelayRun {
    instrument: String,
    direct: Histogram,
    via_nats: Histogram,
    /// Counters over the measured seconds.
    publisher: BusCounters,
    edge: BusCounters,
}

fn delay_run(args: &Args, nats: &NatsProcess, clients_rt: &Runtime, n: usize) -> anyhow::Result<DelayRun> {
    let (rate, instrument) = match args.venue {
        Venue::Deribit => (args.sim_rate, args.instrument.clone().unwrap_or_else(|| "BTC-PERPETUAL".to_owned())),
        Venue::Hl => (args.block_rate, args.instrument.clone().unwrap_or_else(|| "BTC".to_owned())),
    };
    let mut stack = start_stack(args, nats, rate, true, n)?;
    let measured = (|| {
        stack.delay_clients(clients_rt, n)?;
        std::thread::sleep(Duration::from_secs(1));
        let (pub0, edge0) = (stack.publisher(), stack.edge());
        stack.reset_delays();
        std::thread::sleep(Duration::from_secs(args.seconds));
        let (direct, via_nats) = stack.delays();
        anyhow::Ok(DelayRun {
            instrument,
            direct,
            via_nats,
            publisher: delta(stack.publisher(), pub0),
            edge: delta(stack.edge(), edge0),
        })
    })();
    let stopped = stack.stop();
    let run = measured?;
    stopped?;
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
    unit: &'static str,
    channels: usize,
    /// Upstream units (blocks) a second actually written, where counted.
    upstream_per_s: Option<f64>,
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
    upstream_cpu_pct: f64,
}

impl LoadRun {
    fn drop_pct(&self) -> f64 {
        let published = self.published_per_s.max(0.0);
        let offered = self.offered_per_s.max(published);
        if offered > 0.0 { (offered - published) / offered * 100.0 } else { 0.0 }
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "rate": self.rate,
            "unit": self.unit,
            "upstream_per_s": self.upstream_per_s.map(round1),
            "channels": self.channels,
            "offered_msgs_per_s": self.offered_per_s.round(),
            "published_msgs_per_s": self.published_per_s.round(),
            "dropped": self.dropped,
            "sustained": self.dropped == 0,
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
    upstream: Option<u64>,
    varz: host::Varz,
    /// Publisher, edge, nats-server, upstream.
    cpu: [u64; 4],
}

fn sample(venue: Venue, stack: &dyn Stack, nats: &NatsProcess) -> anyhow::Result<Sample> {
    Ok(Sample {
        at: Instant::now(),
        publisher: stack.publisher(),
        edge: stack.edge(),
        upstream: stack.upstream_units(),
        varz: nats.varz()?,
        cpu: [
            venue.publisher_threads().iter().map(|name| threads_cpu_ns(name)).sum(),
            threads_cpu_ns(EDGE),
            process_cpu_ns(nats.pid()),
            threads_cpu_ns(UPSTREAM),
        ],
    })
}

fn load_run(args: &Args, nats: &NatsProcess, clients_rt: &Runtime, rate: u32) -> anyhow::Result<LoadRun> {
    let mut stack = start_stack(args, nats, rate, false, 64)?;
    let measured = (|| {
        let channels = stack.load_clients(clients_rt, false)?;
        std::thread::sleep(Duration::from_secs(2));
        let a = sample(args.venue, stack.as_ref(), nats)?;
        std::thread::sleep(Duration::from_secs(args.load_seconds));
        let b = sample(args.venue, stack.as_ref(), nats)?;
        anyhow::Ok((channels, a, b))
    })();
    let stopped = stack.stop();
    let (channels, a, b) = measured?;
    stopped?;

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
        unit: args.venue.unit(),
        channels,
        upstream_per_s: a.upstream.zip(b.upstream).map(|(a, b)| b.saturating_sub(a) as f64 / secs),
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
        upstream_cpu_pct: cpu(3) as f64 / (secs * 1e9) * 100.0,
    })
}
