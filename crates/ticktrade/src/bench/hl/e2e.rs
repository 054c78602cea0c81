//! End to end through a real server on loopback: a writer thread appends blocks to the hourly
//! files every `--block-ms`; a probe client (BTC `l2Book`) and a load client (all seven
//! variants of every coin) measure start-of-write → frame received. Each client runs on its own
//! thread and current-thread runtime, as separate client processes (`ticktrade hl stats`) do;
//! `--e2e-shared-runtime` runs them as tasks on the server's 2-worker runtime instead, where a
//! frame for the probe waits behind the load client's ~900 KB per block in the same queues. The file-level floor is
//! measured in the same run: a separate reader woken by its own file notifications, start of
//! the block's write → both lines the engine needs (statuses, diffs) read back. It runs as its
//! own pass after the server has stopped (same generator, same cadence), so it neither competes
//! with the server for the two CPUs nor is slowed by it.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use ticktrade_core::Utc;
use ticktrade_hl_node::follow::{Follower, Watched};
use ticktrade_hl_node::join::Stream;
use ticktrade_hl_node::server::engine::{Engine, EngineConfig};
use ticktrade_hl_node::server::{MetaDocs, ServeConfig, start};
use ticktrade_hl_node::synth::Generator;
use ticktrade_hl_node::synth::writer::GenWriter;
use ticktrade_hl_proto::time::scan_block_time;
use ticktrade_latency::{Histogram, Series};
use tokio_tungstenite::tungstenite::Message;

use super::{Args, T0_NS, all_subscriptions, books_of, generator};

pub struct E2e {
    pub series: Vec<Series>,
    pub n_frames: u64,
}

type Written = Arc<Mutex<HashMap<u64, Instant>>>;

pub(crate) fn frame_time(text: &str) -> Option<u64> {
    let at = text.find("\"time\":")? + 7;
    let digits = &text[at..];
    let end = digits.find(|c: char| !c.is_ascii_digit())?;
    digits[..end].parse().ok()
}

/// The file-level floor: what a reader woken by file notifications (as the server's engine is)
/// takes to have both lines of a block, from the start of the block's write.
fn file_floor(dir: &Path, written: &Written, until: Instant, ready: std::sync::mpsc::Sender<()>) -> Histogram {
    let mut histogram = Histogram::new();
    let mut watched = Watched::new(dir, &[Stream::Statuses, Stream::Diffs]);
    let (mut lines, mut seen) = (Vec::new(), HashMap::<u64, u8>::new());
    let _ = ready.send(());
    while Instant::now() < until {
        watched.wait_lines(Duration::from_millis(50), &mut lines);
        let read = Instant::now();
        for line in lines.drain(..) {
            let Some(t) = scan_block_time(&line.text) else { continue };
            let ms = t.as_millis() as u64;
            let count = seen.entry(ms).or_default();
            *count += 1;
            if *count == 2
                && let Some(start) = written.lock().ok().and_then(|w| w.get(&ms).copied())
            {
                histogram.record(read.saturating_duration_since(start).as_nanos() as u64);
            }
        }
    }
    histogram
}

/// Appends `n_blocks` blocks, one every `block_ms`, recording in `written` when each block's
/// write started (keyed by its block time, ms): the writer of both the server run and the floor pass.
fn write_blocks(
    generator: &mut Generator,
    writer: &mut GenWriter,
    written: &Written,
    n_blocks: u64,
    block_ms: u64,
) -> std::io::Result<()> {
    let mut next = Instant::now();
    for i in 0..n_blocks {
        let time = Utc::from_nanos(T0_NS + 3_600_000_000_000 + (i * block_ms * 1_000_000) as i64);
        let block = generator.next_block(time);
        if let Ok(mut map) = written.lock() {
            map.insert(time.as_millis() as u64, Instant::now());
        }
        writer.write_block(&block, [Stream::Statuses, Stream::Diffs, Stream::Fills])?;
        next += Duration::from_millis(block_ms);
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    Ok(())
}

/// The floor pass: the writer appends `--e2e-blocks` blocks every `--block-ms` into a fresh
/// directory while only [`file_floor`] reads them.
fn floor_pass(args: &Args, dir: &Path) -> anyhow::Result<Histogram> {
    let mut generator = generator(args);
    let mut writer = GenWriter::new(dir);
    writer.write_bootstrap(&generator)?;
    let written: Written = Arc::new(Mutex::new(HashMap::new()));
    let (n_blocks, block_ms) = (args.e2e_blocks, args.block_ms.max(1));
    let deadline = Instant::now() + Duration::from_millis(n_blocks * block_ms) + Duration::from_secs(1);
    let (floor_dir, floor_written) = (dir.to_owned(), written.clone());
    let (ready_tx, ready) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || file_floor(&floor_dir, &floor_written, deadline, ready_tx));
    let _ = ready.recv_timeout(Duration::from_secs(5));
    write_blocks(&mut generator, &mut writer, &written, n_blocks, block_ms)?;
    reader.join().map_err(|_| anyhow::anyhow!("floor reader panicked"))
}

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Connects, sends every subscription and reads until it holds one initial `l2Book` per
/// subscription, so that what `measure` reads next is live.
async fn subscribed(url: &str, subscriptions: &[String]) -> anyhow::Result<Ws> {
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await?;
    for s in subscriptions {
        ws.send(Message::Text(s.clone().into())).await?;
    }
    let mut initial = 0;
    while initial < subscriptions.len() {
        match tokio::time::timeout(Duration::from_secs(30), ws.next()).await {
            Ok(Some(Ok(Message::Text(t)))) if t.starts_with("{\"channel\":\"l2Book\"") => initial += 1,
            Ok(Some(Ok(_))) => {}
            _ => anyhow::bail!("a client did not get its initial books"),
        }
    }
    Ok(ws)
}

async fn measure(ws: &mut Ws, written: &Written, deadline: Instant) -> (Histogram, u64) {
    let (mut histogram, mut n) = (Histogram::new(), 0u64);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(Some(Ok(msg))) = tokio::time::timeout(left, ws.next()).await else { break };
        let received = Instant::now();
        let Message::Text(text) = msg else { continue };
        if !text.starts_with("{\"channel\":\"l2Book\"") {
            continue;
        }
        let Some(ms) = frame_time(&text) else { continue };
        let start = written.lock().ok().and_then(|w| w.get(&ms).copied());
        if let Some(start) = start {
            histogram.record(received.saturating_duration_since(start).as_nanos() as u64);
            n += 1;
        }
    }
    (histogram, n)
}

/// One client on its own thread and current-thread runtime, as a separate client process
/// (`ticktrade hl stats`) would be: connects, subscribes, reads its initial books (one per
/// subscription), says it is ready, then measures until the deadline it is given.
fn client_thread(
    url: String,
    subscriptions: Vec<String>,
    written: Written,
    ready: std::sync::mpsc::Sender<()>,
    go: std::sync::mpsc::Receiver<Instant>,
) -> std::thread::JoinHandle<anyhow::Result<(Histogram, u64)>> {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        runtime.block_on(async move {
            let mut ws = subscribed(&url, &subscriptions).await?;
            ready.send(()).map_err(|_| anyhow::anyhow!("bench gone"))?;
            let deadline = go.recv().map_err(|_| anyhow::anyhow!("bench gone"))?;
            Ok(measure(&mut ws, &written, deadline).await)
        })
    })
}

pub fn run(args: &Args, dir: &Path) -> anyhow::Result<E2e> {
    let mut generator = generator(args);
    let mut writer = GenWriter::new(dir);
    writer.write_bootstrap(&generator)?;
    let books = books_of(&generator)?;
    let mut followers = Vec::new();
    for s in Stream::ALL {
        let mut f = Follower::new(dir, s);
        f.seek_height(books.height())?;
        followers.push(f);
    }
    let mut engine = Engine::new(EngineConfig::default(), books, followers);
    // The server's own marks per block (read, first frame queued, all queued), to split the
    // probe's latency into file, compute and delivery.
    engine.record_timings(true);
    let engine_stats = engine.stats();
    let subscriptions = all_subscriptions(&generator);
    let probe_subscription = r#"{"method":"subscribe","subscription":{"type":"l2Book","coin":"BTC"}}"#.to_owned();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let shared_runtime = args.e2e_shared_runtime;
    let rt_priority = args.rt_priority;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let docs = MetaDocs { meta: "{}".into(), spot_meta: "{}".into(), ..MetaDocs::default() };
        let server = start(listener, engine, dir, docs, ServeConfig { queue: 1 << 16, rt_priority })?;
        let url = format!("ws://{}/ws", server.addr);
        let written: Written = Arc::new(Mutex::new(HashMap::new()));
        // Clients on their own threads (the default), or, with `--e2e-shared-runtime`, as
        // tasks on the server's runtime (the layout of the figures before 2026-11-26 05:30).
        let mut threads = Vec::new();
        let mut go = Vec::new();
        let mut shared = None;
        if shared_runtime {
            let load = subscribed(&url, &subscriptions).await?;
            let probe = subscribed(&url, std::slice::from_ref(&probe_subscription)).await?;
            shared = Some((probe, load));
        } else {
            let (ready_tx, ready) = std::sync::mpsc::channel();
            for subs in [vec![probe_subscription], subscriptions.clone()] {
                let (go_tx, go_rx) = std::sync::mpsc::channel();
                threads.push(client_thread(url.clone(), subs, written.clone(), ready_tx.clone(), go_rx));
                go.push(go_tx);
            }
            for _ in 0..threads.len() {
                tokio::task::block_in_place(|| ready.recv_timeout(Duration::from_secs(60)))
                    .map_err(|_| anyhow::anyhow!("a client did not get its initial books"))?;
            }
        }
        // Both clients hold their initial books: start them, then write the blocks.
        let w = written.clone();
        let (n_blocks, block_ms) = (args.e2e_blocks, args.block_ms.max(1));
        let deadline = Instant::now() + Duration::from_millis(n_blocks * block_ms) + Duration::from_secs(3);
        for g in &go {
            let _ = g.send(deadline);
        }
        let writer_thread =
            std::thread::spawn(move || write_blocks(&mut generator, &mut writer, &w, n_blocks, block_ms));
        let (probe_result, load_result) = match shared {
            Some((mut probe, mut load)) => {
                tokio::join!(measure(&mut probe, &written, deadline), measure(&mut load, &written, deadline))
            }
            None => {
                let mut results = Vec::new();
                for t in threads {
                    let joined = tokio::task::block_in_place(|| t.join());
                    results.push(joined.map_err(|_| anyhow::anyhow!("client thread panicked"))??);
                }
                let load = results.pop().unwrap_or_default();
                (results.pop().unwrap_or_default(), load)
            }
        };
        writer_thread.join().map_err(|_| anyhow::anyhow!("writer panicked"))??;
        server.stop();
        let mut marks = [Histogram::new(), Histogram::new(), Histogram::new()];
        let mut lines: [Histogram; 4] = std::array::from_fn(|_| Histogram::new());
        if let (Ok(stats), Ok(written)) = (engine_stats.lock(), written.lock()) {
            for m in &stats.marks {
                let Some(&start) = written.get(&m.time_ms) else { continue };
                let since = |t: Instant| t.saturating_duration_since(start).as_nanos() as u64;
                marks[0].record(since(m.started));
                for (i, (woken, read)) in m.lines.iter().enumerate() {
                    lines[2 * i].record(since(*woken));
                    lines[2 * i + 1].record(since(*read));
                }
                if let Some(first) = m.first_frame {
                    marks[1].record(since(first));
                }
                marks[2].record(since(m.done));
            }
        }
        let floor = floor_pass(args, &dir.join("floor"))?;
        Ok(E2e {
            series: vec![
                Series::from_histogram("hl e2e: block written -> probe received (BTC l2Book)", &probe_result.0),
                Series::from_histogram(
                    "hl e2e: block written -> load client received (every l2Book frame)",
                    &load_result.0,
                ),
                Series::from_histogram(
                    "hl e2e floor: block written -> both lines read (notified reader, own pass)",
                    &floor,
                ),
                Series::from_histogram("hl e2e server: block written -> woken for the statuses line", &lines[0]),
                Series::from_histogram("hl e2e server: block written -> statuses line read", &lines[1]),
                Series::from_histogram("hl e2e server: block written -> woken for the diffs line", &lines[2]),
                Series::from_histogram("hl e2e server: block written -> diffs line read", &lines[3]),
                Series::from_histogram("hl e2e server: block written -> both lines in the engine", &marks[0]),
                Series::from_histogram("hl e2e server: block written -> first l2Book frame queued", &marks[1]),
                Series::from_histogram("hl e2e server: block written -> last l2Book frame queued", &marks[2]),
            ],
            n_frames: probe_result.1 + load_result.1,
        })
    })
}
