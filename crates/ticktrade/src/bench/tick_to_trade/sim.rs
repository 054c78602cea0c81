//! `--exchange sim`: the same hot loop against the embedded simulator (`ticktrade_sim`) on
//! loopback. The simulator's market publishes `book.BTC-PERPETUAL.raw` changes at its own rate;
//! the loop authenticates and subscribes on its own WebSocket, answers each change with a
//! post-only order, and the simulator acknowledges them (the acks arrive on the same socket and
//! are skipped by the loop, as any non-book frame).
//!
//! Owns: the simulator's runtime, the session set-up and the run's stamp recorder.
//! Must not: time anything itself; the stamps come from the hot loop's ring, as in-process.
//! What it cannot give: the exchange-side view and `write_floor` (the simulator neither
//! timestamps ticks for us nor answers the floor probe), and exact pacing (ticks come when the
//! simulated market changes, including changes caused by our own orders). The simulator runs
//! without request-credit limits (`RateLimits::unlimited`), or its order bucket would end the run.

use std::io::Write as _;
use std::net::TcpStream;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use ticktrade_core::{InstrumentSpec, Qty};
use ticktrade_gateway::hot::{Exit, HotConfig, HotLoop, LoopReport, Pipeline, QuoteOnTick, Recorded, spawn_recorder};
use ticktrade_latency::{TscClock, spsc_ring};
use ticktrade_net::frame::{Opcode, Role, WsReader, WsWriter};
use ticktrade_net::handshake;
use ticktrade_sim::{ApiKey, RateLimits, SimConfig};

/// What the run measured, and how many orders the simulator counted.
pub(crate) struct SimRun {
    pub(crate) recorded: Recorded,
    pub(crate) report: LoopReport,
    pub(crate) sim_orders: u64,
    /// Why the loop ended (`Stopped` once `orders` were written).
    pub(crate) exit: Exit,
}

pub(crate) fn run(
    spec: &InstrumentSpec,
    orders: u64,
    every: u32,
    rate_per_s: u32,
    config: HotConfig,
    clock: &TscClock,
) -> anyhow::Result<SimRun> {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    let sim = runtime
        .block_on(ticktrade_sim::spawn_loopback(SimConfig {
            rate_per_s,
            limits: RateLimits::unlimited(),
            ..SimConfig::default()
        }))
        .map_err(|e| anyhow!("simulator: {e}"))?;
    let key = ApiKey::default_key();
    let (mut stream, mut reader) =
        handshake::connect(sim.addr(), "127.0.0.1", "/ws/api/v2").context("connect to the simulator")?;
    // A silent simulator ends the run with an error instead of hanging it.
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut writer = WsWriter::new(Role::Client, 1024, 11);
    let auth = format!(
        r#"{{"jsonrpc":"2.0","id":1000001,"method":"public/auth","params":{{"grant_type":"client_credentials","client_id":"{}","client_secret":"{}"}}}}"#,
        key.client_id,
        key.client_secret.expose()
    );
    request(&mut stream, &mut writer, &auth)?;
    let authed = response(&mut stream, &mut reader, 1_000_001)?;
    if !authed["result"]["access_token"].is_string() {
        bail!("simulator refused the session (no access token)");
    }
    request(
        &mut stream,
        &mut writer,
        r#"{"jsonrpc":"2.0","id":1000002,"method":"private/subscribe","params":{"channels":["book.BTC-PERPETUAL.raw"]}}"#,
    )?;
    // The snapshot may come before the subscribe response: the loop takes everything from here.
    let pipeline = Pipeline::new(spec, QuoteOnTick::new(Qty::from_raw(1), every), 4096);
    let (stamps_tx, stamps_rx) = spsc_ring(1 << 16);
    let recorder = spawn_recorder(stamps_rx, None)?;
    let config = HotConfig { floor_probe: false, stop_after_orders: Some(orders), ..config };
    let mut hot = HotLoop::new(stream, reader, pipeline, clock.clone(), stamps_tx, None, config);
    let (report, exit) = hot.run().context("hot loop against the simulator")?;
    let (mut stream, _reader, _pipeline) = hot.into_parts();
    let _ = stream.flush();
    drop(stream);
    let recorded = recorder.join().map_err(|_| anyhow!("recorder thread panicked"))?;
    let sim_orders = sim.stats().orders;
    runtime.block_on(sim.shutdown());
    Ok(SimRun { recorded, report, sim_orders, exit })
}

fn request(stream: &mut TcpStream, writer: &mut WsWriter, text: &str) -> anyhow::Result<()> {
    writer.frame_of(Opcode::Text, text.as_bytes());
    writer.write_to(stream).map_err(|e| anyhow!("write to the simulator: {e}"))
}

/// Reads until the response with `id`, skipping anything else.
fn response(stream: &mut TcpStream, reader: &mut WsReader, id: u64) -> anyhow::Result<serde_json::Value> {
    loop {
        while let Some(message) = reader.next_message().map_err(|e| anyhow!("simulator frame: {e}"))? {
            if message.opcode != Opcode::Text {
                continue;
            }
            let value: serde_json::Value = serde_json::from_slice(message.payload).context("simulator reply")?;
            if value["id"] == id {
                return Ok(value);
            }
        }
        reader.fill(stream).map_err(|e| anyhow!("read from the simulator: {e}"))?;
    }
}
