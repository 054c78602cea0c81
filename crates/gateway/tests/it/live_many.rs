//! A session on every instrument the simulator lists (futures, options, spot: over a thousand
//! channels) subscribes in as many requests as the venue's 32 kB request limit needs, has every
//! run confirmed, paces its reconciliation queries by the venue's request credits (a refused
//! query would cost the connection), and goes live on the first one. Its stop then cancels
//! where it has orders, paced by the matching-engine credits, on the same connection (an
//! unpaced cancel per instrument got it dropped). Reconciliation and the stop ask for open
//! orders, positions and late trades a currency at a time, so at the simulator's default rates
//! (as Deribit's: about 20 requests a second) the stop of 354 instruments ends `Clean` within
//! its 10 s, with nothing left open; only the instruments Deribit does not file under their
//! base coin (linear, spot) are still asked one by one.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::time::{Duration, Instant};

use ticktrade_gateway::live::{self, LiveConfig, Session, StopHandle};
use ticktrade_gateway::venue::{Credentials, Secret};
use ticktrade_net::hot::HotOptions;
use ticktrade_strategy::Config;
use ticktrade_strategy::config::InstrumentRiskConfig;

#[test]
fn a_session_on_every_instrument_subscribes_in_runs_and_goes_live() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    // The simulator's default request limits, as Deribit's: a burst, then about 20 a second.
    let config = ticktrade_sim::SimConfig { rate_per_s: 200, seed: 9, ..Default::default() };
    let sim = runtime.block_on(ticktrade_sim::spawn_loopback(config)).unwrap();
    let url = sim.ws_url();
    let connect = HotOptions::default();
    let venue = live::fetch_instruments(&url, &connect).unwrap();

    let mut strategy = Config::parse(ticktrade_strategy::template()).unwrap();
    strategy.risk.instrument.clear();
    for spec in venue.iter().filter(|s| s.name != "BTC-PERPETUAL") {
        strategy.risk.instrument.push(InstrumentRiskConfig::unlimited(&spec.name));
    }
    let setup = strategy.validate(&venue).unwrap();
    let n = setup.specs.len();
    // Book, user.orders and user.trades of each: one request would pass the limit.
    let names: usize = setup.specs.iter().map(|s| s.name.len()).sum();
    assert!(3 * names + n * 40 > ticktrade_deribit_proto::requests::MAX_REQUEST_BYTES, "{n} instruments");
    let outbox = setup.outbox;
    let (builtin, parts) = setup.into_parts(0x3a11).unwrap();

    let key = ticktrade_sim::ApiKey::default_key();
    let mut live_config = LiveConfig::new(url);
    live_config.connect = connect;
    live_config.credentials =
        Some(Credentials { client_id: key.client_id, client_secret: Secret::new(key.client_secret.expose()) });
    live_config.status_every = None;
    let stop = StopHandle::default();
    let mut session = Session::new(live_config, builtin.unwrap(), parts, outbox, None, None, stop.clone());
    session.start().unwrap();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(120);
    while !session.is_live() {
        assert!(Instant::now() < deadline, "not live within 120 s: {:?}", session.stats());
        assert!(!session.poll().unwrap(), "ended before going live");
    }
    let grouped = session.stats().queries;
    eprintln!("live after {:?} on {n} instruments, {grouped} reconciliation queries", started.elapsed());
    assert_eq!(session.stats().connects, 1, "the session reconnected while syncing");
    assert!(n > 300, "{n} instruments");
    // Trade a little, then stop: one cancel round per instrument with orders, then the
    // open orders of all of them asked for, paced.
    let trading = Instant::now() + Duration::from_secs(3);
    while Instant::now() < trading || session.stats().places == 0 {
        assert!(Instant::now() < deadline, "no order placed: {:?}", session.stats());
        assert!(!session.poll().unwrap(), "ended while trading");
    }
    stop.stop();
    let stopping = Instant::now();
    let before = session.stats().queries;
    while !session.poll().unwrap() {}
    let report = session.finish();
    eprintln!("stopped {:?} in {:?} with {} queries", report.exit, stopping.elapsed(), report.stats.queries - before);
    assert_eq!(report.exit, live::Exit::Clean, "{:?}", report.stats);
    assert_eq!(report.stats.connects, 1, "the session reconnected while stopping");
    drop(session);
    runtime.block_on(sim.shutdown());
}
