//! `ticktrade bench feed`: the fan-out server (`ticktrade_serve`) over the in-process simulator
//! at a fixed rate, with 1, 100 and 1,000 loopback clients that only drain, books kept
//! (`fanout_books_cN`) and `--raw` (`fanout_raw_cN`). The delay is the server's own stage
//! stamps: upstream frame received → downstream frame written, one sample per frame per client.
//! Beside each, `floor_cN`: bare writes of the same frame (as a server WebSocket frame) to N
//! other loopback sockets of the same kind, drained by the same kind of client
//! (`--load-client tungstenite|lean`) on the same clients' runtime (not the server's), timed
//! from before the first socket's write to after each socket's write.
//! The floor runs inside the fan-out run, interleaved: one floor round `--floor-offset-ms`
//! after each upstream frame reached client 0, so both see the same idle gap (~100 ms, the
//! upstream `100ms` cadence) before they write. On this VM that gap matters: a CPU that idled
//! 20 ms pays tens of µs of cold start on its next syscalls (see docs/PERFORMANCE.md), which
//! a back-to-back floor would not pay and the fan-out does. Peak memory (`VmHWM`) is printed
//! after the largest client count.
//!
//! Owns: the run's wiring, the series names, the open-files check.
//! Must not: time the fan-out itself (the server records it).

use std::fmt::Write as _;
use std::io::Write as _;
use std::net::TcpStream;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use futures_util::{SinkExt, StreamExt};
use ticktrade_latency::{Histogram, Series};
use ticktrade_serve::{ServeConfig, UpstreamSource};
use ticktrade_sim::SimConfig;
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Message};

use super::tick_to_trade::emit;

mod lean;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Client counts to run, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,100,1000")]
    pub clients: Vec<usize>,
    /// Run only the `--raw` relay (default: books kept, then `--raw`).
    #[arg(long, conflicts_with = "books_only")]
    pub raw: bool,
    /// Run only with books kept (no `--raw` runs).
    #[arg(long)]
    pub books_only: bool,
    /// Seconds measured per configuration (after every client holds its snapshot and 1 s of
    /// warm-up). Default: 30 s below 1,000 clients (the upstream sends ~10 frames/s, so ~300
    /// frames: p99 at 1 client rests on 3 samples, at 100 clients on 300), 10 s from 1,000.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=600))]
    pub seconds: Option<u64>,
    /// Synthetic market events per second of the embedded simulator (over all its instruments).
    #[arg(long, default_value_t = 400)]
    pub sim_rate: u32,
    /// The instrument every client subscribes to (`book.{instrument}.raw`: every change, as fanned out).
    #[arg(long, default_value = "BTC-PERPETUAL")]
    pub instrument: String,
    /// Worker threads of the server's runtime (`ticktrade serve` uses 2).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub server_threads: u64,
    /// When a floor round is written, in ms after an upstream frame reached client 0 (between
    /// two upstream frames, ~100 ms apart, so floor and fan-out never overlap).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=90))]
    pub floor_offset_ms: u64,
    /// The load clients (fan-out's and floor's alike): `lean` = a bare socket that reads and
    /// discards (WebSocket frames parsed only until the first book frame, and by client 0,
    /// which stamps the changes for the floor); `tungstenite` = tokio-tungstenite's client.
    #[arg(long, value_enum, default_value_t = LoadClient::Tungstenite)]
    pub load_client: LoadClient,
    /// Also print what the delay is made of, per fanned-out frame: hand-off to the hub, work
    /// before the first write, the first write, the whole write loop and its longest gap (the
    /// server stamps them; one extra clock read per write).
    #[arg(long)]
    pub trace: bool,
    /// Print one JSON object per series per line on stdout (the table goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// Write a latency-vs-percentile plot to this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<std::path::PathBuf>,
}

/// Which load client drains the sockets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LoadClient {
    Lean,
    Tungstenite,
}

/// What one fan-out run measured.
struct FanoutRun {
    delays: Histogram,
    floor: Histogram,
    /// Per floor round: (first write, all writes, longest gap between two writes returning), ns.
    floor_rounds: Vec<[u64; 3]>,
    traces: Vec<ticktrade_serve::FanoutTrace>,
    upstream_frames: u64,
    rss_kib: u64,
}

/// Seconds measured with `n` clients (see `Args::seconds`).
fn seconds_for(args: &Args, n: usize) -> u64 {
    args.seconds.unwrap_or(if n >= 1_000 { 10 } else { 30 })
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let max_clients = args.clients.iter().copied().max().unwrap_or(0);
    if max_clients == 0 {
        bail!("--clients: give at least one count above 0");
    }
    // Per client: the server's socket, the client's; the floor: both ends again; plus slack.
    ensure_open_files(4 * max_clients as u64 + 256)?;
    let drains = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("feed-clients")
        .enable_all()
        .build()
        .context("starting the clients' runtime")?;
    let modes: &[bool] = match (args.raw, args.books_only) {
        (true, _) => &[true],
        (_, true) => &[false],
        _ => &[false, true],
    };
    let mut series = Vec::new();
    let secs: Vec<String> = args.clients.iter().map(|&n| format!("{n}: {} s", seconds_for(&args, n))).collect();
    let mut notes = format!(
        "ticktrade bench feed: ticktrade serve over the in-process simulator ({} events/s), clients on \
         book.{}.raw, measured per run ({}); delay = upstream frame received → downstream frame written \
         (server stamps); floor = bare writes of the same frame to as many other loopback sockets, \
         interleaved in the same run ({} ms after each upstream frame)\n",
        args.sim_rate,
        args.instrument,
        secs.join(", "),
        args.floor_offset_ms
    );
    let mut peak = None;
    for &n in &args.clients {
        if n == 0 {
            continue;
        }
        for &raw in modes {
            let fan = fanout_run(&args, &drains, n, raw)?;
            let mode = if raw { "raw" } else { "books" };
            let floor_name = if raw { format!("floor_raw_c{n}") } else { format!("floor_c{n}") };
            let f = fan.floor.percentiles();
            series.push(Series::from_histogram(&floor_name, &fan.floor));
            let name = format!("fanout_{mode}_c{n}");
            let p = fan.delays.percentiles();
            series.push(Series::from_histogram(&name, &fan.delays).with_baseline_p50(f.p50));
            // Both directions, named: the table's `ratio` column is baseline p50 / p50 (floor / fan-out,
            // < 1 when the fan-out is slower); the issue's goal reads as fan-out / floor (≤ 1.5).
            let _ = writeln!(
                notes,
                "{name}: {} upstream frames, {} samples ({} floor rounds, {} samples); fan-out / {floor_name}: p50 {:.2}×, \
                 p99 {:.2}× (the table's ratio is the inverse, {floor_name} p50 / fan-out p50 = {:.2}×); RSS {} MiB",
                fan.upstream_frames,
                p.count,
                f.count / n as u64,
                f.count,
                p.p50 as f64 / f.p50.max(1) as f64,
                p.p99 as f64 / f.p99.max(1) as f64,
                f.p50 as f64 / p.p50.max(1) as f64,
                fan.rss_kib / 1024
            );
            if args.trace {
                composition(&mut notes, &name, &floor_name, &fan);
            }
        }
        if n == max_clients {
            peak = proc_status_kib("VmHWM:");
        }
    }
    if let Some(kib) = peak {
        let _ = writeln!(
            notes,
            "peak memory (VmHWM, whole process incl. the {max_clients} draining clients and the simulator): {} MiB",
            kib / 1024
        );
    }
    emit(&notes, &series, args.json, args.plot.as_deref(), "ticktrade bench feed (loopback)")?;
    Ok(ExitCode::SUCCESS)
}

/// Per frame, what the fan-out's delay is made of (server traces) and the floor's rounds,
/// as p50 / p90 / p99 / max over frames in µs.
fn composition(notes: &mut String, name: &str, floor_name: &str, fan: &FanoutRun) {
    let col = |f: &dyn Fn(&ticktrade_serve::FanoutTrace) -> u64| spread(fan.traces.iter().map(f).collect());
    let slow = |gaps: &mut dyn Iterator<Item = u64>| gaps.filter(|&g| g > 50_000).count();
    let _ = writeln!(
        notes,
        "  {name} per frame ({} traced; p50 / p90 / p99 / max µs): hand-off to hub {}; hub before 1st write {}; \
         1st write {}; write loop {}; per write {}; longest gap {} ({} frames with a gap > 50 µs)",
        fan.traces.len(),
        col(&|t| t.handoff_ns),
        col(&|t| t.prepare_ns),
        col(&|t| t.first_write_ns),
        col(&|t| t.writes_ns),
        col(&|t| t.writes_ns / u64::from(t.writes.max(1))),
        col(&|t| t.max_gap_ns),
        slow(&mut fan.traces.iter().map(|t| t.max_gap_ns)),
    );
    let col = |i: usize| spread(fan.floor_rounds.iter().map(|r| r[i]).collect());
    let _ = writeln!(
        notes,
        "  {floor_name} per round ({} rounds; p50 / p90 / p99 / max µs): 1st write {}; write loop {}; longest gap {} \
         ({} rounds with a gap > 50 µs)",
        fan.floor_rounds.len(),
        col(0),
        col(1),
        col(2),
        slow(&mut fan.floor_rounds.iter().map(|r| r[2])),
    );
}

/// `p50 / p90 / p99 / max` of `v` (ns) in µs.
fn spread(mut v: Vec<u64>) -> String {
    if v.is_empty() {
        return "-".to_owned();
    }
    v.sort_unstable();
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize] as f64 / 1e3;
    format!("{:.0} / {:.0} / {:.0} / {:.0}", at(0.5), at(0.9), at(0.99), at(1.0))
}

fn fanout_run(args: &Args, drains: &Runtime, n: usize, raw: bool) -> anyhow::Result<FanoutRun> {
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(usize::try_from(args.server_threads).unwrap_or(2))
        .thread_name("feed-serve")
        .enable_all()
        .build()
        .context("starting the server's runtime")?;
    let sim_config = SimConfig { rate_per_s: args.sim_rate, ..SimConfig::default() };
    let sim = server_rt.block_on(ticktrade_sim::spawn_loopback(sim_config)).context("starting the simulator")?;
    let config = ServeConfig {
        upstream: UpstreamSource::Url(sim.ws_url()),
        instruments: Some(vec![args.instrument.clone()]),
        raw,
        max_connections: n + 16,
        ..ServeConfig::default()
    };
    let serve = server_rt.block_on(ticktrade_serve::spawn(config)).context("starting the server")?;
    let url = serve.ws_url();
    let channel = format!("book.{}.raw", args.instrument);
    let ready = Arc::new(AtomicUsize::new(0));
    let base = Instant::now();
    let (rx_tx, rx_rx) = std::sync::mpsc::sync_channel(16);
    let probe = Arc::new(Probe { received: rx_tx, frame: Mutex::new(None) });
    let mut clients = Vec::with_capacity(n);
    for i in 0..n {
        let url = url.clone();
        let channel = channel.clone();
        let ready = Arc::clone(&ready);
        let probe = (i == 0).then(|| (Arc::clone(&probe), base));
        clients.push(match args.load_client {
            LoadClient::Tungstenite => drains.spawn(drain_client(url, channel, ready, probe)),
            LoadClient::Lean => drains.spawn(lean::client(serve.addr(), channel, ready, probe)),
        });
        if i % 64 == 63 {
            // Let the accept queue keep up.
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let (floor_clients, sockets) = floor_sockets(drains, n, args.load_client)?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while ready.load(Ordering::Relaxed) < n {
        if Instant::now() > deadline {
            bail!("only {} of {n} clients got their first book frame within 60 s", ready.load(Ordering::Relaxed));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // The floor writes from now on (warm-up rounds included, not recorded).
    let recording = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let offset = Duration::from_millis(args.floor_offset_ms);
    let floor = {
        let (probe, recording, stop) = (Arc::clone(&probe), Arc::clone(&recording), Arc::clone(&stop));
        std::thread::Builder::new()
            .name("feed-floor".into())
            .spawn(move || floor_writer(sockets, &probe, &rx_rx, base, offset, &recording, &stop))
            .context("starting the floor thread")?
    };
    std::thread::sleep(Duration::from_secs(1));
    let before = server_rt.block_on(serve.totals()).ok_or_else(|| anyhow!("server stopped"))?;
    serve.reset_fanout();
    if args.trace {
        // ~10 upstream frames per second, one trace per frame fanned out.
        serve.trace_start(usize::try_from(seconds_for(args, n) * 40).unwrap_or(4_096));
    }
    recording.store(true, Ordering::Relaxed);
    std::thread::sleep(Duration::from_secs(seconds_for(args, n)));
    recording.store(false, Ordering::Relaxed);
    let traces = if args.trace { serve.trace_stop() } else { Vec::new() };
    let recorded = serve.fanout_recorded();
    let after = server_rt.block_on(serve.totals()).ok_or_else(|| anyhow!("server stopped"))?;
    let rss_kib = proc_status_kib("VmRSS:").unwrap_or(0);
    stop.store(true, Ordering::Relaxed);
    let (floor, floor_rounds) = floor.join().map_err(|_| anyhow!("the floor thread panicked"))??;
    let mut delays = Histogram::new();
    for (ns, count) in recorded {
        delays.record_n(ns, count);
    }
    for c in clients.into_iter().chain(floor_clients) {
        c.abort();
    }
    server_rt.block_on(async {
        serve.shutdown().await;
        sim.shutdown().await;
    });
    server_rt.shutdown_timeout(Duration::from_secs(1));
    if after.drops > before.drops {
        eprintln!("note: {} frames dropped (queues full) during the {n}-client run", after.drops - before.drops);
    }
    if floor.percentiles().count == 0 {
        bail!("no floor round was written ({n} clients): client 0 got no book change");
    }
    Ok(FanoutRun {
        delays,
        floor,
        floor_rounds,
        traces,
        upstream_frames: after.upstream_frames - before.upstream_frames,
        rss_kib,
    })
}

/// What client 0 saw: when each book change arrived (ns since the run's base instant, to the
/// floor thread, which sleeps in between) and the last one.
struct Probe {
    received: std::sync::mpsc::SyncSender<u64>,
    frame: Mutex<Option<String>>,
}

impl Probe {
    /// Client 0 received a book change `text`.
    fn change(&self, text: &str, base: Instant) {
        if let Ok(mut slot) = self.frame.lock() {
            *slot = Some(text.to_owned());
        }
        let ns = u64::try_from(base.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let _ = self.received.try_send(ns);
    }
}

/// One client: subscribe, then read and discard; client 0 (with the probe) stamps each book
/// change it receives and keeps the last one.
async fn drain_client(url: String, channel: String, ready: Arc<AtomicUsize>, probe: Option<(Arc<Probe>, Instant)>) {
    let Ok((mut ws, _)) = tokio_tungstenite::connect_async_with_config(url.as_str(), Some(client_config()), true).await
    else {
        eprintln!("client: connect failed");
        return;
    };
    let sub =
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"public/subscribe","params":{{"channels":["{channel}"]}}}}"#);
    if ws.send(Message::text(sub)).await.is_err() {
        return;
    }
    let mut first = true;
    while let Some(Ok(msg)) = ws.next().await {
        let Message::Text(text) = msg else { continue };
        if !text.contains(r#""method":"subscription""#) {
            continue;
        }
        if first {
            first = false;
            ready.fetch_add(1, Ordering::Relaxed);
        }
        if let Some((probe, base)) = &probe
            && text.contains(r#""type":"change""#)
        {
            probe.change(&text, *base);
        }
    }
}

/// `n` loopback sockets (server side, blocking, `TCP_NODELAY`) whose peers are load clients
/// of `kind` draining on `drains`, as the fan-out's clients are.
fn floor_sockets(
    drains: &Runtime,
    n: usize,
    kind: LoadClient,
) -> anyhow::Result<(Vec<JoinHandle<()>>, Vec<TcpStream>)> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("binding the floor listener")?;
    let addr = listener.local_addr().context("floor listener address")?;
    let mut clients = Vec::with_capacity(n);
    let mut sockets: Vec<TcpStream> = Vec::with_capacity(n);
    for _ in 0..n {
        clients.push(match kind {
            LoadClient::Tungstenite => {
                let url = format!("ws://{addr}/");
                drains.spawn(async move {
                    let connect =
                        tokio_tungstenite::connect_async_with_config(url.as_str(), Some(client_config()), true);
                    let Ok((mut ws, _)) = connect.await else { return };
                    while let Some(Ok(_)) = ws.next().await {}
                })
            }
            LoadClient::Lean => drains.spawn(lean::drain(addr)),
        });
        let (stream, _) = listener.accept().context("floor accept")?;
        stream.set_nodelay(true).context("TCP_NODELAY")?;
        let ws = tungstenite::accept(stream).map_err(|e| anyhow!("floor handshake: {e}"))?;
        sockets.push(ws.into_inner());
    }
    Ok((clients, sockets))
}

/// Until `stop`: for each book change client 0 receives, `offset` later, one bare write of
/// that change (as an unmasked WebSocket text frame) to each socket, timed from before the
/// first write to after each write (recorded while `recording`).
fn floor_writer(
    mut sockets: Vec<TcpStream>,
    probe: &Probe,
    received: &std::sync::mpsc::Receiver<u64>,
    base: Instant,
    offset: Duration,
    recording: &AtomicBool,
    stop: &AtomicBool,
) -> anyhow::Result<(Histogram, Vec<[u64; 3]>)> {
    let mut h = Histogram::new();
    let mut rounds = Vec::with_capacity(4_096);
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut rx_ns) = received.recv_timeout(Duration::from_millis(200)) else { continue };
        // Only the newest change (a backlog would mean the floor fell behind).
        while let Ok(newer) = received.try_recv() {
            rx_ns = newer;
        }
        let due = base + Duration::from_nanos(rx_ns) + offset;
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let text = probe.frame.lock().map_err(|_| anyhow!("frame lock"))?.clone();
        let Some(text) = text else { continue };
        let wire = server_text_frame(text.as_bytes());
        let record = recording.load(Ordering::Relaxed);
        let t0 = Instant::now();
        let (mut first, mut last, mut gap) = (0, 0, 0);
        for (i, s) in sockets.iter_mut().enumerate() {
            s.write_all(&wire).context("floor write")?;
            if record {
                let ns = u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
                h.record(ns);
                if i == 0 {
                    first = ns;
                } else {
                    gap = gap.max(ns.saturating_sub(last));
                }
                last = ns;
            }
        }
        if record && rounds.len() < rounds.capacity() {
            rounds.push([first, last, gap]);
        }
    }
    Ok((h, rounds))
}

/// The load clients' WebSocket settings (fan-out's and floor's alike): a 4 KiB read buffer.
/// tungstenite's default (128 KiB) is zeroed on every read: with 1,000 clients in this process
/// that memset was a fifth of the machine's CPU (`perf record`), competing with the server for
/// the 2 vCPUs; a real client reading ~300 B frames does not pay it.
fn client_config() -> WebSocketConfig {
    WebSocketConfig::default().read_buffer_size(4 << 10)
}

/// An unmasked, final WebSocket text frame carrying `payload`.
fn server_text_frame(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + ticktrade_net::frame::MAX_HEADER);
    ticktrade_net::frame::push_frame(&mut out, ticktrade_net::frame::Opcode::Text, None, payload);
    out
}

/// A `/proc/self/status` field in KiB (`VmRSS:`, `VmHWM:`).
fn proc_status_kib(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    line[field.len()..].split_whitespace().next()?.parse().ok()
}

/// Makes sure `need` descriptors can be open: raises the soft `RLIMIT_NOFILE` towards the
/// hard limit (with util-linux `prlimit` on this process) when it is lower.
fn ensure_open_files(need: u64) -> anyhow::Result<()> {
    let read = || -> Option<(u64, u64)> {
        let text = std::fs::read_to_string("/proc/self/limits").ok()?;
        let line = text.lines().find(|l| l.starts_with("Max open files"))?;
        let mut it = line["Max open files".len()..].split_whitespace();
        let soft = it.next()?;
        let hard = it.next()?;
        let parse = |v: &str| if v == "unlimited" { Some(u64::MAX) } else { v.parse().ok() };
        Some((parse(soft)?, parse(hard)?))
    };
    let Some((soft, hard)) = read() else { return Ok(()) };
    if soft >= need {
        return Ok(());
    }
    if hard < need {
        bail!("{need} open files needed, hard limit is {hard}: raise it (ulimit -Hn) or pass fewer --clients");
    }
    let target = if hard == u64::MAX { need.to_string() } else { hard.to_string() };
    let status = std::process::Command::new("prlimit")
        .arg("--pid")
        .arg(std::process::id().to_string())
        .arg(format!("--nofile={target}:"))
        .status();
    match (status, read()) {
        (Ok(s), Some((soft, _))) if s.success() && soft >= need => Ok(()),
        _ => bail!("{need} open files needed, soft limit is {soft}: run `ulimit -n {target}` first"),
    }
}
