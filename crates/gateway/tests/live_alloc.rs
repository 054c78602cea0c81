//! The live session allocates nothing in steady state: 100 000 book frames from the simulator,
//! each decoded, applied and shown to the built-in market maker, whose edits go out through
//! the risk checks and come back as results, `user.orders` and `user.trades` notifications
//! (fills), all counted by the testkit's per-thread allocator on the session's thread. Over
//! TLS the same run counts rustls's own allocations per frame. A busy-polling session
//! (`run --busy-poll`) is counted too: its empty reads, warm-ups and yields must not allocate
//! either.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::time::Duration;

use ticktrade_gateway::live::{self, LiveConfig, ObserverConfig, Session, StopHandle};
use ticktrade_gateway::venue::{Credentials, Secret};
use ticktrade_net::hot::{HotOptions, TlsRoots};
use ticktrade_strategy::Config;
use ticktrade_strategy::config::InstrumentRiskConfig;

#[global_allocator]
static ALLOC: ticktrade_testkit::CountingAlloc = ticktrade_testkit::CountingAlloc::new();

const FRAMES: u64 = 100_000;

struct Counted {
    allocations: usize,
    frames: u64,
    edits_and_places: u64,
    fills: u64,
    reports: u64,
}

/// One run at a time: two simulators at full rate on a two-core host would starve each other's
/// sessions into slow-consumer disconnects.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// How a counted run connects and reads.
#[derive(Clone, Copy)]
struct Mode {
    tls: bool,
    busy_poll: bool,
    /// The simulator's market events a second.
    rate_per_s: u32,
    frames: u64,
}

const PLAIN: Mode = Mode { tls: false, busy_poll: false, rate_per_s: 25_000, frames: FRAMES };

fn run(mode: Mode) -> Counted {
    let Mode { tls, busy_poll, rate_per_s, frames } = mode;
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("sim.pem");
    let mut config = ticktrade_sim::SimConfig { rate_per_s, seed: 5, ..Default::default() };
    if tls {
        config.tls = Some(ticktrade_sim::TlsSource::SelfSigned);
    }
    let sim = runtime.block_on(ticktrade_sim::spawn_loopback(config)).unwrap();
    if tls {
        std::fs::write(&cert, sim.certificate_pem().unwrap()).unwrap();
    }
    let url = sim.ws_url();
    let roots = if tls { TlsRoots::File(cert) } else { TlsRoots::Webpki };
    let connect = HotOptions { roots, ..HotOptions::default() };

    // Every future's book (the synthetic market spreads its events over the instruments), the
    // market maker on BTC-PERPETUAL one tick from the mid so that it is filled now and then.
    let venue = live::fetch_instruments(&url, &connect).unwrap();
    let mut strategy = Config::parse(ticktrade_strategy::template()).unwrap();
    let quote = strategy.quote.as_mut().unwrap();
    quote.distance_ticks = Some(1);
    quote.requote_ticks = 0;
    strategy.risk.max_orders_per_window = Some(1_000);
    strategy.risk.instrument.clear();
    for spec in venue.iter().filter(|s| s.kind == ticktrade_core::InstrumentKind::Future) {
        if spec.name != "BTC-PERPETUAL" {
            strategy.risk.instrument.push(InstrumentRiskConfig::unlimited(&spec.name));
        }
    }
    let setup = strategy.validate(&venue).unwrap();
    let outbox = setup.outbox;
    let names = setup.specs.iter().map(|s| s.name.clone()).collect();
    let (builtin, parts) = setup.into_parts(0x5eed).unwrap();
    let builtin = builtin.unwrap();

    let key = ticktrade_sim::ApiKey::default_key();
    let mut live_config = LiveConfig::new(url);
    live_config.connect = connect;
    live_config.credentials =
        Some(Credentials { client_id: key.client_id, client_secret: Secret::new(key.client_secret.expose()) });
    live_config.rate_limits = ticktrade_deribit_proto::ratelimit::RateLimits::default();
    live_config.status_every = Some(Duration::from_millis(200));
    live_config.busy_poll = busy_poll;
    let observer = live::spawn_observer(ObserverConfig {
        journal: Some(dir.path().join("journal.jsonl")),
        status: false,
        instruments: names,
        anchor: (ticktrade_core::Mono(0), 0),
    })
    .unwrap();
    let stop = StopHandle::default();
    let mut session =
        Session::new(live_config, builtin, parts, outbox, Some(observer.journal), Some(observer.stamps), stop.clone());
    session.start().unwrap();
    // Warm up: live, and enough frames for every buffer to reach its working size.
    while !(session.is_live() && session.stats().book_frames > frames / 5) {
        assert!(!session.poll().unwrap(), "ended while warming up");
    }
    let before = (session.stats(), session.runner().strategy().fills);
    let ((), counted) = ALLOC.measure(|| {
        while session.stats().book_frames < before.0.book_frames + frames {
            if session.poll().unwrap() {
                break;
            }
        }
    });
    let after = (session.stats(), session.runner().strategy().fills);
    stop.stop();
    while !session.poll().unwrap() {}
    let report = session.finish();
    drop(session);
    observer.handle.join().unwrap();
    runtime.block_on(sim.shutdown());
    assert_eq!(report.exit, live::Exit::Clean);
    assert_eq!(after.0.connects, 1, "the session reconnected during the count");
    Counted {
        allocations: counted.n_allocs,
        frames: after.0.book_frames - before.0.book_frames,
        edits_and_places: (after.0.edits + after.0.places) - (before.0.edits + before.0.places),
        fills: after.1 - before.1,
        reports: (after.0.results + after.0.notifications) - (before.0.results + before.0.notifications),
    }
}

#[test]
fn the_live_session_allocates_nothing_over_plain_ws() {
    let counted = run(PLAIN);
    assert!(counted.frames >= FRAMES);
    // The venue's credits (tier 2: 20 matching requests a second) bound how much it trades.
    assert!(counted.edits_and_places >= 20, "the strategy hardly traded: {}", counted.edits_and_places);
    assert!(counted.reports >= 20, "hardly any acknowledgement: {}", counted.reports);
    assert!(counted.fills > 0, "no fill during the count");
    assert_eq!(counted.allocations, 0, "allocations over {} frames", counted.frames);
}

#[test]
fn over_tls_only_rustls_allocates() {
    let counted = run(Mode { tls: true, ..PLAIN });
    assert!(counted.frames >= FRAMES);
    assert!(counted.edits_and_places >= 20);
    // rustls's buffered API allocates per record it receives and per write; nothing else does
    // (the plain run above is the same code with zero). The bound is what rustls 0.23 does: a
    // couple per message, never one per byte.
    let per_frame = counted.allocations as f64 / counted.frames as f64;
    eprintln!("TLS: {} allocations over {} frames ({per_frame:.2} per frame)", counted.allocations, counted.frames);
    assert!(per_frame < 3.0, "{per_frame} allocations per frame");
}

#[test]
fn busy_polling_allocates_nothing() {
    // A lower market rate than the blocking runs: the spinning session keeps one of a
    // two-core host's vCPUs, and the simulator must still keep up on the other.
    let counted = run(Mode { busy_poll: true, rate_per_s: 10_000, frames: 30_000, ..PLAIN });
    assert!(counted.frames >= 30_000);
    assert!(counted.edits_and_places >= 10, "the strategy hardly traded: {}", counted.edits_and_places);
    assert!(counted.reports >= 10, "hardly any acknowledgement: {}", counted.reports);
    assert_eq!(counted.allocations, 0, "allocations over {} frames", counted.frames);
}
