//! The exchange side's closed-loop pacing (`Pace::Reply`): each tick goes out once the order for
//! the previous one has been read, every order is matched to its tick, floor probes get their
//! repeat, and ticks the strategy does not answer cost one bounded wait, not a hang.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::sync::Arc;
use std::time::{Duration, Instant};

use ticktrade_core::Qty;
use ticktrade_gateway::hot::exchange::{ExchangeConfig, ExchangeReport, ExchangeSide, Pace};
use ticktrade_gateway::hot::feed::{SyntheticFeed, btc_perpetual};
use ticktrade_gateway::hot::{Exit, HotConfig, HotLoop, LoopReport, Pipeline, QuoteOnTick, spawn_recorder};
use ticktrade_latency::{TscClock, spsc_ring};
use ticktrade_net::handshake;

fn run(ticks: usize, every: u32, reply_timeout: Duration) -> (LoopReport, Exit, ExchangeReport, u64) {
    let spec = btc_perpetual().unwrap();
    let feed = Arc::new(SyntheticFeed::generate(&spec, ticks, 3));
    let clock = TscClock::new();
    let pipeline = Pipeline::new(&spec, QuoteOnTick::new(Qty::from_raw(1), every), feed.snapshot_levels);
    let config =
        ExchangeConfig { pace: Pace::Reply, gap: Duration::ZERO, reply_timeout, floor_every: 4, ticks, pin_core: None };
    let exchange = ExchangeSide::spawn(Arc::clone(&feed), clock.clone(), config).unwrap();
    let (stream, reader) = handshake::connect(exchange.addr, "127.0.0.1", "/ws/api/v2").unwrap();
    let (stamps_tx, stamps_rx) = spsc_ring(1 << 12);
    let (floor_tx, floor_rx) = spsc_ring(1 << 10);
    let recorder = spawn_recorder(stamps_rx, Some(floor_rx)).unwrap();
    let config = HotConfig { floor_probe: true, ..HotConfig::default() };
    let mut hot = HotLoop::new(stream, reader, pipeline, clock, stamps_tx, Some(floor_tx), config);
    let (report, exit) = hot.run().unwrap();
    drop(hot);
    let exchange = exchange.join().unwrap();
    let recorded = recorder.join().unwrap();
    (report, exit, exchange, recorded.write_floor.count())
}

#[test]
fn closed_loop_answers_every_tick_in_turn() {
    let ticks = 400;
    let (report, exit, exchange, floor_count) = run(ticks, 1, Duration::from_secs(2));
    assert_eq!(exit, Exit::Closed);
    assert_eq!(exchange.ticks_sent, ticks as u64);
    assert_eq!(exchange.probes_sent, ticks as u64 / 4);
    // Every change is answered (the snapshot's order is the one unmatched frame), and no wait
    // ran into its timeout: each tick went out after the previous order was read.
    assert_eq!(exchange.unanswered, 0, "{exchange:?}");
    assert_eq!(exchange.orders, ticks as u64, "{exchange:?}");
    assert_eq!(exchange.unmatched, 1);
    assert_eq!(report.pipeline.orders, ticks as u64 + 1);
    assert_eq!(exchange.tick_to_order.count(), ticks as u64);
    // Each probe was answered with the last order's bytes again before the next tick went out.
    assert_eq!(report.floor_writes, exchange.probes_sent);
    assert_eq!(exchange.repeats, report.floor_writes);
    assert_eq!(floor_count, report.floor_writes);
}

#[test]
fn closed_loop_moves_on_after_a_bounded_wait_for_unanswered_ticks() {
    let ticks = 120;
    let started = Instant::now();
    let (report, exit, exchange, _) = run(ticks, 3, Duration::from_millis(2));
    assert_eq!(exit, Exit::Closed);
    assert_eq!(exchange.ticks_sent, ticks as u64);
    // Every order is either a tick's or the snapshot's (whose change id is not a tick's).
    assert_eq!(exchange.orders + exchange.unmatched, report.pipeline.orders, "{exchange:?}");
    let answered = exchange.orders;
    assert!(answered < ticks as u64 / 2, "every 3rd tick: {answered}");
    // Every tick without an order timed out once; probes after such a tick re-send an older
    // order, which is a repeat of an earlier tick and does not end the wait either.
    assert!(exchange.unanswered >= ticks as u64 - answered, "{exchange:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
}
