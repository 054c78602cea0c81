//! `ticktrade bench feed`: the fan-out server (`ticktrade_serve`) over the in-process simulator
//! at a fixed rate, with 1, 100 and 1,000 loopback clients that only drain, books kept
//! (`fanout_books_cN`) and `--raw` (`fanout_raw_cN`). The delay is the server's own stage
//! stamps: upstream frame received → downstream frame written, one sample per frame per client.
//! Beside each, `floor_cN`: the same number of bare writes of the same frame (as a server
//! WebSocket frame) to N loopback sockets of the same kind drained by the same kind of client,
//! timed the same way (from before the first socket's write to after each socket's write), in
//! the same run. Peak memory (`VmHWM`) is printed after the largest client count.
//!
//! Owns: the run's wiring, the series names, the open-files check.
//! Must not: time the fan-out itself (the server records it).

use std::fmt::Write as _;
use std::io::Write as _;
use std::net::TcpStream;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use futures_util::{SinkExt, StreamExt};
use ticktrade_latency::{Histogram, Series};
use ticktrade_serve::{ServeConfig, UpstreamSource};
use ticktrade_sim::SimConfig;
use tokio::runtime::Runtime;
use tokio_tungstenite::tungstenite::{self, Message};

use super::tick_to_trade::emit;

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
    /// Seconds measured per configuration (after every client holds its snapshot and 1 s of warm-up).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(1..=600))]
    pub seconds: u64,
    /// Synthetic market events per second of the embedded simulator (over all its instruments).
    #[arg(long, default_value_t = 400)]
    pub sim_rate: u32,
    /// The instrument every client subscribes to (`book.{instrument}.raw`: every change, as fanned out).
    #[arg(long, default_value = "BTC-PERPETUAL")]
    pub instrument: String,
    /// Worker threads of the server's runtime (`ticktrade serve` uses 2).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub server_threads: u64,
    /// Pause between two floor frames, in ms (the fan-out sees one upstream frame per 100 ms).
    #[arg(long, default_value_t = 20)]
    pub floor_gap_ms: u64,
    /// Print one JSON object per series per line on stdout (the table goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// Write a latency-vs-percentile plot to this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<std::path::PathBuf>,
}

/// What one fan-out run measured.
struct FanoutRun {
    delays: Histogram,
    upstream_frames: u64,
    frame: String,
    rss_kib: u64,
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
    let mut notes = format!(
        "ticktrade bench feed: ticktrade serve over the in-process simulator ({} events/s), clients on \
         book.{}.raw, {} s per run; delay = upstream frame received → downstream frame written \
         (server stamps); floor = bare writes of the same frame to as many loopback sockets, same run\n",
        args.sim_rate, args.instrument, args.seconds
    );
    let mut peak = None;
    for &n in &args.clients {
        if n == 0 {
            continue;
        }
        let mut floor_p50 = None;
        let mut floor_p99 = 0;
        for &raw in modes {
            let fan = fanout_run(&args, &drains, n, raw)?;
            if floor_p50.is_none() {
                let frames = fan.upstream_frames.max(20);
                let floor = floor_run(&drains, n, &fan.frame, frames, Duration::from_millis(args.floor_gap_ms))?;
                let p = floor.percentiles();
                floor_p50 = Some(p.p50);
                floor_p99 = p.p99;
                series.push(Series::from_histogram(format!("floor_c{n}"), &floor));
            }
            let name = format!("fanout_{}_c{n}", if raw { "raw" } else { "books" });
            let p = fan.delays.percentiles();
            let mut s = Series::from_histogram(&name, &fan.delays);
            if let Some(f) = floor_p50 {
                s = s.with_baseline_p50(f);
                let _ = writeln!(
                    notes,
                    "{name}: {} upstream frames, {} samples; p50 {:.2}× floor p50, p99 {:.2}× floor p99; RSS {} MiB",
                    fan.upstream_frames,
                    p.count,
                    p.p50 as f64 / f.max(1) as f64,
                    p.p99 as f64 / floor_p99.max(1) as f64,
                    fan.rss_kib / 1024
                );
            }
            series.push(s);
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

fn fanout_run(args: &Args, drains: &Runtime, n: usize, raw: bool) -> anyhow::Result<FanoutRun> {
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(usize::try_from(args.server_threads).unwrap_or(2))
        .thread_name("feed-serve")
        .enable_all()
        .build()
        .context("starting the server's runtime")?;
    let config = ServeConfig {
        upstream: UpstreamSource::Sim(Box::new(SimConfig { rate_per_s: args.sim_rate, ..SimConfig::default() })),
        instruments: Some(vec![args.instrument.clone()]),
        raw,
        max_connections: n + 16,
        ..ServeConfig::default()
    };
    let serve = server_rt.block_on(ticktrade_serve::spawn(config)).context("starting the server")?;
    let url = serve.ws_url();
    let channel = format!("book.{}.raw", args.instrument);
    let ready = Arc::new(AtomicUsize::new(0));
    let received = Arc::new(AtomicU64::new(0));
    let frame = Arc::new(Mutex::new(None::<String>));
    let mut clients = Vec::with_capacity(n);
    for i in 0..n {
        let url = url.clone();
        let channel = channel.clone();
        let ready = Arc::clone(&ready);
        let received = Arc::clone(&received);
        let frame = (i == 0).then(|| Arc::clone(&frame));
        clients.push(drains.spawn(drain_client(url, channel, ready, received, frame)));
        if i % 64 == 63 {
            // Let the accept queue keep up.
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while ready.load(Ordering::Relaxed) < n {
        if Instant::now() > deadline {
            bail!("only {} of {n} clients got their first book frame within 60 s", ready.load(Ordering::Relaxed));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_secs(1));
    let before = server_rt.block_on(serve.totals()).ok_or_else(|| anyhow!("server stopped"))?;
    serve.reset_fanout();
    std::thread::sleep(Duration::from_secs(args.seconds));
    let recorded = serve.fanout_recorded();
    let after = server_rt.block_on(serve.totals()).ok_or_else(|| anyhow!("server stopped"))?;
    let rss_kib = proc_status_kib("VmRSS:").unwrap_or(0);
    let mut delays = Histogram::new();
    for (ns, count) in recorded {
        delays.record_n(ns, count);
    }
    for c in clients {
        c.abort();
    }
    server_rt.block_on(serve.shutdown());
    server_rt.shutdown_timeout(Duration::from_secs(1));
    let frame = frame.lock().map_err(|_| anyhow!("frame lock"))?.clone();
    let frame = frame.ok_or_else(|| anyhow!("no book frame captured"))?;
    if after.drops > before.drops {
        eprintln!("note: {} frames dropped (queues full) during the {n}-client run", after.drops - before.drops);
    }
    Ok(FanoutRun { delays, upstream_frames: after.upstream_frames - before.upstream_frames, frame, rss_kib })
}

/// One client: subscribe, then read and discard; counts frames, keeps client 0's last book change.
async fn drain_client(
    url: String,
    channel: String,
    ready: Arc<AtomicUsize>,
    received: Arc<AtomicU64>,
    frame: Option<Arc<Mutex<Option<String>>>>,
) {
    let Ok((mut ws, _)) = tokio_tungstenite::connect_async(url.as_str()).await else {
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
        received.fetch_add(1, Ordering::Relaxed);
        if first {
            first = false;
            ready.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(slot) = &frame
            && text.contains(r#""type":"change""#)
            && let Ok(mut slot) = slot.lock()
        {
            *slot = Some(text.to_string());
        }
    }
}

/// `frames` rounds of one bare write of `text` (as an unmasked WebSocket text frame) to each
/// of `n` loopback sockets whose peers are tokio-tungstenite clients draining on `drains`.
fn floor_run(drains: &Runtime, n: usize, text: &str, frames: u64, gap: Duration) -> anyhow::Result<Histogram> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("binding the floor listener")?;
    let addr = listener.local_addr().context("floor listener address")?;
    let mut clients = Vec::with_capacity(n);
    let mut sockets: Vec<TcpStream> = Vec::with_capacity(n);
    for _ in 0..n {
        let url = format!("ws://{addr}/");
        clients.push(drains.spawn(async move {
            let Ok((mut ws, _)) = tokio_tungstenite::connect_async(url.as_str()).await else { return };
            while let Some(Ok(_)) = ws.next().await {}
        }));
        let (stream, _) = listener.accept().context("floor accept")?;
        stream.set_nodelay(true).context("TCP_NODELAY")?;
        let ws = tungstenite::accept(stream).map_err(|e| anyhow!("floor handshake: {e}"))?;
        sockets.push(ws.into_inner());
    }
    let wire = server_text_frame(text.as_bytes());
    let mut h = Histogram::new();
    // Warm-up rounds (not recorded).
    for round in 0..frames + 5 {
        std::thread::sleep(gap);
        let t0 = Instant::now();
        for s in &mut sockets {
            s.write_all(&wire).context("floor write")?;
            if round >= 5 {
                h.record(u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX));
            }
        }
    }
    drop(sockets);
    for c in clients {
        c.abort();
    }
    Ok(h)
}

/// An unmasked, final WebSocket text frame carrying `payload`.
fn server_text_frame(payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 10);
    out.push(0x81);
    match payload.len() {
        len @ 0..=125 => out.push(len as u8),
        len @ 126..=0xffff => {
            out.push(126);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        }
        len => {
            out.push(127);
            out.extend_from_slice(&(len as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(payload);
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
