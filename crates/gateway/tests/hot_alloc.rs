//! The hot path allocates nothing in steady state: read → decode → book → decide → encode →
//! write, plus the stamp conversion and ring push after t5, over 100 000 ticks, counted by the
//! testkit's per-thread allocator, once with frames fed from memory and once over a real
//! loopback WebSocket.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::sync::Arc;
use std::time::Duration;

use ticktrade_core::Qty;
use ticktrade_gateway::hot::engine::to_stamps;
use ticktrade_gateway::hot::exchange::{ExchangeConfig, ExchangeSide, Pace};
use ticktrade_gateway::hot::feed::{SyntheticFeed, btc_perpetual};
use ticktrade_gateway::hot::{Exit, HotConfig, HotLoop, Outcome, Pipeline, QuoteOnTick, RawStamps, spawn_recorder};
use ticktrade_latency::{TscClock, spsc_ring};
use ticktrade_net::frame::{Opcode, Role, WsReader, WsWriter};
use ticktrade_net::handshake;

#[global_allocator]
static ALLOC: ticktrade_testkit::CountingAlloc = ticktrade_testkit::CountingAlloc::new();

const TICKS: usize = 100_000;

fn feed() -> SyntheticFeed {
    SyntheticFeed::generate(&btc_perpetual().unwrap(), TICKS, 3)
}

fn pipeline(feed: &SyntheticFeed) -> Pipeline<QuoteOnTick> {
    Pipeline::new(&btc_perpetual().unwrap(), QuoteOnTick::new(Qty::from_raw(1), 1), feed.snapshot_levels)
}

/// Runs the snapshot and every change through `pipeline` as a client would see them on the
/// wire (server frames in the reader's buffer), returning how many orders came out.
fn run_from_memory(
    pipeline: &mut Pipeline<QuoteOnTick>,
    frames: &[Vec<u8>],
    reader: &mut WsReader,
    writer: &mut WsWriter,
    clock: &TscClock,
    ring: &mut ticktrade_latency::RingProducer<ticktrade_latency::Stamps>,
) -> usize {
    let mut orders = 0;
    for frame in frames {
        reader.feed(frame);
        let t0 = clock.raw();
        while let Some(message) = reader.next_message().unwrap() {
            assert_eq!(message.opcode, Opcode::Text);
            let mut raw = RawStamps::received(t0, 1);
            match pipeline.on_frame(message.payload, clock, &mut raw, writer) {
                Outcome::Order => {
                    let mut sink = std::io::sink();
                    writer.write_to(&mut sink).unwrap();
                    raw.t[5] = clock.raw().0;
                    orders += 1;
                }
                Outcome::NoOrder => {}
                other => panic!("unexpected {other:?}"),
            }
            ring.push(to_stamps(clock, &raw));
        }
    }
    orders
}

#[test]
fn hot_path_allocates_nothing_in_steady_state_from_memory() {
    let feed = feed();
    let mut server = WsWriter::new(Role::Server, 1 << 16, 1);
    let frames: Vec<Vec<u8>> = std::iter::once(&feed.snapshot)
        .chain(&feed.changes)
        .map(|payload| server.frame_of(Opcode::Text, payload).to_vec())
        .collect();
    let clock = TscClock::new();
    let mut pipeline = pipeline(&feed);
    let mut reader = WsReader::new(Role::Client, 1 << 16);
    let mut writer = WsWriter::new(Role::Client, 1024, 7);
    // A ring that always drops once full: pushing must not allocate either way.
    let (mut ring, _rx) = spsc_ring(1024);

    // Warm-up: one pass over the whole stream sizes the ladders and buffers.
    let warm = run_from_memory(&mut pipeline, &frames, &mut reader, &mut writer, &clock, &mut ring);
    // Steady state: the same snapshot resets the book, then 100 000 ticks again.
    let (orders, count) =
        ALLOC.measure(|| run_from_memory(&mut pipeline, &frames, &mut reader, &mut writer, &clock, &mut ring));
    assert_eq!(count.n_allocs, 0, "{count:?}");
    assert_eq!(orders, warm);
    assert!(orders > TICKS / 2, "the strategy should answer most ticks, got {orders}");
    assert_eq!(pipeline.stats().stale, 0);
}

#[test]
fn hot_loop_allocates_nothing_on_a_loopback_socket() {
    let feed = Arc::new(feed());
    let clock = TscClock::new();
    // Warm the pipeline in memory first, as a trader warms up before the session.
    let mut pipeline = pipeline(&feed);
    let warm_orders = {
        let mut server = WsWriter::new(Role::Server, 1 << 16, 1);
        let frames: Vec<Vec<u8>> = std::iter::once(&feed.snapshot)
            .chain(&feed.changes)
            .map(|payload| server.frame_of(Opcode::Text, payload).to_vec())
            .collect();
        let mut reader = WsReader::new(Role::Client, 1 << 16);
        let mut writer = WsWriter::new(Role::Client, 1024, 7);
        let (mut ring, _rx) = spsc_ring(16);
        run_from_memory(&mut pipeline, &frames, &mut reader, &mut writer, &clock, &mut ring) as u64
    };
    let config = ExchangeConfig {
        pace: Pace::Sleep,
        gap: Duration::ZERO,
        reply_timeout: Duration::ZERO,
        floor_every: 1000,
        ticks: TICKS,
        pin_core: None,
    };
    let exchange = ExchangeSide::spawn(Arc::clone(&feed), clock.clone(), config).unwrap();
    let (stream, reader) = handshake::connect(exchange.addr, "127.0.0.1", "/ws/api/v2").unwrap();
    let (stamps_tx, stamps_rx) = spsc_ring(1 << 16);
    let (floor_tx, floor_rx) = spsc_ring(1 << 10);
    let recorder = spawn_recorder(stamps_rx, Some(floor_rx)).unwrap();
    // `prewarm` re-runs decode and encode on scratch buffers after each write: counted too.
    let config = HotConfig { floor_probe: true, prewarm: true, ..HotConfig::default() };
    let mut hot = HotLoop::new(stream, reader, pipeline, clock, stamps_tx, Some(floor_tx), config);

    let (result, count) = ALLOC.measure(|| hot.run());
    let (report, exit) = result.unwrap();
    let frames_before = TICKS as u64 + 1; // the warm-up pass
    drop(hot);
    let exchange = exchange.join().unwrap();
    let recorded = recorder.join().unwrap();

    assert_eq!(count.n_allocs, 0, "{count:?} over {report:?}");
    assert_eq!(exit, Exit::Closed);
    assert_eq!(report.pipeline.frames - frames_before, TICKS as u64 + 1);
    assert_eq!(report.pipeline.stale, 0);
    assert_eq!(exchange.ticks_sent, TICKS as u64);
    // The snapshot is answered too; its change_id is not one of the published ticks.
    assert_eq!(exchange.unmatched, 1);
    assert_eq!(exchange.repeats, report.floor_writes);
    assert_eq!(exchange.orders + 1, report.pipeline.orders - warm_orders, "one order per answered tick");
    assert!(exchange.orders > TICKS as u64 / 2, "{exchange:?}");
    assert_eq!(recorded.write_floor.count(), report.floor_writes);
    assert_eq!(report.floor_writes, 100);
    assert!(recorded.stages.tick_to_trade().count() > 0);
}
